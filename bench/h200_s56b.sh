#!/usr/bin/env bash
# Fifty-sixth session, issue 15: the f16 attention compiled as its plain variant (no element-wise K/V staging, no
# causal paths: `CoopSource::plain`), which the first call (h200_s56.sh) put at 113–117 ms to compile against 170–249.
#   cold    bench/startup.py, Whisper-tiny fp16, cold, settle 4 s, the experiment build (.carry/exp), ROUNDS rounds
#           (default 2): base (as built: interim plans, tensor-core compiles deferred) ×2, nodefer (EXP_NO_DEFER=1)
#           ×2, the peer ×1
#   stats   pipeline_stats on .carry/probe2 (the fp16 plan's six tensor-core kernels, the plain attention among
#           them), rolled, driver cache off, 1 thread and 9
#   speed   bench/run.py --full --io-binding on Whisper-tiny fp16/fp32 beside the peer and the CPU EP (release build)
#   tests   pytest on the attention and transformer suites with the release build
# Stage: STATS=1 KERNEL_BENCH=0 bash bench/h200_stage.sh; the experiment build stripped in .carry/exp/; copy the six
# goldens into .carry/probe2; goldens/ and docs/data/ moved out; carry [".carry", ".whl", ".gl"].
# Writes $OUT/all.tgz; the tables last.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
EXP=.carry/exp/libonnxruntime_ep_wgpu.so
mkdir -p "$OUT/more"
for r in $(seq 1 "${ROUNDS:-2}"); do
  startup "$EXP" base ours-nocache cold fp16 "$r" 2
  startup "$EXP" nodefer ours-nocache cold fp16 "$r" 2 EXP_NO_DEFER=1
  startup "$EXP" peer peer cold fp16 "$r" 1
done
for t in 1 9; do
  __GL_SHADER_DISK_CACHE=0 timeout 100 .carry/bench/pipeline_stats --dir .carry/probe2 --modes rolled --threads "$t" \
    --json "$OUT/more/p_rolled_$t.json" >"$OUT/more/p_rolled_$t.txt" 2>&1
done
whisper_speed speed1_1
tests_and_pack "${TESTS:-tests/test_attention.py tests/test_transformers.py tests/test_rolled_loops.py tests/test_interim_kernels.py}" 150
whisper_lines speed1_1
for t in 1 9; do tar xzf "$OUT/all.tgz" -O more/p_rolled_$t.txt | grep -E "total|^\| [ag]"; done
python3 bench/startup_table.py "$OUT/all.tgz"
