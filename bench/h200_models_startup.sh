#!/usr/bin/env bash
# Whole models and issue 12's products beside the peer (numpy and bound), then start-up beside the peer, cold and
# warm, in one H200 call (after `bash bench/h200_stage.sh`; carry [".carry", ".whl", ".gl"]),
# and one cold process with ONNXRUNTIME_EP_WGPU_LOG_COMPILES=1 (the pipelines the first run waits for).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
python3 bench/run.py --full --lib "$LIB" --out "$OUT" --io-binding --no-plots --no-torch \
  --only "${ONLY:-whisper_encoder|bert_base|mlp_m2048}" > "$OUT/models.txt" 2>&1
timeout 240 python3 bench/startup.py --lib "$LIB" --configs ours-nocache,peer --modes cold,warm --repeat 3 \
  --json "$OUT/startup.json" > "$OUT/startup.txt" 2>&1
ONNXRUNTIME_EP_WGPU_LOG_COMPILES=1 timeout 120 python3 bench/startup.py --lib "$LIB" --configs ours-nocache \
  --modes cold --repeat 1 > "$OUT/startup_compiles.txt" 2>&1
grep -E "^\| " "$OUT/models.txt" | tail -30
grep -E "^\| " "$OUT/startup.txt" | head -8
grep "ep-wgpu compile" "$OUT/startup_compiles.txt" | sed "s/.*compile //" | sort -t, -k3 -g | awk -F"pipeline " "{print \$2, \$0}" | sort -g | tail -16 | cut -c1-140
exit 0
