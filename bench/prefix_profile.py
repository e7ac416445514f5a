#!/usr/bin/env python3
"""What each dispatch of a run costs in the run's context: the run's first k dispatches timed in one pass for every k
(`ONNXRUNTIME_EP_WGPU_PROFILE_DISPATCHES=prefix`), their differences beside each dispatch timed alone (`=1`, five
repeats averaged). A dispatch whose difference far exceeds its own time pays at its boundary: a barrier, a cold
start of its code, or inputs that left the caches. Whisper-tiny encoder (`cases_torch`), fp32 and fp16.

    python3 bench/prefix_profile.py --lib LIB [--dtypes fp32,fp16] [--rounds 3] [-o key=value ...]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import providers  # noqa: E402


def profile(sess, feeds: dict, mode: str) -> list[dict]:
    os.environ[providers.DISPATCHES_ENV] = mode
    try:
        return providers.profiled_steps(sess, feeds)
    finally:
        os.environ.pop(providers.DISPATCHES_ENV, None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--dtypes", default="fp32,fp16")
    ap.add_argument("--rounds", type=int, default=3, help="prefix profiles per model; each k's minimum is taken")
    ap.add_argument("-o", "--option", action="append", default=[], help="key=value session option of ours")
    args = ap.parse_args()
    import cases_torch

    options = dict(kv.split("=", 1) for kv in args.option)
    p = providers.our_provider(os.path.abspath(args.lib), "--lib", options)
    if not p.available:
        print(f"ours unavailable: {p.reason}")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        for dtype in args.dtypes.split(","):
            path = os.path.join(tmp, f"whisper_{dtype}.onnx")
            cases_torch.export_whisper_encoder(path, dtype)
            sess = p.session(path, strict=True)
            x = np.random.default_rng(0).standard_normal((1, 80, 3000)).astype(np.float16 if dtype == "fp16" else np.float32)
            feeds = {"input_features": x}
            alone = profile(sess, feeds, "1")
            rounds = [profile(sess, feeds, "prefix") for _ in range(args.rounds)]
            prefix = [min(r[i]["gpu_ms"] for r in rounds) for i in range(len(rounds[0]))]
            print(f"\n## whisper {dtype}: {len(alone)} dispatches, alone {sum(a['gpu_ms'] for a in alone):.3f} ms, "
                  f"whole run {prefix[-1]:.3f} ms\n")
            print("| # | dispatch | alone µs | in the run µs | extra µs |")
            print("|---|---|---:|---:|---:|")
            prev = 0.0
            for i, (a, t) in enumerate(zip(alone, prefix)):
                added = (t - prev) * 1e3
                print(f"| {i} | {a['ops'][:90]} | {a['gpu_ms'] * 1e3:.1f} | {added:.1f} | {added - a['gpu_ms'] * 1e3:+.1f} |")
                prev = t
    return 0


if __name__ == "__main__":
    sys.exit(main())
