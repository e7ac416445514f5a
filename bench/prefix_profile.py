#!/usr/bin/env python3
"""What each dispatch of a run costs in the run's context: the run's first k dispatches timed in one pass for every k
(`ONNXRUNTIME_EP_WGPU_PROFILE_DISPATCHES=prefix`), their differences beside each dispatch timed alone (`=1`, five
repeats averaged). A dispatch whose difference far exceeds its own time pays at its boundary: a barrier, a cold
start of its code, or inputs that left the caches. Whisper-tiny encoder (`cases_torch`), fp32 and fp16.

    python3 bench/prefix_profile.py --lib LIB [--dtypes fp32,fp16] [--rounds 3] [-o key=value ...]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import host_split  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    host_split.add_model_args(ap)
    ap.add_argument("--rounds", type=int, default=3, help="prefix profiles per model; each k's minimum is taken")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for _, dtype, _, sess, feeds in host_split.whisper_sessions(args, tmp):
            alone = host_split.profile(sess, feeds, "1")
            rounds = [host_split.profile(sess, feeds, "prefix") for _ in range(args.rounds)]
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
