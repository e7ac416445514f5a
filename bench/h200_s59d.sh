#!/usr/bin/env bash
# Fifty-ninth session, fourth call (issue 18): SwiGLU's gate and up projections as one dispatch (the one-row GEMV's
# `_dual` programs) against the two steps before it, in a bound decode token of Llama-3.2-1B fp16 (genai builder):
# the experiment build (.carry/exp/) with and without EXP_NO_FOLD=dual, alternating in fresh processes, each with
# each dispatch's cost in the run (bench/h200_s59c.sh); then the LLM pytest files on the device with that build.
# Stage as h200_s59c.sh.
set -uo pipefail
SETTINGS=${SETTINGS:-"dual1:X_=0 apart1:EXP_NO_FOLD=dual dual2:X_=0 apart2:EXP_NO_FOLD=dual"} \
  bash "$(dirname "${BASH_SOURCE[0]}")/h200_s59c.sh" 2>&1 | tail -24
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
ONNXRUNTIME_EP_WGPU_LIB=$(readlink -f .carry/exp/libonnxruntime_ep_wgpu.so) timeout ${TEST_TIMEOUT:-80} python3 -m pytest \
  -q -p no:cacheprovider ${TESTS:-tests/test_llm_model.py} 2>&1 | tail -3
