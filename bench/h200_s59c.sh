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
mkdir -p /tmp/genai && tar -xJf .carry/genai/genai.tar.xz -C /tmp/genai || exit 2
export PYTHONPATH=/tmp/genai:$PYTHONPATH
MODELS=${MODELS:-/tmp/genai_models}
timeout 300 python3 bench/genai_build.py --out "$MODELS" --only llama --precisions "${PRECISIONS:-fp16}" 2>&1 | tail -2
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
python3 - "$OUT/prefix.jsonl" "$OUT/decode_ab.jsonl" <<'PY'
import json, sys, collections
rows = [json.loads(line) for line in open(sys.argv[1])]
labels = list(dict.fromkeys(r["label"] for r in rows))
# Per setting, each step (consecutive dispatches of one step name) by its name and first grid, summed over layers.
by, keys = collections.defaultdict(float), []
for label in labels:
    prev = None
    for r in (r for r in rows if r["label"] == label):
        name = r["ops"].split(" [")[0].replace("SkipSimplifiedLayerNormalization", "SSLN")[:48]
        if name != prev:
            key = f"{name} ({r.get('workgroups')} wg)"
            prev = name
            if key not in keys:
                keys.append(key)
        by[(label, key)] += r["in_run_ms"]
print("| step, ms per token in the run | " + " | ".join(l.split()[-1] for l in labels) + " |")
print("|---|" + "---|" * len(labels))
for k in keys:
    print(f"| {k} | " + " | ".join(f"{by[(l, k)]:.3f}" for l in labels) + " |")
print("| total | " + " | ".join(f"{sum(by[(l, k)] for k in keys):.3f}" for l in labels) + " |")
for line in open(sys.argv[2]):
    r = json.loads(line)
    print(r["label"], "b2b", round(r.get("b2b_ms") or 0, 3), "one pass", round(r.get("gpu_one_pass_ms") or 0, 3),
          "steps", round((r.get("gpu") or {}).get("total_ms", 0), 3), "dispatches", (r.get("host") or {}).get("dispatches"))
PY
cat "$OUT/gpu.txt"
