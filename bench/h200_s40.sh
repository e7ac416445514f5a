#!/usr/bin/env bash
# Fortieth session (no device was lent): the wide and split reductions, Softmax/ArgMax along long strided axes and
# pools over large windows on a GPU, against the landing before them (ea50522, one invocation per output), each
# beside the CPU EP and the peer in the same process; then Whisper-tiny fp32 with its SIMT fc2 split along K
# (EXP_SIMT_SPLIT, an experiment build at .carry/exp/libonnxruntime_ep_wgpu.so). Stage the final build (`KERNEL_BENCH=0 bash
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
# Whisper-tiny fp32's fc2 (1500x384x1536, SIMT, unsplit on 282 thin tiles) on N K splits: the experiment build in
# .carry/exp (EXP_SIMT_SPLIT), alternating with the same library unset, two rounds; a prefix profile of each.
EXP=.carry/exp/libonnxruntime_ep_wgpu.so
if [[ -f $EXP ]]; then
  for cfg in 0 ${SPLITS:-2 3 4}; do
    if [[ $cfg == 0 ]]; then unset EXP_SIMT_SPLIT; else export EXP_SIMT_SPLIT=$cfg; fi
    timeout 100 python3 bench/prefix_profile.py --lib "$EXP" --dtypes fp32 --rounds 2 >"$OUT/prefix_s$cfg.txt" 2>&1
  done
  for r in 1 2; do
    for cfg in 0 ${SPLITS:-2 3 4}; do
      if [[ $cfg == 0 ]]; then unset EXP_SIMT_SPLIT; else export EXP_SIMT_SPLIT=$cfg; fi
      timeout 100 python3 bench/host_split.py --lib "$EXP" --runs 300 --dtypes fp32 --bound >"$OUT/hs_s${cfg}_$r.txt" 2>&1
    done
  done
  unset EXP_SIMT_SPLIT
fi
cat "$OUT/gpu.txt"
for build in base new; do
  echo "== $build"
  grep -h "^| long_axis" "$OUT/long_axis_$build.txt" | cut -c1-160
done
tail -1 "$OUT/tests.txt"
for f in "$OUT"/hs_s*_*.txt; do [[ -f $f ]] && grep -h "^| whisper" "$f" | sed "s|^|$(basename "$f" .txt) |" | cut -c1-150; done
grep -hE "^## |Gemm\+Add" "$OUT"/prefix_s*.txt 2>/dev/null | cut -c1-120
