#!/usr/bin/env bash
# Fortieth session (no device was lent), for issue 11's fp32 target: Whisper-tiny fp32 with its SIMT products split
# along K (EXP_SIMT_SPLIT=N: fc2 1500x384x1536; N@384: its out projection 1500x384x384 too), against the same
# library with the variable unset; then its numpy runs with the output read back in parts (EXP_READBACK_PARTS).
# Stage the experiment build at .carry/exp/libonnxruntime_ep_wgpu.so (`cargo build --release -p
# onnxruntime-ep-wgpu --features wgsl-override`, stripped); carry [".carry", ".whl", ".gl"].
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
# Prefix profiles of three configurations (PREFIX), then host splits of each (SPLITS) alternating, two rounds.
EXP=.carry/exp/libonnxruntime_ep_wgpu.so
if [[ -f $EXP ]]; then
  for cfg in ${PREFIX:-0 3 3@384}; do
    if [[ $cfg == 0 ]]; then unset EXP_SIMT_SPLIT; else export EXP_SIMT_SPLIT=$cfg; fi
    timeout 100 python3 bench/prefix_profile.py --lib "$EXP" --dtypes fp32 --rounds 2 >"$OUT/prefix_s${cfg/@/k}.txt" 2>&1
  done
  for r in 1 2; do
    for cfg in 0 ${SPLITS:-2 3 4 2@384 3@384}; do
      if [[ $cfg == 0 ]]; then unset EXP_SIMT_SPLIT; else export EXP_SIMT_SPLIT=$cfg; fi
      timeout 100 python3 bench/host_split.py --lib "$EXP" --runs 300 --dtypes fp32 --bound >"$OUT/hs_s${cfg/@/k}_$r.txt" 2>&1
    done
  done
  unset EXP_SIMT_SPLIT
  # The 2.3 MB output read back in parts (EXP_READBACK_PARTS): its transfer overlapping the host's copy.
  for r in 1 2; do
    for parts in 0 2 4; do
      if [[ $parts == 0 ]]; then unset EXP_READBACK_PARTS; else export EXP_READBACK_PARTS=$parts; fi
      timeout 100 python3 bench/host_split.py --lib "$EXP" --runs 300 --dtypes fp32 >"$OUT/hs_rb${parts}_$r.txt" 2>&1
    done
  done
  unset EXP_READBACK_PARTS
fi
cat "$OUT/gpu.txt"
for f in "$OUT"/hs_s*_*.txt "$OUT"/hs_rb*_*.txt; do [[ -f $f ]] && grep -h "^| whisper" "$f" | sed "s|^|$(basename "$f" .txt) |" | cut -c1-150; done
grep -hE "^## |Gemm\+Add" "$OUT"/prefix_s*.txt 2>/dev/null | cut -c1-120
