#!/usr/bin/env bash
# Fifty-fifth session, issue 15, after the fix of the passthrough modules' bindings (rolled.rs: wgpu-hal numbers a
# layout's descriptors densely, so the residual at binding 6 of a layout without 5 is Vulkan binding 5):
#   check   tools/run_model.py on the Whisper-tiny fp16 and fp32 exports with EXP_ROLLED=1 (interim plans off),
#           then pytest on TESTS with EXP_ROLLED=1 and the experiment build (every tensor-core kernel rolled)
#   then    h200_s53.sh with PARTS (default "cold speed"), ROUNDS and SPEED_ROUNDS (default 2)
# Stage as for h200_s53.sh. Writes $OUT/check.tgz and $OUT/all.tgz; tables last.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
EXP=.carry/exp/libonnxruntime_ep_wgpu.so
mkdir -p "$OUT/check"
for dt in fp16 fp32; do
  m=/tmp/whisper_$dt.onnx
  (cd bench && python3 -c "from cases_torch import export_whisper_encoder as e; print(e('$m', '$dt'))") \
    >"$OUT/check/export_$dt.txt" 2>&1
  for x in 0 1; do
    EXP_ROLLED=$x timeout 90 python3 tools/run_model.py "$m" --lib "$EXP" --runs 3 --max-seconds 3 \
      --option interim_kernels=0 >"$OUT/check/${dt}_rolled$x.txt" 2>&1
    echo "$dt rolled$x rc=$? $(grep -m1 max_abs_diff "$OUT/check/${dt}_rolled$x.txt" | sed 's/^ *//')"
  done
done | tee "$OUT/check/lines.txt"
TESTS=${TESTS:-tests/test_tensor_core_infinities.py tests/test_transposed_matmul.py tests/test_conv_epilogue.py tests/test_attention.py tests/test_transformers.py}
# shellcheck disable=SC2086 # a list of test files
EXP_ROLLED=1 ONNXRUNTIME_EP_WGPU_LIB=$PWD/$EXP timeout "${TEST_S:-200}" python3 -m pytest -q -p no:cacheprovider $TESTS \
  >"$OUT/check/tests.txt" 2>&1
tail -3 "$OUT/check/tests.txt"
tar czf "$OUT/check.tgz" -C "$OUT" check && rm -rf "$OUT/check"
PARTS=${PARTS:-cold speed} bash bench/h200_s53.sh
