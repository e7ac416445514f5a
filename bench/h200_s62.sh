#!/usr/bin/env bash
# Sixty-second session, first call (issues 18 and 11): what GroupQueryAttention's one-token preparation dispatch costs
# inside a decode token, then Whisper-tiny and Llama-3.2-1B beside the peer.
#   decode   Llama-3.2-1B (genai builder) fp16 and int4 (PRECISIONS), one token over a past of 512, back to back,
#            SETTINGS ("label:VAR=VALUE,VAR=VALUE:OPTION:ARGS" each; default: the default, and `EXP_SKIP=gqa_prep`,
#            the experiment build leaving the preparation dispatch out: timing only; `decode_attention_fold=1`; each also
#            with --shared, genai's cache layout, where the present is the past's own range), ROUNDS rounds of fp16 (2; int4
#            one), each in a fresh process, with the GPU time per op kind
#   whisper  bench/run.py --full --io-binding on Whisper-tiny fp32/fp16 beside the peer and the CPU EP
#   peer     bench/genai_bench.py --providers ours,peer --no-genai on fp16 (prefill 512/1024, decode 512/2048)
# Each part stops within the call's 600 s (BUDGET, 570). Stage: GENAI=1 KERNEL_BENCH=0 bash bench/h200_stage.sh, then
# the experiment build (--features ep-wgpu-kernels/wgsl-override, stripped) as .carry/bench's library; goldens/ and
# docs/data/ moved out; carry [".carry", ".whl", ".gl"].
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
gpu_info
genai_models "${PRECISIONS:-fp16,int4}" || exit 2
# decode_settings MODEL ROUND: every setting on one model, each in a fresh process.
decode_settings() {
  local setting label var opt extra args
  for setting in ${SETTINGS:-"default:::" "noprep:EXP_SKIP=gqa_prep::" "fold::decode_attention_fold=1:" \
      "default_sh:::--shared" "noprep_sh:EXP_SKIP=gqa_prep::--shared" "fold_sh::decode_attention_fold=1:--shared"}; do
    IFS=: read -r label var opt extra <<<"$setting"
    (($(left) > 40)) || { echo "skipped: $1 $label r$2 (time)"; continue; }
    args=(); [[ -n $opt ]] && args=(--option "$opt")
    # shellcheck disable=SC2086 # VAR=VALUE pairs, comma-separated; ARGS words
    env ${var//,/ } X_=0 timeout 60 python3 bench/decode_ab.py --model "$1" --lib "$LIB" --profile $extra \
      "${args[@]}" --label "$(basename "$1") $label r$2" 2>>"$OUT/more/decode_err.txt" | tail -1 >>"$OUT/decode_ab.jsonl"
  done
}
# The first round of fp16, Whisper, the first of int4, then further rounds of fp16 while time is left.
decode_settings "$(ls -d "$MODELS"/*fp16*/ | head -1)" 1
if (($(left) > 90)); then
  whisper_speed whisper
  grep -E "^\| whisper" "$OUT/more/whisper.txt" | tail -6
fi
for model in "$MODELS"/*int4*/; do decode_settings "$model" 1; done
for round in $(seq 2 "${ROUNDS:-2}"); do decode_settings "$(ls -d "$MODELS"/*fp16*/ | head -1)" "$round"; done
if (($(left) > 150)); then
  GENAI_PROFILE=0 timeout $(($(left) - 30)) python3 bench/genai_bench.py --models "$MODELS" --lib "$LIB" \
    --providers ours,peer --no-genai --only fp16 --out "$OUT/more/genai_fp16" >"$OUT/more/genai_fp16.txt" 2>&1
  grep '^|' "$OUT/more/genai_fp16.txt" | tail -3
fi
(cd "$OUT" && tar czf all.tgz more decode_ab.jsonl gpu.txt 2>/dev/null)
python3 "$(dirname "${BASH_SOURCE[0]}")/decode_table.py" "$OUT/decode_ab.jsonl"
cat "$OUT/gpu.txt"
