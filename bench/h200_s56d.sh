#!/usr/bin/env bash
# Fifty-sixth session, issue 15: the release build with the plain f16 attention and only unrolled tensor-core
# compiles deferred (rolled ones start beside the interim compiles), beside the peer.
#   startup  bench/startup.py, Whisper-tiny fp16, ROUNDS rounds (default 2), settle 4 s: cold ours-nocache ×2 and
#            the peer ×1, warm ours-nocache and the peer ×1
#   speed    bench/run.py --full --io-binding on Whisper-tiny fp16/fp32 beside the peer and the CPU EP
#   tests    pytest TESTS with the release build on this GPU
# Stage: STATS=1 KERNEL_BENCH=0 bash bench/h200_stage.sh; goldens/ and docs/data/ moved out; carry
# [".carry", ".whl", ".gl"]. Writes $OUT/all.tgz; tables last.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
mkdir -p "$OUT/more"
beside_peer "${ROUNDS:-2}"
whisper_speed speed1_1
tests_and_pack "${TESTS:-tests/test_attention.py tests/test_transformers.py tests/test_interim_kernels.py tests/test_rolled_loops.py tests/test_tensor_core_infinities.py}" 150
whisper_lines speed1_1
python3 bench/startup_table.py "$OUT/all.tgz"
