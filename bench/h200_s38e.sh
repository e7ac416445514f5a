#!/usr/bin/env bash
# Thirty-eighth session: does less code per K slice cut what the fused split f32 kernel pays in a run? Whisper-tiny
# fp32's Q/K/V product on a 16-deep slice (EXP_SPLIT_FUSED=16x1x1, the experiment build in .carry/exp) against the
# planned 32-deep one: prefix profiles and host splits, alternating. Carry [".carry", ".whl", ".gl"].
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
EXP=.carry/exp/libonnxruntime_ep_wgpu.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
for cfg in k32 k16; do
  if [[ $cfg == k16 ]]; then export EXP_SPLIT_FUSED=${SHAPES:-16x1x1}; else unset EXP_SPLIT_FUSED; fi
  timeout 100 python3 bench/prefix_profile.py --lib "$EXP" --dtypes fp32 --rounds 3 >"$OUT/prefix_$cfg.txt" 2>&1
done
for r in 1 2; do
  for cfg in k32 k16; do
    if [[ $cfg == k16 ]]; then export EXP_SPLIT_FUSED=${SHAPES:-16x1x1}; else unset EXP_SPLIT_FUSED; fi
    timeout 100 python3 bench/host_split.py --lib "$EXP" --runs 300 --dtypes fp32 --bound >"$OUT/hs_${cfg}_$r.txt" 2>&1
    grep -h "^| whisper" "$OUT/hs_${cfg}_$r.txt" | sed "s/^/$cfg r$r /"
  done
done
grep -hE "^## |Q/K/V" "$OUT"/prefix_k*.txt
