#!/usr/bin/env bash
# Fifty-first session, call 2: wgpu's indirect-call validation off (no validation pipelines compiled into each
# device) against the build before it (.carry/base/), both opening the device at registration; issue 15's case
# (Whisper-tiny encoder fp16, bench/startup.py, fresh processes) cold and warm beside the peer. ROUNDS rounds
# (default 3), each: base ×2, new ×2, the peer, cold then warm. Then TESTS with pytest on the new build.
#   carry [".carry/bench", ".carry/base", ".whl", ".gl"]; writes $OUT/all.tgz and prints a table last.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
mkdir -p "$OUT/more"
one() { # config mode round repeat lib tag
  timeout 200 python3 bench/startup.py --lib "$5" --dtype fp16 --configs "$1" --modes "$2" --repeat "$4" \
    --json "$OUT/more/$1-$6_$2_$3.json" >"$OUT/more/$1-$6_$2_$3.txt" 2>&1
}
for r in $(seq 1 "${ROUNDS:-3}"); do
  for mode in cold warm; do
    one ours-nocache "$mode" "$r" 2 .carry/base/libonnxruntime_ep_wgpu.so base
    one ours-nocache "$mode" "$r" 2 "$LIB" new
    one peer "$mode" "$r" 1 "$LIB" x
  done
done
tests_and_pack "${TESTS:-tests/test_early_open.py tests/test_startup.py tests/test_ep.py}" 200
python3 bench/startup_table.py "$OUT/all.tgz"
