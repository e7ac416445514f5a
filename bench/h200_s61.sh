#!/usr/bin/env bash
# Sixty-first session, first call (issues 18, 13, 11): GroupQueryAttention's preparation folded into the wide decode
# kernel, against the default, then the wide form's tests on the GPU, then (on an H200 only) Whisper-tiny for issue 11.
#   fold     Llama-3.2-1B (genai builder) fp16 and int4 (PRECISIONS), one token over a past of 512, back to back,
#            SETTINGS ("label:VAR=VALUE:OPTION" each): the default, `decode_attention_fold=1`, and the narrow GEMVs
#            at 512 invocations (EXP_GEMV_THREADS, an experiment build as the library), ROUNDS rounds (2), each in a
#            fresh process, with the GPU time per op kind (--profile)
#   tests    .carry/tests/ops_attention_gpu (cargo test --release -p ep-wgpu-kernels --test ops_attention_gpu
#            --no-run) and tests/test_gqa.py, test_llm_model.py, test_attention.py with the release library
#   whisper  bench/run.py --full --io-binding on Whisper-tiny fp32/fp16 beside the peer and the CPU EP (H200 only)
# Each part stops within the call's 600 s (a part that would start too late is skipped and says so).
# Stage: GENAI=1 KERNEL_BENCH=0 bash bench/h200_stage.sh, the test binary in .carry/tests/; goldens/ and docs/data/
# moved out; carry [".carry", ".whl", ".gl"].
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
mkdir -p "$OUT/more"
left() { echo $((${BUDGET:-570} - SECONDS)); }
genai_models "${PRECISIONS:-fp16,int4}" || exit 2
for round in $(seq "${ROUNDS:-2}"); do
  for model in "$MODELS"/*/; do
    for setting in ${SETTINGS:-"default::" "fold::decode_attention_fold=1" "t512:EXP_GEMV_THREADS=512:"}; do
      IFS=: read -r label var opt <<<"$setting"
      (($(left) > 60)) || { echo "skipped: $model $label r$round (time)"; continue; }
      args=(); [[ -n $opt ]] && args=(--option "$opt")
      env "${var:-X_=0}" timeout 90 python3 bench/decode_ab.py --model "$model" --lib "$LIB" --profile "${args[@]}" \
        --label "$(basename "$model") $label r$round" 2>>"$OUT/more/decode_err.txt" | tail -1 >>"$OUT/decode_ab.jsonl"
    done
  done
done
if (($(left) > 120)); then
  timeout 100 .carry/tests/ops_attention_gpu --test-threads 4 >"$OUT/more/rust_tests.txt" 2>&1
  grep -E "test result|FAILED|panicked" "$OUT/more/rust_tests.txt" | head -5
fi
if grep -q H200 "$OUT/gpu.txt" && (($(left) > 200)); then
  whisper_speed whisper
  grep -E "^\| whisper" "$OUT/more/whisper.txt" | tail -6
fi
if (($(left) > 60)); then
  ONNXRUNTIME_EP_WGPU_LIB=$PWD/$LIB timeout $(($(left) - 20)) python3 -m pytest -q -p no:cacheprovider \
    tests/test_gqa.py tests/test_llm_model.py tests/test_attention.py >"$OUT/more/pytest.txt" 2>&1
  tail -2 "$OUT/more/pytest.txt"
fi
(cd "$OUT" && tar czf all.tgz more decode_ab.jsonl gpu.txt 2>/dev/null)
python3 "$(dirname "${BASH_SOURCE[0]}")/decode_table.py" "$OUT/decode_ab.jsonl"
cat "$OUT/gpu.txt"
