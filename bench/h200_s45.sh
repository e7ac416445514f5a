#!/usr/bin/env bash
# Forty-fifth session, in parts (PARTS, default "crash"):
#  crash   tests/test_fuzz_graphs.py's random graphs from FUZZ_SEED (default 905026, where the forty-fourth session's
#          run crashed the process) for FUZZ_SECONDS (default 240), each seed written to $OUT/progress.txt before it
#          runs and every compiled pipeline logged (ONNXRUNTIME_EP_WGPU_LOG_COMPILES=1; the log's tail is kept).
#          If the process dies, the last seed is replayed alone in three fresh processes (under gdb where the
#          machine has it) to tell a graph that crashes from a state that builds up.
#  reduce  each model of bench/experiments/crash/ (seed 912509's graph, `orig`; its nodes with concrete shapes,
#          `full`; its live part; each node alone) in a fresh process (run_one.py), compiles logged and ORT's
#          verbose log on; the exit code of each and the tail of the crashing ones' logs.
#  replay  REPLAY_SEEDS (space-separated) each alone in a fresh process, compiles logged.
#  fuzz    the random graphs from FUZZ_SEED for FUZZ_SECONDS (as crash, without the replays and the compile log).
#  kb      `kernel_bench --unchecked` on Whisper's out_proj and fc2 products (1500x384x384, 1500x384x1536, f32) on
#          the SIMT, split and fused-split paths, and on fc1 and Q/K/V for reference, two rounds.
#  hs      `host_split.py` Whisper fp32 with the default options and with each HS_OPTS entry (default
#          f32_split=1), the 16 dispatches of most GPU time each.
#  startup bench/startup.py on Whisper-tiny fp16 (DTYPES, default fp16): ours-nocache beside the peer, cold and warm,
#          3 processes each; with SU_OPTS (e.g. "interim_kernels=1") our rows again with those options.
#  itest   tests/test_interim_kernels.py and tests/test_startup.py on this GPU's real tensor cores.
#  exit    bench/experiments/interim/child.py: Whisper-tiny fp16 in fresh processes with a cold driver cache, each
#          exiting right after the session is created (runs=0) or after 20 runs; each exit code and the compiles
#          started and ended; then tests/test_startup.py on this GPU.
#  models  `run.py` beside the peer and the CPU EP (MODELS, a --only regex, default Whisper).
# Stage here (goldens/ and docs/data/ moved out): `bash bench/h200_stage.sh`; carry [".carry", ".whl", ".gl"].
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
PARTS=" ${PARTS:-crash} "
GDB=$(command -v gdb || true)
echo "gdb: ${GDB:-none}" >>"$OUT/gpu.txt"

fuzz() {  # fuzz <seed> <iterations> <seconds> <log>
  ONNXRUNTIME_EP_WGPU_FUZZ_PROGRESS=$OUT/progress.txt ONNXRUNTIME_EP_WGPU_LOG_COMPILES=1 \
    ONNXRUNTIME_EP_WGPU_LIB=$LIB ONNXRUNTIME_EP_WGPU_FUZZ_SEED=$1 ONNXRUNTIME_EP_WGPU_FUZZ_ITERATIONS=$2 \
    ONNXRUNTIME_EP_WGPU_FUZZ_SECONDS=$3 timeout $(($3 + 60)) python3 -X faulthandler -m pytest -q -s -x \
    -p no:cacheprovider tests/test_fuzz_graphs.py -k random >"$4.full" 2>&1
  local rc=$?
  echo "rc=$rc" >>"$4.full"
  grep -v "compiled pipeline\|MergeShapeInfo" "$4.full" | tail -c 20000 >"$4"
  tail -c 60000 "$4.full" >"$4.tail"
  rm -f "$4.full"
  return $rc
}

replay() {  # replay <seed> <tag>
  fuzz "$1" 1 60 "$OUT/replay_$2.txt"
  echo "replay $1 rc=$?" >>"$OUT/summary.txt"
  if [[ -n $GDB ]]; then
    ONNXRUNTIME_EP_WGPU_LIB=$LIB ONNXRUNTIME_EP_WGPU_FUZZ_SEED=$1 ONNXRUNTIME_EP_WGPU_FUZZ_ITERATIONS=1 \
      timeout 120 "$GDB" -q -batch -ex run -ex bt -ex "info registers rip" --args python3 -m pytest -q -s -x \
      -p no:cacheprovider tests/test_fuzz_graphs.py -k random 2>&1 | grep -v "^\[New Thread\|^\[Thread" \
      | tail -c 30000 >"$OUT/gdb_$2.txt"
  fi
}

