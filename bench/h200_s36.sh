#!/usr/bin/env bash
# The thirty-sixth session's call (issue 15's cold compiles, issue 11's fp32 Whisper paths; data and figures in
# docs/data/h100-2026-12-05-s36/): (1) bench/h200_cold_compiles.sh with the experiment build as EXP_COOP_DEPTH=1
# (one register set in flight); (2) bench/h200_host_ab.sh, fp16 and fp32 Whisper, the staged build against
# .carry/base/ (when present), the experiment build with one register set and conv_algorithm=implicit; (3)
# bench/startup.py with the default configuration, without the pipeline cache and the peer; (4) the split f32
# attention at two forced tilings. Stage as bench/README.md's "next calls" item 3 says, plus the experiment build
# in .carry/exp/; carry [".carry", ".whl", ".gl"]. Everything under $OUT is packed into $OUT/all.tgz at the end
# (a device call returns a limited number of files).
#   OUT=$OUT bash bench/h200_s36.sh
set -uo pipefail
export EXP_COOP_DEPTH=1
X="depth1=.carry/exp/libonnxruntime_ep_wgpu.so"
OUT=$OUT EXTRA="$X" bash bench/h200_cold_compiles.sh 2>&1 | tail -50
DTYPES=fp16,fp32 ROUNDS=2 EXTRA="$X" OPTS="implicit=conv_algorithm=implicit" OUT=$OUT bash bench/h200_host_ab.sh 2>&1 |
  grep -v Warn | tail -24
unset EXP_COOP_DEPTH
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
timeout 200 python3 bench/startup.py --lib "$LIB" --configs ours-default,ours-nocache,peer --modes cold,warm --repeat 3 \
  --json "$OUT/startup.json" >"$OUT/startup.txt" 2>&1
grep "^| ours\|^| peer" "$OUT/startup.txt" | head -8
for t in 2x32 2x16; do
  EXP_ATTN_TILING=x3d64=$t timeout 100 python3 bench/host_split.py --lib .carry/exp/libonnxruntime_ep_wgpu.so --runs 300 \
    --dtypes fp32 --dispatches 4 >"$OUT/tiling_$t.txt" 2>&1
  grep "^| whisper" "$OUT/tiling_$t.txt" | sed "s/^/$t /"
  grep -o '"top_dispatches.*' "$OUT/tiling_$t.txt" | cut -c1-300
done
tar czf /tmp/all.tgz -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv /tmp/all.tgz "$OUT/all.tgz"
