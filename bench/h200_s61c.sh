#!/usr/bin/env bash
# Sixty-first session, last call (issue 18): the release build with the one-row narrow GEMVs at 512 invocations
# (`GemvVec::ROW_INVOCATIONS`). The GEMV Rust tests on the GPU (.carry/tests/gemm_gpu, built with
# cargo test --release -p ep-wgpu-kernels --test gemm_gpu --no-run, debug info stripped), then Llama-3.2-1B fp16 one
# token over a past of 512 back to back,
# ROUNDS rounds (2), with its GPU time per op kind.
# Stage: GENAI=1 KERNEL_BENCH=0 bash bench/h200_stage.sh and the test binaries; carry [".carry", ".whl", ".gl"].
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
for t in gemm_gpu; do
  timeout 60 ".carry/tests/$t" --test-threads 4 >"$OUT/$t.txt" 2>&1
  grep -E "test result|FAILED|panicked" "$OUT/$t.txt" | head -3
done
SETTINGS="default::" PRECISIONS=${PRECISIONS:-fp16} bash "$(dirname "${BASH_SOURCE[0]}")/h200_s61b.sh" 2>&1 | grep -v WARNING
