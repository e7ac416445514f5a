#!/usr/bin/env bash
# Fifty-eighth session, second call (issue 18): Llama-3.2-1B fp16 decode at a past of 512, the landing before the
# GEMV's 4- and 8-lane forms (.carry/base/base.so) against this build, alternating in fresh processes
# (bench/h200_decode_ab.sh: back-to-back ms per token, GPU time per op kind). Stage with
# `GENAI=1 KERNEL_BENCH=0 bash bench/h200_stage.sh` after copying the base build's stripped library to
# .carry/base/base.so; carry [".carry", ".whl", ".gl"]. ONLY / PRECISIONS / ROUNDS as h200_decode_ab.sh.
set -uo pipefail
export ONLY=${ONLY:-llama} PRECISIONS=${PRECISIONS:-fp16} ROUNDS=${ROUNDS:-2}
OUT=${OUT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/bench/out/h200}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
OUT=$OUT bash "$(dirname "${BASH_SOURCE[0]}")/h200_decode_ab.sh" 2>&1 | tail -30
cat "$OUT/gpu.txt"
