"""Where a run's wall time goes on our EP: `session.run` wall clock against our library's own counters
(`startup_stats`: `run` = our Compute, split into `run_record` and `run_wait`), the GPU time of the step profile,
and the copies per run. Whisper-tiny encoder (fp16, fp32) by default, exported with torch; numpy I/O and, with
`--bound`, IO binding (each run waited for, and back to back).

    python3 bench/host_split.py --lib target/release/libonnxruntime_ep_wgpu.so [--runs 200] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import iobind  # noqa: E402
import providers  # noqa: E402


def counters(lib: str) -> dict:
    return iobind.LOCATOR.startup_stats(lib)


def per_run(before: dict, after: dict, runs: int) -> dict:
    keys = ("run", "run_record", "run_wait", "copy_in", "copy_out_wait", "copy_out")
    out = {k: round((after[k]["ms"] - before[k]["ms"]) / runs, 4) for k in keys if k in after}
    out["dispatches"] = (after["run_record"]["count"] - before["run_record"]["count"]) / runs
    return out


def split(p, sess, feeds: dict, runs: int) -> dict:
    lib = p.info["library"]
    for _ in range(20):
        sess.run(None, feeds)
    before, c0 = counters(lib), iobind.LOCATOR.copy_stats(lib)
    walls = []
    for _ in range(runs):
        t = time.perf_counter()
        sess.run(None, feeds)
        walls.append(time.perf_counter() - t)
    after, c1 = counters(lib), iobind.LOCATOR.copy_stats(lib)
    row = {"wall_median_ms": float(np.median(walls) * 1e3), "wall_mean_ms": float(np.mean(walls) * 1e3)}
    row.update(per_run(before, after, runs))
    row["copies"] = {k: (c1[k] - c0[k]) / runs for k in c1}
    steps = providers.profiled_steps(sess, feeds, 1)
    row["gpu_ms"] = round(sum(s.get("gpu_ms", 0.0) for s in steps), 4)
    # The whole run in one timed pass: the steps plus the barriers and idle between them.
    row["run_gpu_ms"] = round(sum(s.get("gpu_ms", 0.0) for s in profile(sess, feeds, "run")), 4)
    return row


def profile(sess, feeds: dict, grouping: str) -> list[dict]:
    """One profiled run with the dispatches grouped as `ONNXRUNTIME_EP_WGPU_PROFILE_DISPATCHES` says: `1` each
    alone, `run` the whole run in one pass, `prefix` the first k dispatches for every k."""
    os.environ[providers.DISPATCHES_ENV] = grouping
    try:
        return providers.profiled_steps(sess, feeds)
    finally:
        os.environ.pop(providers.DISPATCHES_ENV, None)


def top_dispatches(sess, feeds: dict, n: int) -> list:
    """[program and grid, GPU ms, count] of one profiled run, every dispatch timed on its own, largest first."""
    from genai_bench import top_steps

    return top_steps(profile(sess, feeds, "1"), n, by_grid=True)["top"]


def add_model_args(ap: argparse.ArgumentParser) -> None:
    """The library, the encoder's dtypes and our session options."""
    ap.add_argument("--lib", required=True)
    ap.add_argument("--dtypes", default="fp16,fp32")
    ap.add_argument("-o", "--option", action="append", default=[], help="key=value session option of ours")


def whisper_sessions(args, tmp: str):
    """(provider, dtype, model path, our session, feeds) per dtype of `args.dtypes`: the encoder exported with torch
    into `tmp`, a strict session of ours with `args.option`. Raises RuntimeError when our library is unavailable."""
    import cases_torch

    options = dict(kv.split("=", 1) for kv in args.option)
    p = providers.our_provider(os.path.abspath(args.lib), "--lib", options)
    if not p.available:
        raise RuntimeError(f"ours unavailable: {p.reason}")
    for dtype in args.dtypes.split(","):
        path = os.path.join(tmp, f"whisper_{dtype}.onnx")
        cases_torch.export_whisper_encoder(path, dtype)
        x = np.random.default_rng(0).standard_normal((1, 80, 3000)).astype(np.float16 if dtype == "fp16" else np.float32)
        yield p, dtype, path, p.session(path, strict=True), {"input_features": x}


def error_vs_cpu(path: str, sess, feeds: dict) -> float:
    """Largest |ours − CPU EP| over the output, relative to the CPU output's largest magnitude (so an
    experiment's kernel that computes wrongly shows, not only its speed)."""
    import onnxruntime as ort

    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)[0].astype(np.float64)
    got = sess.run(None, feeds)[0].astype(np.float64)
    return float(np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-30))


def main() -> int:
    ap = argparse.ArgumentParser()
    add_model_args(ap)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--bound", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--dispatches", type=int, default=0, help="also list the N dispatches of most GPU time (one run)")
    args = ap.parse_args()
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for p, dtype, path, sess, feeds in whisper_sessions(args, tmp):
            row = split(p, sess, feeds, args.runs)
            row["max_err_vs_cpu"] = error_vs_cpu(path, sess, feeds)
            if args.bound:
                bound, _ = iobind.time_bound(p, sess, feeds, {"warmup": 20, "budget_s": 3.0, "min_runs": 50,
                                                             "max_runs": 400})
                row["bound"] = {k: bound.get(k) for k in ("median_ms", "back_to_back_ms", "copies_per_run")}
            if args.dispatches:
                row["top_dispatches"] = top_dispatches(sess, feeds, args.dispatches)
            rows[dtype] = row
            print(f"whisper {dtype}: {json.dumps(row)}", flush=True)
            del sess
    print("| case | wall median | our Compute | record | copy in | copy-out wait | copy out | GPU (profile) | bound | "
          "back to back | dispatches | error vs CPU | GPU, one pass |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for k, r in rows.items():
        b = r.get("bound") or {}
        print(f"| whisper {k} | {r['wall_median_ms']:.3f} | {r['run']:.3f} | {r['run_record']:.3f} | "
              f"{r.get('copy_in', 0):.3f} | {r.get('copy_out_wait', 0):.3f} | {r.get('copy_out', 0):.3f} | "
              f"{r['gpu_ms']:.3f} | {b.get('median_ms') or 0:.3f} | {b.get('back_to_back_ms') or 0:.3f} | "
              f"{r['dispatches']:.0f} | {r['max_err_vs_cpu']:.1e} | {r.get('run_gpu_ms', 0):.3f} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
