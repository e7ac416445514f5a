#!/usr/bin/env bash
# Sixtieth session, last call (issues 18 and 13): the wide decode form on a GPU. The split-KV tests
# (.carry/tests/ops_attention_gpu, built here with `cargo test --release -p ep-wgpu-kernels --test ops_attention_gpu
# --no-run`) and the GQA, LLM and attention pytest files with the release library (.carry/bench/); then Llama-3.2-1B
# fp16 and int4 (genai builder) one token over a past of 512, back to back, the default against
# `decode_attention_fold=1` (GroupQueryAttention's preparation folded into the wide kernel), ROUNDS rounds (2);
# PRECISIONS (fp16,int4) picks the models.
# Stage: GENAI=1 KERNEL_BENCH=0 bash bench/h200_stage.sh, the test binary in .carry/tests/; goldens/ and docs/data/
# moved out; carry [".carry", ".whl", ".gl"].
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
timeout 200 .carry/tests/ops_attention_gpu --test-threads 4 >"$OUT/rust_tests.txt" 2>&1
grep -E "test result|FAILED|panicked" "$OUT/rust_tests.txt" | head -5
ONNXRUNTIME_EP_WGPU_LIB=$PWD/$LIB timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_gqa.py \
  tests/test_llm_model.py tests/test_attention.py >"$OUT/pytest.txt" 2>&1
tail -2 "$OUT/pytest.txt"
genai_models "${PRECISIONS:-fp16,int4}" || exit 2
for model in "$MODELS"/*/; do
  for round in $(seq "${ROUNDS:-2}"); do
    for opt in "default:" "fold:decode_attention_fold=1"; do
      args=(); [[ -n ${opt#*:} ]] && args=(--option "${opt#*:}")
      timeout 120 python3 bench/decode_ab.py --model "$model" --lib "$LIB" "${args[@]}" \
        --label "$(basename "$model") ${opt%%:*} r$round" 2>/dev/null | tail -1 >>"$OUT/decode_ab.jsonl"
    done
  done
done
python3 "$(dirname "${BASH_SOURCE[0]}")/decode_table.py" "$OUT/decode_ab.jsonl"
cat "$OUT/gpu.txt"
