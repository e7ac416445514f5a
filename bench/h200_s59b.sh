#!/usr/bin/env bash
# Fifty-ninth session, second call (issue 18): what each dispatch of a bound decode token costs in the run (the
# run's first k dispatches timed in one pass for every k, differenced) beside its time alone, Llama-3.2-1B fp16 and
# int4 (genai builder), and GroupQueryAttention's one-token preparation folded into its kernel
# (decode_attention_fold=1) against the default, alternating in fresh processes (bench/h200_decode_ab.sh).
# Stage: GENAI=1 KERNEL_BENCH=0 bash bench/h200_stage.sh; goldens/ and docs/data/ moved out; carry
# [".carry", ".whl", ".gl"]. Writes $OUT/all.tgz; the table last.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
export MODELS=${MODELS:-/tmp/genai_models}
ONLY=llama PRECISIONS=${PRECISIONS:-fp16,int4} ROUNDS=1 PREFIX=1 LIBS="prefix=$LIB" OUT="$OUT" \
  bash "$(dirname "${BASH_SOURCE[0]}")/h200_decode_ab.sh" >"$OUT/prefix_table.txt" 2>&1
ONLY=llama ROUNDS=${ROUNDS:-2} PREFIX=0 LIBS="new=$LIB fold=$LIB,decode_attention_fold=1" OUT="$OUT" \
  bash "$(dirname "${BASH_SOURCE[0]}")/h200_decode_ab.sh" >"$OUT/decode_table.txt" 2>&1
(cd "$OUT" && tar czf all.tgz decode_ab.jsonl prefix.jsonl gpu.txt prefix_table.txt decode_table.txt 2>/dev/null)
python3 - "$OUT/prefix.jsonl" <<'PY'
import json, sys, collections
by = collections.defaultdict(lambda: [0.0, 0.0, 0])
for line in open(sys.argv[1]):
    r = json.loads(line)
    k = (r["label"].split()[0], r["ops"].split(" [")[0][:60])
    by[k][0] += r["alone_ms"]; by[k][1] += r["in_run_ms"]; by[k][2] += 1
print("| model | step | n | alone ms | in the run ms |")
print("|---|---|---|---|---|")
for (m, op), (a, t, n) in sorted(by.items(), key=lambda kv: (kv[0][0], -kv[1][1])):
    print(f"| {m} | {op} | {n} | {a:.3f} | {t:.3f} |")
PY
tail -6 "$OUT/decode_table.txt"
cat "$OUT/gpu.txt"
