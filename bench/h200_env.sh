#!/usr/bin/env bash
# The set-up every H200 script shares (sourced, after `bash bench/h200_stage.sh` here and a device run with carry
# [".carry", ".whl", ".gl"]): cd to the checkout, $OUT, the carried wheels installed into /tmp/site (the peer; pytest),
# the Vulkan loader and GLVND unpacked for the NVIDIA ICD, and $LIB, our staged library.
#   source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 2
OUT="${OUT:-$ROOT/bench/out/h200}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1
if compgen -G '.whl/*.whl' >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || exit 2
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
for f in .gl/*.deb; do [[ -f $f ]] && dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
LIB=.carry/bench/libonnxruntime_ep_wgpu.so
[[ -f $LIB ]] || LIB=target/release/libonnxruntime_ep_wgpu.so
# left: the seconds this call has left of BUDGET (570 by default: a device call's 600 less a margin); gpu_info: the
# card, driver and SM clock into $OUT/gpu.txt, and $OUT/more made.
left() { echo $((${BUDGET:-570} - SECONDS)); }
gpu_info() {
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
  mkdir -p "$OUT/more"
}
# tests_and_pack "FILES" SECONDS: pytest on FILES with our library into $OUT/more/tests.txt, then $OUT/more and
# gpu.txt into $OUT/all.tgz (and $OUT/more removed); prints the GPU and the tests' last two lines.
tests_and_pack() {
  # shellcheck disable=SC2086 # a list of test files
  ONNXRUNTIME_EP_WGPU_LIB=$PWD/$LIB timeout "$2" python3 -m pytest -q -p no:cacheprovider $1 >"$OUT/more/tests.txt" 2>&1
  tar czf "$OUT/all.tgz" -C "$OUT" more gpu.txt && rm -rf "$OUT/more"
  cat "$OUT/gpu.txt"
  tar xzf "$OUT/all.tgz" -O more/tests.txt | tail -2
}
# startup LIB NAME CONFIG MODE DTYPE ROUND REPEAT [VAR=VALUE] [OPTION]: bench/startup.py (settled for 4 s) into
# $OUT/more/NAME_MODE_ROUND.{json,txt}; VAR=VALUE goes into its environment, OPTION is one EP option of ours.
startup() {
  local opt=(); [[ -n ${9:-} ]] && opt=(--option "$9")
  env "${8:-X_=0}" timeout 150 python3 bench/startup.py --lib "$1" --dtype "$5" --configs "$3" --modes "$4" \
    --repeat "$7" --settle 4 "${opt[@]}" --json "$OUT/more/$2_$4_$6.json" >"$OUT/more/$2_$4_$6.txt" 2>&1
}
# whisper_speed NAME [ARGS...]: bench/run.py --full --io-binding on Whisper-tiny (fp32, fp16) with $LIB beside the
# peer and the CPU EP into $OUT/more/NAME{.txt,/}; whisper_lines NAME prints its Whisper rows from $OUT/all.tgz.
whisper_speed() {
  local name=$1
  shift
  timeout 200 python3 bench/run.py --full --lib "$LIB" --no-torch --io-binding --only whisper_encoder "$@" \
    --out "$OUT/more/$name" >"$OUT/more/$name.txt" 2>&1
}
whisper_lines() {
  tar xzf "$OUT/all.tgz" -O "more/$1.txt" | grep -E "^\| whisper" | tail -6
}
# beside_peer ROUNDS: per round, our $LIB cold (2 processes) and the peer cold, then each warm, Whisper-tiny fp16.
beside_peer() {
  local r
  for r in $(seq 1 "$1"); do
    startup "$LIB" ours-nocache ours-nocache cold fp16 "$r" 2
    startup "$LIB" peer peer cold fp16 "$r" 1
    startup "$LIB" ours-nocache ours-nocache warm fp16 "$r" 1
    startup "$LIB" peer peer warm fp16 "$r" 1
  done
}
# genai_models PRECISIONS: onnxruntime-genai from .carry/genai unpacked into /tmp/genai (put on PYTHONPATH), then
# Llama-3.2-1B built by bench/genai_build.py into $MODELS (default /tmp/genai_models) in PRECISIONS (fp16,int4).
genai_models() {
  mkdir -p /tmp/genai && tar -xJf .carry/genai/genai.tar.xz -C /tmp/genai || return 2
  export PYTHONPATH=/tmp/genai:${PYTHONPATH:-}
  MODELS=${MODELS:-/tmp/genai_models}
  timeout 300 python3 bench/genai_build.py --out "$MODELS" --only llama --precisions "$1" 2>&1 | tail -2
}
