#!/usr/bin/env bash
# Fifty-first session, call 1: the device opened at registration (provider/src/gpus.rs) against opening it at
# CreateEp (the same library with ONNXRUNTIME_EP_WGPU_EARLY_OPEN=0), issue 15's case (Whisper-tiny encoder fp16,
# bench/startup.py, fresh processes), cold and warm, beside the peer in the same call. ROUNDS rounds (default 3),
# each: ours cold early ×2, ours cold at-CreateEp ×2, the peer cold, then the same warm. Then: PROBES processes
# (default 12) that register the library and exit at once (the early opening still under way: exit codes), the
# second-run phase probe (bench/experiments/second_run/phases.py, warm), and TESTS with pytest.
#   bash bench/h200_stage.sh; (move goldens/ and docs/data/ out); device run with carry [".carry/bench", ".whl", ".gl"]
# Writes $OUT/all.tgz and prints a table last.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
mkdir -p "$OUT/more"
one() { # config mode round repeat early
  ONNXRUNTIME_EP_WGPU_EARLY_OPEN=$5 timeout 200 python3 bench/startup.py --lib "$LIB" --dtype fp16 --configs "$1" \
    --modes "$2" --repeat "$4" --json "$OUT/more/$1-e$5_$2_$3.json" >"$OUT/more/$1-e$5_$2_$3.txt" 2>&1
}
for r in $(seq 1 "${ROUNDS:-3}"); do
  for mode in cold warm; do
    one ours-nocache "$mode" "$r" 2 1; one ours-nocache "$mode" "$r" 2 0; one peer "$mode" "$r" 1 1
  done
done
codes=""
for i in $(seq 1 "${PROBES:-12}"); do
  python3 -c "import onnxruntime as o; o.register_execution_provider_library('x', '$PWD/$LIB')" \
    >>"$OUT/more/exit_probe.txt" 2>&1
  codes="$codes $?"
done
echo "exit codes:$codes" | tee -a "$OUT/more/exit_probe.txt"
model=$(ls bench/out/startup/*fp16*.onnx 2>/dev/null | head -1)
if [[ -n $model ]]; then
  for p in 1 2; do
    timeout 120 python3 bench/experiments/second_run/phases.py "$PWD/$LIB" "$model" >"$OUT/more/second_run_$p.txt" 2>&1
  done
fi
tests_and_pack "${TESTS:-tests/test_early_open.py tests/test_startup.py tests/test_faults.py}" 240
tar xzf "$OUT/all.tgz" -O more/exit_probe.txt | tail -1
python3 bench/startup_table.py "$OUT/all.tgz"
