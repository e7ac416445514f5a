#!/usr/bin/env python3
"""Flash-attention kernel time (issue 13's shapes, float16) on our EP beside PyTorch's
`scaled_dot_product_attention` (flash backend) in the same process.

Ours: one ONNX `Attention` (opset 23) node on our EP (CPU fallback disabled); its kernel time is the GPU time of
its step from our step profile (`ONNXRUNTIME_EP_WGPU_PROFILE`: timestamp queries, 5 repeats averaged); the
wall-clock median of `session.run` (host copies included) is printed beside it. PyTorch: CUDA events around
`F.scaled_dot_product_attention` on inputs already on the GPU. Both get the same inputs; the largest difference
of the outputs is printed. TFLOP/s count 4·B·Hq·Sq·Skv·D (half of it when causal); decode also gives GB/s of the
K/V (and Q/O) bytes it must read, against the H200's 4.8 TB/s. `--warm S` runs S seconds of PyTorch products right
before each timing (off by default: on the H200 0.5 s of them made both ours and PyTorch's times 6-12% slower).

    python3 bench/attention_bench.py --lib path/to/libonnxruntime_ep_wgpu.so [--only REGEX] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
import providers as prov  # noqa: E402

# name, batch, query heads, K/V heads, Sq, Skv, head size, causal
SHAPES = [
    ("s4096_h8_d64", 1, 8, 8, 4096, 4096, 64, False),
    ("s4096_h8_d128", 1, 8, 8, 4096, 4096, 128, False),
    ("llama_prefill_s4096_h32kv8_d64_causal", 1, 32, 8, 4096, 4096, 64, True),
    ("whisper_s1500_h6_d64", 1, 6, 6, 1500, 1500, 64, False),
    ("decode_s1x4096_h32kv8_d128", 1, 32, 8, 1, 4096, 128, False),
    # Llama-3.2-1B's decode (32 query, 8 K/V heads, head size 64) at short and long caches, and a long d=128 one:
    # what a decode dispatch costs beyond the bytes it reads.
    ("decode_s1x64_h32kv8_d64", 1, 32, 8, 1, 64, 64, False),
    ("decode_s1x512_h32kv8_d64", 1, 32, 8, 1, 512, 64, False),
    ("decode_s1x4096_h32kv8_d64", 1, 32, 8, 1, 4096, 64, False),
    ("decode_s1x32768_h32kv8_d128", 1, 32, 8, 1, 32768, 128, False),
    # Gemma-3-1B's heads (4 query, 1 K/V, head size 256): the SIMT flash kernel and split-KV decode.
    ("gemma_prefill_s2048_h4kv1_d256_causal", 1, 4, 1, 2048, 2048, 256, True),
    ("gemma_decode_s1x4096_h4kv1_d256", 1, 4, 1, 1, 4096, 256, False),
    # Llama-3.2-1B's prompt at 512 and 1024 tokens, and at 1024 again with a boolean mask beside causal (a `_boolmask` case: every
    # key the causal rule lets in is true), as GroupQueryAttention's flash step runs: what reading the mask costs.
    ("llama_prefill_s512_h32kv8_d64_causal", 1, 32, 8, 512, 512, 64, True),
    ("llama_prefill_s1024_h32kv8_d64_causal", 1, 32, 8, 1024, 1024, 64, True),
    ("llama_prefill_s1024_h32kv8_d64_causal_boolmask", 1, 32, 8, 1024, 1024, 64, True),
]
HBM_TBS = 4.8
# Set to 1: also print each of our dispatches' time (read by our library at each profiled run).
DISPATCHES_ENV = "ONNXRUNTIME_EP_WGPU_PROFILE_DISPATCHES"


def model(b, hq, hkv, sq, skv, d, causal, mask=False, t=TensorProto.FLOAT16):
    inputs = [helper.make_tensor_value_info("q", t, [b, hq, sq, d]), helper.make_tensor_value_info("k", t, [b, hkv, skv, d]),
              helper.make_tensor_value_info("v", t, [b, hkv, skv, d])]
    if mask:
        inputs.append(helper.make_tensor_value_info("m", TensorProto.BOOL, [sq, skv]))
    node = helper.make_node("Attention", [i.name for i in inputs], ["y"], is_causal=int(causal))
    graph = helper.make_graph([node], "attention", inputs, [helper.make_tensor_value_info("y", t, [b, hq, sq, d])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    m.ir_version = 10
    return m.SerializeToString()


def warm_gpu(seconds):
    """Keeps the GPU busy for `seconds` (PyTorch products, where torch is there) before a timing: a check of whether
    the kernels timed right after idling ran at a low clock (`docs/PERFORMANCE.md`, nineteenth session: they did not;
    after 0.5 s of products both ours and PyTorch's ran slower)."""
    if seconds <= 0:
        return
    try:
        import time

        import torch
    except ImportError:
        return
    a = torch.ones((4096, 4096), dtype=torch.float16, device="cuda")
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(8):
            a @ a
        torch.cuda.synchronize()


def ours(devices, feeds, m, runs=10, warm=0.0):
    so = ort.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    # attention=flash: f32 and devices without tensor cores too; offload=all: a lone decode node moves more K/V bytes
    # than it computes, which the cost rule would leave to the CPU EP.
    so.add_provider_for_devices(devices, {"attention": "flash", "offload": "all"})
    sess = ort.InferenceSession(m, sess_options=so)
    out, wall = prov.median_run_ms(sess, feeds, runs)
    per_dispatch = os.environ.pop(DISPATCHES_ENV, None)
    warm_gpu(warm)
    gpu = [x["gpu_ms"] for x in prov.profiled_steps(sess, feeds) if x["ops"] == "Attention"]
    if per_dispatch == "1":
        # Each dispatch of the step on its own (the kernel, then any reduction of its partials).
        os.environ[DISPATCHES_ENV] = per_dispatch
        warm_gpu(warm)
        for x in prov.profiled_steps(sess, feeds):
            print(f"  dispatch {x['ops']}: {x['gpu_ms'] * 1e3:.1f} us", flush=True)
    return out, (gpu[-1] if gpu else None), wall


def torch_sdpa(feeds, hq, hkv, causal, runs=20, warm=0.0):
    import torch
    import torch.nn.functional as F

    q, k, v = (torch.from_numpy(feeds[n]).cuda() for n in ("q", "k", "v"))
    note = "flash"
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        ctx = lambda: sdpa_kernel(SDPBackend.FLASH_ATTENTION)  # noqa: E731
    except ImportError:
        import contextlib

        ctx, note = contextlib.nullcontext, "default backend"
    kw = {"is_causal": causal}
    if hq != hkv:
        try:
            with ctx():
                F.scaled_dot_product_attention(q, k, v, enable_gqa=True, **kw)
            kw["enable_gqa"] = True
        except Exception:  # noqa: BLE001 - older torch, or no GQA on the flash backend: K/V expanded beforehand
            k, v = (x.repeat_interleave(hq // hkv, dim=1) for x in (k, v))
            note += ", K/V expanded before timing"
    with ctx():
        out = F.scaled_dot_product_attention(q, k, v, **kw)
        for _ in range(3):
            F.scaled_dot_product_attention(q, k, v, **kw)
        torch.cuda.synchronize()
        warm_gpu(warm)
        times = []
        for _ in range(runs):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            F.scaled_dot_product_attention(q, k, v, **kw)
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e))
    return out.cpu().numpy(), float(np.median(times)), note


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--only")
    ap.add_argument("--out")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--dtype", choices=["float16", "float32"], default="float16",
                    help="float32: our split f32 tensor-core kernel at head size 64 (torch's flash backend has no f32)")
    ap.add_argument("--warm", type=float, default=0.0,
                    help="seconds of PyTorch products right before each timing (0: none; 0.5 made both slower on the H200)")
    args = ap.parse_args()
    devices = prov.register_ours(args.lib)
    print("adapter:", dict(devices[0].ep_metadata).get("wgpu.adapter"), flush=True)
    rows = []
    for name, b, hq, hkv, sq, skv, d, causal in SHAPES:
        if args.only and not re.search(args.only, name):
            continue
        rng = np.random.default_rng(0)
        feeds = {n: rng.standard_normal((b, h, s, d), dtype=np.float32).astype(args.dtype)
                 for n, h, s in (("q", hq, sq), ("k", hkv, skv), ("v", hkv, skv))}
        masked = name.endswith("_boolmask")
        ours_feeds = dict(feeds, m=np.ones((sq, skv), dtype=bool)) if masked else feeds
        flops = 4.0 * b * hq * sq * skv * d * (0.5 if causal else 1.0)
        nbytes = np.dtype(args.dtype).itemsize * (2 * b * hkv * skv * d + 2 * b * hq * sq * d)
        row = {"case": name, "flops": flops, "bytes": nbytes}
        try:
            elem = TensorProto.FLOAT16 if args.dtype == "float16" else TensorProto.FLOAT
            out, gpu_ms, wall_ms = ours(devices, ours_feeds, model(b, hq, hkv, sq, skv, d, causal, masked, elem),
                                        warm=args.warm)
            row.update(ours_gpu_ms=gpu_ms, ours_wall_ms=wall_ms)
        except Exception as e:  # noqa: BLE001
            row["ours_error"], out = str(e).splitlines()[0][:200], None
        if not args.no_torch:
            try:
                ref, torch_ms, note = torch_sdpa(feeds, hq, hkv, causal, warm=args.warm)
                row.update(torch_ms=torch_ms, torch_note=note)
                if out is not None:
                    row["max_diff"] = float(np.abs(out.astype(np.float32) - ref.astype(np.float32)).max())
            except Exception as e:  # noqa: BLE001
                row["torch_error"] = str(e).splitlines()[0][:200]
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        Path(args.out, "attention.json").write_text(json.dumps(rows, indent=1))
    print("\n| case | ours GPU ms | ours TFLOP/s | ours GB/s | torch ms | torch TFLOP/s | ours/torch | ours wall ms | max diff |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        g, t = r.get("ours_gpu_ms"), r.get("torch_ms")
        tf = lambda ms: f"{r['flops'] / ms / 1e9:.2f}" if ms else "—"  # noqa: E731
        gbs = f"{r['bytes'] / g / 1e6:.0f}" if g else "—"
        ratio = f"{t / g:.1%}" if g and t else "—"
        print(f"| {r['case']} | {g if g is None else f'{g:.3f}'} | {tf(g)} | {gbs} | {t if t is None else f'{t:.3f}'} | {tf(t)} | "
              f"{ratio} | {r.get('ours_wall_ms', float('nan')):.2f} | {r.get('max_diff', r.get('ours_error', r.get('torch_error', '')))} |")


if __name__ == "__main__":
    main()
