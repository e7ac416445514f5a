#!/usr/bin/env bash
# Fifty-third session, issue 15: tensor-core pipelines whose product loop the driver is asked not to unroll
# (`DontUnroll`, kernels/src/runtime/spv_loops.rs; the experiment switch EXP_ROLLED=1 of a `wgsl-override` build,
# runtime/rolled.rs).
#   probe   pipeline_stats on .carry/probe/ (the Whisper-tiny fp16 and fp32 plans' tensor-core pipelines), one
#           thread, the driver's disk cache off, modes `unchecked` and `rolled`, two rounds: compile ms, registers.
#   cold    bench/startup.py, Whisper-tiny fp16, cold, the experiment build: rolled0 (as released), rolled1
#           (EXP_ROLLED=1), rolled1noint (EXP_ROLLED=1, interim_kernels=0), ROUNDS rounds (default 2), settle 4 s.
#   speed   bench/run.py --io-binding on Whisper-tiny fp16 and fp32, the CPU EP and ours, EXP_ROLLED 0 and 1
#           alternating, SPEED_ROUNDS rounds (default 2): whether the rolled kernels are slower once compiled.
#   ablate  (fifty-fourth session, issue 11) the same, EXP_ROLLED unset, with EXP_WGSL_OVERRIDE=.carry/ablate/nosplitkv:
#           the split f32 attention without its K/V hi/lo split (lo parts zero; timing only, its error grows):
#           what pre-split K and V could gain at most. Stage the copies here with
#           `python3 bench/experiments/attention_ablation/make.py` (writes .carry/ablate/nosplitkv/).
# Stage here: STATS=1 KERNEL_BENCH=0 bash bench/h200_stage.sh (pipeline_stats), the experiment build
# (`cargo build --release -p onnxruntime-ep-wgpu --features wgsl-override --target-dir target/exp`, stripped) in
# .carry/exp/, the probe's goldens in .carry/probe/; goldens/ and docs/data/ moved out; device run with carry
# [".carry", ".whl", ".gl"]. PARTS (default "probe cold speed ablate") picks parts. Writes $OUT/all.tgz; tables last.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
EXP=.carry/exp/libonnxruntime_ep_wgpu.so
mkdir -p "$OUT/more"
has() { [[ " ${PARTS:-probe cold speed ablate} " == *" $1 "* ]]; }
if has probe; then
  for r in 1 2; do
    __GL_SHADER_DISK_CACHE=0 timeout 150 .carry/bench/pipeline_stats --dir .carry/probe --modes unchecked,rolled \
      --threads 1 --json "$OUT/more/stats_$r.json" >"$OUT/more/stats_$r.txt" 2>&1
  done
  tar czf "$OUT/probe.tgz" -C "$OUT" more && python3 bench/h200_s53_table.py "$OUT/probe.tgz" | head -24
fi
if has cold; then
  for r in $(seq 1 "${ROUNDS:-2}"); do
    for arm in rolled0 rolled1 rolled1noint; do
      x=0; [[ $arm == rolled1* ]] && x=1
      opt=(); [[ $arm == rolled1noint ]] && opt=(--option interim_kernels=0)
      EXP_ROLLED=$x timeout 150 python3 bench/startup.py --lib "$EXP" --dtype fp16 --configs ours-nocache \
        --modes cold --repeat 1 --settle 4 "${opt[@]}" --json "$OUT/more/${arm}_cold_$r.json" \
        >"$OUT/more/${arm}_cold_$r.txt" 2>&1
    done
  done
fi
if has speed; then
  for r in $(seq 1 "${SPEED_ROUNDS:-2}"); do
    for x in 0 1; do
      EXP_ROLLED=$x timeout 200 python3 bench/run.py --full --lib "$EXP" --providers cpu,ours --no-peer --no-torch \
        --io-binding --only whisper_encoder --out "$OUT/more/speed${x}_$r" >"$OUT/more/speed${x}_$r.txt" 2>&1
    done
  done
fi
if has ablate; then
  for r in $(seq 1 "${SPEED_ROUNDS:-2}"); do
    EXP_WGSL_OVERRIDE=$PWD/.carry/ablate/nosplitkv timeout 200 python3 bench/run.py --full --lib "$EXP" \
      --providers cpu,ours --no-peer --no-torch --io-binding --only whisper_encoder --out "$OUT/more/speedab_$r" \
      >"$OUT/more/speedab_$r.txt" 2>&1
  done
fi
tar czf "$OUT/all.tgz" -C "$OUT" more gpu.txt && rm -rf "$OUT/more"
cat "$OUT/gpu.txt"
python3 bench/h200_s53_table.py "$OUT/all.tgz"
