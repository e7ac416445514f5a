#!/usr/bin/env python3
"""One build of ours on a genai model's decode (one token over a past of `--ctx` rows, inputs and outputs bound on
the device), printed as one JSON line: back-to-back ms per token and the median return time of one call in that
loop, our host phases per run, our copies per run and (with `--profile`) the GPU time per op kind and of the whole
run timed in one pass. For A/B runs in one call, each build or setting in its own process:

    for lib in a.so b.so a.so b.so; do python3 bench/decode_ab.py --model DIR --lib $lib; done
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import genai_bench as gb  # noqa: E402
import iobind  # noqa: E402
import providers as prov  # noqa: E402


def profile(sess, feeds, grouping: str) -> list[dict]:
    os.environ[prov.DISPATCHES_ENV] = grouping
    try:
        return prov.profiled_steps(sess, feeds)
    finally:
        os.environ.pop(prov.DISPATCHES_ENV, None)


def write_prefix(sess, feeds, path: str, label: str) -> None:
    """Appends one JSON line per dispatch: its label, its time alone and what it adds to the run timed in one pass."""
    alone = profile(sess, feeds, "1")
    rounds = [profile(sess, feeds, "prefix") for _ in range(2)]
    prefix = [min(r[i]["gpu_ms"] for r in rounds) for i in range(len(rounds[0]))]
    with open(path, "a") as f:
        prev = 0.0
        for i, (a, t) in enumerate(zip(alone, prefix)):
            f.write(json.dumps({"label": label, "i": i, "ops": a["ops"], "workgroups": a.get("workgroups"),
                                "alone_ms": a["gpu_ms"], "in_run_ms": t - prev}) + "\n")
            prev = t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="a directory built by bench/genai_build.py")
    ap.add_argument("--lib", required=True)
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--label", default="")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--by-grid", action="store_true", help="with --profile: one program at different workgroup counts "
                    "apart (e.g. a decoder's Q/K/V, O, gate/up and down products on one GEMV program), top 24")
    ap.add_argument("--prefix", metavar="FILE", help="with --profile: each dispatch's cost in the run (the first k "
                    "dispatches timed in one pass for every k, the least of two rounds, differenced) beside its time "
                    "alone, one JSON object per dispatch into FILE")
    ap.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help="an EP option (repeatable)")
    ap.add_argument("--shared", action="store_true", help="the back-to-back loop over genai's cache layout (each "
                    "present bound to its past, which holds ctx + 64 rows); --profile still runs unshared")
    args = ap.parse_args()
    options = dict(o.split("=", 1) for o in args.option)
    p = prov.our_provider(str(Path(args.lib).resolve()), "--lib", options)
    sess = p.session(str(Path(args.model) / "model.onnx"), strict=False)
    rng = np.random.default_rng(0)
    feeds = gb.feeds_for(sess, 1, args.ctx, rng)
    bound, shared = (gb.shared_decode(sess, args.ctx, rng) if args.shared else (feeds, None))
    before = gb.run_phases(p)
    cfg = {"warmup": 3, "budget_s": 3.0, "min_runs": 20, "max_runs": 400}
    timed, _ = iobind.time_bound(p, sess, bound, cfg, shared)
    row = {"label": args.label or Path(args.lib).name, "b2b_ms": timed.get("back_to_back_ms"),
           "b2b_call_ms": timed.get("back_to_back_call_ms"), "median_ms": timed.get("median_ms"),
           "copies": timed.get("copies_per_run"), "shared": args.shared}
    if before is not None:
        row["host"] = gb.host_split(before, gb.run_phases(p))
    if args.profile:
        row["gpu"] = gb.top_steps(prov.profiled_steps(sess, feeds), 24 if args.by_grid else 12, by_grid=args.by_grid)
        # The whole run timed in one pass: the steps plus the barriers and idle between them.
        os.environ[prov.DISPATCHES_ENV] = "run"
        try:
            row["gpu_one_pass_ms"] = sum(s.get("gpu_ms", 0.0) for s in prov.profiled_steps(sess, feeds))
        finally:
            os.environ.pop(prov.DISPATCHES_ENV, None)
        if args.prefix:
            write_prefix(sess, feeds, args.prefix, row["label"])
    print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
