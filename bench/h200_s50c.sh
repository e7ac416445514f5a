#!/usr/bin/env bash
# Fiftieth session, call 3: whole CNNs with the elementwise kernels' vector form, beside the build before it.
# `bench/run.py` (numpy and bound) on MobileNetV3-large (HardSwish, the squeeze-excitation products), the UNet case
# and ResNet-50, batch 1, fp32 and fp16: the base build (.carry/base/, 7b284cf) alone, then the new build
# (.carry/bench/) beside the peer. Carry [".carry/bench", ".carry/base", ".whl", ".gl"]; writes $OUT/all.tgz.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
mkdir -p "$OUT/more"
CASES=${CASES:-'mobilenet_v3_large_b1|unet_2x64x128|resnet50_b1_'}
timeout 220 python3 bench/run.py --full --lib "$PWD/.carry/base/libonnxruntime_ep_wgpu.so" --io-binding --no-plots \
  --no-torch --providers ours --no-peer --only "$CASES" --hard-limit-s 200 --out "$OUT/more/base" \
  >"$OUT/more/base.txt" 2>&1
timeout 300 python3 bench/run.py --full --lib "$PWD/$LIB" --io-binding --no-plots --no-torch --providers ours,peer \
  --only "$CASES" --hard-limit-s 280 --out "$OUT/more/new" >"$OUT/more/new.txt" 2>&1
tar czf "$OUT/all.tgz" -C "$OUT" more gpu.txt && rm -rf "$OUT/more"
cat "$OUT/gpu.txt"
for b in base new; do
  echo "== $b"; tar xzf "$OUT/all.tgz" -O "more/$b.txt" | grep -E "^\| [a-z]" | cut -c1-150 | tail -14
done
