#!/usr/bin/env bash
# Thirty-ninth session, fourth device call: the planner's eight prefetching subgroups where their query tiles fill
# half the device (Whisper-tiny, Llama's 512-token prompt) against four (EXP_ATTN_TILING=d64=4x64 on the same
# experiment build in .carry/exp), attention steps and the Whisper fp16 encoder, alternating; the attention pytest
# files with the planned tilings. Carry [".carry", ".whl", ".gl"]; $OUT is packed into all.tgz.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
EXP=.carry/exp/libonnxruntime_ep_wgpu.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
ONNXRUNTIME_EP_WGPU_LIB=$EXP timeout 150 python3 -m pytest -q -x -p no:cacheprovider tests/test_attention.py \
  tests/test_gqa.py >"$OUT/tests.txt" 2>&1
for r in 1 2; do
  for cfg in planned 4x64; do
    if [[ $cfg == 4x64 ]]; then export EXP_ATTN_TILING=d64=4x64; else unset EXP_ATTN_TILING; fi
    echo "== $cfg round $r" >>"$OUT/ab_tiling.txt"
    timeout 60 python3 bench/attention_bench.py --lib "$EXP" --only 'whisper|llama_prefill_s512|llama_prefill_s1024' \
      >>"$OUT/ab_tiling.txt" 2>&1
    timeout 100 python3 bench/host_split.py --lib "$EXP" --runs 300 --dtypes fp16 --bound >"$OUT/hs_${cfg}_$r.txt" 2>&1
  done
done
(cd "$OUT" && tar -czf /tmp/all.tgz . && mv /tmp/all.tgz .)
cat "$OUT/gpu.txt"; tail -1 "$OUT/tests.txt"
grep -hE "^== |^\| (llama|whisper)" "$OUT/ab_tiling.txt" | cut -c1-110
for f in "$OUT"/hs_*_[12].txt; do grep -h "^| whisper" "$f" | sed "s/^/$(basename "$f" .txt) /" | cut -c1-150; done
