#!/usr/bin/env bash
# A/B of two kernel_bench builds in one H200 call: .carry/bench/kernel_bench_base (e.g. the previous commit,
# built here with CARGO_TARGET_DIR=target/basebuild from a worktree) against .carry/bench/kernel_bench, alternating
# so that clock drift touches both alike. Writes $OUT/ab_auto.txt (the planner's kernels on SHAPES) and, with
# SWEEP_SHAPES, $OUT/ab_sweep.txt (the candidates matching SWEEP_ONLY); the TFLOP/s columns print last.
#   SHAPES=4096x4096x4096,2048x4096x4096 SWEEP_SHAPES=1500x384x1536 SWEEP_ONLY="64x64 k32" bash bench/h200_kernel_ab.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
KB=.carry/bench/kernel_bench
SHAPES=${SHAPES:-4096x4096x4096,8192x8192x8192,2048x4096x4096}
DTYPES=${DTYPES:-f16}
ROUNDS=${ROUNDS:-2}
: >"$OUT/ab_auto.txt"
for r in $(seq "$ROUNDS"); do
  for which in base new; do
    bin=$KB; [[ $which == base ]] && bin=${KB}_base
    echo "== $which round $r" >>"$OUT/ab_auto.txt"
    timeout 240 "$bin" --shapes "$SHAPES" --dtypes "$DTYPES" --paths auto --unchecked --iters 7 >>"$OUT/ab_auto.txt" 2>&1
  done
done
if [[ -n ${SWEEP_SHAPES:-} ]]; then
  : >"$OUT/ab_sweep.txt"
  for which in base new; do
    bin=$KB; [[ $which == base ]] && bin=${KB}_base
    echo "== $which" >>"$OUT/ab_sweep.txt"
    timeout 300 "$bin" --shapes "$SWEEP_SHAPES" --dtypes f16 --sweep coop --unchecked --iters 5 \
      --only "${SWEEP_ONLY:-}" >>"$OUT/ab_sweep.txt" 2>&1
  done
fi
grep -E "^== |TFLOP|^[0-9]+x" "$OUT/ab_auto.txt" | grep -v "^shape" | awk '!seen[$0]++' | cut -c1-130
[[ -f $OUT/ab_sweep.txt ]] && grep -E "^== |^[0-9]+x" "$OUT/ab_sweep.txt" | awk '!seen[$0]++' | cut -c1-130
exit 0