if [[ $PARTS == *" crash "* ]]; then
  fuzz "${FUZZ_SEED:-905026}" 1000000 "${FUZZ_SECONDS:-240}" "$OUT/fuzz.txt"
  rc=$?
  last=$(cat "$OUT/progress.txt" 2>/dev/null)
  echo "fuzz from ${FUZZ_SEED:-905026}: rc=$rc last=$last" >>"$OUT/summary.txt"
  if [[ $rc -ne 0 && -n $last ]]; then
    for i in 1 2 3; do replay "$last" "${last}_$i"; done
  fi
fi
if [[ $PARTS == *" fuzz "* ]]; then
  ONNXRUNTIME_EP_WGPU_FUZZ_PROGRESS=$OUT/progress.txt ONNXRUNTIME_EP_WGPU_LIB=$LIB \
    ONNXRUNTIME_EP_WGPU_FUZZ_SEED=${FUZZ_SEED:-912509} ONNXRUNTIME_EP_WGPU_FUZZ_ITERATIONS=1000000 \
    ONNXRUNTIME_EP_WGPU_FUZZ_SECONDS=${FUZZ_SECONDS:-120} timeout $((${FUZZ_SECONDS:-120} + 60)) python3 -X faulthandler \
    -m pytest -q -s -x -p no:cacheprovider tests/test_fuzz_graphs.py -k random >"$OUT/fuzz.txt" 2>&1
  echo "fuzz from ${FUZZ_SEED:-912509}: rc=$? last=$(cat "$OUT/progress.txt" 2>/dev/null)" >>"$OUT/summary.txt"
fi
if [[ $PARTS == *" kb "* ]]; then
  for r in 1 2; do
    timeout 90 .carry/bench/kernel_bench --shapes 1500x384x384,1500x384x1536,1500x1536x384,1500x1152x384 \
      --dtypes f32 --paths simt,split,fused,auto --unchecked --iters 5 >"$OUT/kb_$r.txt" 2>&1
  done
fi
if [[ $PARTS == *" hs "* ]]; then
  timeout 120 python3 bench/host_split.py --lib "$LIB" --runs 300 --dtypes fp32 --dispatches 16 >"$OUT/hs_default.txt" 2>&1
  for o in ${HS_OPTS:-f32_split=1}; do
    timeout 120 python3 bench/host_split.py --lib "$LIB" --runs 300 --dtypes fp32 -o "$o" --dispatches 16 \
      >"$OUT/hs_$o.txt" 2>&1
  done
fi
if [[ $PARTS == *" startup "* ]]; then
  for dt in ${DTYPES:-fp16}; do
    timeout 300 python3 bench/startup.py --lib "$LIB" --dtype "$dt" --configs ours-nocache,peer --modes cold,warm \
      --repeat 3 --json "$OUT/su_$dt.json" >"$OUT/su_$dt.txt" 2>&1
    # SU_OPTS: our EP options for a second set of our rows, e.g. "interim_kernels=1".
    if [[ -n ${SU_OPTS:-} ]]; then
      o=(); for kv in $SU_OPTS; do o+=(-o "$kv"); done
      timeout 200 python3 bench/startup.py --lib "$LIB" --dtype "$dt" --configs ours-nocache --modes cold,warm \
        --repeat 3 "${o[@]}" --json "$OUT/su_opts_$dt.json" >"$OUT/su_opts_$dt.txt" 2>&1
    fi
  done
fi
if [[ $PARTS == *" itest "* ]]; then
  ONNXRUNTIME_EP_WGPU_LIB=$LIB timeout 240 python3 -m pytest -q -p no:cacheprovider -rf tests/test_interim_kernels.py \
    tests/test_startup.py >"$OUT/itest.txt" 2>&1
