#!/bin/bash
# One H200 device call: adapter caps, correctness of every path at edge shapes (and forced
# tilings), candidate sweeps of the coop and SIMT kernels, the target shapes, and cuBLAS
# through PyTorch on the same GPU. Results go to $OUT/results.tgz; a summary prints last.
# Usage (from the checkout root, .carry/coop holding kernel_bench, cublas_ref.py and this):
#   bash .carry/coop/run_h200.sh [phase...]   phases: caps edge sweep main cublas (default all)
set -u
D=$(dirname "$0")
B=$D/kernel_bench
R=/tmp/results
mkdir -p "$R"
PHASES=${*:-caps edge sweep main cublas}
EDGE=1000x1000x1000,129x7x1000,4097x4095x4093,1000x1000x1000:tt,1000x1000x1000:tn,136x72x104:nt,1000x1004x1000,1004x1000x1004:tt,128x4096x4096,1500x1500x64b6,1500x1500x64b6:nt
ALL=4096x4096x4096,8192x8192x8192,2048x4096x4096,128x4096x4096,1500x384x384,1500x1536x384,1500x384x1536,1500x1500x64b6
MAIN=${MAIN:-$ALL}
has() { [[ " $PHASES " == *" $1 "* ]]; }
t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$R/gpu.txt" 2>&1
# Clocks, power and temperature once a second for the whole call (reads only).
nvidia-smi dmon -s pc -d 1 > "$R/dmon.txt" 2>&1 &
DMON=$!
if has caps; then timeout 60 "$B" --caps "$R/caps.json" > "$R/caps.log" 2>&1; fi
if has edge; then
  timeout 90 "$B" --shapes $EDGE --dtypes f16,f32 --paths coop,simt --iters 2 --json "$R/edge.json" > "$R/edge.log" 2>&1
  for t in 64x64 splitk; do
    timeout 40 "$B" --shapes 1000x1000x1000,4097x4095x4093,136x72x104:tt,1004x1004x1004:tn --dtypes f16,f32 --paths coop,simt \
      --tiling $t --iters 2 --json "$R/edge_$t.json" >> "$R/edge.log" 2>&1
  done
  echo "edge done at $((SECONDS - t0)) s" >> "$R/time.log"
fi
if has sweep; then
  timeout 120 "$B" --shapes 4096x4096x4096,2048x4096x4096,128x4096x4096,1500x1536x384,1500x384x384 --dtypes f16 \
    --sweep coop --iters 5 --json "$R/sweep_coop.json" > "$R/sweep.log" 2>&1
  timeout 60 "$B" --shapes 4096x4096x4096,1500x1536x384 --dtypes f32,f16 --sweep simt --iters 5 \
    --json "$R/sweep_simt.json" >> "$R/sweep.log" 2>&1
  echo "sweep done at $((SECONDS - t0)) s" >> "$R/time.log"
fi
if has main; then
  timeout ${MAIN_TIMEOUT:-120} "$B" --shapes $MAIN --dtypes f16,f32 --paths coop,simt --iters 7 --json "$R/main.json" > "$R/main.log" 2>&1
  echo "main done at $((SECONDS - t0)) s" >> "$R/time.log"
fi
if has cublas; then
  timeout 60 python3 "$D/cublas_ref.py" --shapes $ALL --json "$R/cublas.json" > "$R/cublas.log" 2>&1
fi
kill $DMON 2>/dev/null
tar czf "${OUT:-/tmp}/results.tgz" -C "$R" .
cat "$R/time.log" 2>/dev/null
echo "== failures"; grep -h -E "FAIL|error|panick" "$R"/edge.log "$R"/sweep.log "$R"/main.log 2>/dev/null | head -30
echo "== sweep"; sed -n '/^shape /,/^$/p' "$R/sweep.log" 2>/dev/null | grep -v "^shape" | cut -c1-72,100-140
echo "== main"; sed -n '/^shape /,$p' "$R/main.log" 2>/dev/null | cut -c1-140
echo "== cublas"; tail -20 "$R/cublas.log" 2>/dev/null
