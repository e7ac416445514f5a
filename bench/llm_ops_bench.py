#!/usr/bin/env python3
"""The LLM contrib ops of onnxruntime-genai models (issue 18) on our EP beside the peer, in one process: MatMulNBits
(4-bit, block 32, f16 scales, Llama-3.2-1B's MLP shapes) at decode (M=1) and prefill (M=512), and
SkipSimplifiedLayerNormalization (hidden 2048).

Ours: each node alone on our EP (CPU fallback disabled, offload=all); its kernel time is the GPU time of its step
from our step profile (`ONNXRUNTIME_EP_WGPU_PROFILE`), and the wall-clock median of `session.run` (numpy I/O, so
host copies included) is printed beside it. The peer: the wall-clock median only (it has no step profile). Decode
reports GB/s of the packed weights and scales read per call, against the H200's 4.8 TB/s. The largest difference
from the CPU EP is printed for both.

    python3 bench/llm_ops_bench.py --lib path/to/libonnxruntime_ep_wgpu.so [--only REGEX] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
import providers as prov  # noqa: E402

HBM_TBS = 4.8
F16 = TensorProto.FLOAT16


def nbits_model(m, k, n, block=32):
    """MatMulNBits with random 4-bit weights (constant initializers, as the genai builder writes them)."""
    rng = np.random.default_rng(0)
    blocks = k // block
    packed = rng.integers(0, 256, size=(n, blocks, block // 2), dtype=np.uint8)
    scales = (rng.random(n * blocks, dtype=np.float32) * 0.02).astype(np.float16)
    node = helper.make_node("MatMulNBits", ["a", "b", "scales"], ["y"], domain="com.microsoft", K=k, N=n, bits=4,
                            block_size=block, accuracy_level=4)
    graph = helper.make_graph([node], "nbits", [helper.make_tensor_value_info("a", F16, [m, k])],
                              [helper.make_tensor_value_info("y", F16, [m, n])],
                              [numpy_helper.from_array(packed, "b"), numpy_helper.from_array(scales, "scales")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 9
    feeds = {"a": rng.standard_normal((m, k), dtype=np.float32).astype(np.float16)}
    return model.SerializeToString(), feeds, packed.nbytes + scales.nbytes


def skip_norm_model(m, h):
    rng = np.random.default_rng(0)
    gamma = (1 + 0.1 * rng.standard_normal(h)).astype(np.float16)
    node = helper.make_node("SkipSimplifiedLayerNormalization", ["x", "skip", "gamma"], ["y", "", "", "sum"],
                            domain="com.microsoft", epsilon=1e-5)
    graph = helper.make_graph([node], "skipnorm", [helper.make_tensor_value_info(n, F16, [1, m, h]) for n in ("x", "skip")],
                              [helper.make_tensor_value_info(n, F16, [1, m, h]) for n in ("y", "sum")],
                              [numpy_helper.from_array(gamma, "gamma")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 9
    feeds = {n: rng.standard_normal((1, m, h), dtype=np.float32).astype(np.float16) for n in ("x", "skip")}
    return model.SerializeToString(), feeds, 4 * m * h * 2


# name, builder, args
CASES = [
    ("nbits_decode_m1_k2048_n8192", nbits_model, (1, 2048, 8192)),
    ("nbits_decode_m1_k8192_n2048", nbits_model, (1, 8192, 2048)),
    ("nbits_decode_m1_k2048_n3072", nbits_model, (1, 2048, 3072)),
    ("nbits_decode_m1_k2048_n2048", nbits_model, (1, 2048, 2048)),
    ("nbits_decode_m1_k2048_n128256", nbits_model, (1, 2048, 128256)),
    ("nbits_prefill_m512_k2048_n8192", nbits_model, (512, 2048, 8192)),
    ("skip_rmsnorm_m512_h2048", skip_norm_model, (512, 2048)),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--only")
    ap.add_argument("--out")
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    ours = prov.our_provider(str(Path(args.lib).resolve()), "--lib", {"offload": "all"})
    peer = prov.peer_provider(True)
    cpu = prov.cpu_provider()
    print("adapter:", ours.info.get("adapter"), "| peer:", peer.available or peer.reason, flush=True)
    rows = []
    for name, build, shape in CASES:
        if args.only and not re.search(args.only, name):
            continue
        model, feeds, nbytes = build(*shape)
        want = cpu.session(model, strict=False).run(None, feeds)[0].astype(np.float64)
        row = {"case": name, "bytes": nbytes}
        for p in (ours, peer):
            if not p.available:
                row[p.key] = {"error": p.reason}
                continue
            try:
                sess = p.session(model, strict=True)
                out, wall = prov.median_run_ms(sess, feeds, args.runs)
                r = {"wall_ms": wall, "max_diff": float(np.abs(out.astype(np.float64) - want).max())}
                if p.key == "ours":
                    gpu = [x["gpu_ms"] for x in prov.profiled_steps(sess, feeds, runs=3)]
                    r["gpu_ms"] = float(np.median(gpu)) if gpu else None
                row[p.key] = r
            except Exception as e:  # noqa: BLE001 - report and go on
                row[p.key] = {"error": str(e).splitlines()[0][:160]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    print("\n| case | ours GPU ms | ours GB/s (weights) | ours wall ms | peer wall ms | ours max diff | peer max diff |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        o, pe = r.get("ours", {}), r.get("peer", {})
        g = o.get("gpu_ms")
        gbs = f"{r['bytes'] / g / 1e6:.0f}" if g else "—"
        fmt = lambda x: f"{x:.3f}" if isinstance(x, float) else "—"  # noqa: E731
        print(f"| {r['case']} | {fmt(g)} | {gbs} | {fmt(o.get('wall_ms'))} | {fmt(pe.get('wall_ms')) if 'wall_ms' in pe else pe.get('error', '—')} "
              f"| {o.get('max_diff', o.get('error', '—'))} | {pe.get('max_diff', '—')} |")
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "llm_ops.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