fi
if [[ $PARTS == *" exit "* ]]; then
  M=$(python3 -c "import sys; sys.path.insert(0, 'bench'); import startup; from pathlib import Path; \
print(startup.default_model(Path('bench/out/startup'), 'fp16')[0])" 2>/dev/null | tail -1)
  for i in 1 2 3 4; do
    for runs in 0 20; do
      dir=$(mktemp -d)
      __GL_SHADER_DISK_CACHE_PATH=$dir ONNXRUNTIME_EP_WGPU_LOG_COMPILES=1 timeout 120 python3 -X faulthandler \
        bench/experiments/interim/child.py "$PWD/$LIB" "$M" runs=$runs >"$OUT/x_${runs}_$i.out" 2>"$OUT/x_${runs}_$i.err"
      rc=$?
      echo "exit runs=$runs $i rc=$rc compiles started $(grep -c '^ep-wgpu compiling' "$OUT/x_${runs}_$i.err")" \
        "ended $(grep -c '^ep-wgpu compile ' "$OUT/x_${runs}_$i.err") $(grep DONE "$OUT/x_${runs}_$i.out" | cut -c1-120)" \
        >>"$OUT/summary.txt"
    done
  done
  ONNXRUNTIME_EP_WGPU_LIB=$LIB timeout 200 python3 -m pytest -q -p no:cacheprovider -rf tests/test_startup.py \
    >"$OUT/itest.txt" 2>&1
fi
if [[ $PARTS == *" reduce "* ]]; then
  for m in bench/experiments/crash/${REDUCE_GLOB:-*}.onnx; do
    t=$(basename "$m" .onnx)
    ONNXRUNTIME_EP_WGPU_LOG_COMPILES=1 timeout 60 python3 -X faulthandler bench/experiments/crash/run_one.py "$PWD/$LIB" \
      "$m" ${REDUCE_OPTS:-} verbose=-v >"$OUT/r_$t.full" 2>&1
    rc=$?
    echo "reduce $t rc=$rc" >>"$OUT/summary.txt"
    if [[ $rc -ne 0 ]]; then grep -v "^  File" "$OUT/r_$t.full" | tail -c 40000 >"$OUT/r_$t.txt"; fi
    rm -f "$OUT/r_$t.full"
  done
fi
if [[ $PARTS == *" replay "* ]]; then
  for s in ${REPLAY_SEEDS:-}; do replay "$s" "$s"; done
fi
if [[ $PARTS == *" models "* ]]; then
  timeout 150 python3 bench/run.py --full --lib "$LIB" --io-binding --no-plots --no-torch \
    --only "${MODELS:-whisper_encoder}" --out "$OUT/models" >"$OUT/models.txt" 2>&1
fi
(cd "$OUT" && tar -czf /tmp/all.tgz . && mv /tmp/all.tgz .)
cat "$OUT/gpu.txt" "$OUT/summary.txt" 2>/dev/null
for f in "$OUT"/fuzz.txt "$OUT"/replay_*.txt; do
  [[ -f $f ]] && { echo "=== $(basename "$f")"; grep -E "matched|FAILED|passed|failed|Error|Fatal|Segm|rc=|File " "$f" \
    | tail -14 | cut -c1-220; }
done
for f in "$OUT"/kb_*.txt; do [[ -f $f ]] && grep -hE "^1500" "$f" | sed "s|^|$(basename "$f" .txt) |" | cut -c1-150; done
for f in "$OUT"/hs_*.txt; do [[ -f $f ]] && grep -h "^| whisper" "$f" | sed "s|^|$(basename "$f" .txt) |" | cut -c1-150; done
for f in "$OUT"/r_*.txt; do [[ -f $f ]] && { echo "=== $(basename "$f")"; grep -v "^\s*$" "$f" | tail -8 | cut -c1-250; }; done
for f in "$OUT"/gdb_*.txt; do [[ -f $f ]] && { echo "=== $(basename "$f")"; grep -E "^#|signal|rip" "$f" | head -25 | cut -c1-200; }; done
for f in "$OUT"/su_*.txt; do [[ -f $f ]] && { echo "=== $(basename "$f")"; grep -E "^\|" "$f" | cut -c1-200; }; done
[[ -f $OUT/itest.txt ]] && { echo "=== itest"; grep -E "^FAILED|^ERROR|passed|failed" "$OUT/itest.txt" | tail -12 | cut -c1-220; }
[[ -f $OUT/models.txt ]] && grep -E "^\| (whisper|bert|vit)" "$OUT/models.txt" | tail -8 | cut -c1-130
true
