#!/usr/bin/env bash
# Forty-sixth session, in parts (PARTS, default "startup idle coldlog models"):
#  startup bench/h200_s45.sh's part: bench/startup.py on Whisper-tiny fp16, ours-nocache beside the peer, cold and warm,
#          3 processes each, and our rows again with SU_OPTS (default "interim_kernels=1").
#  idle    bench/experiments/second_run/idle.py for ours and the peer (warm driver cache): the runs after the first
#          and after idle gaps of 2 ms to 3 s, with the GPU's SM clock logged every 20 ms by nvidia-smi meanwhile.
#  coldlog one cold process (fresh driver cache) with interim_kernels=1 and each compile's start and end logged
#          (bench/experiments/interim/child.py, 20 runs).
#  timeline bench/experiments/interim/timeline.py: one cold process (fresh driver cache) each with TL_OPTS entries
#          (default "interim_kernels=1 interim_kernels=0"): every compile's start and end, the session and each run,
#          in ms since the process started.
#  stats   pipeline_stats on .carry/wgsl_interim/ (the interim plans' SIMT kernels), one thread, the driver's cache
#          off, without and with wgpu's loop counter (modes unchecked, bounded), two rounds.
#  itest   tests/test_interim_kernels.py and tests/test_startup.py on this GPU.
#  models  `run.py` beside the peer and the CPU EP (MODELS, a --only regex, default Whisper).
# Stage here (goldens/ and docs/data/ moved out): `bash bench/h200_stage.sh`; carry [".carry", ".whl", ".gl"].
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
PARTS=" ${PARTS:-startup idle coldlog models} "
M=$(python3 -c "import sys; sys.path.insert(0, 'bench'); import startup; from pathlib import Path; \
print(startup.default_model(Path('bench/out/startup'), 'fp16')[0])" 2>/dev/null | tail -1)

if [[ $PARTS == *" startup "* ]]; then
  OUT=$OUT PARTS=startup SU_OPTS=${SU_OPTS:-interim_kernels=1} bash bench/h200_s45.sh >/dev/null 2>&1
fi
if [[ $PARTS == *" idle "* ]]; then
  for who in ours peer; do
    nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw --format=csv,noheader -lms 20 >"$OUT/clk_$who.txt" 2>&1 &
    smi=$!
    timeout 120 python3 bench/experiments/second_run/idle.py "$PWD/$LIB" "$M" $([[ $who == peer ]] && echo peer) \
      >"$OUT/idle_$who.txt" 2>&1
    kill $smi 2>/dev/null
  done
fi
if [[ $PARTS == *" coldlog "* ]]; then
  dir=$(mktemp -d)
  __GL_SHADER_DISK_CACHE_PATH=$dir ONNXRUNTIME_EP_WGPU_LOG_COMPILES=1 timeout 120 python3 bench/experiments/interim/child.py \
    "$PWD/$LIB" "$M" interim_kernels=1 runs=20 >"$OUT/coldlog.out" 2>"$OUT/coldlog.err"
  echo "coldlog rc=$? $(grep DONE "$OUT/coldlog.out" | cut -c1-200)" >>"$OUT/summary.txt"
fi
if [[ $PARTS == *" timeline "* ]]; then
  for o in ${TL_OPTS:-interim_kernels=1 interim_kernels=0}; do
    dir=$(mktemp -d)
    __GL_SHADER_DISK_CACHE_PATH=$dir timeout 120 python3 bench/experiments/interim/timeline.py "$PWD/$LIB" "$M" "$o" \
      >"$OUT/tl_$o.txt" 2>&1
  done
fi
if [[ $PARTS == *" stats "* ]]; then
  for r in 1 2; do
    __GL_SHADER_DISK_CACHE=0 timeout 100 .carry/bench/pipeline_stats --dir .carry/wgsl_interim --modes unchecked,bounded \
      --threads 1 --json "$OUT/stats_$r.json" >"$OUT/stats_$r.txt" 2>&1
  done
fi
if [[ $PARTS == *" itest "* ]]; then
  ONNXRUNTIME_EP_WGPU_LIB=$LIB timeout 240 python3 -m pytest -q -p no:cacheprovider -rf tests/test_interim_kernels.py \
    tests/test_startup.py >"$OUT/itest.txt" 2>&1
fi
if [[ $PARTS == *" models "* ]]; then
  timeout 150 python3 bench/run.py --full --lib "$LIB" --io-binding --no-plots --no-torch \
    --only "${MODELS:-whisper_encoder}" --out "$OUT/models" >"$OUT/models.txt" 2>&1
fi
rm -f "$OUT/all.tgz"
(cd "$OUT" && tar -czf /tmp/all.tgz . && mv /tmp/all.tgz .)
cat "$OUT/gpu.txt" "$OUT/summary.txt" 2>/dev/null
for f in "$OUT"/su_*.txt; do [[ -f $f ]] && { echo "=== $(basename "$f")"; grep -E "^\|" "$f" | cut -c1-200; }; done
for f in "$OUT"/idle_*.txt; do [[ -f $f ]] && { echo "=== $(basename "$f")"; tail -3 "$f" | cut -c1-900; }; done
[[ -f $OUT/coldlog.err ]] && grep -E "^ep-wgpu compile " "$OUT/coldlog.err" | sed 's/: wgsl [0-9]* B,//' | cut -c1-110 | head -30
for f in "$OUT"/tl_*.txt; do [[ -f $f ]] && { echo "=== $(basename "$f")"; grep -E "SESSION|RUN [0-4] |compile |interim" "$f" \
  | sed 's/: wgsl [0-9]* B,//' | cut -c1-150 | head -40; }; done
for f in "$OUT"/stats_*.txt; do [[ -f $f ]] && { echo "=== $(basename "$f")"; grep -v "^\s*$" "$f" | cut -c1-160 | head -24; }; done
[[ -f $OUT/itest.txt ]] && { echo "=== itest"; grep -E "^FAILED|^ERROR|passed|failed" "$OUT/itest.txt" | tail -12 | cut -c1-220; }
[[ -f $OUT/models.txt ]] && grep -E "^\| (whisper|bert|vit)" "$OUT/models.txt" | tail -8 | cut -c1-130
true
