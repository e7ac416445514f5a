#!/usr/bin/env bash
# Forty-first session: large read-backs in parts (e36817a's rule: from 1 MiB on a GPU, one part per 256 KiB up to
# 8) against the build before it (.carry/base = aeac54f) on Whisper-tiny with numpy I/O, three rounds alternating;
# the new build beside the peer and the CPU EP on Whisper, BERT and ViT; the device-memory and long-axis pytest
# files on the GPU. ROUNDS (default 3) and MODELS (a run.py --only regex) trim it. Stage the final build (`KERNEL_BENCH=0 bash bench/h200_stage.sh`) and the base library at
# .carry/base/libonnxruntime_ep_wgpu.so; carry [".carry", ".whl", ".gl"].
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
BASE=.carry/base/libonnxruntime_ep_wgpu.so
for r in $(seq "${ROUNDS:-3}"); do
  for build in base new; do
    lib=$LIB
    [[ $build == base ]] && lib=$BASE
    extra=()
    [[ $r == 1 ]] && extra=(--bound)
    timeout 90 python3 bench/host_split.py --lib "$lib" --runs 400 --dtypes fp32,fp16 "${extra[@]}" \
      >"$OUT/hs_${build}_$r.txt" 2>&1
  done
done
timeout 200 python3 bench/run.py --full --lib "$LIB" --io-binding --no-plots --no-torch \
  --only "${MODELS:-whisper_encoder|bert|vit}" --out "$OUT/models" >"$OUT/models.txt" 2>&1
mkdir -p target/release && cp "$LIB" target/release/
timeout 150 python3 -m pytest -q tests/test_device_memory.py tests/test_long_axes.py >"$OUT/tests.txt" 2>&1
cat "$OUT/gpu.txt"
for f in "$OUT"/hs_*_*.txt; do grep -h "^| whisper" "$f" | sed "s|^|$(basename "$f" .txt) |" | cut -c1-150; done
grep -E "^\| (whisper|bert|vit)" "$OUT/models.txt" | tail -12 | cut -c1-130
tail -1 "$OUT/tests.txt"
