#!/usr/bin/env bash
# Issue 18: each decode product's GPU time on its own (one program runs the Q/K/V, O, gate/up and down products at
# different workgroup counts; `bench/decode_ab.py --profile --by-grid` keeps them apart), genai's Llama-3.2-1B int4
# and fp16 at CTX (512): .carry/base/ (a build before a change), .carry/exp/ (the experiment build after it) with
# the skip-norm folds on and off (EXP_NO_FOLD), back to back ROUNDS times alternating, then one profile each. Stage
# the genai wheels (`GENAI=1 KERNEL_BENCH=0 bash bench/h200_stage.sh`) and both builds (stripped), move goldens/
# and docs/data/ out, carry [".carry", ".whl", ".gl"]:
#   OUT=$OUT bash bench/h200_decode_grid.sh
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
mkdir -p /tmp/genai && tar -xJf .carry/genai/genai.tar.xz -C /tmp/genai || exit 2
export PYTHONPATH=/tmp/genai:$PYTHONPATH
MODELS=${MODELS:-/tmp/genai_models}
timeout 200 python3 bench/genai_build.py --out "$MODELS" --only llama --precisions "${PRECISIONS:-fp16,int4}" 2>&1 | tail -2
E=$(readlink -f .carry/exp/libonnxruntime_ep_wgpu.so)
B=$(readlink -f .carry/base/libonnxruntime_ep_wgpu.so)
PRECISIONS=${PRECISIONS:-fp16,int4}
# label | library | EXP_NO_FOLD (read by the experiment build only)
CONFIGS=("base|$B|" "new|$E|" "new-nonorm|$E|norm,nbits")
for m in ${PRECISIONS//,/ }; do
  for r in $(seq "${ROUNDS:-2}"); do
    for cfg in "${CONFIGS[@]}"; do
      IFS='|' read -r lab lib off <<<"$cfg"
      [[ -f $lib ]] || continue
      EXP_NO_FOLD=$off timeout 60 python3 bench/decode_ab.py --model "$MODELS/llama-3.2-1b-$m" --lib "$lib" \
        --ctx "${CTX:-512}" --label "$m $lab r$r" 2>/dev/null | tail -1 >>"$OUT/decode_ab.jsonl"
    done
  done
  for cfg in "${CONFIGS[@]}"; do
    IFS='|' read -r lab lib off <<<"$cfg"
    [[ -f $lib ]] || continue
    EXP_NO_FOLD=$off ONNXRUNTIME_EP_WGPU_PROFILE_DISPATCHES=1 timeout 60 python3 bench/decode_ab.py \
      --model "$MODELS/llama-3.2-1b-$m" --lib "$lib" --ctx "${CTX:-512}" --label "$m $lab" --profile --by-grid \
      2>/dev/null | tail -1 >>"$OUT/decode_grid.jsonl"
  done
done
python3 bench/summary.py decode "$OUT/decode_ab.jsonl" "$OUT/decode_grid.jsonl" --top 99
