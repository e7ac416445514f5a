#!/usr/bin/env bash
# Fifty-fifth session, issue 15: do the Whisper-tiny fp16 plan's six tensor-core pipelines compile in parallel?
# pipeline_stats on .carry/probe (the plans' tensor-core goldens), driver cache off, modes rolled and unchecked,
# one thread and nine (each compile on a device of its own), wall time of each whole pass printed.
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh" >/dev/null 2>&1
for t in 1 9; do for m in rolled unchecked; do
  s=$(date +%s%N)
  __GL_SHADER_DISK_CACHE=0 timeout 60 .carry/bench/pipeline_stats --dir .carry/probe --only gemm_f16,attn_coop_f16 \
    --modes $m --threads $t --json "$OUT/p_${m}_$t.json" >"$OUT/p_${m}_$t.txt" 2>&1
  rc=$?
  e=$(date +%s%N); echo "$m threads=$t rc=$rc wall_ms $(( (e - s) / 1000000 ))"
done; done
