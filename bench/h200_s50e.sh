#!/usr/bin/env bash
# Fiftieth session, call 4: GroupNormalization's vector form. bench/h200_s50b.sh's floor rounds (`floor.py`, now with
# a GroupNormalization of [2, 64, 256, 256] f16; base = .carry/base/, 7b284cf; new = .carry/bench/) with
# tests/test_group_norm.py and tests/test_cnn.py on this GPU; then bench/h200_s50c.sh on the UNet case (CASES), base
# alone and new beside the peer.
# Carry [".carry/bench", ".carry/base", ".whl", ".gl"]; writes $OUT/all.tgz and $OUT/cnn/all.tgz.
set -uo pipefail
HERE="$(dirname "${BASH_SOURCE[0]}")"
TESTS="tests/test_group_norm.py tests/test_cnn.py" MODELS=0 bash "$HERE/h200_s50b.sh"
source "$HERE/h200_env.sh" >/dev/null
OUT="$OUT/cnn" CASES=${CASES:-unet_2x64x128} bash "$HERE/h200_s50c.sh"
