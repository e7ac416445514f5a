#!/usr/bin/env bash
# Fifty-fifth session, issue 15's cold second run with rolled tensor-core kernels (now cheap to compile): do they need
# to wait for the interim plans' compiles? bench/startup.py, Whisper-tiny fp16, cold, settle 4 s, the experiment
# build (.carry/exp, rolled by default), ROUNDS rounds (default 2), each round:
#   base    as released (interim plans, tensor-core compiles deferred until the interim ones end), 2 processes
#   nodefer EXP_NO_DEFER=1: the tensor-core compiles start beside the interim ones, 2 processes
#   noint   interim_kernels=0 (the first run waits for the tensor-core pipelines), 2 processes
#   peer    1 process
# Stage: the experiment build stripped in .carry/exp/; goldens/ and docs/data/ moved out; carry
# [".carry", ".whl", ".gl"]. Writes $OUT/all.tgz; the table last (bench/startup_table.py).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
EXP=.carry/exp/libonnxruntime_ep_wgpu.so
mkdir -p "$OUT/more"
start() { # name config round repeat [VAR=VALUE] [option]
  local opt=(); [[ -n ${6:-} ]] && opt=(--option "$6")
  env ${5:-X_=0} timeout 150 python3 bench/startup.py --lib "$EXP" --dtype fp16 --configs "$2" --modes cold \
    --repeat "$4" --settle 4 "${opt[@]}" --json "$OUT/more/$1_cold_$3.json" >"$OUT/more/$1_cold_$3.txt" 2>&1
}
for r in $(seq 1 "${ROUNDS:-2}"); do
  start base ours-nocache "$r" 2
  start nodefer ours-nocache "$r" 2 EXP_NO_DEFER=1
  start noint ours-nocache "$r" 2 X_=0 interim_kernels=0
  start peer peer "$r" 1
done
tar czf "$OUT/all.tgz" -C "$OUT" more gpu.txt && rm -rf "$OUT/more"
cat "$OUT/gpu.txt"
python3 bench/startup_table.py "$OUT/all.tgz"
