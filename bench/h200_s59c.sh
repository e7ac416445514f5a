#!/usr/bin/env bash
# Fifty-ninth session, third call (issue 18): the one-row GEMV's forms measured where they run, in a bound decode
# token (Llama-3.2-1B fp16, genai builder): the experiment build (.carry/exp/, `--features
# ep-wgpu-kernels/wgsl-override`) with every narrow GEMV forced to EXP_GEMV_CT column lanes or EXP_GEMV_LOADS loads
# in flight, each setting in its own process with each dispatch's cost in the run (bench/decode_ab.py --prefix).
# Stage: GENAI=1 KERNEL_BENCH=0 bash bench/h200_stage.sh, the experiment library in .carry/exp/; goldens/ and
# docs/data/ moved out; carry [".carry", ".whl", ".gl"]. SETTINGS: "label:VAR=VALUE,VAR=VALUE ...".
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
genai_models "${PRECISIONS:-fp16}" || exit 2
EXP=$(readlink -f .carry/exp/libonnxruntime_ep_wgpu.so)
for model in "$MODELS"/*/; do
  for entry in ${SETTINGS:-"default:X_=0" "ct8:EXP_GEMV_CT=8" "ct4:EXP_GEMV_CT=4" "ct2:EXP_GEMV_CT=2" "l8:EXP_GEMV_LOADS=8" "l32:EXP_GEMV_LOADS=32"}; do
    label=${entry%%:*}
    IFS=, read -ra vars <<<"${entry#*:}"
    env "${vars[@]}" timeout 150 python3 bench/decode_ab.py --model "$model" --lib "$EXP" --profile \
      --prefix "$OUT/prefix.jsonl" --label "$(basename "$model") $label" 2>/dev/null | tail -1 | tee -a "$OUT/decode_ab.jsonl"
  done
done
(cd "$OUT" && tar czf all.tgz decode_ab.jsonl prefix.jsonl gpu.txt 2>/dev/null)
python3 bench/prefix_table.py "$OUT/prefix.jsonl" "$OUT/decode_ab.jsonl" --by step
cat "$OUT/gpu.txt"
