#!/usr/bin/env bash
# Sixtieth session (issues 13 and 18): where the decode attention's time goes inside a bound decode token
# (Llama-3.2-1B fp16, genai builder, a past of 512). The experiment build (.carry/exp/, `--features
# ep-wgpu-kernels/wgsl-override`) runs each setting in its own process with each dispatch's cost in the run
# (bench/decode_ab.py --prefix): the default, the hand-edited ablations of
# bench/experiments/decode_ablation/make.py (.carry/ablate/<name>/, EXP_WGSL_OVERRIDE) and forced key chunks
# (EXP_DECODE_SPLITS), and the wide form against the key chunks (EXP_WIDE_MAX_STEPS=0). The first call of the
# session also ran EXP_PREFETCH_MB (an experiment since removed: docs/performance/sessions-58-61.md). The table sums each kernel's cost in the run over the layers.
# Stage: GENAI=1 KERNEL_BENCH=0 bash bench/h200_stage.sh, the experiment library in .carry/exp/, the ablations in
# .carry/ablate/; goldens/ and docs/data/ moved out; carry [".carry", ".whl", ".gl"].
# SETTINGS: "label:VAR=VALUE,VAR=VALUE ..." (CTX=N: a past of N rows).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
genai_models "${PRECISIONS:-fp16}" || exit 2
EXP=$(readlink -f .carry/exp/libonnxruntime_ep_wgpu.so)
A=$(readlink -f .carry/ablate)
DEFAULT="default:X_=0 split:EXP_WIDE_MAX_STEPS=0"
DEFAULT="$DEFAULT nolast:EXP_WGSL_OVERRIDE=$A/nolast nopart:EXP_WGSL_OVERRIDE=$A/nopart"
DEFAULT="$DEFAULT noloop:EXP_WGSL_OVERRIDE=$A/noloop bare:EXP_WGSL_OVERRIDE=$A/bare s1:EXP_DECODE_SPLITS=1"
for model in "$MODELS"/*/; do
  for entry in ${SETTINGS:-$DEFAULT}; do
    label=${entry%%:*}
    IFS=, read -ra vars <<<"${entry#*:}"
    ctx=512  # a setting's CTX=N: the past's length
    for v in "${vars[@]}"; do [[ $v == CTX=* ]] && ctx=${v#CTX=}; done
    env "${vars[@]}" timeout 150 python3 bench/decode_ab.py --model "$model" --lib "$EXP" --profile --ctx "$ctx" \
      --prefix "$OUT/prefix.jsonl" --label "$(basename "$model") $label" 2>/dev/null | tail -1 | tee -a "$OUT/decode_ab.jsonl"
  done
done
python3 bench/prefix_table.py "$OUT/prefix.jsonl" "$OUT/decode_ab.jsonl" --by kernel
cat "$OUT/gpu.txt"
