#!/usr/bin/env bash
# Fifty-sixth session, issue 15: do fewer compiles at once finish the tensor-core pipelines sooner on the device
# machine's 16 threads (8 cores with two threads each, if the cold compiles' 1.4–2× slowdown beside each other says
# so)? bench/startup.py, Whisper-tiny fp16, cold, settle 4 s, the experiment build of the release default (plain
# attention, rolled compiles not deferred) in .carry/exp, ROUNDS rounds (default 2): EXP_COMPILE_THREADS unset
# (one per core), 8 and 4, ×2 processes each, and the peer ×1. Then pipeline_stats (modes unchecked, rolled; one
# thread; driver cache off; two rounds) on .carry/probe3: the split f32 and f16 attentions of Whisper-tiny, as before
# and plain; and bench/run.py on Whisper-tiny with the release build (the split f32 attention plain too).
# Stage: the experiment build stripped in .carry/exp/, the release build and pipeline_stats in .carry/bench (plus
# bash bench/h200_stage.sh for .whl/.gl), the four goldens in .carry/probe3; goldens/ and docs/data/ moved out;
# carry [".carry", ".whl", ".gl"]. Writes $OUT/all.tgz; the tables last.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
lscpu >"$OUT/lscpu.txt" 2>&1
EXP=.carry/exp/libonnxruntime_ep_wgpu.so
mkdir -p "$OUT/more"
cp "$OUT/lscpu.txt" "$OUT/more/"
for r in $(seq 1 "${ROUNDS:-2}"); do
  startup "$EXP" t16 ours-nocache cold fp16 "$r" 2
  startup "$EXP" t8 ours-nocache cold fp16 "$r" 2 EXP_COMPILE_THREADS=8
  startup "$EXP" t4 ours-nocache cold fp16 "$r" 2 EXP_COMPILE_THREADS=4
  startup "$EXP" peer peer cold fp16 "$r" 1
done
for r in 1 2; do
  __GL_SHADER_DISK_CACHE=0 timeout 100 .carry/bench/pipeline_stats --dir .carry/probe3 --modes unchecked,rolled \
    --threads 1 --json "$OUT/more/stats_$r.json" >"$OUT/more/stats_$r.txt" 2>&1
done
whisper_speed speed1_1
tar czf "$OUT/all.tgz" -C "$OUT" more gpu.txt && rm -rf "$OUT/more"
cat "$OUT/gpu.txt"
grep -E "^(Thread|Core|Socket|Model name|CPU\(s\))" "$OUT/lscpu.txt"
python3 bench/startup_table.py "$OUT/all.tgz"
python3 bench/h200_s53_table.py "$OUT/all.tgz" | grep -E "attn_coop"
whisper_lines speed1_1
