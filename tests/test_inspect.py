"""The offline inspector (`inspect`, crate `inspect/`) against the EP in a real ONNX Runtime session.

For each committed model and a few option sets, the nodes the inspector says the EP claims (run on this machine's
adapter, recorded with `inspect --capture-profile`) must be exactly the nodes that ONNX Runtime did not hand to
the CPU EP, and its partition count the number of fused nodes ORT ran. ORT's graph optimizations are off, so
ORT offers the EP the file's graph (ORT's level-1 optimizations would fold constant subgraphs before
GetCapability); what the EP claimed is read from its GetCapability log (bench/inspect_vs_session.py, shared with the
check on a GPU machine), declines with their reasons. The binary is `ONNXRUNTIME_EP_WGPU_INSPECT`, else target/release/inspect
(`cargo build --release -p ep-wgpu-inspect`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import conftest

sys.path.append(str(Path(__file__).resolve().parents[1] / "bench"))
import inspect_vs_session  # noqa: E402  (the session side, shared with the H200 check)

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO / "inspect" / "tests" / "models"
EP_NAME = conftest.EP_NAME

CASES = [
    ("mlp", {}),
    ("whisper_frontend", {}),
    ("whisper_frontend", {"tiling": "128x128", "conv_algorithm": "implicit"}),
    ("convnet", {}),
    ("convnet", {"conv_algorithm": "direct"}),
    ("transformer", {}),
    ("transformer_f16", {}),
    ("transformer_f16", {"enable_f16": "0"}),
]


def inspect_binary() -> str:
    path = Path(os.environ.get("ONNXRUNTIME_EP_WGPU_INSPECT") or REPO / "target" / "release" / "inspect")
    if not path.is_file():
        pytest.fail(f"{path} not found: build it with `cargo build --release -p ep-wgpu-inspect`", pytrace=False)
    return str(path)


def run_inspect(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([inspect_binary(), *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def live_profile(ep_devices, tmp_path_factory) -> str:
    """This machine's adapter as the EP sees it, recorded by the inspector."""
    path = tmp_path_factory.mktemp("inspect") / "live.json"
    adapter = ep_devices[0].ep_metadata.get("wgpu.adapter_index", "0")
    done = run_inspect("--capture-profile", str(path), "--adapter", adapter)
    assert done.returncode == 0, done.stderr
    return str(path)


def ort_claims(ep_devices, path: Path, options: dict, all_nodes: set) -> tuple[set, int, dict, list]:
    # The session is local to session_claims and released when it returns.
    return inspect_vs_session.session_claims(ep_devices, str(path), options, all_nodes)


@pytest.mark.parametrize("name,options", CASES, ids=[f"{m}-{'-'.join(o.values()) or 'defaults'}" for m, o in CASES])
def test_inspector_claims_what_the_ep_claims(ep_devices, live_profile, name, options):
    path = MODELS / f"{name}.onnx"
    args = [str(path), "--profile", live_profile, "--json"]
    for key, value in options.items():
        args += ["--option", f"{key}={value}"]
    done = run_inspect(*args)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    predicted = {n["name"] for n in report["nodes"] if n["claimed"]}
    claimed, partitions, declined, plans = ort_claims(ep_devices, path, options, {n["name"] for n in report["nodes"]})
    assert predicted == claimed, f"inspector only: {predicted - claimed}; ORT only: {claimed - predicted}"
    assert len(report["partitions"]) == partitions
    # Every decline with the reason the EP logged.
    assert {n["name"]: n["reason"] for n in report["nodes"] if not n["claimed"]} == declined
    # Kernel::plan predicts what prepare chose (the EP logs the same line), where the shapes are known.
    if not report["symbolic_inputs"]:
        assert inspect_vs_session.inspector_plans(report) == plans


def test_bad_files_fail_clearly():
    for file, message in [
        ("bad/cycle.onnx", "cycle"),
        ("bad/unknown_opset.onnx", "unknown opset 99"),
        ("bad/missing_external.onnx", "missing.bin"),
    ]:
        done = run_inspect(str(MODELS / file))
        assert done.returncode == 1 and message in done.stderr, (file, done.returncode, done.stderr)
