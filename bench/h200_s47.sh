#!/usr/bin/env bash
# Forty-seventh session, in parts (PARTS, default "ab timeline stats itest"):
#  ab       bench/startup.py, Whisper-tiny fp16, cold: our staged library (new) beside BASE_LIB (the build before the
#           compile order, default .carry/base/) and PRIO_LIB (the compile order alone, default .carry/prio/), ROUNDS
#           rounds (default 3) of 2 processes each, alternating, then the peer (3 processes); then WARM=1: the same warm
#           (WROUNDS rounds, default 2). QUICK_LIB (default .carry/quick/): new plus interim plans on 64x64 tiles only.
#  timeline bench/experiments/interim/timeline.py: one cold process of each library (default options).
#  stats    pipeline_stats on .carry/wgsl_s47/ (Whisper-tiny fp16's cold pipelines and two alternatives), the driver's
#           cache off, one thread and then all at once (16 threads): what compiling at once costs each compile.
#  itest    tests/test_interim_kernels.py on this GPU.
# Stage here (goldens/ and docs/data/ moved out): the library in .carry/bench/, the base in .carry/base/, pipeline_stats
# (STATS=1 bash bench/h200_stage.sh); carry [".carry", ".whl", ".gl"].
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
PARTS=" ${PARTS:-ab timeline stats itest} "
BASE_LIB=${BASE_LIB:-.carry/base/libonnxruntime_ep_wgpu.so}
PRIO_LIB=${PRIO_LIB:-.carry/prio/libonnxruntime_ep_wgpu.so}
QUICK_LIB=${QUICK_LIB:-.carry/quick/libonnxruntime_ep_wgpu.so}
lib_of() { case $1 in base) echo "$BASE_LIB" ;; prio) echo "$PRIO_LIB" ;; quick) echo "$QUICK_LIB" ;; *) echo "$LIB" ;; esac; }
M=$(python3 -c "import sys; sys.path.insert(0, 'bench'); import startup; from pathlib import Path; \
print(startup.default_model(Path('bench/out/startup'), 'fp16')[0])" 2>/dev/null | tail -1)

if [[ $PARTS == *" ab "* ]]; then
  for mode in cold ${WARM:+warm}; do
    rounds=${ROUNDS:-3}; [[ $mode == warm ]] && rounds=${WROUNDS:-2}
    for r in $(seq 1 "$rounds"); do
      for who in base prio new quick; do
        [[ -f $(lib_of $who) ]] || continue
        timeout 200 python3 bench/startup.py --lib "$(lib_of $who)" --dtype fp16 --configs ours-nocache --modes $mode \
          --repeat 2 --json "$OUT/ab_${mode}_${who}_$r.json" >"$OUT/ab_${mode}_${who}_$r.txt" 2>&1
      done
    done
    timeout 200 python3 bench/startup.py --lib "$LIB" --dtype fp16 --configs peer --modes $mode --repeat 3 \
      --json "$OUT/ab_${mode}_peer.json" >"$OUT/ab_${mode}_peer.txt" 2>&1
  done
fi
if [[ $PARTS == *" timeline "* ]]; then
  for who in quick new prio base; do
    dir=$(mktemp -d)
    __GL_SHADER_DISK_CACHE_PATH=$dir timeout 120 python3 bench/experiments/interim/timeline.py "$PWD/$(lib_of $who)" "$M" \
      >"$OUT/tl_$who.txt" 2>&1
  done
fi
if [[ $PARTS == *" stats "* ]]; then
  for t in 1 16; do
    __GL_SHADER_DISK_CACHE=0 timeout 120 .carry/bench/pipeline_stats --dir .carry/wgsl_s47 --modes unchecked \
      --threads "$t" --json "$OUT/stats_t$t.json" >"$OUT/stats_t$t.txt" 2>&1
  done
fi
if [[ $PARTS == *" itest "* ]]; then
  ONNXRUNTIME_EP_WGPU_LIB=$LIB timeout 240 python3 -m pytest -q -p no:cacheprovider -rf tests/test_interim_kernels.py \
    >"$OUT/itest.txt" 2>&1
fi
rm -f "$OUT/all.tgz"
(cd "$OUT" && tar -czf /tmp/all.tgz . && mv /tmp/all.tgz .)
cat "$OUT/gpu.txt"
for f in "$OUT"/ab_*.txt; do [[ -f $f ]] && grep -E "^ +(ours|peer).* #[0-9]" "$f" | sed "s/^ *[a-z-]* *//; s/^/$(basename "$f" .txt) /" | cut -c1-140; done
for f in "$OUT"/tl_*.txt; do [[ -f $f ]] && { echo "=== $(basename "$f")"; grep -E "SESSION|RUN [0-2] |compile " "$f" \
  | sed 's/: wgsl [0-9]* B,//' | cut -c1-100 | head -24; }; done
for f in "$OUT"/stats_*.txt; do [[ -f $f ]] && { echo "=== $(basename "$f")"; grep -E "^\||total" "$f" | cut -d'|' -f1-4 | head -22; }; done
[[ -f $OUT/itest.txt ]] && { echo "=== itest"; grep -E "^FAILED|^ERROR|passed|failed" "$OUT/itest.txt" | tail -8 | cut -c1-220; }
true
