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
