#!/usr/bin/env bash
# Fifty-sixth session, issue 15: with the plain f16 attention (compiles in ~118 ms beside the others) and the rolled
# GEMMs, do interim plans still pay? bench/startup.py, settle 4 s, the experiment build (.carry/exp), ROUNDS rounds
# (default 2), each round, Whisper-tiny fp16:
#   base    as built (interim plans, tensor-core compiles deferred) ×2;  nodefer  EXP_NO_DEFER=1 ×2
#   noint   interim_kernels=0 (the first run waits for the tensor-core pipelines) ×2;  peer ×1
#   warm    noint and the peer, warm, ×1 each
# and in the first round Whisper-tiny fp32 cold: base32, noint32 (its split f32 attention is not rolled), peer32.
# Stage: as h200_s56b.sh. Writes $OUT/all.tgz; the table last (bench/startup_table.py).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
EXP=.carry/exp/libonnxruntime_ep_wgpu.so
mkdir -p "$OUT/more"
start() { startup "$EXP" "$@"; } # name config mode dtype round repeat [VAR=VALUE] [option]
for r in $(seq 1 "${ROUNDS:-2}"); do
  start base ours-nocache cold fp16 "$r" 2
  start nodefer ours-nocache cold fp16 "$r" 2 EXP_NO_DEFER=1
  start noint ours-nocache cold fp16 "$r" 2 X_=0 interim_kernels=0
  start peer peer cold fp16 "$r" 1
  start noint ours-nocache warm fp16 "$r" 1 X_=0 interim_kernels=0
  start peer peer warm fp16 "$r" 1
  if [[ $r == 1 ]]; then
    start base32 ours-nocache cold fp32 "$r" 1
    start noint32 ours-nocache cold fp32 "$r" 1 X_=0 interim_kernels=0
    start peer32 peer cold fp32 "$r" 1
  fi
done
tar czf "$OUT/all.tgz" -C "$OUT" more gpu.txt && rm -rf "$OUT/more"
cat "$OUT/gpu.txt"
python3 bench/startup_table.py "$OUT/all.tgz"
