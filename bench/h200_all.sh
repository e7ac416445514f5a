#!/usr/bin/env bash
# Every measurement of a session's work in one H200 device run (after `bash bench/h200_stage.sh` and, for the
# inspector, `cp target/release/inspect .carry/bench/`; carry [".carry", ".whl", ".gl"], timeout_s ≤ 600):
#   1. bench/attention_bench.py: the flash-attention kernels beside torch SDPA (f16);
#   2. bench/run.py --full --io-binding on the transformer models, MatMul 4096³ and the MLP (numpy and bound I/O);
#   3. bench/run.py --full on the CNNs (ResNet-50 batch 1 and 32, MobileNetV3);
#   4. bench/inspect_vs_session.py: the inspector's claims on the recorded H200 profile against real sessions.
# Optional: PYTEST="tests/x.py ..." first runs those pytest files on the H200 (pytest travels in .whl; what the
# tensor-core kernels compute is checked there only); MODEL_ARGS adds arguments to phase 2 (e.g. "-o attention=flash");
# T_ATTN=0, T_MODELS=0, T_CNN=0 or T_INSPECT=0 skips a phase.
# Each phase has its own time limit; results under $OUT (at most 8 files come back), tables last.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
if [[ -n ${PYTEST:-} ]]; then
  # shellcheck disable=SC2086
  ONNXRUNTIME_EP_WGPU_LIB="$ROOT/$LIB" timeout "${T_PYTEST:-120}" python3 -m pytest -q -p no:cacheprovider $PYTEST \
    >"$OUT/pytest.txt" 2>&1
  echo "== pytest"; tail -5 "$OUT/pytest.txt"
fi
[[ ${T_ATTN:-90} != 0 ]] && timeout "${T_ATTN:-90}" python3 bench/attention_bench.py --lib "$LIB" --out "$OUT" >"$OUT/attention.txt" 2>&1
# shellcheck disable=SC2086
[[ ${T_MODELS:-230} != 0 ]] && timeout "${T_MODELS:-230}" python3 bench/run.py --full --lib "$LIB" --io-binding --no-plots \
  --only "${MODELS:-whisper_encoder|bert_base|vit|matmul_4096|mlp_m2048}" ${MODEL_ARGS:-} --out "$OUT/models" \
  >"$OUT/models.txt" 2>&1
[[ ${T_CNN:-170} != 0 ]] && timeout "${T_CNN:-170}" python3 bench/run.py --full --lib "$LIB" --no-plots --only "${CNN:-resnet50|mobilenet}" \
  --out "$OUT/cnn" >"$OUT/cnn.txt" 2>&1
[[ -x .carry/bench/inspect && ${T_INSPECT:-60} != 0 ]] && timeout "${T_INSPECT:-60}" python3 bench/inspect_vs_session.py --lib "$LIB" \
  --inspect .carry/bench/inspect --profile h200 --json "$OUT/inspect.json" >"$OUT/inspect.txt" 2>&1
cp "$OUT/models/results.json" "$OUT/models.json" 2>/dev/null
cp "$OUT/cnn/results.json" "$OUT/cnn.json" 2>/dev/null
rm -rf "$OUT/models" "$OUT/cnn"
find "$OUT" -type f ! -name '*.txt' ! -name '*.json' -delete
echo "== inspect"; tail -15 "$OUT/inspect.txt"
echo "== attention"; grep -E '^\|' "$OUT/attention.txt" | head -20
echo "== cnn"; grep -E '^\|' "$OUT/cnn.txt" | tail -12
echo "== models"; sed -n '/### Summary/,$p' "$OUT/models.txt" | grep -E '^\|' | tail -50
