#!/usr/bin/env bash
# Fifty-second session: issue 15's case (Whisper-tiny encoder fp16, bench/startup.py, fresh processes) with this
# build on the H200, cold and warm beside the peer, each process running on for SETTLE seconds (default 4) after its
# first result so the table shows the run after every tensor-core pipeline has compiled ("settled"); then the
# second-run clock probe (bench/experiments/second_run/clock.py, PROBES processes, default 3, warm driver cache),
# issue 11's Whisper-tiny (bench/run.py --only whisper_encoder, same process as the peer and the CPU EP), and TESTS.
#   bash bench/h200_stage.sh; (move goldens/ and docs/data/ out); device run with carry [".carry/bench", ".whl", ".gl"]
# Writes $OUT/all.tgz and $OUT/m/, and prints the tables last.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
mkdir -p "$OUT/more"
one() { # config mode round repeat
  timeout 200 python3 bench/startup.py --lib "$LIB" --dtype fp16 --configs "$1" --modes "$2" --repeat "$4" \
    --settle "${SETTLE:-4}" --json "$OUT/more/$1_$2_$3.json" >"$OUT/more/$1_$2_$3.txt" 2>&1
}
for r in $(seq 1 "${ROUNDS:-2}"); do
  for mode in cold warm; do
    one ours-nocache "$mode" "$r" 2; one peer "$mode" "$r" 1
  done
done
model=$(ls bench/out/startup/*fp16*.onnx 2>/dev/null | head -1)
if [[ -n $model ]]; then
  for p in $(seq 1 "${PROBES:-3}"); do
    timeout 120 python3 bench/experiments/second_run/clock.py "$PWD/$LIB" "$model" >"$OUT/more/clock_$p.txt" 2>&1
  done
fi
timeout 300 python3 bench/run.py --full --lib "$LIB" --out "$OUT/m" --only whisper_encoder --no-torch \
  >"$OUT/more/models.txt" 2>&1
tests_and_pack "${TESTS:-tests/test_early_open.py tests/test_startup.py}" 200
grep -E "wgpu EP (ours|profile)|WebGPU EP" "$OUT/m/log.txt" "$OUT/m/"*.md 2>/dev/null | head -8
tar xzf "$OUT/all.tgz" -O more/models.txt | grep -E "ours\)|peer\)|profile" | head -8
python3 bench/startup_table.py "$OUT/all.tgz"
