#!/usr/bin/env bash
# Fortieth session (no device was lent): the wide and split reductions, Softmax/ArgMax along long strided axes and
# pools over large windows on a GPU, against the landing before them (ea50522, one invocation per output), each
# beside the CPU EP and the peer in the same process (Whisper fp32's fc2 split along K: h200_s40b.sh). Stage the final build (`KERNEL_BENCH=0 bash
# bench/h200_stage.sh`) and the base library at .carry/base/libonnxruntime_ep_wgpu.so (a worktree of ea50522 built
# with CARGO_TARGET_DIR, stripped); carry [".carry", ".whl", ".gl"].
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
for build in base new; do
  lib=$LIB
  [[ $build == base ]] && lib=.carry/base/libonnxruntime_ep_wgpu.so
  [[ -f $lib ]] || { echo "no $lib" >>"$OUT/long_axis_$build.txt"; continue; }
  timeout 240 python3 bench/run.py --full --only long_axis --io-binding --no-torch --no-plots --lib "$lib" \
    --out "$OUT/long_axis_$build" >"$OUT/long_axis_$build.txt" 2>&1
done
timeout 200 python3 -m pytest -q tests/test_long_axes.py tests/test_argreduce.py >"$OUT/tests.txt" 2>&1
cat "$OUT/gpu.txt"
for build in base new; do
  echo "== $build"
  grep -h "^| long_axis" "$OUT/long_axis_$build.txt" | cut -c1-160
done
tail -1 "$OUT/tests.txt"
