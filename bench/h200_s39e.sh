#!/usr/bin/env bash
# Thirty-ninth session, last device call: the session's final build (the staged library) beside the peer and the CPU
# EP on Whisper-tiny and BERT/ViT (`bench/run.py --full --io-binding`), and issue 13's shapes beside torch SDPA.
# Carry [".carry", ".whl", ".gl"]; $OUT is packed into all.tgz.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
timeout 90 python3 bench/attention_bench.py --lib "$LIB" \
  --only 's4096_h8|llama_prefill_s4096|whisper|decode_s1x4096_h32kv8_d128' >"$OUT/attention.txt" 2>&1
timeout 300 python3 bench/run.py --full --lib "$LIB" --io-binding --no-plots --no-torch \
  --only "${ONLY:-whisper_encoder|bert|vit}" >"$OUT/models.txt" 2>&1
(cd "$OUT" && tar -czf /tmp/all.tgz . && mv /tmp/all.tgz .)
cat "$OUT/gpu.txt"
grep -E "^\| (s4096|llama|whisper|decode)" "$OUT/attention.txt" | cut -c1-110
grep -E "^\|" "$OUT/models.txt" | tail -14
