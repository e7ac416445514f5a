#!/usr/bin/env bash
# Staged in the fifty-fifth session (issue 15), not yet run: what the f16 tensor-core attention's cold compile (the
# long pole once the GEMMs roll: 172–186 ms alone, 269 beside the others) goes to. pipeline_stats on .carry/probe
# (copy the Whisper plans' tensor-core goldens there, as for h200_s53.sh), one thread, the driver's cache off, modes
# unchecked, rolled (the runtime's hint) and rolledall (DontUnroll on every loop: what unrolling the loops over
# fragments costs to compile, and whether their matrices then spill), ROUNDS rounds (default 2).
# Stage: STATS=1 KERNEL_BENCH=0 bash bench/h200_stage.sh; goldens/ and docs/data/ moved out; carry
# [".carry", ".whl", ".gl"]. Writes $OUT/probe.tgz; the table last (bench/h200_s53_table.py).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
mkdir -p "$OUT/more"
for r in $(seq 1 "${ROUNDS:-2}"); do
  __GL_SHADER_DISK_CACHE=0 timeout 150 .carry/bench/pipeline_stats --dir .carry/probe --modes unchecked,rolled,rolledall \
    --threads 1 --json "$OUT/more/stats_$r.json" >"$OUT/more/stats_$r.txt" 2>&1
done
tar czf "$OUT/probe.tgz" -C "$OUT" more gpu.txt && rm -rf "$OUT/more"
cat "$OUT/gpu.txt"
python3 bench/h200_s53_table.py "$OUT/probe.tgz"
