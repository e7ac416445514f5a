#!/usr/bin/env bash
# A/B of libraries on whole-model host splits in one H200 call: `bench/host_split.py --bound` for
# .carry/base/libonnxruntime_ep_wgpu.so (e.g. the previous landing, built and stripped here), any EXTRA ones
# (name=path ...) and the staged library, alternating ROUNDS times (hosts differ between machine instances, so
# only builds measured in one call compare); then the staged library's dispatches of most GPU time and, with
# MODELS, `bench/run.py --full --io-binding` beside the peer and the CPU EP (`ONLY` regex, default Whisper); with
# KB_SHAPES, the staged kernel_bench on those GEMM shapes first (e.g. a conv's two orientations:
# KB_SHAPES=384x1500x1152,1500x384x1152:tt); OPTS="name=key=value,key=value ..." adds rounds of the staged library
# with those session options (e.g. OPTS="split=f32_split=1").
# Stage first (`bash bench/h200_stage.sh`), carry [".carry", ".whl", ".gl"]. Writes $OUT/hs_<name>_<round>.txt,
# $OUT/hs_dispatches.txt, $OUT/kb.txt and $OUT/models.txt; prints each round's row and the dispatch list.
#   DTYPES=fp32 ROUNDS=3 MODELS=1 bash bench/h200_host_ab.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
BASE=.carry/base/libonnxruntime_ep_wgpu.so
DTYPES=${DTYPES:-fp32}
if [[ -n ${KB_SHAPES:-} && -x .carry/bench/kernel_bench ]]; then
  timeout 120 .carry/bench/kernel_bench --shapes "$KB_SHAPES" --dtypes f32,f16 --paths auto --iters 7 >"$OUT/kb.txt" 2>&1
  tail -8 "$OUT/kb.txt"
fi
for r in $(seq "${ROUNDS:-3}"); do
  for entry in "base=$BASE" ${EXTRA:-} "new=$LIB" ${OPTS:-}; do
    which=${entry%%=*} lib=${entry#*=} opts=()
    if [[ ! -f $lib && $lib == *=* ]]; then
      for kv in ${lib//,/ }; do opts+=(-o "$kv"); done
      lib=$LIB
    fi
    [[ -f $lib ]] || { echo "no library at $lib"; continue; }
    timeout 150 python3 bench/host_split.py --lib "$lib" --runs 300 --dtypes "$DTYPES" --bound "${opts[@]}" \
      >"$OUT/hs_${which}_$r.txt" 2>&1
    grep "^| whisper" "$OUT/hs_${which}_$r.txt" | sed "s/^/$which r$r /"
  done
done
timeout 150 python3 bench/host_split.py --lib "$LIB" --runs 300 --dtypes "$DTYPES" --bound --dispatches 16 \
  >"$OUT/hs_dispatches.txt" 2>&1
grep -o '"dispatches": [0-9.]*\|"gpu_ms": [0-9.]*' "$OUT/hs_dispatches.txt"
for entry in ${OPTS:-}; do
  which=${entry%%=*} spec=${entry#*=} opts=()
  for kv in ${spec//,/ }; do opts+=(-o "$kv"); done
  timeout 150 python3 bench/host_split.py --lib "$LIB" --runs 300 --dtypes "$DTYPES" --bound --dispatches 16 \
    "${opts[@]}" >"$OUT/hs_dispatches_$which.txt" 2>&1
  grep -o '"dispatches": [0-9.]*\|"gpu_ms": [0-9.]*\|\["[^]]*\]' "$OUT/hs_dispatches_$which.txt" | head -14 | sed "s/^/$which /"
done
if [[ -n ${MODELS:-} ]]; then
  timeout 240 python3 bench/run.py --full --lib "$LIB" --io-binding --no-plots --no-torch \
    --only "${ONLY:-whisper_encoder}" >"$OUT/models.txt" 2>&1
  grep -E "^\|" "$OUT/models.txt" | tail -12
fi
