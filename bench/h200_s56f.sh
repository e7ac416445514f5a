#!/usr/bin/env bash
# Fifty-sixth session, last call: the release build of c8f8697 (both attentions plain where the problem allows, rolled
# compiles not deferred) on the GPU: pytest on the attention, transformer, interim-plan and tensor-core suites;
# Whisper-tiny fp32/fp16 beside the peer and the CPU EP (bench/run.py --full --io-binding); cold and warm start-up
# beside the peer (ROUNDS rounds, default 1).
# Stage: bash bench/h200_stage.sh (KERNEL_BENCH=0); goldens/ and docs/data/ moved out; carry [".carry", ".whl", ".gl"].
# Writes $OUT/all.tgz; tables last.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
mkdir -p "$OUT/more"
whisper_speed speed1_1
beside_peer "${ROUNDS:-1}"
tests_and_pack "${TESTS:-tests/test_attention.py tests/test_transformers.py tests/test_interim_kernels.py tests/test_rolled_loops.py tests/test_tensor_core_infinities.py}" 150
whisper_lines speed1_1
python3 bench/startup_table.py "$OUT/all.tgz"
