#!/usr/bin/env bash
# Builds the locator wheel (python/) around target/release/libonnxruntime_ep_wgpu.so into target/wheels/
# (emptied first, so it holds this build only) and installs it into each venv given (default: .venv).
#   bash ci/wheel.sh [VENV ...]        ONNXRUNTIME_EP_WGPU_LIB=/path/lib.so bundles another library
# Needs ci/setup.sh first (the wheel is built with .venv's pinned setuptools, without build isolation).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_PROGRESS_BAR=off

WHEEL_DIR="$ROOT/target/wheels"
venvs=("$@")
[[ ${#venvs[@]} -gt 0 ]] || venvs=(.venv)

rm -rf "$WHEEL_DIR" python/build python/*.egg-info
mkdir -p "$WHEEL_DIR"
.venv/bin/python -m pip wheel -q --no-deps --no-build-isolation -w "$WHEEL_DIR" ./python
rm -rf python/build python/*.egg-info
wheel=("$WHEEL_DIR"/onnxruntime_ep_wgpu-*.whl)
echo "[wheel] built ${wheel[0]#"$ROOT"/}"
for venv in "${venvs[@]}"; do
  "$venv/bin/python" -m pip install -q --no-deps --force-reinstall "${wheel[0]}"
  echo "[wheel] installed into $venv"
done
