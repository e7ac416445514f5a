#!/usr/bin/env bash
# Fiftieth session, call 2: the elementwise kernels' vector form and the spread of few long reductions, beside the
# build before them. `floor.py` times each build twice, alternating (base = .carry/base/, the build at 7b284cf; new
# = .carry/bench/); then the pytest files these changes touch on this GPU (the new build; TESTS overrides the list),
# and `bench/run.py` on Whisper-tiny, BERT-base and ViT-base beside the peer (MODELS=0 skips it).
# Stage: bash bench/h200_stage.sh (KERNEL_BENCH=0) with the base library copied into .carry/base/ first; move
# goldens/ and docs/data/ out; carry [".carry/bench", ".carry/base", ".whl", ".gl"]. Writes $OUT/all.tgz.
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
TESTS=${TESTS:-tests/test_elementwise_vector.py tests/test_special_values.py tests/test_long_axes.py tests/test_onnx_node_tests.py}
# shellcheck disable=SC2086 # a list of test files
ONNXRUNTIME_EP_WGPU_LIB=$PWD/$LIB timeout 240 python3 -m pytest -q -p no:cacheprovider $TESTS >"$OUT/more/tests.txt" 2>&1
[[ ${MODELS:-1} == 1 ]] && timeout 200 python3 bench/run.py --full --lib "$LIB" --io-binding --no-plots --no-torch \
  --only 'whisper_encoder|bert|vit' --out "$OUT/more/models" >"$OUT/more/models.txt" 2>&1
tar czf "$OUT/all.tgz" -C "$OUT" more gpu.txt && rm -rf "$OUT/more"
cat "$OUT/gpu.txt"
tar xzf "$OUT/all.tgz" -O more/tests.txt | tail -3
for f in floor_base_1 floor_new_1 floor_base_2 floor_new_2; do
  echo "== $f"; tar xzf "$OUT/all.tgz" -O "more/$f.txt" | grep -E "^\| [a-z]" | cut -c1-100
done
tar xzf "$OUT/all.tgz" -O more/models.txt 2>/dev/null | grep -E "^\|" | cut -c1-160 | tail -12
