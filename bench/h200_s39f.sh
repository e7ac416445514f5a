#!/usr/bin/env bash
# Thirty-ninth session, a last short call: issue 13's shapes beside torch SDPA with the final build (the staged
# library), two rounds, and one Whisper-tiny host split. Carry [".carry", ".whl", ".gl"].
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
for r in 1 2; do
  echo "== round $r" >>"$OUT/attention.txt"
  timeout 80 python3 bench/attention_bench.py --lib "$LIB" \
    --only 's4096_h8|llama_prefill_s4096|whisper|decode_s1x4096_h32kv8_d128' >>"$OUT/attention.txt" 2>&1
done
timeout 80 python3 bench/host_split.py --lib "$LIB" --runs 300 --dtypes fp32,fp16 --bound >"$OUT/hs.txt" 2>&1
cat "$OUT/gpu.txt"
grep -hE "^== |^\| (s4096|llama|whisper|decode)" "$OUT/attention.txt" | cut -c1-110
grep -h "^| whisper" "$OUT/hs.txt" | cut -c1-150
