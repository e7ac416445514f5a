#!/usr/bin/env bash
# Hand-edited kernels against the planner's own, in one H200 call: for each folder of VDIR (default
# .carry/variants, e.g. from bench/experiments/coop_wide_variants.py) kernel_bench runs SHAPES with
# KERNEL_BENCH_OVERRIDE=that folder (its <kernel>.wgsl files replace those templates), alternating with the
# unmodified build over ROUNDS; pipeline_stats keeps each variant's pipeline-cache blob for bench/sass_probe.py.
# Stage with STATS=1 bash bench/h200_stage.sh. Writes $OUT/variants.txt, $OUT/stats.txt, $OUT/blobs.tgz.
#   SHAPES=2048x4096x4096 bash bench/h200_variants.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
KB=.carry/bench/kernel_bench
PS=.carry/bench/pipeline_stats
SHAPES=${SHAPES:-2048x4096x4096,4096x4096x4096}
VDIR=${VDIR:-.carry/variants}
ROUNDS=${ROUNDS:-2}
rm -rf "$OUT/blob" "$OUT/wgsl_dump"
mkdir -p "$OUT/blob" "$OUT/wgsl_dump"
KERNEL_BENCH_WGSL="$OUT/wgsl_dump" timeout 120 "$KB" --shapes "$SHAPES" --dtypes f16 --paths auto --unchecked \
  --iters 3 >"$OUT/variants.txt" 2>&1
echo "planned kernels: $(ls "$OUT/wgsl_dump" | tr '\n' ' ')" | tee -a "$OUT/variants.txt"
tags=$(ls "$VDIR")
for r in $(seq "$ROUNDS"); do
  for tag in base $tags; do
    echo "== $tag round $r" >>"$OUT/variants.txt"
    if [[ $tag == base ]]; then
      timeout 120 "$KB" --shapes "$SHAPES" --dtypes f16 --paths auto --unchecked --iters 7 >>"$OUT/variants.txt" 2>&1
    else
      KERNEL_BENCH_OVERRIDE="$VDIR/$tag" timeout 120 "$KB" --shapes "$SHAPES" --dtypes f16 --paths auto --unchecked \
        --iters 7 >>"$OUT/variants.txt" 2>&1
    fi
  done
done
for tag in $tags; do
  __GL_SHADER_DISK_CACHE=0 timeout 60 "$PS" --dir "$VDIR/$tag" --modes unchecked --blob "$OUT/blob/$tag" \
    --threads 4 >>"$OUT/stats.txt" 2>&1
done
__GL_SHADER_DISK_CACHE=0 timeout 60 "$PS" --dir "$OUT/wgsl_dump" --modes unchecked --blob "$OUT/blob/base" \
  --threads 4 >>"$OUT/stats.txt" 2>&1
tar czf "$OUT/blobs.tgz" -C "$OUT" blob wgsl_dump && rm -rf "$OUT/blob" "$OUT/wgsl_dump"
grep -E "^\| gemm" "$OUT/stats.txt" | cut -c1-160
grep -E "^== |^[0-9]+x[0-9]+x[0-9]+ " "$OUT/variants.txt" | awk '!seen[$0]++' | cut -c1-150
exit 0
