#!/usr/bin/env bash
# The thirty-seventh session's call (issues 13 and 18: the decode kernel's last workgroup combining its chunks,
# and the int4 LM head's norm apart since 1a72c5a). Carried in .carry/s37.tar.xz: pre.so (1a72c5a~1), base.so
# (the landing before this work), exp.so (this build with the `wgsl-override` feature: EXP_NO_FOLD=last puts the
# combine dispatch back, the same kernel text otherwise) and oag, the `ops_attention_gpu` test binary.
#   (1) correctness on this driver: oag's decode tests (each step run twice: a chunk counter left behind fails
#       the second run), then tests/test_gqa.py with exp.so;
#   (2) attention_bench's decode cases, base / new (the planned chunks: 64 at 4096 keys, combined by a dispatch)
#       / 32 chunks (EXP_DECODE_SPLITS, combined by the last workgroup) / 32 chunks with the dispatch, alternating
#       ROUNDS times;
#   (3) genai's Llama-3.2-1B decode at a past of CTX (512), int4 (pre, base, new, new-dispatch) and fp16 (base,
#       new, new-dispatch), decode_ab back to back alternating ROUNDS times, then one --profile --by-grid each
#       (not pre's).
# Stage: GENAI=1 KERNEL_BENCH=0 bash bench/h200_stage.sh, then .carry/s37.tar.xz (bench/README.md, "The next
# calls"); carry [".carry", ".whl", ".gl"]. $OUT is packed into $OUT/all.tgz at the end.
#   OUT=$OUT bash bench/h200_s37.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
S=/tmp/s37 && mkdir -p $S && tar -xJf .carry/s37.tar.xz -C $S || exit 2
LIB=$S/exp.so
ROUNDS=${ROUNDS:-2}
echo "== kernel tests" && timeout 300 $S/oag decode >"$OUT/kernel_tests.txt" 2>&1
grep -E "test result|panicked|adapter" "$OUT/kernel_tests.txt" | head -5
ONNXRUNTIME_EP_WGPU_LIB=$LIB timeout 150 python3 -m pytest -q -x -p no:cacheprovider tests/test_gqa.py \
  >"$OUT/tests.txt" 2>&1
tail -2 "$OUT/tests.txt"
: >"$OUT/ab_attention.txt"
for r in $(seq "$ROUNDS"); do
  for cfg in "base|$S/base.so||" "new|$LIB||" "new-s32|$LIB||32" "new-s32-dispatch|$LIB|last|32"; do
    IFS='|' read -r lab lib off splits <<<"$cfg"
    echo "== $lab round $r" >>"$OUT/ab_attention.txt"
    EXP_NO_FOLD=$off EXP_DECODE_SPLITS=$splits timeout 120 python3 bench/attention_bench.py --lib "$lib" \
      --only decode --no-torch >>"$OUT/ab_attention.txt" 2>&1
  done
done
python3 bench/summary.py attention "$OUT/ab_attention.txt"
mkdir -p /tmp/genai && tar -xJf .carry/genai/genai.tar.xz -C /tmp/genai || exit 2
export PYTHONPATH=/tmp/genai:$PYTHONPATH
MODELS=/tmp/genai_models
timeout 200 python3 bench/genai_build.py --out "$MODELS" --only llama --precisions fp16,int4 2>&1 | tail -2
for m in int4 fp16; do
  CONFIGS=("base|$S/base.so|" "new|$LIB|" "new-dispatch|$LIB|last")
  [[ $m == int4 ]] && CONFIGS=("pre|$S/pre.so|" "${CONFIGS[@]}")
  for r in $(seq "$ROUNDS"); do
    for cfg in "${CONFIGS[@]}"; do
      IFS='|' read -r lab lib off <<<"$cfg"
      EXP_NO_FOLD=$off timeout 60 python3 bench/decode_ab.py --model "$MODELS/llama-3.2-1b-$m" --lib "$lib" \
        --ctx "${CTX:-512}" --label "$m $lab r$r" 2>/dev/null | tail -1 >>"$OUT/decode_ab.jsonl"
    done
  done
  for cfg in "${CONFIGS[@]:1}"; do
    IFS='|' read -r lab lib off <<<"$cfg"
    EXP_NO_FOLD=$off ONNXRUNTIME_EP_WGPU_PROFILE_DISPATCHES=1 timeout 60 python3 bench/decode_ab.py \
      --model "$MODELS/llama-3.2-1b-$m" --lib "$lib" --ctx "${CTX:-512}" --label "$m $lab" --profile --by-grid \
      2>/dev/null | tail -1 >>"$OUT/decode_grid.jsonl"
  done
done
python3 bench/summary.py decode "$OUT/decode_ab.jsonl" "$OUT/decode_grid.jsonl"
tar czf /tmp/all.tgz -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv /tmp/all.tgz "$OUT/all.tgz"
