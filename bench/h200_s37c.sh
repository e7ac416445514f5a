#!/usr/bin/env bash
# The thirty-seventh session's last call: what wgpu's zero-initialised workgroup memory costs. The experiment
# build in .carry/exp/ (`--features wgsl-override`) with and without EXP_NO_ZERO_INIT=1, alternating: the
# attention decode steps once each, then genai's Llama-3.2-1B int4 decode at a past of 512 (back to back), two
# rounds. Stage genai (`GENAI=1 KERNEL_BENCH=0 bash bench/h200_stage.sh`), put the stripped experiment build in
# .carry/exp/, remove .carry/bench/; carry [".carry", ".whl", ".gl"].
#   OUT=$OUT bash bench/h200_s37c.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
LIB=.carry/exp/libonnxruntime_ep_wgpu.so
: >"$OUT/ab_attention.txt"
for z in 0 1; do
  echo "== zero-init-off=$z" >>"$OUT/ab_attention.txt"
  EXP_NO_ZERO_INIT=$z timeout 60 python3 bench/attention_bench.py --lib "$LIB" --only 'decode_s1x(512|4096)_' \
    --no-torch >>"$OUT/ab_attention.txt" 2>&1
done
python3 bench/summary.py attention "$OUT/ab_attention.txt"
mkdir -p /tmp/genai && tar -xJf .carry/genai/genai.tar.xz -C /tmp/genai || exit 2
export PYTHONPATH=/tmp/genai:$PYTHONPATH
timeout 120 python3 bench/genai_build.py --out /tmp/genai_models --only llama --precisions int4 2>&1 | tail -1
for r in 1 2; do
  for z in 0 1; do
    EXP_NO_ZERO_INIT=$z timeout 40 python3 bench/decode_ab.py --model /tmp/genai_models/llama-3.2-1b-int4 \
      --lib "$LIB" --ctx 512 --label "int4 zero-init-off=$z r$r" 2>/dev/null | tail -1 >>"$OUT/decode_ab.jsonl"
  done
done
python3 bench/summary.py decode "$OUT/decode_ab.jsonl"
tar czf /tmp/all.tgz -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv /tmp/all.tgz "$OUT/all.tgz"
