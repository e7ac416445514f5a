#!/usr/bin/env bash
# Issue 18 on the H200: builds the genai models (bench/genai_build.py) and measures them beside the peer
# (bench/genai_bench.py), with onnxruntime 1.32 and onnxruntime-genai 0.18.0 from the carried genai.tar.xz.
# Stage here with `GENAI=1 KERNEL_BENCH=0 bash bench/h200_stage.sh`, then a device run with carry
# [".carry", ".whl", ".gl"] and: OUT=$OUT bash bench/h200_genai.sh
# Env: PYTEST (pytest files to run first), BUILD=0 / BENCH=0 skip a phase, BASE (another build of our library,
# measured alone first, into $OUT/base; NEW=0 then skips this build's bench), ONLY (model regex), PRECISIONS,
# MODELS (where models are built; kept between calls while the machine stays warm), GENAI_LOOP=0,
# BENCH_ONLY (model-directory regex for the bench).
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
mkdir -p /tmp/genai && tar -xJf .carry/genai/genai.tar.xz -C /tmp/genai || exit 2
export PYTHONPATH=/tmp/genai:$PYTHONPATH
MODELS=${MODELS:-/tmp/genai_models}
LIBABS=$(readlink -f "$LIB")
python3 -c 'import onnxruntime as o, onnxruntime_genai as g; print("onnxruntime", o.__version__, "genai", g.__version__)'
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
if [[ -n ${PYTEST:-} ]]; then
  ONNXRUNTIME_EP_WGPU_LIB=$LIBABS timeout 200 python3 -m pytest -q -x -p no:cacheprovider $PYTEST 2>&1 | tail -15
fi
if [[ ${BUILD:-1} != 0 ]]; then
  timeout ${BUILD_TIMEOUT:-400} python3 bench/genai_build.py --out "$MODELS" --only "${ONLY:-.}" \
    --precisions "${PRECISIONS:-fp16,int4}" 2>&1 | tail -30
fi
if [[ -n ${BASE:-} && ${BENCH:-1} != 0 ]]; then
  # A second build of ours alone (before/after in one call): its rows go to $OUT/base/genai.json.
  GENAI_PROFILE=0 timeout ${BENCH_TIMEOUT:-500} python3 -X faulthandler bench/genai_bench.py --models "$MODELS" \
    --lib "$(readlink -f "$BASE")" --providers ours --no-genai --only "${BENCH_ONLY:-${ONLY:-.}}" \
    --out "$OUT/base" > "$OUT/genai_base_log.txt" 2>&1
  echo "base bench exit $?"
  grep -v '^\[\|XDG' "$OUT/genai_base_log.txt" | cut -c1-1500 | tail -12
fi
if [[ ${BENCH:-1} != 0 && ${NEW:-1} != 0 ]]; then
  extra=()
  [[ ${GENAI_LOOP:-1} == 0 ]] && extra+=(--no-genai)
  timeout ${BENCH_TIMEOUT:-500} python3 -X faulthandler bench/genai_bench.py --models "$MODELS" --lib "$LIBABS" \
    --only "${BENCH_ONLY:-${ONLY:-.}}" --out "$OUT" "${extra[@]}" > "$OUT/genai_log.txt" 2>&1
  echo "bench exit $?"
  grep -v '^\[\|XDG' "$OUT/genai_log.txt" | cut -c1-1500 | tail -40
fi
