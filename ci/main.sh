#!/usr/bin/env bash
# The main job: set up, build the EP, install its Python package and run a model on it beside the CPU EP.
#   bash ci/main.sh [model.onnx] [--option key=value ...] [--runs N] [--fp16]
# With no model, tools/run_model.py builds a Whisper-frontend-like sample. Arguments go to tools/run_model.py.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash ci/setup.sh
cargo build --release -p onnxruntime-ep-wgpu
bash ci/wheel.sh .venv
exec .venv/bin/python tools/run_model.py "$@"
