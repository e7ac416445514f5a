#!/usr/bin/env bash
# Fifty-seventh session (issues 15 and 11): Whisper's conv2 as the normal product W · col stored channels last
# through transposed strides (no longer colᵀ · Wᵀ with both operands transposed, the cold compile's long pole).
#   stats   pipeline_stats, rolled, driver cache off, ROUNDS rounds (default 2), 1 thread and 9, on the fp16 plan's
#           six tensor-core kernels: .carry/probe_new (this build's conv2 kernel) and .carry/probe_old (the last
#           release's, from git)
#   speed   bench/run.py --full --io-binding on Whisper-tiny fp32/fp16 beside the peer and the CPU EP
#   start   one cold process with ONNXRUNTIME_EP_WGPU_LOG_COMPILES=1 (every compile, wait and interim run on one
#           clock); cold with interim_grace_ms of each of GRACES (default "60 120"), two processes each; then cold
#           and warm start-up beside the peer (STARTS rounds, default 2)
#   tests   pytest on the transformer, interim-plan and conv-epilogue suites
# Stage: STATS=1 KERNEL_BENCH=0 bash bench/h200_stage.sh; bash bench/h200_s57_probe.sh; goldens/ and docs/data/
# moved out; carry [".carry", ".whl", ".gl"]. Writes $OUT/all.tgz; the tables last.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
mkdir -p "$OUT/more"
for r in $(seq 1 "${ROUNDS:-2}"); do
  for set in new old; do
    for t in 1 9; do
      __GL_SHADER_DISK_CACHE=0 timeout 100 .carry/bench/pipeline_stats --dir ".carry/probe_$set" --modes rolled \
        --threads "$t" --json "$OUT/more/p_${set}_${t}_$r.json" >"$OUT/more/p_${set}_${t}_$r.txt" 2>&1
    done
  done
done
whisper_speed speed1_1
startup "$LIB" logc ours-nocache cold fp16 1 1 ONNXRUNTIME_EP_WGPU_LOG_COMPILES=1
for g in ${GRACES:-60 120}; do
  startup "$LIB" "grace$g" ours-nocache cold fp16 1 "${GRACE_REPEAT:-2}" X_=0 "interim_grace_ms=$g"
done
beside_peer "${STARTS:-2}"
tests_and_pack "${TESTS:-tests/test_transformers.py tests/test_interim_kernels.py tests/test_conv_epilogue.py}" 200
whisper_lines speed1_1
for f in p_new_1_2 p_old_1_2 p_new_9_2 p_old_9_2; do
  echo "$f"; tar xzf "$OUT/all.tgz" -O "more/$f.txt" | grep -E "total|^\| [ag]"
done
tar xzf "$OUT/all.tgz" -O more/logc_cold_1.txt | grep -E "ep-wgpu compile gemm_f16_coop|ep-wgpu compile attn|interim" | \
  sed -E 's/.*compile ([a-z0-9_]+):.*pipeline ([0-9.]+) ms, at (.*)/\1 \2 ms \3/' | sed -n '1,12p;$p'
python3 bench/startup_table.py "$OUT/all.tgz"
