#!/usr/bin/env bash
# Sixty-first session, second call (issue 18), on the warm machine of the first: Llama-3.2-1B fp16 one token over a
# past of CTX (512) back to back, the narrow bandwidth GEMVs at 256 (default), 512 and 1024 invocations per workgroup
# (EXP_GEMV_THREADS, the experiment build staged as `.carry/bench/`'s library), ROUNDS rounds (2), each in a fresh
# process, with the GPU time per op kind (--profile). SETTINGS as in h200_s61.sh ("label:VAR=VALUE,VAR=VALUE:OPTION").
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
genai_models "${PRECISIONS:-fp16}" >/dev/null || exit 2
for round in $(seq "${ROUNDS:-2}"); do
  for model in "$MODELS"/*fp16*/; do
    for setting in ${SETTINGS:-"default::" "t512:EXP_GEMV_THREADS=512:" "t1024:EXP_GEMV_THREADS=1024:"}; do
      IFS=: read -r label var opt <<<"$setting"
      args=(); [[ -n $opt ]] && args=(--option "$opt")
      # shellcheck disable=SC2086 # VAR=VALUE pairs, comma-separated
      env ${var//,/ } X_=0 timeout 60 python3 bench/decode_ab.py --model "$model" --lib "$LIB" --profile --ctx "${CTX:-512}" \
        "${args[@]}" --label "$(basename "$model") $label r$round" 2>/dev/null | tail -1 >>"$OUT/decode_ab.jsonl"
    done
  done
done
python3 "$(dirname "${BASH_SOURCE[0]}")/decode_table.py" "$OUT/decode_ab.jsonl"
cat "$OUT/gpu.txt"
