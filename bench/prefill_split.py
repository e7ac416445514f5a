#!/usr/bin/env python3
"""Where a prefill's wall time goes (issue 18: 512-token prompts took as long as 1024-token ones).

For each genai model (`bench/genai_build.py`) and provider, prefill of 512 and 1024 tokens with numpy I/O: every
run's wall ms (the first included), and for our library each run's host phases (`startup_stats` differences:
run, run_values, run_record, run_wait, copy_in, copy_out_wait, copy_out, pipeline, ...) and the buffers our
allocators created. Then the same prefill with every output bound on the device (IO binding), which leaves out the
logits' copy to the host. With `--again`, numpy runs after a 3 s pause and after the bound runs, the SM clock
sampled before each run.

    python3 bench/prefill_split.py --models DIR --lib LIB [--only REGEX] [--runs 6] [--providers ours,peer]
        [--again] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import genai_bench as gb  # noqa: E402
import iobind  # noqa: E402
import providers as prov  # noqa: E402


def phase_diff(before: dict | None, after: dict | None) -> dict | None:
    """Every phase that took at least 0.05 ms between the two readings (`pipeline`: compiles, whichever run or
    worker made them)."""
    if not before or not after:
        return None
    return {k: round(after[k]["ms"] - before[k]["ms"], 2) for k in after
            if after[k]["ms"] - before[k]["ms"] >= 0.05}


def memory(lib: str | None) -> dict | None:
    """Our allocators' counters (buffers created, live bytes), for our library."""
    if not lib:
        return None
    try:
        return iobind.LOCATOR.memory_stats(lib)
    except Exception:  # noqa: BLE001 - a library without the counters
        return None


def prefill_runs(p, sess, feeds: dict, runs: int, clocks: bool = False) -> list[dict]:
    lib = p.info.get("library") if p.key == "ours" else None
    out = []
    for _ in range(runs + 1):
        clock = gb.sm_clock() if clocks else None
        before, mem = gb.loop_stats(lib), memory(lib)
        t = time.perf_counter()
        sess.run(["logits"], feeds)
        row = {"ms": round((time.perf_counter() - t) * 1e3, 2)}
        after = memory(lib)
        if mem and after:
            row["buffers_created"] = after["buffers_created"] - mem["buffers_created"]
            row["live_mb"] = round(after["live_bytes"] / 2**20, 1)
        if clock:
            row["clock_before"] = clock
        split = phase_diff(before, gb.loop_stats(lib))
        if split is not None:
            row["phases"] = split
        out.append(row)
    return out


def model_rows(d: Path, ps: dict, runs: int, rng, again: bool) -> dict:
    row = {"model": d.name}
    for key, p in ps.items():
        sess = p.session(str(d / "model.onnx"), strict=False)
        for n in (512, 1024):
            feeds = gb.feeds_for(sess, n, 0, rng)
            row[f"{key}_{n}_numpy"] = prefill_runs(p, sess, feeds, runs)
            if again:  # the same after an idle pause (is it the bound runs that change what follows?)
                time.sleep(3)
                row[f"{key}_{n}_numpy_paused"] = prefill_runs(p, sess, feeds, runs, clocks=True)
            timed, _ = iobind.time_bound(p, sess, feeds, {"warmup": 1, "budget_s": 2.0, "min_runs": 5,
                                                          "max_runs": 10})
            row[f"{key}_{n}_bound"] = {k: timed.get(k) for k in ("status", "median_ms", "back_to_back_ms",
                                                                  "copies_per_run")}
            if again:  # numpy runs once more, after the bound ones (a warm-up effect, or numpy's own cost?)
                row[f"{key}_{n}_numpy_again"] = prefill_runs(p, sess, feeds, runs, clocks=True)
        del sess
    return row


def summary(rows: list[dict]) -> str:
    lines = ["| model | provider | tokens | first run | numpy median | bound median | numpy again | our phases (median run) |",
             "|---|---|---|---|---|---|---|---|"]

    def median(runs):
        rest = sorted(runs[1:], key=lambda x: x["ms"])
        return rest[len(rest) // 2] if rest else {"ms": float("nan")}

    for r in rows:
        for key in ("ours", "peer"):
            for n in (512, 1024):
                runs = r.get(f"{key}_{n}_numpy")
                if not runs:
                    continue
                mid = median(runs)
                again = r.get(f"{key}_{n}_numpy_again")
                again = f"{median(again)['ms']:.1f}" if again else "—"
                bound = r.get(f"{key}_{n}_bound", {}).get("median_ms")
                lines.append(f"| {r['model']} | {key} | {n} | {runs[0]['ms']:.1f} | {mid['ms']:.1f} | "
                             f"{bound if bound is None else round(bound, 1)} | {again} | {mid.get('phases', '')} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--only", default=".")
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--providers", default="ours,peer")
    ap.add_argument("--out", default="prefill_split.json")
    ap.add_argument("--again", action="store_true", help="numpy runs again after the bound ones, with clocks")
    args = ap.parse_args()
    lib = str(Path(args.lib).resolve())
    make = {"ours": lambda: prov.our_provider(lib, "--lib", {}), "peer": lambda: prov.peer_provider(True)}
    ps = {k: make[k]() for k in args.providers.split(",")}
    ps = {k: p for k, p in ps.items() if p.available}
    rng = np.random.default_rng(0)
    rows = []
    for d in sorted(d for d in Path(args.models).iterdir() if (d / "genai_config.json").is_file()):
        if re.search(args.only, d.name):
            rows.append(model_rows(d, ps, args.runs, rng, args.again))
            Path(args.out).write_text(json.dumps(rows, indent=1))
    print(summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
