#!/usr/bin/env bash
# Decode A/B on the H200 (issue 18): builds of our library alternating, each in its own process
# (bench/decode_ab.py: back-to-back ms per token over one genai model's decode, our host phases, and with
# PROFILE=1 the GPU time per op kind and the dispatch count), on the genai models bench/h200_genai.sh builds.
# Stage with `GENAI=1 KERNEL_BENCH=0 bash bench/h200_stage.sh`, put the other builds' stripped libraries in
# .carry/base/<label>.so, then a device run with carry [".carry", ".whl", ".gl"] and:
#   OUT=$OUT bash bench/h200_decode_ab.sh
# Env: MODELS (built there first when missing; PRECISIONS, ONLY as h200_genai.sh), ROUNDS (2), CTX (512),
# PROFILE (1), PREFIX (0; 1: each dispatch's cost in the run beside its time alone into $OUT/prefix.jsonl), BENCH_ONLY (model-directory regex), LIBS ("label=path[,option=value...] ..."; default: every
# .carry/base/*.so, then this build as "new"; the options go to our EP, e.g. new13=$LIB,max_storage_buffers=13).
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
mkdir -p /tmp/genai && tar -xJf .carry/genai/genai.tar.xz -C /tmp/genai || exit 2
export PYTHONPATH=/tmp/genai:$PYTHONPATH
MODELS=${MODELS:-/tmp/genai_models}
if ! compgen -G "$MODELS/*/model.onnx" >/dev/null; then
  timeout ${BUILD_TIMEOUT:-400} python3 bench/genai_build.py --out "$MODELS" --only "${ONLY:-llama}" \
    --precisions "${PRECISIONS:-int4,fp16}" 2>&1 | tail -5
fi
if [[ -z ${LIBS:-} ]]; then
  LIBS=""
  for f in .carry/base/*.so; do [[ -f $f ]] && LIBS+="$(basename "$f" .so)=$f "; done
  LIBS+="new=$LIB"
fi
extra=()
[[ ${PROFILE:-1} != 0 ]] && extra+=(--profile)
[[ ${PREFIX:-0} != 0 ]] && extra+=(--prefix "$OUT/prefix.jsonl")
for model in "$MODELS"/*/; do
  [[ -f $model/model.onnx && $(basename "$model") =~ ${BENCH_ONLY:-.} ]] || continue
  for round in $(seq "${ROUNDS:-2}"); do
    for entry in $LIBS; do
      label=${entry%%=*} rest=${entry#*=}
      IFS=, read -ra parts <<<"$rest"
      opts=()
      for o in "${parts[@]:1}"; do opts+=(--option "$o"); done
      timeout 120 python3 bench/decode_ab.py --model "$model" --lib "$(readlink -f "${parts[0]}")" --ctx "${CTX:-512}" \
        --label "$(basename "$model") $label r$round" "${extra[@]}" "${opts[@]}" 2>/dev/null | tail -1 | tee -a "$OUT/decode_ab.jsonl"
    done
  done
done
python3 - "$OUT/decode_ab.jsonl" <<'PY'
import json, sys
print("| run | back to back ms (call) | dispatches | compute / run / values / setup / record / submit ms | GPU ms (one pass) |")
print("|---|---|---|---|---|")
for line in open(sys.argv[1]):
    try:
        r = json.loads(line)
    except ValueError:
        continue
    h, g = r.get("host") or {}, r.get("gpu") or {}
    parts = " / ".join(f"{h.get(k, 0):.3f}" for k in ("compute", "run", "run_values", "run_setup", "run_record", "run_submit"))
    print(f"| {r['label']} | {r.get('b2b_ms') or 0:.3f} ({r.get('b2b_call_ms') or 0:.3f}) | {h.get('dispatches', '')} | "
          f"{parts} | {g.get('total_ms', 0):.3f} ({r.get('gpu_one_pass_ms') or 0:.3f}) |")
PY
