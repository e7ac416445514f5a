#!/usr/bin/env bash
# Fifty-eighth session, first call: (1) the bandwidth GEMV's lane shapes on the decode products of Llama-3.2-1B and
# Qwen3-0.6B (and their LM heads), with the experiment kernel_bench (.carry/exp/kernel_bench, built with
# --features ep-wgpu-kernels/wgsl-override): the planner's pick, then the narrow form forced with 2 to 32 column lanes
# (EXP_GEMV_CT) and 8 / 32 loads in flight (EXP_GEMV_LOADS), and the wide split form (EXP_GEMV_NARROW=0);
# (2) issue 15: the SM clock (nvidia-smi every 5 ms) through cold and warm start-up processes of ours (as built, and
# interim_kernels=0) and of the peer, lined up with each run (bench/clock_trace.py); then the experiment library
# (.carry/exp/, --features wgsl-override) with EXP_CLOCK_WARMUP (a spin kernel keeps the GPU busy after the device opens;
# the switch was removed after this call, so later experiment builds run those rows as plain cold / warm ones).
# Stage: KERNEL_BENCH=0 bash bench/h200_stage.sh, then the experiment kernel_bench into .carry/exp/; carry
# [".carry", ".whl", ".gl"]. Writes $OUT/all.tgz; the tables last.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
mkdir -p "$OUT/more"
# Issue 11's figure wherever the machine is an H200 (WHISPER=1 forces it).
if grep -q H200 "$OUT/gpu.txt" || [[ ${WHISPER:-0} == 1 ]]; then whisper_speed speed1_1; fi
KB=.carry/exp/kernel_bench
SHAPES=${SHAPES:-1x3072x2048,1x2048x2048,1x8192x2048,1x2048x8192,1x128256x2048,1x4096x1024,1x1024x2048,1x3072x1024,1x1024x3072,1x151936x1024}
gemv() {  # NAME [VAR=VALUE ...]
  local name=$1
  shift
  env "$@" X_=0 timeout 120 "$KB" --shapes "$SHAPES" --dtypes f16 --paths auto --iters 7 --unchecked \
    >"$OUT/more/gemv_$name.txt" 2>&1
}
if [[ -x $KB ]]; then
  for round in 1 2; do
    gemv "planned_$round"
    for ct in 2 4 8 16 32; do gemv "ct${ct}_$round" EXP_GEMV_NARROW=1 EXP_GEMV_CT=$ct; done
    gemv "wide_$round" EXP_GEMV_NARROW=0
  done
  for loads in 8 32; do for ct in 4 8; do gemv "ct${ct}_l${loads}" EXP_GEMV_NARROW=1 EXP_GEMV_CT=$ct EXP_GEMV_LOADS=$loads; done; done
fi
if [[ ${CLOCKS:-1} == 1 ]]; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,utilization.gpu,pstate --format=csv,noheader -lms 5 \
    >"$OUT/more/trace.csv" 2>&1 &
  TRACE=$!
  sleep 2
  startup "$LIB" ours-nocache ours-nocache cold fp16 1 2
  startup "$LIB" nointerim ours-nocache cold fp16 1 2 X_=0 interim_kernels=0
  startup "$LIB" peer peer cold fp16 1 1
  startup "$LIB" ours-nocache ours-nocache warm fp16 1 2
  startup "$LIB" peer peer warm fp16 1 1
  # The experiment build with the GPU kept busy for a while after the device opens (EXP_CLOCK_WARMUP ms).
  EXP=.carry/exp/libonnxruntime_ep_wgpu.so
  if [[ -f $EXP ]]; then
    startup "$EXP" spin400ni ours-nocache cold fp16 1 2 EXP_CLOCK_WARMUP=400 interim_kernels=0
    startup "$EXP" spin400 ours-nocache cold fp16 1 2 EXP_CLOCK_WARMUP=400
    startup "$EXP" spin200 ours-nocache warm fp16 1 2 EXP_CLOCK_WARMUP=200
  fi
  kill "$TRACE" 2>/dev/null
  python3 bench/clock_trace.py "$OUT/more/trace.csv" "$OUT"/more/*_{cold,warm}_1.json >"$OUT/more/clocks.txt" 2>&1
fi
tar czf "$OUT/all.tgz" -C "$OUT" more gpu.txt && rm -rf "$OUT/more"
cat "$OUT/gpu.txt"
for f in planned_1 ct2_1 ct4_1 ct8_1 ct16_1 ct32_1 wide_1; do
  echo "== $f"; tar xzf "$OUT/all.tgz" -O "more/gemv_$f.txt" 2>/dev/null | grep -E "^1x" | awk '{print $1, $4, $5, $7}' | sort -u
done
tar xzf "$OUT/all.tgz" -O more/speed1_1.txt 2>/dev/null | grep -E "^\| whisper" | tail -6
tar xzf "$OUT/all.tgz" -O more/clocks.txt 2>/dev/null | cut -c1-400
python3 bench/startup_table.py "$OUT/all.tgz" 2>/dev/null | grep -E "^\| (ours|peer|noint)" | head -12
