"""What one step costs when it does almost nothing, beside steps that stream issue 13's 16.8 MB (issues 13 and 18).

Issue 13's decode target (Sq=1, Skv=4096, 8 K/V heads, d=128, f16: 16.8 MB of K/V) asks for >= 50% of the H200's
HBM bandwidth, i.e. the whole step in 7.0 us as our step profile times it (`ONNXRUNTIME_EP_WGPU_PROFILE`: five
repeats of the step in one compute pass, averaged; each repeat writes what the one before wrote, so each waits for
the one before to drain). This script times, the same way, single-node models on our EP (CPU fallback disabled,
offload=all):
  relu_64        Relu over 64 f16 elements: the floor of a dependent dispatch (launch, one wave, drain);
  relu_16.8MB    Relu over 8 396 800 f16 elements: 16.8 MB read and 16.8 MB written;
  relu_f32_33.6MB  the same elements in f32;
  add_16.8MB     x + x in f16 (two inputs of the output's shape);
  add_bias_16.8MB  [8200, 1024] f16 plus a bias row of 1024 (a broadcast input);
  sum_16.8MB     ReduceSum over the last axis of [32, 262400] f16: 16.8 MB read, 64 bytes written (a decode step's
                 byte pattern);
  groupnorm_16.8MB  GroupNormalization of [2, 64, 256, 256] f16 in 32 groups (bytes: X in and Y out once);
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

CASES = [  # name, op, input shape, bytes moved (read + written), element type
    ("relu_64", "Relu", [64], 2 * 64 * 2, "f16"),
    ("relu_16.8MB", "Relu", [8_396_800], 2 * 8_396_800 * 2, "f16"),
    ("relu_f32_33.6MB", "Relu", [8_396_800], 2 * 8_396_800 * 4, "f32"),
    ("add_16.8MB", "Add", [8_396_800], 3 * 8_396_800 * 2, "f16"),
    ("add_bias_16.8MB", "AddBias", [8200, 1024], 2 * 8200 * 1024 * 2, "f16"),
    ("sum_16.8MB", "ReduceSum", [32, 262_400], 32 * 262_400 * 2 + 32 * 2, "f16"),
    ("groupnorm_16.8MB", "GroupNorm", [2, 64, 256, 256], 2 * 2 * 64 * 256 * 256 * 2, "f16"),
]
TYPES = {"f16": (TensorProto.FLOAT16, np.float16), "f32": (TensorProto.FLOAT, np.float32)}


def model(op: str, shape: list[int], ty: str = "f16") -> bytes:
    et = TYPES[ty][0]
    x = helper.make_tensor_value_info("x", et, shape)
    out, inits = shape, []
    if op == "ReduceSum":
        axes = helper.make_tensor("axes", TensorProto.INT64, [1], [len(shape) - 1])
        node = helper.make_node(op, ["x", "axes"], ["y"], keepdims=0)
        out, inits = shape[:-1], [axes]
    elif op == "Add":  # x + x: two inputs of the output's shape
        node = helper.make_node(op, ["x", "x"], ["y"])
    elif op == "GroupNorm":  # 32 groups (UNet's), scale and bias per group (opset 18)
        ones = [helper.make_tensor(n, et, [32], np.full(32, v, TYPES[ty][1]).tobytes(), raw=True)
                for n, v in (("s", 1.0), ("b", 0.0))]
        node = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=32, epsilon=1e-5)
        inits = ones
    elif op == "AddBias":  # a bias row broadcast over the rows
        bias = helper.make_tensor("b", et, [shape[-1]], np.ones(shape[-1], TYPES[ty][1]).tobytes(), raw=True)
        node = helper.make_node("Add", ["x", "b"], ["y"])
        inits = [bias]
    else:
        node = helper.make_node(op, ["x"], ["y"])
    graph = helper.make_graph([node], "floor", [x], [helper.make_tensor_value_info("y", et, out)], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 9
    return m.SerializeToString()


def ours(devices, op: str, shape: list[int], ty: str) -> float | None:
    so = ort.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    so.add_provider_for_devices(devices, {"offload": "all"})
    sess = ort.InferenceSession(model(op, shape, ty), sess_options=so)
    feeds = {"x": np.random.default_rng(0).standard_normal(shape, dtype=np.float32).astype(TYPES[ty][1])}
    for _ in range(3):
        sess.run(None, feeds)
    steps = [x["gpu_ms"] for x in prov.profiled_steps(sess, feeds, runs=3)]
    return min(steps) * 1e3 if steps else None


def torch_us(op: str, shape: list[int], ty: str) -> float | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    x = torch.randn(shape, device="cuda", dtype=torch.float16 if ty == "f16" else torch.float32)
    b = torch.ones(shape[-1], device="cuda", dtype=x.dtype)
    f = {"Relu": lambda: torch.relu(x), "Add": lambda: x + x, "AddBias": lambda: x + b, "ReduceSum": lambda: x.sum(-1),
         "GroupNorm": lambda: torch.nn.functional.group_norm(x, 32)}[op]
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
    for name, op, shape, nbytes, ty in CASES:
        row = {"case": name, "bytes": nbytes, "ours_us": ours(devices, op, shape, ty)}
        if not args.no_torch:
            row["torch_us"] = torch_us(op, shape, ty)
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
