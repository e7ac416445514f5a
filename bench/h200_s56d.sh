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
start() { # name config mode round repeat
  timeout 150 python3 bench/startup.py --lib "$LIB" --dtype fp16 --configs "$2" --modes "$3" --repeat "$5" \
    --settle 4 --json "$OUT/more/$1_$3_$4.json" >"$OUT/more/$1_$3_$4.txt" 2>&1
}
for r in $(seq 1 "${ROUNDS:-2}"); do
  start ours-nocache ours-nocache cold "$r" 2
  start peer peer cold "$r" 1
  start ours-nocache ours-nocache warm "$r" 1
  start peer peer warm "$r" 1
done
timeout 200 python3 bench/run.py --full --lib "$LIB" --no-torch --io-binding --only whisper_encoder \
  --out "$OUT/more/speed1_1" >"$OUT/more/speed1_1.txt" 2>&1
tests_and_pack "${TESTS:-tests/test_attention.py tests/test_transformers.py tests/test_interim_kernels.py tests/test_rolled_loops.py tests/test_tensor_core_infinities.py}" 150
tar xzf "$OUT/all.tgz" -O more/speed1_1.txt | grep -E "^\| whisper.*\| (ok|error)" | head -8
tar xzf "$OUT/all.tgz" -O more/speed1_1.txt | grep -A5 "^### GPU profile" | tail -2
python3 bench/startup_table.py "$OUT/all.tgz"
