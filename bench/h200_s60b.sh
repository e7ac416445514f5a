#!/usr/bin/env bash
# Sixtieth session (issue 18): ours beside the peer in one process (bench/genai_bench.py --providers ours,peer
# --no-genai: prefill 512/1024, decode 512/2048 bound on the device, genai's shared-cache layout) on Llama-3.2-1B
# fp16 and int4, with the library in .carry/exp/ (EXP_WIDE_MAX_STEPS=5: the default this session settled on).
# Run right after bench/h200_s60.sh on the same machine: it reads the models that script built
# (/tmp/genai_models, and /tmp/genai_int4 from its int4 run).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
mkdir -p "$OUT/more" /tmp/genai
[[ -d /tmp/genai/onnxruntime ]] || tar -xJf .carry/genai/genai.tar.xz -C /tmp/genai || exit 2
EXP=$(readlink -f .carry/exp/libonnxruntime_ep_wgpu.so)
for spec in "fp16:/tmp/genai_models" "int4:/tmp/genai_int4"; do
  p=${spec%%:*}
  EXP_WIDE_MAX_STEPS=5 GENAI_PROFILE=0 PYTHONPATH=/tmp/genai:${PYTHONPATH:-} timeout 280 python3 bench/genai_bench.py \
    --models "${spec#*:}" --lib "$EXP" --providers ours,peer --no-genai --only "$p" --out "$OUT/more/genai_$p" \
    >"$OUT/more/genai_$p.txt" 2>&1
  grep '^|' "$OUT/more/genai_$p.txt" | tail -3
done
(cd "$OUT" && tar czf all.tgz more 2>/dev/null)
