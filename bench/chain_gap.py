"""Where a bound back-to-back run's time goes: chains of L MatMuls [M,K]·[K,K] with constant weights, inputs and
outputs bound on our device (IO binding), n runs back to back and one 4-byte read at the end. The time per run for
L = 1, 2, 4, 8 fits `fixed + L · per_layer`: per_layer is the product's kernel time in a chain, fixed what every run
adds (its GPU copies, submissions). `docs/PERFORMANCE.md`, "Copies by a kernel".

    python bench/chain_gap.py --lib LIB [--dtype fp16|fp32] [--m 2048] [--k 4096] [--layers 1,2,4,8] [--prealloc 0,1]

--prealloc 1 binds a preallocated output OrtValue instead of letting ORT allocate the output on our device each run.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
import iobind  # noqa: E402


def model(ws: list, layers: int, m: int, k: int, tp: int, path: str) -> str:
    nodes, inits, prev = [], [], "X"
    for i in range(layers):
        out = "Y" if i == layers - 1 else f"h{i}"
        inits.append(numpy_helper.from_array(ws[i], f"W{i}"))
        nodes.append(helper.make_node("MatMul", [prev, f"W{i}"], [out]))
        prev = out
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("X", tp, [m, k])],
                          [helper.make_tensor_value_info("Y", tp, [m, k])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), path)
    return path


def per_run_ms(sess, io, probe, n: int) -> float:
    """The fastest of three: n runs back to back, then one read."""
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(n):
            sess.run_with_iobinding(io)
        probe.numpy()  # waits for the work queued before it
        best = min(best, (time.perf_counter() - t) / n * 1e3)
    return best


def measure(dev, ws, layers: int, args, prealloc: bool) -> float:
    npt = np.float16 if args.dtype == "fp16" else np.float32
    tp = TensorProto.FLOAT16 if args.dtype == "fp16" else TensorProto.FLOAT
    info = dev.memory_info(ort.OrtDeviceMemoryType.DEFAULT)
    did, vid = info.device_id, info.device_vendor_id
    so = ort.SessionOptions()
    so.add_provider_for_devices([dev], {})
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    path = model(ws, layers, args.m, args.k, tp, f"/tmp/chain_gap_{args.dtype}_{layers}.onnx")
    sess = ort.InferenceSession(path, so)
    x = np.random.default_rng(1).standard_normal((args.m, args.k)).astype(npt)
    io = sess.io_binding()
    io.bind_ortvalue_input("X", ort.OrtValue.ortvalue_from_numpy(x, "gpu", did, vid))
    if prealloc:
        io.bind_ortvalue_output("Y", ort.OrtValue.ortvalue_from_shape_and_type([args.m, args.k], npt, "gpu", did, vid))
    else:
        io._iobinding.bind_output("Y", ort.OrtDevice.make("gpu", did, vid)._get_c_device())
    probe = iobind.wait_probe(did, vid)
    per_run_ms(sess, io, probe, 10)  # warm-up
    guess = per_run_ms(sess, io, probe, 5)
    return per_run_ms(sess, io, probe, max(20, int(args.budget_s * 1e3 / max(guess, 1e-3) / 3)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--dtype", default="fp16", choices=["fp16", "fp32"])
    ap.add_argument("--m", type=int, default=2048)
    ap.add_argument("--k", type=int, default=4096)
    ap.add_argument("--layers", default="1,2,4,8")
    ap.add_argument("--prealloc", default="0")
    ap.add_argument("--budget-s", type=float, default=1.5, help="time per measurement")
    args = ap.parse_args()
    ort.register_execution_provider_library("wgpu_chain", os.path.abspath(args.lib))
    dev = next(d for d in ort.get_ep_devices() if d.ep_name == "WgpuExecutionProvider")
    layers = [int(v) for v in args.layers.split(",")]
    npt = np.float16 if args.dtype == "fp16" else np.float32
    rng = np.random.default_rng(0)
    ws = [(rng.standard_normal((args.k, args.k)) / np.sqrt(args.k)).astype(npt) for _ in range(max(layers))]
    print(f"{args.dtype} M={args.m} K={args.k}: ms per run, back to back (fastest of three)")
    print("| layers | preallocated output | ms per run | ms per layer |")
    print("|---|---|---|---|")
    for prealloc in [v == "1" for v in args.prealloc.split(",")]:
        rows = [(n, measure(dev, ws, n, args, prealloc)) for n in layers]
        for n, ms in rows:
            print(f"| {n} | {prealloc} | {ms:.3f} | {ms / n:.4f} |", flush=True)
        if len(rows) > 1:
            (n0, t0), (n1, t1) = rows[0], rows[-1]
            slope = (t1 - t0) / (n1 - n0)
            print(f"fit: {slope:.4f} ms per layer + {t1 - n1 * slope:.3f} ms per run")


if __name__ == "__main__":
    main()
