#!/usr/bin/env bash
# Issue 13's measurements in one H200 device run, from a checkout of this branch (the device tool copies the
# session's checkout): `bash bench/h200_stage.sh`, then the library of the commit before attention (9a43397:
# `git archive 9a43397 | tar -x -C /tmp/base && (cd /tmp/base && cargo build --release -p onnxruntime-ep-wgpu)`,
# stripped) as .carry/base/libonnxruntime_ep_wgpu.so; carry [".carry", ".whl", ".gl"], timeout_s 300:
#   1. bench/attention_bench.py: flash-attention kernel time beside torch SDPA (flash), float16;
#   2. the Whisper-tiny encoder (fp32, fp16) end to end: before (base library, ours only) and after (this
#      library, with the peer), bench/run.py --full.
# Results under $OUT (attention.json, before/, after/); the tables print last.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || true
BASE=.carry/base/libonnxruntime_ep_wgpu.so
timeout 95 python3 bench/attention_bench.py --lib "$LIB" --out "$OUT" 2>&1 | tee "$OUT/attention.txt"
W="${WHISPER:-whisper_encoder}"
[[ -f $BASE ]] || echo "no $BASE: the 'before' run fails; stage it (see the header)"
timeout 80 python3 bench/run.py --full --lib "$BASE" --providers ours --no-plots --no-torch --budget-s 1 --warmup 2 --only "$W" \
  --out "$OUT/before" >"$OUT/before.txt" 2>&1
timeout 100 python3 bench/run.py --full --lib "$LIB" --providers peer,ours --no-plots --no-torch --budget-s 1 --warmup 2 --only "$W" \
  --out "$OUT/after" >"$OUT/after.txt" 2>&1
echo "== whisper before (base library)"; grep -E '^\|' "$OUT/before.txt" | head -30
echo "== whisper after (this library, with the peer)"; grep -E '^\|' "$OUT/after.txt" | head -40
echo "== attention kernels"; grep -E '^\|' "$OUT/attention.txt"
# At most 8 files come back: keep the results and the logs.
find "$OUT" -type f ! -name attention.json ! -name attention.txt ! -name before.txt ! -name after.txt ! -name results.json -delete
