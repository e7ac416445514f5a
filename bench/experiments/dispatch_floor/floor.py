"""What one step costs when it does almost nothing, beside steps that stream issue 13's 16.8 MB (issues 13 and 18).

Issue 13's decode target (Sq=1, Skv=4096, 8 K/V heads, d=128, f16: 16.8 MB of K/V) asks for >= 50% of the H200's
HBM bandwidth, i.e. the whole step in 7.0 us as our step profile times it (`ONNXRUNTIME_EP_WGPU_PROFILE`: five
repeats of the step in one compute pass, averaged; each repeat writes what the one before wrote, so each waits for
the one before to drain). This script times, the same way, single-node models on our EP (CPU fallback disabled,
offload=all):
  relu_64        Relu over 64 f16 elements: the floor of a dependent dispatch (launch, one wave, drain);
  relu_16.8MB    Relu over 8 396 800 f16 elements: 16.8 MB read and 16.8 MB written;
  sum_16.8MB     ReduceSum over the last axis of [32, 262400] f16: 16.8 MB read, 64 bytes written (a decode step's
                 byte pattern);
and, when torch has CUDA, the same three with CUDA events around 20 back-to-back launches (kernels only). If the
floor is f us and a stream reaches r TB/s, the decode step cannot beat f + 16.8 MB / r; 7.0 us needs f <= 7.0 -
16.8 MB / r (2.8 us at r = 4 TB/s). Prints one JSON line per case, then a table.

    python3 bench/experiments/dispatch_floor/floor.py --lib path/to/libonnxruntime_ep_wgpu.so [--no-torch]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import providers as prov  # noqa: E402

CASES = [  # name, op, input shape, bytes moved (read + written)
    ("relu_64", "Relu", [64], 2 * 64 * 2),
    ("relu_16.8MB", "Relu", [8_396_800], 2 * 8_396_800 * 2),
    ("sum_16.8MB", "ReduceSum", [32, 262_400], 32 * 262_400 * 2 + 32 * 2),
]


def model(op: str, shape: list[int]) -> bytes:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT16, shape)
    if op == "ReduceSum":
        axes = helper.make_tensor("axes", TensorProto.INT64, [1], [len(shape) - 1])
        node = helper.make_node(op, ["x", "axes"], ["y"], keepdims=0)
        out, inits = shape[:-1], [axes]
    else:
        node = helper.make_node(op, ["x"], ["y"])
        out, inits = shape, []
    graph = helper.make_graph([node], "floor", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT16, out)],
                              inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 9
    return m.SerializeToString()


def ours(devices, op: str, shape: list[int]) -> float | None:
    so = ort.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    so.add_provider_for_devices(devices, {"offload": "all"})
    sess = ort.InferenceSession(model(op, shape), sess_options=so)
    feeds = {"x": np.random.default_rng(0).standard_normal(shape, dtype=np.float32).astype(np.float16)}
    for _ in range(3):
        sess.run(None, feeds)
    steps = [x["gpu_ms"] for x in prov.profiled_steps(sess, feeds, runs=3)]
    return min(steps) * 1e3 if steps else None


def torch_us(op: str, shape: list[int]) -> float | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    x = torch.randn(shape, device="cuda", dtype=torch.float16)
    f = (lambda: torch.relu(x)) if op == "Relu" else (lambda: x.sum(-1))
    for _ in range(5):
        f()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(20):
        f()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 20 * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--no-torch", action="store_true")
    args = ap.parse_args()
    devices = prov.register_ours(args.lib, "floor_wgpu")
    print("adapter:", dict(devices[0].ep_metadata).get("wgpu.adapter"), flush=True)
    rows = []
    for name, op, shape, nbytes in CASES:
        row = {"case": name, "bytes": nbytes, "ours_us": ours(devices, op, shape)}
        if not args.no_torch:
            row["torch_us"] = torch_us(op, shape)
        print(json.dumps(row), flush=True)
        rows.append(row)
    print("\n| case | bytes | ours µs | ours TB/s | torch µs | torch TB/s |\n|---|---:|---:|---:|---:|---:|")
    for r in rows:
        cells = []
        for k in ("ours_us", "torch_us"):
            us = r.get(k)
            cells += ["—", "—"] if us is None else [f"{us:.2f}", f"{r['bytes'] / us / 1e6:.2f}"]
        print(f"| {r['case']} | {r['bytes']} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
