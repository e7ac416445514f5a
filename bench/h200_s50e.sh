#!/usr/bin/env bash
# Fiftieth session, call 4: GroupNormalization's vector form. `floor.py` (now with a GroupNormalization of
# [2, 64, 256, 256] f16) on the base build (.carry/base/, 7b284cf) and the new one (.carry/bench/), alternating, two
# rounds (torch in the first); then bench/h200_s50c.sh on the UNet case (CASES), base alone and new beside the peer.
# Carry [".carry/bench", ".carry/base", ".whl", ".gl"]; writes $OUT/all.tgz and $OUT/cnn/all.tgz.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
mkdir -p "$OUT/more"
for r in 1 2; do
  for build in base new; do
    lib=.carry/bench/libonnxruntime_ep_wgpu.so
    [[ $build == base ]] && lib=.carry/base/libonnxruntime_ep_wgpu.so
    timeout 120 python3 bench/experiments/dispatch_floor/floor.py --lib "$PWD/$lib" $([[ $r == 2 ]] && echo --no-torch) \
      >"$OUT/more/floor_${build}_$r.txt" 2>&1
  done
done
ONNXRUNTIME_EP_WGPU_LIB=$PWD/$LIB timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_group_norm.py \
  tests/test_cnn.py >"$OUT/more/tests.txt" 2>&1
tar czf "$OUT/all.tgz" -C "$OUT" more gpu.txt && rm -rf "$OUT/more"
cat "$OUT/gpu.txt"
tar xzf "$OUT/all.tgz" -O more/tests.txt | tail -1
for f in floor_base_1 floor_new_1 floor_base_2 floor_new_2; do
  echo "== $f"; tar xzf "$OUT/all.tgz" -O "more/$f.txt" | grep -E "^\| [a-z]" | cut -c1-100
done
OUT="$OUT/cnn" CASES=${CASES:-unet_2x64x128} bash bench/h200_s50c.sh
