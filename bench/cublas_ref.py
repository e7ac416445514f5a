"""cuBLAS reference timings through PyTorch for the kernel_bench shapes (same call, same GPU).

Usage: python3 cublas_ref.py [--shapes 4096x4096x4096,1500x1500x64b6,...] [--json out.json]
Times torch.matmul with CUDA events (median of 20 after 5 warm-ups) for fp32 (TF32 off: true
fp32) and fp16 inputs, and prints JSON records plus a table.
"""
import argparse
import json

import torch


def parse(shape):
    dims, _, trans = shape.partition(":")
    batch = 1
    if "b" in dims:
        dims, b = dims.split("b")
        batch = int(b)
    m, n, k = (int(x) for x in dims.split("x"))
    return m, n, k, batch, trans or "nn"


def operands(m, n, k, batch, trans, dtype):
    # Stored transposed where asked (":tn" = A is [K, M] in memory), multiplied as A·B.
    a = torch.rand((batch, k, m) if trans[0] == "t" else (batch, m, k), device="cuda", dtype=dtype) * 2 - 1
    b = torch.rand((batch, n, k) if trans[1] == "t" else (batch, k, n), device="cuda", dtype=dtype) * 2 - 1
    a = a.transpose(1, 2) if trans[0] == "t" else a
    b = b.transpose(1, 2) if trans[1] == "t" else b
    if batch == 1:
        a, b = a[0], b[0]
    return a, b


def time_ms(fn, iters=20, warmup=5):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="4096x4096x4096,8192x8192x8192,2048x4096x4096,128x4096x4096,"
                    "1500x384x384,1500x1536x384,1500x384x1536,1500x1500x64b6")
    ap.add_argument("--json")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    records = []
    for shape in args.shapes.split(","):
        m, n, k, batch, trans = parse(shape)
        for name, dtype in (("f32", torch.float32), ("f16", torch.float16)):
            a, b = operands(m, n, k, batch, trans, dtype)
            out = torch.empty(torch.matmul(a, b).shape, device="cuda", dtype=dtype)
            ms = time_ms(lambda: torch.matmul(a, b, out=out))
            tflops = 2.0 * batch * m * n * k / (ms * 1e-3) / 1e12
            records.append({"shape": shape, "dtype": name, "path": "cublas", "ms": ms, "tflops": tflops})
    print(json.dumps(records))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1)
    print(f"{'shape':<20} {'type':<4} {'ms':>9} {'TFLOP/s':>8}")
    for r in records:
        print(f"{r['shape']:<20} {r['dtype']:<4} {r['ms']:>9.3f} {r['tflops']:>8.1f}")
    print(torch.cuda.get_device_name(), "torch", torch.__version__, "cuBLAS", torch.backends.cuda.preferred_blas_library())


if __name__ == "__main__":
    main()
