#!/usr/bin/env bash
# Start-up on the H200 (issue 15), after `bash bench/h200_stage.sh` here; device run with
# carry [".carry", ".whl", ".gl"]:
#   bash bench/h200_startup.sh [bench/startup.py arguments]
# Fresh processes, cold and warm driver caches, our EP with and without the persistent pipeline cache and the
# peer (when its wheel was staged); BASE_LIB=path/to/an/older/libonnxruntime_ep_wgpu.so also times that build
# (the "before" rows). Results: $OUT/startup.json (and startup-base.json), the tables print last.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || true

status=0
if [[ -n ${BASE_LIB:-} ]]; then
  python3 bench/startup.py --lib "$BASE_LIB" --configs ours --modes cold,warm --repeat 5 \
    --json "$OUT/startup-base.json" "$@" 2>&1 | tee "$OUT/startup-base.txt" || status=1
fi
python3 bench/startup.py --lib "$LIB" --modes cold,warm,ourcache --repeat 5 --json "$OUT/startup.json" "$@" 2>&1 \
  | tee "$OUT/startup.txt"
exit $(( status | PIPESTATUS[0] ))
