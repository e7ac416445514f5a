#!/usr/bin/env bash
# THE test command (CI runs it through .ci/run on a fresh clone): set-up, Rust checks and tests, golden drift,
# release build, the Python wheel, pytest on ONNX Runtime 1.32 and the smoke subset on 1.24, and the quick bench.
# Stops at the first failing stage and names it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

export RUST_BACKTRACE=1
export ONNXRUNTIME_EP_WGPU_WHEEL_DIR="$ROOT/target/wheels"  # tests/test_locator.py checks the wheel built here

STAGE=""
STAGE_START=$SECONDS
SUMMARY=()

finish_stage() {
  [[ -n $STAGE ]] || return 0
  SUMMARY+=("$(printf '%-34s %5ds' "$STAGE" $((SECONDS - STAGE_START)))")
  printf -- '----- %s: ok (%ds)\n' "$STAGE" $((SECONDS - STAGE_START))
  STAGE=""
}

stage() {
  finish_stage
  STAGE=$1
  STAGE_START=$SECONDS
  printf '\n===== [%s] %s (at %ds) =====\n' "$(date +%H:%M:%S)" "$STAGE" "$SECONDS"
}

on_exit() {
  local rc=$?
  if [[ $rc -ne 0 ]]; then
    printf '\n===== FAILED at stage "%s" (exit %d) after %ds in the stage, %ds in all =====\n' \
      "${STAGE:-?}" "$rc" $((SECONDS - STAGE_START)) "$SECONDS" >&2
  fi
}
trap on_exit EXIT

stage "setup"
bash ci/setup.sh

stage "cargo fmt"
cargo fmt --all --check

stage "cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings

# Release: in the dev profile the GPU tests took ~45 of CI's minutes on 2 cores (`gemm_variants_gpu` alone 1,199 s),
# in release ~7 with their build (118 s). The release build below then reuses the compiled dependencies.
stage "cargo test --release"
cargo test --release --workspace

stage "golden drift"
git diff --exit-code --stat -- goldens/
untracked="$(git ls-files --others --exclude-standard -- goldens/)"
if [[ -n $untracked ]]; then
  printf 'goldens not committed:\n%s\n' "$untracked" >&2
  exit 1
fi
echo "goldens/ matches the committed files"

stage "cargo build --release"
cargo build --release -p onnxruntime-ep-wgpu -p ep-wgpu-inspect  # tests/test_inspect.py runs target/release/inspect

stage "python wheel"
bash ci/wheel.sh .venv .venv-ort124

stage "pytest (onnxruntime 1.32)"
.venv/bin/python -m pytest -q tests/

stage "pytest smoke (onnxruntime 1.24)"
.venv-ort124/bin/python -m pytest -q -m smoke tests/

if [[ -f bench/run.py ]]; then
  stage "bench --quick"
  .venv/bin/python bench/run.py --quick
fi

finish_stage
printf '\n===== all stages passed in %ds =====\n' "$SECONDS"
printf '  %s\n' "${SUMMARY[@]}"
