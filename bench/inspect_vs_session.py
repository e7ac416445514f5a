#!/usr/bin/env python3
"""The inspector's prediction against a real session on this machine's GPU (issue 16: "on the H200 profile against
an H200 session once"). For each committed model (inspect/tests/models/*.onnx) and option set, it compares the
nodes `inspect --profile PROFILE` says the EP claims, and its partition count, with what the EP claimed in a real
session (its GetCapability log; graph optimizations off, so ORT offers the file's graph); the same with the profile recorded live on this
adapter (`inspect --capture-profile`), whose differences from PROFILE are printed. Needs onnxruntime and numpy
only (node names come from the inspector's JSON). Where shapes are known, the product and conv plans the inspector
predicts on the live caps must equal the plan lines the EP logs. Exit 0 when every PROFILE prediction and every plan
matches, 1 otherwise.

On this (CPU) machine:
    cargo build --release -p onnxruntime-ep-wgpu -p ep-wgpu-inspect && bash bench/h200_stage.sh
    cp target/release/inspect .carry/bench/ && strip --strip-debug .carry/bench/inspect
On the H200 (device run with carry [".carry", ".gl"]):
    for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig; \
    VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json python3 bench/inspect_vs_session.py \
      --lib .carry/bench/libonnxruntime_ep_wgpu.so --inspect .carry/bench/inspect --profile h200 --json $OUT/inspect.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnxruntime as ort

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO / "inspect" / "tests" / "models"
EP_NAME = "WgpuExecutionProvider"
OPTION_SETS = [{}, {"offload": "all"}]
NP_TYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(int64)": np.int64,
            "tensor(int32)": np.int32, "tensor(bool)": np.bool_}


def inspect(binary: str, *args: str) -> dict:
    done = subprocess.run([binary, *args], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"inspect {' '.join(args)}: {done.stderr.strip()}")
    return json.loads(done.stdout) if "--json" in args else {}


def predicted(report: dict) -> tuple[set, int]:
    return {n["name"] for n in report["nodes"] if n["claimed"]}, len(report["partitions"])


def feeds(sess: ort.InferenceSession, rng: np.random.Generator) -> dict:
    out = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else 3 for d in i.shape]
        dtype = NP_TYPES[i.type]
        if np.issubdtype(dtype, np.integer):
            out[i.name] = rng.integers(0, 2, size=shape).astype(dtype)
        else:
            out[i.name] = rng.standard_normal(shape).astype(dtype)
    return out


DECLINED = re.compile(r"\[WgpuExecutionProvider\] declined (\S+) '([^']*)': (.*)$")
SUMMARY = re.compile(r"\[WgpuExecutionProvider\] GetCapability: claimed (\d+) of (\d+) nodes in (\d+) partition")
PLAN = re.compile(r"\] WgpuExecutionProvider_\S+: ((?:MatMul|Gemm|Conv) '.*)$")
LOGGED_PLAN = re.compile(r"(?:MatMul|Gemm|Conv) '")  # the EP logs the plans of products and convs
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@contextlib.contextmanager
def native_log():
    """Collects what ONNX Runtime (the EP included) writes to fd 2 meanwhile into the yielded list."""
    lines: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield lines
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            lines.extend(ANSI.sub("", tmp.read().decode(errors="replace")).splitlines())


def first_capability(lines: list) -> tuple[dict, int, int, int]:
    """The EP's first GetCapability of a session (over the graph as loaded; ORT may call it again after falling
    back, e.g. on inlined function bodies): {declined node name: reason}, claimed, total, partitions."""
    declined = {}
    for line in lines:
        if m := DECLINED.search(line):
            declined[m.group(2)] = m.group(3)
        elif m := SUMMARY.search(line):
            return declined, int(m.group(1)), int(m.group(2)), int(m.group(3))
    raise AssertionError("the EP logged no GetCapability summary:\n" + "\n".join(lines[-20:]))


def session_claims(devices: list, model: str, options: dict, all_nodes: set) -> tuple[set, int, dict, list]:
    """What the EP claimed in a real session (graph optimizations off, so ORT offers the file's graph), from its
    log at verbose level: (claimed node names, partitions, {declined name: reason}, the plan lines of products and
    convs it logged while preparing the one run, with inputs of size 3 on symbolic dims)."""
    so = ort.SessionOptions()
    so.add_provider_for_devices(devices, {k: str(v) for k, v in options.items()})
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 0
    with native_log() as lines:
        sess = ort.InferenceSession(model, sess_options=so, enable_fallback=0)
        sess.run(None, feeds(sess, np.random.default_rng(0)))
        del sess
    declined, claimed, total, partitions = first_capability(lines)
    assert total == len(all_nodes) and claimed == total - len(declined), (claimed, total, len(declined), len(all_nodes))
    plans = sorted(m.group(1) for line in lines if (m := PLAN.search(line)))
    return all_nodes - set(declined), partitions, declined, plans


def inspector_plans(report: dict) -> list:
    """The plan lines the inspector predicts (the EP logs the same lines when it prepares a shape)."""
    lines = (st["plan"]["line"] for p in report["partitions"] if isinstance(p["steps"], list)
             for st in p["steps"] if st["plan"] and "line" in st["plan"])
    return sorted(line for line in lines if LOGGED_PLAN.match(line))


def pick_devices(device: str) -> list:
    ours = [d for d in ort.get_ep_devices() if d.ep_name == EP_NAME]
    if device:
        ours = [d for d in ours if device.lower() in d.ep_metadata.get("wgpu.adapter", "").lower()]
    hardware = [d for d in ours if d.ep_metadata.get("wgpu.software", "0") in ("0", "false")]
    chosen = (hardware or ours)[:1]
    if not chosen:
        raise RuntimeError(f"no {EP_NAME} device matches '{device}'")
    return chosen


def profile_diff(binary: str, profile: str, live: str) -> list:
    recorded_path = REPO / "kernels" / "profiles" / f"{profile}.json"
    recorded = json.loads((recorded_path if recorded_path.exists() else Path(profile)).read_text())
    current = json.loads(Path(live).read_text())
    return [f"{k}: {recorded.get(k)!r} recorded, {current.get(k)!r} live" for k in sorted(set(recorded) | set(current))
            if recorded.get(k) != current.get(k)]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lib", default=str(REPO / "target/release/libonnxruntime_ep_wgpu.so"))
    p.add_argument("--inspect", default=str(REPO / "target/release/inspect"))
    p.add_argument("--profile", default="h200", help="recorded profile (or JSON file) to check against")
    p.add_argument("--device", default="", help="substring of the adapter name (default: the first hardware one)")
    p.add_argument("--json", help="write the results here")
    args = p.parse_args()
    ort.register_execution_provider_library("wgpu_inspect", os.path.abspath(args.lib))
    devices = pick_devices(args.device)
    print("device:", devices[0].ep_metadata.get("wgpu.adapter"), "| onnxruntime", ort.__version__)
    rows, ok = [], True
    with tempfile.TemporaryDirectory() as tmp:
        live = f"{tmp}/live.json"
        subprocess.run([args.inspect, "--capture-profile", live, "--adapter",
                        devices[0].ep_metadata.get("wgpu.adapter_index", "0")], check=True, capture_output=True)
        diff = profile_diff(args.inspect, args.profile, live)
        print(f"live caps vs '{args.profile}':", "identical" if not diff else "\n  " + "\n  ".join(diff))
        for model in sorted(MODELS.glob("*.onnx")):
            for options in OPTION_SETS:
                opt_args = [a for k, v in options.items() for a in ("--option", f"{k}={v}")]
                want = inspect(args.inspect, str(model), "--profile", args.profile, "--json", *opt_args)
                live_report = inspect(args.inspect, str(model), "--profile", live, "--json", *opt_args)
                all_nodes = {n["name"] for n in want["nodes"]}
                claimed, partitions, _, plans = session_claims(devices, str(model), options, all_nodes)
                got = (claimed, partitions)
                row = {"model": model.name, "options": options, "session": [len(got[0]), got[1]],
                       "profile": list(map(len, [predicted(want)[0]])) + [predicted(want)[1]],
                       "live": list(map(len, [predicted(live_report)[0]])) + [predicted(live_report)[1]],
                       "profile_matches": predicted(want) == got, "live_matches": predicted(live_report) == got,
                       "profile_only": sorted(predicted(want)[0] - got[0]), "session_only": sorted(got[0] - predicted(want)[0])}
                # Plans (products and convs) where every shape is known, on the live caps.
                if not live_report["symbolic_inputs"]:
                    row["plans_match"] = inspector_plans(live_report) == plans
                    ok &= row["plans_match"]
                ok &= row["profile_matches"]
                rows.append(row)
                print(f"{model.name:24} {json.dumps(options):22} session {got[0].__len__():3} nodes/{got[1]} part | "
                      f"{args.profile} {row['profile'][0]:3}/{row['profile'][1]} {'ok' if row['profile_matches'] else 'DIFFERS'}"
                      f" | live {row['live'][0]:3}/{row['live'][1]} {'ok' if row['live_matches'] else 'DIFFERS'}"
                      f" | plans {dict(zip([True, False], ['ok', 'DIFFER'])).get(row.get('plans_match'), '-')}")
                if not row["profile_matches"]:
                    print(f"    {args.profile} only: {row['profile_only']}; session only: {row['session_only']}")
    if args.json:
        Path(args.json).write_text(json.dumps({"profile_diff": diff, "rows": rows}, indent=1))
    ort.unregister_execution_provider_library("wgpu_inspect")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
