#!/usr/bin/env python3
"""Lines a GPU clock trace up with the runs of `bench/startup.py` processes: what the SM clock read while each of
the first runs ran (issue 15: is a cold or warm process's slow second run the GPU's clock?).

    nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,utilization.gpu,pstate --format=csv,noheader -lms 5 \\
        > trace.csv &
    python bench/startup.py ... --json runs.json
    python bench/clock_trace.py trace.csv runs.json [more.json ...] [--runs 12]

For each process (a row of the JSON with `run_starts`), prints each of its first --runs runs: its milliseconds and
the SM clock of the samples taken during it (the nearest sample before it when none was), then the median of its
last ten runs with their clock. nvidia-smi's timestamps are the machine's local time, as `time.time()` reads it.
"""

from __future__ import annotations

import argparse
import bisect
import json
import statistics
from datetime import datetime


def read_trace(path: str) -> list[tuple[float, int, int, str, str]]:
    """(epoch seconds, SM MHz, memory MHz, utilization, pstate) per sample."""
    samples = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) < 5:
                continue
            try:
                at = datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
                sm, mem = int(parts[1].split()[0]), int(parts[2].split()[0])
            except ValueError:
                continue
            samples.append((at, sm, mem, parts[3], parts[4]))
    samples.sort()
    return samples


def clock_during(samples: list, times: list[float], start: float, seconds: float) -> str:
    """The SM clocks sampled between `start` and its end (or the last one before it, in brackets)."""
    lo = bisect.bisect_left(times, start)
    hi = bisect.bisect_right(times, start + seconds)
    if hi > lo:
        clocks = sorted({s[1] for s in samples[lo:hi]})
        return "/".join(str(c) for c in clocks)
    return f"({samples[lo - 1][1]})" if lo > 0 else "-"


def rows_of(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    rows = data if isinstance(data, list) else data.get("rows", [])
    return [r for r in rows if isinstance(r, dict) and r.get("run_starts")]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace")
    p.add_argument("runs", nargs="+")
    p.add_argument("--runs", dest="count", type=int, default=12, help="runs listed per process (default 12)")
    args = p.parse_args(argv)
    samples = read_trace(args.trace)
    times = [s[0] for s in samples]
    if not samples:
        print(f"{args.trace}: no samples")
        return 1
    gaps = [b - a for a, b in zip(times, times[1:])]
    print(f"{len(samples)} samples, median spacing {statistics.median(gaps) * 1e3:.1f} ms" if gaps else "1 sample")
    for path in args.runs:
        for r in rows_of(path):
            ms, starts = r["runs_ms"], r["run_starts"]
            name = f"{r.get('config')} {r.get('mode')} #{r.get('repeat')}"
            cells = [f"{ms[i]:.2f} @ {clock_during(samples, times, starts[i], ms[i] / 1e3)}"
                     for i in range(min(args.count, len(ms), len(starts)))]
            last = min(10, len(ms) - 2)
            tail = ""
            if last > 0:
                tail_ms = statistics.median(ms[-last:])
                clock = clock_during(samples, times, starts[-last], (starts[-1] - starts[-last]) + ms[-1] / 1e3)
                tail = f" | last {last}: {tail_ms:.2f} @ {clock}"
            before = clock_during(samples, times, starts[0] - 0.05, 0.05)
            print(f"{path}: {name}: SM MHz in the 50 ms before the first run {before}")
            print("  runs (ms @ SM MHz): " + ", ".join(cells) + tail)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
