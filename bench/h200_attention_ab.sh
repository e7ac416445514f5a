#!/usr/bin/env bash
# A/B of libraries on the attention kernels in one H200 call: .carry/base/libonnxruntime_ep_wgpu.so (e.g. the
# previous commit, built and stripped here), any EXTRA ones (name=path ...), and the staged library, alternating
# ROUNDS times so that clock drift touches all alike; then, with TESTS, the attention pytest files run with the
# staged library on this GPU.
# Stage first (`bash bench/h200_stage.sh`), carry [".carry", ".whl", ".gl"]. Writes $OUT/ab_attention.txt and
# $OUT/tests.txt; the kernel tables print last.
#   ONLY='whisper|s4096' ROUNDS=2 TESTS=1 EXTRA="sub=.carry/sub/libonnxruntime_ep_wgpu.so" bash bench/h200_attention_ab.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
BASE=.carry/base/libonnxruntime_ep_wgpu.so
ONLY=${ONLY:-whisper|s4096_h8|llama_prefill}
: >"$OUT/ab_attention.txt"
for r in $(seq "${ROUNDS:-2}"); do
  for entry in "base=$BASE" ${EXTRA:-} "new=$LIB"; do
    which=${entry%%=*} lib=${entry#*=}
    echo "== $which round $r" >>"$OUT/ab_attention.txt"
    timeout 120 python3 bench/attention_bench.py --lib "$lib" --only "$ONLY" >>"$OUT/ab_attention.txt" 2>&1
  done
done
if [[ -n ${TESTS:-} ]]; then
  ONNXRUNTIME_EP_WGPU_LIB=$LIB timeout 240 python3 -m pytest -q -x -p no:cacheprovider ${TEST_FILES:-tests/test_attention.py tests/test_gqa.py} \
    >"$OUT/tests.txt" 2>&1
  tail -3 "$OUT/tests.txt"
fi
grep -E "^== |^\|" "$OUT/ab_attention.txt"
