#!/usr/bin/env bash
# Fifty-ninth session, first call (issues 18 and 11): where a bound decode token's time goes beside the GPU's.
#   decode   bench/h200_decode_ab.sh on Llama-3.2-1B fp16 and int4 (genai builder), this build alone, ROUNDS rounds:
#            back-to-back ms per token and a call's median return time in that loop, our host phases per run
#            (compute, run, values, setup, record, submit), the GPU per step and the whole run timed in one pass
#   peer     bench/genai_bench.py --providers ours,peer --no-genai on the fp16 model (prefill and decode beside the
#            peer in one process)
#   whisper  bench/run.py --full --io-binding on Whisper-tiny fp32/fp16 beside the peer and the CPU EP
# Stage: GENAI=1 KERNEL_BENCH=0 bash bench/h200_stage.sh; goldens/ and docs/data/ moved out; carry
# [".carry", ".whl", ".gl"]. Writes $OUT/all.tgz; the tables last.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
mkdir -p "$OUT/more"
export MODELS=${MODELS:-/tmp/genai_models}
ONLY=llama PRECISIONS=${PRECISIONS:-fp16,int4} ROUNDS=${ROUNDS:-2} LIBS="new=$LIB" OUT="$OUT" \
  bash "$(dirname "${BASH_SOURCE[0]}")/h200_decode_ab.sh" >"$OUT/decode_table.txt" 2>&1
if [[ ${PEER:-1} != 0 ]]; then
  GENAI_PROFILE=0 PYTHONPATH=/tmp/genai:${PYTHONPATH:-} timeout 300 python3 bench/genai_bench.py --models "$MODELS" \
    --lib "$(readlink -f "$LIB")" --providers ours,peer --no-genai --only fp16 --out "$OUT/more/genai" \
    >"$OUT/more/genai_log.txt" 2>&1
fi
[[ ${WHISPER:-1} != 0 ]] && whisper_speed speed1_1
(cd "$OUT" && tar czf all.tgz more decode_ab.jsonl gpu.txt 2>/dev/null)
grep -v '^\[\|XDG' "$OUT/more/genai_log.txt" 2>/dev/null | grep '^|' | tail -4
grep -E "^\| whisper" "$OUT/more/speed1_1.txt" 2>/dev/null | tail -6
cat "$OUT/decode_table.txt" | tail -12
cat "$OUT/gpu.txt"
