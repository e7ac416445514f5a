#!/usr/bin/env bash
# Thirty-eighth session: Whisper-tiny fp32 with its Q/K/V products on the serial split kernel (76 KB of machine code)
# instead of the fused one (113 KB), which pays ~20 µs more in a run than alone (bench/prefix_profile.py): prefix
# profiles and host splits (bound, back to back) of both, alternating. Carry [".carry", ".whl", ".gl"].
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
timeout 120 python3 bench/prefix_profile.py --lib "$LIB" --dtypes fp32 -o f32_split_fused=0 >"$OUT/prefix_serial.txt" 2>&1
for r in 1 2; do
  for cfg in default serial; do
    o=(); [[ $cfg == serial ]] && o=(-o f32_split_fused=0)
    timeout 120 python3 bench/host_split.py --lib "$LIB" --runs 300 --dtypes fp32 --bound "${o[@]}" >"$OUT/hs_${cfg}_$r.txt" 2>&1
    grep -h "^| whisper" "$OUT/hs_${cfg}_$r.txt" | sed "s/^/$cfg r$r /"
  done
done
grep -E "^## |QKV|Q/K/V" "$OUT/prefix_serial.txt"
