#!/usr/bin/env bash
# Which decode fold costs what on the H200 (issue 18; the thirty-third session measured the three together 0.4 ms
# per Llama token slower than 5bd0e45 and could not isolate them): an experiment build (`cargo build --release -p
# onnxruntime-ep-wgpu --features wgsl-override`, stripped into .carry/exp/) with every fold on, each off, and
# all off, alternating ROUNDS times over genai's Llama int4 and fp16 decode (bench/decode_ab.py at CTX), then the
# per-dispatch profiles of all-on and attention-fold-off. Stage the genai wheels (`GENAI=1 KERNEL_BENCH=0 bash
# bench/h200_stage.sh`), move goldens/ and docs/data/ out for the call, carry [".carry", ".whl", ".gl"], and:
#   OUT=$OUT bash bench/h200_fold_ab.sh
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
mkdir -p /tmp/genai && tar -xJf .carry/genai/genai.tar.xz -C /tmp/genai || exit 2
export PYTHONPATH=/tmp/genai:$PYTHONPATH
MODELS=${MODELS:-/tmp/genai_models}
timeout 200 python3 bench/genai_build.py --out "$MODELS" --only llama --precisions int4,fp16 2>&1 | tail -2
E=$(readlink -f .carry/exp/libonnxruntime_ep_wgpu.so)
# label | EXP_NO_FOLD | decode_attention_fold
CONFIGS=("all||1" "noattn||0" "nonorm|norm,nbits|1" "none|norm,nbits|0")
for m in int4 fp16; do
  for r in $(seq "${ROUNDS:-2}"); do
    for cfg in "${CONFIGS[@]}"; do
      IFS='|' read -r lab off fold <<<"$cfg"
      EXP_NO_FOLD=$off timeout 60 python3 bench/decode_ab.py --model "$MODELS/llama-3.2-1b-$m" --lib "$E" \
        --ctx "${CTX:-512}" --label "$m $lab r$r" --profile --option decode_attention_fold="$fold" 2>/dev/null \
        | tail -1 >>"$OUT/fold_ab.jsonl"
    done
  done
  for cfg in "all||1" "noattn||0"; do
    IFS='|' read -r lab off fold <<<"$cfg"
    EXP_NO_FOLD=$off ONNXRUNTIME_EP_WGPU_PROFILE_DISPATCHES=1 timeout 60 python3 bench/decode_ab.py \
      --model "$MODELS/llama-3.2-1b-$m" --lib "$E" --ctx "${CTX:-512}" --label "$m $lab dispatches" --profile \
      --option decode_attention_fold="$fold" 2>/dev/null | tail -1 >>"$OUT/fold_dispatches.jsonl"
  done
done
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
print("| run | back to back ms | one run ms | dispatches | run / record ms | GPU ms |")
print("|---|---|---|---|---|---|")
for line in open(out + "/fold_ab.jsonl"):
    r = json.loads(line)
    h, g = r.get("host") or {}, r.get("gpu") or {}
    print(f"| {r['label']} | {r.get('b2b_ms') or 0:.3f} | {r.get('median_ms') or 0:.3f} | {h.get('dispatches', '')} | "
          f"{h.get('run', 0):.3f} / {h.get('run_record', 0):.3f} | {g.get('total_ms', 0):.3f} |")
for line in open(out + "/fold_dispatches.jsonl"):
    r = json.loads(line)
    g = r.get("gpu") or {}
    print(r["label"], round(r.get("b2b_ms") or 0, 3), round(g.get("total_ms", 0), 3))
    for t in g.get("top", [])[:8]:
        print("   ", t)
PY
