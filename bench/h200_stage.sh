#!/usr/bin/env bash
# Prepares, on this (CPU) machine, everything the benchmark needs on the H200 machine, in ignored folders that a
# device run carries:
#   .carry/bench/  our library (release build, debug info stripped) and, if bench/src/bin/kernel_bench.rs exists,
#                  the Rust kernel microbenchmark binary
#   .whl/          the peer's wheel, onnxruntime-ep-webgpu==0.4.0 (py3, manylinux x86_64, --no-deps)
#   .gl/           the Vulkan loader and GLVND .debs (the NVIDIA ICD is libGLX_nvidia.so.0, which needs GLVND)
#   .carry/genai/  with GENAI=1: onnxruntime 1.32, onnxruntime-genai 0.18.0 and onnx-ir unpacked into one
#                  genai.tar.xz (28 MB; the wheels are 38 MB) for bench/h200_genai.sh
# KERNEL_BENCH=0 leaves the kernel microbenchmark out (8.6 MB) when the carry limit is tight; STATS=1 adds
# pipeline_stats (bench/h200_sass.sh).
# Then checks that the working tree plus these folders stay under the 64 MiB a device run may carry, and prints
# the device command (bench/README.md).
#   bash bench/h200_stage.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_PROGRESS_BAR=off

LIMIT=$((64 * 1024 * 1024))
PEER="onnxruntime-ep-webgpu==0.4.0"
PY=python3
[[ -x .venv/bin/python ]] && PY=.venv/bin/python

log() { printf '[stage] %s\n' "$*"; }

log "cargo build --release -p onnxruntime-ep-wgpu"
cargo build --release -p onnxruntime-ep-wgpu
rm -rf .carry/bench
mkdir -p .carry/bench .whl .gl
cp target/release/libonnxruntime_ep_wgpu.so .carry/bench/
strip --strip-debug .carry/bench/libonnxruntime_ep_wgpu.so  # 40 MB of line tables are not needed there

if [[ -f bench/src/bin/kernel_bench.rs && ${KERNEL_BENCH:-1} != 0 ]]; then
  log "cargo build --release -p ep-wgpu-bench (kernel_bench)"
  cargo build --release -p ep-wgpu-bench --bin kernel_bench
  cp target/release/kernel_bench .carry/bench/
  strip --strip-debug .carry/bench/kernel_bench
else
  log "no bench/src/bin/kernel_bench.rs: no kernel microbenchmark staged"
fi
if [[ ${STATS:-0} == 1 ]]; then
  log "cargo build --release -p ep-wgpu-bench (pipeline_stats)"
  cargo build --release -p ep-wgpu-bench --bin pipeline_stats
  cp target/release/pipeline_stats .carry/bench/
  strip --strip-all .carry/bench/pipeline_stats
fi

# The peer's wheel (one version only: two of a package stop the install there).
find .whl -maxdepth 1 -name 'onnxruntime_ep_webgpu-*.whl' ! -name 'onnxruntime_ep_webgpu-0.4.0-*' -delete
if ! compgen -G '.whl/onnxruntime_ep_webgpu-0.4.0-*.whl' >/dev/null; then
  log "pip download $PEER"
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl "$PEER"
fi

rm -rf .carry/genai
if [[ ${GENAI:-0} == 1 ]]; then
  dl=/tmp/genai-wheels
  mkdir -p "$dl" .carry/genai
  log "pip download onnxruntime==1.32.0 onnxruntime-genai==0.18.0 onnx-ir (cp312)"
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 -d "$dl" \
    onnxruntime==1.32.0 onnxruntime-genai==0.18.0 onnx-ir
  rm -rf "$dl/site" && mkdir -p "$dl/site"
  for w in "$dl"/*.whl; do "$PY" -m zipfile -e "$w" "$dl/site"; done
  tar -cJf .carry/genai/genai.tar.xz -C "$dl/site" .
fi

# The Vulkan loader: the H200 image has the NVIDIA ICD but no libvulkan.so.1, and the ICD library
# (libGLX_nvidia.so.0) only loads with GLVND beside it ("Found no drivers!" otherwise).
GL_PACKAGES=(libvulkan1 libglvnd0 libglx0 libegl1 libgl1 libopengl0 libgles2)
missing=()
for p in "${GL_PACKAGES[@]}"; do compgen -G ".gl/${p}_*.deb" >/dev/null || missing+=("$p"); done
if ((${#missing[@]})); then
  log "apt-get download ${missing[*]} (amd64)"
  mkdir -p /tmp/amd64/partial
  o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64)
  apt-get "${o[@]}" update -qq
  (cd .gl && apt-get "${o[@]}" download "${missing[@]}")
fi

# What a device run sends: tracked and untracked-not-ignored files, plus the carried folders.
git ls-files -z --cached --others --exclude-standard | "$PY" -c '
import os, sys
limit = int(sys.argv[1])
tree = sum(os.path.getsize(p) for p in sys.stdin.buffer.read().decode().split("\0") if p and os.path.isfile(p))
carried = {}
for top in (".carry", ".whl", ".gl"):
    for d, _, files in os.walk(top):
        for f in files:
            carried[os.path.join(d, f)] = os.path.getsize(os.path.join(d, f))
for path, size in sorted(carried.items()):
    print(f"  {size / 2**20:8.2f} MiB  {path}")
total = tree + sum(carried.values())
print(f"[stage] working tree {tree / 2**20:.1f} MiB + carried {sum(carried.values()) / 2**20:.1f} MiB "
      f"= {total / 2**20:.1f} MiB (limit {limit / 2**20:.0f} MiB)")
sys.exit(1 if total > limit else 0)
' "$LIMIT" || { echo "[stage] error: over the 64 MiB a device run carries" >&2; exit 1; }
cat <<'EOF'
[stage] ready. On the H200 (device tool `run`, kind nvidia-h200):
    carry:   [".carry", ".whl", ".gl"]
    command: bash bench/h200_run.sh
    timeout_s: 600
  Results come back in $OUT: results.json, table.md, *.png, log.txt. Then, here:
    python bench/report.py <files_at>/results.json --write-docs docs/PERFORMANCE.md
EOF
