#!/usr/bin/env bash
# The thirty-seventh session's second call (issues 13 and 18): the decode kernel's last-workgroup combine as first
# built (exp1.so, 79f0125) against a shorter tail, not kept (exp2.so: the first four chunks' columns loaded before the
# weights, each row's max and sum in one pass), and exp2.so with the combine dispatch (EXP_NO_FOLD=last); then
# Llama-3.2-1B int4 at a past of 2048 with the planned chunks against 32 and 16 (EXP_DECODE_SPLITS). Carried in
# .carry/s37b.tar.xz (exp1.so, exp2.so, oag: the ops_attention_gpu test binary); stage as for h200_s37.sh.
#   OUT=$OUT bash bench/h200_s37b.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
S=/tmp/s37b && mkdir -p $S && tar -xJf .carry/s37b.tar.xz -C $S || exit 2
ROUNDS=${ROUNDS:-2}
echo "== kernel tests" && timeout 200 $S/oag decode >"$OUT/kernel_tests.txt" 2>&1
grep -E "test result|panicked" "$OUT/kernel_tests.txt" | head -3
ONNXRUNTIME_EP_WGPU_LIB=$S/exp2.so timeout 150 python3 -m pytest -q -x -p no:cacheprovider tests/test_gqa.py \
  >"$OUT/tests.txt" 2>&1
tail -1 "$OUT/tests.txt"
: >"$OUT/ab_attention.txt"
for r in $(seq "$ROUNDS"); do
  for cfg in "exp1|$S/exp1.so|" "exp2|$S/exp2.so|" "exp2-dispatch|$S/exp2.so|last"; do
    IFS='|' read -r lab lib off <<<"$cfg"
    echo "== $lab round $r" >>"$OUT/ab_attention.txt"
    EXP_NO_FOLD=$off timeout 100 python3 bench/attention_bench.py --lib "$lib" --only 'decode_s1x(64|512|4096)_' \
      --no-torch >>"$OUT/ab_attention.txt" 2>&1
  done
done
python3 bench/summary.py attention "$OUT/ab_attention.txt"
mkdir -p /tmp/genai && tar -xJf .carry/genai/genai.tar.xz -C /tmp/genai || exit 2
export PYTHONPATH=/tmp/genai:$PYTHONPATH
MODELS=/tmp/genai_models
timeout 200 python3 bench/genai_build.py --out "$MODELS" --only llama --precisions fp16,int4 2>&1 | tail -2
run() {  # label lib EXP_NO_FOLD EXP_DECODE_SPLITS model ctx [extra]
  EXP_NO_FOLD=$3 EXP_DECODE_SPLITS=$4 timeout 60 python3 bench/decode_ab.py --model "$MODELS/llama-3.2-1b-$5" \
    --lib "$2" --ctx "$6" --label "$1" ${7:-} 2>/dev/null | tail -1
}
for r in $(seq "$ROUNDS"); do
  for m in int4 fp16; do
    run "$m 512 exp1 r$r" $S/exp1.so "" "" $m 512 >>"$OUT/decode_ab.jsonl"
    run "$m 512 exp2 r$r" $S/exp2.so "" "" $m 512 >>"$OUT/decode_ab.jsonl"
    run "$m 512 exp2-dispatch r$r" $S/exp2.so last "" $m 512 >>"$OUT/decode_ab.jsonl"
  done
  for sp in "" 32 16; do
    run "int4 2048 exp2 splits=${sp:-planned} r$r" $S/exp2.so "" "$sp" int4 2048 >>"$OUT/decode_ab.jsonl"
  done
done
ONNXRUNTIME_EP_WGPU_PROFILE_DISPATCHES=1 run "int4 512 exp2" $S/exp2.so "" "" int4 512 "--profile --by-grid" \
  >>"$OUT/decode_grid.jsonl"
python3 bench/summary.py decode "$OUT/decode_ab.jsonl" "$OUT/decode_grid.jsonl"
tar czf /tmp/all.tgz -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv /tmp/all.tgz "$OUT/all.tgz"
