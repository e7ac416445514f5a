#!/usr/bin/env bash
# The one command for the H200 machine (after `bash bench/h200_stage.sh` here; device run with
# carry [".carry", ".whl", ".gl"]):
#   bash bench/h200_run.sh [bench/run.py arguments, e.g. --only 'mlp|whisper']
# Installs the carried wheels into /tmp/site, unpacks the Vulkan loader, optionally runs the Rust kernel
# microbenchmark (RUN_KERNEL_BENCH=1), then bench/run.py --full with results in $OUT; the tables print last.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>/dev/null || true
python3 -c 'import sys, onnxruntime, numpy; print("python", sys.version.split()[0], "onnxruntime",
  onnxruntime.__version__, "numpy", numpy.__version__)'

if [[ ${RUN_KERNEL_BENCH:-0} == 1 && -x .carry/bench/kernel_bench ]]; then
  echo "== kernel_bench (output in \$OUT/kernel_bench.txt)"
  timeout "${KERNEL_BENCH_TIMEOUT:-120}" .carry/bench/kernel_bench >"$OUT/kernel_bench.txt" 2>&1
  echo "kernel_bench exit $?"
fi

python3 bench/run.py --full --lib "$LIB" --out "$OUT" "$@" 2>&1 | tee "$OUT/log.txt"
exit "${PIPESTATUS[0]}"
