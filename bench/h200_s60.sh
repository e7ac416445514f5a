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
mkdir -p /tmp/genai && tar -xJf .carry/genai/genai.tar.xz -C /tmp/genai || exit 2
export PYTHONPATH=/tmp/genai:$PYTHONPATH
MODELS=${MODELS:-/tmp/genai_models}
timeout 300 python3 bench/genai_build.py --out "$MODELS" --only llama --precisions "${PRECISIONS:-fp16}" 2>&1 | tail -2
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
python3 - "$OUT/prefix.jsonl" "$OUT/decode_ab.jsonl" <<'PY'
import json, sys, collections
rows = [json.loads(line) for line in open(sys.argv[1])]
labels = list(dict.fromkeys(r["label"] for r in rows))
by, keys = collections.defaultdict(float), []
for r in rows:
    kernel = r["ops"].split(" [")[-1].rstrip("]")
    key = kernel if "attn" in kernel or "gqa" in kernel else r["ops"].split(" [")[0][:40]
    if key not in keys:
        keys.append(key)
    by[(r["label"], key)] += r["in_run_ms"]
    by[(r["label"], key + " alone")] += r["alone_ms"]
print("| ms per token in the run (alone) | " + " | ".join(l.split()[-1] for l in labels) + " |")
print("|---|" + "---|" * len(labels))
for k in keys:
    print(f"| {k} | " + " | ".join(f"{by[(l, k)]:.3f} ({by[(l, k + ' alone')]:.3f})" for l in labels) + " |")
print("| total | " + " | ".join(f"{sum(by[(l, k)] for k in keys):.3f}" for l in labels) + " |")
for line in open(sys.argv[2]):
    r = json.loads(line)
    print(r["label"], "b2b", round(r.get("b2b_ms") or 0, 3), "one pass", round(r.get("gpu_one_pass_ms") or 0, 3),
          "steps", round((r.get("gpu") or {}).get("total_ms", 0), 3), "dispatches", (r.get("host") or {}).get("dispatches"))
PY
cat "$OUT/gpu.txt"
