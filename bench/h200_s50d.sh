#!/usr/bin/env bash
# Fiftieth session, call 3: (1) issue 13's decode step against its key chunks: `attention_bench --only decode` on the
# experiment build (.carry/exp/, this tree with --features wgsl-override) as planned, with EXP_DECODE_SPLITS=N
# (about N chunks), and with EXP_LAST_MAX_ROUNDS=16 (the kernel's last workgroup combines up to 64 chunks instead of
# 32, so Skv=4096 takes no combine dispatch), two rounds; (2) bench/h200_s50c.sh (whole CNNs, base and new build).
# Carry [".carry/bench", ".carry/base", ".carry/exp", ".whl", ".gl"]; writes $OUT/all.tgz and $OUT/cnn.tgz.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
mkdir -p "$OUT/more"
EXP=$PWD/.carry/exp/libonnxruntime_ep_wgpu.so
for r in 1 2; do
  for cfg in plan S32 S16 S128 R16 R16S32; do
    env=()
    case $cfg in
      S*) env=(EXP_DECODE_SPLITS=${cfg#S}) ;;
      R16) env=(EXP_LAST_MAX_ROUNDS=16) ;;
      R16S32) env=(EXP_LAST_MAX_ROUNDS=16 EXP_DECODE_SPLITS=32) ;;
    esac
    env "${env[@]}" timeout 90 python3 bench/attention_bench.py --lib "$EXP" --only decode --no-torch \
      >"$OUT/more/decode_${cfg}_$r.txt" 2>&1
  done
done
tar czf "$OUT/all.tgz" -C "$OUT" more gpu.txt && rm -rf "$OUT/more"
echo "| config | round | 4096 d128 | 64 d64 | 512 d64 | 4096 d64 | 32768 d128 | gemma 4096 d256 |"
for r in 1 2; do
  for cfg in plan S32 S16 S128 R16 R16S32; do
    row=$(tar xzf "$OUT/all.tgz" -O "more/decode_${cfg}_$r.txt" | python3 -c "
import json, sys
d = {}
for l in sys.stdin:
    if l.startswith('{'):
        j = json.loads(l); d[j['case']] = j['ours_gpu_ms'] * 1e3
print(' | '.join(f'{d[k]:.1f}' if k in d else '-' for k in ['decode_s1x4096_h32kv8_d128', 'decode_s1x64_h32kv8_d64',
  'decode_s1x512_h32kv8_d64', 'decode_s1x4096_h32kv8_d64', 'decode_s1x32768_h32kv8_d128', 'gemma_decode_s1x4096_h4kv1_d256']))")
    echo "| $cfg | $r | $row |"
  done
done
OUT="$OUT/cnn" bash bench/h200_s50c.sh
