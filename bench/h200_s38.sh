#!/usr/bin/env bash
# Thirty-eighth session, one device call: (1) the tensor-core attention with eight subgroups (128 query rows, Q staged
# in two rounds, a 32-column scratch) against the planned tilings, with the attention pytest files run on the
# forced tilings first; (2) kernel_bench on Whisper fp32's residual products (SIMT sweep, split f32, split-K).
# Carry [".carry", ".whl", ".gl"]; .carry/exp/ holds the experiment build (`--features wgsl-override`) and
# kernel_bench. Everything lands in $OUT (packed into all.tgz); the tables print last.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
EXP=.carry/exp/libonnxruntime_ep_wgpu.so
KB=.carry/exp/kernel_bench
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
FORCED=${FORCED:-d128=8x32,d96=8x32,d64=8x32}
EXP_ATTN_TILING=$FORCED ONNXRUNTIME_EP_WGPU_LIB=$EXP timeout 300 python3 -m pytest -q -x -p no:cacheprovider \
  tests/test_attention.py tests/test_gqa.py >"$OUT/tests_forced.txt" 2>&1
tail -2 "$OUT/tests_forced.txt"
ONLY=${ONLY:-s4096_h8|llama_prefill|whisper}
: >"$OUT/ab_tilings.txt"
for r in $(seq "${ROUNDS:-2}"); do
  for t in planned d128=8x32 d64=8x32 d128=8x16; do
    echo "== $t round $r" >>"$OUT/ab_tilings.txt"
    if [[ $t == planned ]]; then
      env -u EXP_ATTN_TILING timeout 150 python3 bench/attention_bench.py --lib "$EXP" --only "$ONLY" >>"$OUT/ab_tilings.txt" 2>&1
    else
      EXP_ATTN_TILING=$t timeout 150 python3 bench/attention_bench.py --lib "$EXP" --only "$ONLY" >>"$OUT/ab_tilings.txt" 2>&1
    fi
  done
done
if [[ ${KERNELS:-1} == 1 ]]; then
  S=1500x384x1536,1500x384x384
  timeout 120 "$KB" --shapes $S --dtypes f32 --paths simt,split,fused,auto --iters 5 >"$OUT/kb_paths.txt" 2>&1
  timeout 150 "$KB" --shapes $S --dtypes f32 --sweep simt --iters 5 >"$OUT/kb_sweep.txt" 2>&1
  timeout 90 "$KB" --shapes $S --dtypes f32 --paths simt --tiling splitk --parallelism 132,264,528 --iters 5 \
    >"$OUT/kb_splitk.txt" 2>&1
fi
(cd "$OUT" && tar -czf /tmp/all.tgz . && mv /tmp/all.tgz .)
echo "--- tests"; tail -3 "$OUT/tests_forced.txt"
echo "--- kernels"; grep -E "^\|" "$OUT"/kb_*.txt | cut -c1-170 | head -60
echo "--- attention"; grep -E "^== |^\| (s4096|llama|whisper)" "$OUT/ab_tilings.txt" | cut -c1-150
