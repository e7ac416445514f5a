#!/usr/bin/env bash
# Fifty-sixth session, issue 15: do fewer compiles at once finish the tensor-core pipelines sooner on the device
# machine's 16 threads (8 cores with two threads each, if the cold compiles' 1.4–2× slowdown beside each other says
# so)? bench/startup.py, Whisper-tiny fp16, cold, settle 4 s, the experiment build of the release default (plain
# attention, rolled compiles not deferred) in .carry/exp, ROUNDS rounds (default 2): EXP_COMPILE_THREADS unset
# (one per core), 8 and 4, ×2 processes each, and the peer ×1.
# Stage: the experiment build stripped in .carry/exp/ (plus bash bench/h200_stage.sh for .whl/.gl); goldens/ and
# docs/data/ moved out; carry [".carry", ".whl", ".gl"]. Writes $OUT/all.tgz; the table last.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
lscpu >"$OUT/lscpu.txt" 2>&1
EXP=.carry/exp/libonnxruntime_ep_wgpu.so
mkdir -p "$OUT/more"
cp "$OUT/lscpu.txt" "$OUT/more/"
start() { # name config round repeat [VAR=VALUE]
  env ${5:-X_=0} timeout 150 python3 bench/startup.py --lib "$EXP" --dtype fp16 --configs "$2" --modes cold \
    --repeat "$4" --settle 4 --json "$OUT/more/$1_cold_$3.json" >"$OUT/more/$1_cold_$3.txt" 2>&1
}
for r in $(seq 1 "${ROUNDS:-2}"); do
  start t16 ours-nocache "$r" 2
  start t8 ours-nocache "$r" 2 EXP_COMPILE_THREADS=8
  start t4 ours-nocache "$r" 2 EXP_COMPILE_THREADS=4
  start peer peer "$r" 1
done
tar czf "$OUT/all.tgz" -C "$OUT" more gpu.txt && rm -rf "$OUT/more"
cat "$OUT/gpu.txt"
grep -E "^(Thread|Core|Socket|Model name|CPU\(s\))" "$OUT/lscpu.txt"
python3 bench/startup_table.py "$OUT/all.tgz"
