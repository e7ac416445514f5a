#!/usr/bin/env bash
# The set-up every H200 script shares (sourced, after `bash bench/h200_stage.sh` here and a device run with carry
# [".carry", ".whl", ".gl"]): cd to the checkout, $OUT, the carried wheels installed into /tmp/site (the peer; pytest),
# the Vulkan loader and GLVND unpacked for the NVIDIA ICD, and $LIB, our staged library.
#   source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 2
OUT="${OUT:-$ROOT/bench/out/h200}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1
if compgen -G '.whl/*.whl' >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || exit 2
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
for f in .gl/*.deb; do [[ -f $f ]] && dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
LIB=.carry/bench/libonnxruntime_ep_wgpu.so
[[ -f $LIB ]] || LIB=target/release/libonnxruntime_ep_wgpu.so
# tests_and_pack "FILES" SECONDS: pytest on FILES with our library into $OUT/more/tests.txt, then $OUT/more and
# gpu.txt into $OUT/all.tgz (and $OUT/more removed); prints the GPU and the tests' last two lines.
tests_and_pack() {
  # shellcheck disable=SC2086 # a list of test files
  ONNXRUNTIME_EP_WGPU_LIB=$PWD/$LIB timeout "$2" python3 -m pytest -q -p no:cacheprovider $1 >"$OUT/more/tests.txt" 2>&1
  tar czf "$OUT/all.tgz" -C "$OUT" more gpu.txt && rm -rf "$OUT/more"
  cat "$OUT/gpu.txt"
  tar xzf "$OUT/all.tgz" -O more/tests.txt | tail -2
}
