#!/usr/bin/env bash
# Fifty-fifth session, issue 15 (and 11): the release build with tensor-core kernels compiled rolled by default
# (option `rolled_loops`, kernels/src/runtime/rolled.rs), beside the same build with rolled_loops=0 and the peer.
#   startup  bench/startup.py, Whisper-tiny fp16, ROUNDS rounds (default 2), settle 4 s: cold ours-nocache (rolled,
#            ×2), unrolled (ours-nocache, rolled_loops=0, ×2), peer; warm ours-nocache and peer
#   speed    bench/run.py --full --io-binding on Whisper-tiny fp16/fp32: speed1_<r> rolled beside the peer and the
#            CPU EP, speed0_<r> rolled_loops=0 beside the CPU EP, SPEED_ROUNDS rounds (default 2)
#   tests    pytest TESTS with the release build (rolled by default) on this GPU
# Stage: bash bench/h200_stage.sh (KERNEL_BENCH=0); goldens/ and docs/data/ moved out; carry [".carry", ".whl", ".gl"].
# Writes $OUT/all.tgz; tables last (bench/startup_table.py, bench/h200_s53_table.py).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
mkdir -p "$OUT/more"
start() { # name config mode round repeat [option]
  local opt=(); [[ -n ${6:-} ]] && opt=(--option "$6")
  timeout 150 python3 bench/startup.py --lib "$LIB" --dtype fp16 --configs "$2" --modes "$3" --repeat "$5" \
    --settle 4 "${opt[@]}" --json "$OUT/more/$1_$3_$4.json" >"$OUT/more/$1_$3_$4.txt" 2>&1
}
for r in $(seq 1 "${ROUNDS:-2}"); do
  start ours-nocache ours-nocache cold "$r" 2
  start unrolled ours-nocache cold "$r" 2 rolled_loops=0
  start peer peer cold "$r" 1
  start ours-nocache ours-nocache warm "$r" 1
  start peer peer warm "$r" 1
done
for r in $(seq 1 "${SPEED_ROUNDS:-2}"); do
  timeout 200 python3 bench/run.py --full --lib "$LIB" --no-torch --io-binding --only whisper_encoder \
    --out "$OUT/more/speed1_$r" >"$OUT/more/speed1_$r.txt" 2>&1
  timeout 200 python3 bench/run.py --full --lib "$LIB" --no-torch --no-peer --io-binding --only whisper_encoder \
    --option rolled_loops=0 --out "$OUT/more/speed0_$r" >"$OUT/more/speed0_$r.txt" 2>&1
done
tests_and_pack "${TESTS:-tests/test_rolled_loops.py tests/test_tensor_core_infinities.py tests/test_transposed_matmul.py tests/test_conv_epilogue.py tests/test_attention.py tests/test_transformers.py tests/test_interim_kernels.py}" 150
tar xzf "$OUT/all.tgz" -O more/speed1_1.txt | grep -E "WebGPU EP.*median|CPU EP.*median" | head -4
python3 bench/startup_table.py "$OUT/all.tgz"
python3 bench/h200_s53_table.py "$OUT/all.tgz" | grep -E "^speed[01]_[0-9] whisper|^speed[01]_[0-9] \|"
