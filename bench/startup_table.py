#!/usr/bin/env python3
"""The table the start-up device scripts print last (`bench/h200_s51.sh`, `h200_s51b.sh`): from a tarball of
`bench/startup.py --json` files named `<config>_<mode>_<round>.json`, per (config, mode) the medians of each column,
of our `device` (opening) and `device_wait` phases, the total from import to first result with and without the
import, and the second run against the steady median; where the processes ran `--settle`, the settled run (after
every pipeline compiled), the second run against it and when the runs came within 10% of it. Then, for each
`clock_*.txt` (`bench/experiments/second_run/clock.py`), the probe's series.

    python3 bench/startup_table.py all.tgz
"""
import collections
import json
import statistics as st
import sys
import tarfile

KEYS = ["import", "register", "session", "first_run", "second_run", "steady"]


def main(path: str) -> None:
    rows = collections.defaultdict(list)
    with tarfile.open(path) as t:
        for m in t.getmembers():
            if m.name.endswith(".json"):
                data = json.load(t.extractfile(m))
                if not isinstance(data, dict) or "rows" not in data:
                    continue  # another script's file in the same tarball
                cfg, mode = m.name.split("/")[-1].split("_")[:2]
                rows[(cfg, mode)].extend(data["rows"])
    print("| ms | n | " + " | ".join(KEYS) + " | device | device_wait | prepare (buffers, bind groups) | import → first | without import | 2nd/steady"
          " | settled | 2nd/settled | within 10% after, s |")
    for k in sorted(rows, key=lambda k: (k[1], k[0])):
        rs = [r for r in rows[k] if all(x in r for x in KEYS)]
        if not rs:
            continue
        med = [1000 * st.median([r[x] for r in rs]) for x in KEYS]
        tot = 1000 * st.median([sum(r[x] for x in KEYS[:4]) for r in rs])
        wo = 1000 * st.median([sum(r[x] for x in KEYS[1:4]) for r in rs])

        def phase(p):
            ok = "phases" in rs[0] and p in rs[0]["phases"]
            return st.median([r["phases"][p]["ms"] for r in rs]) if ok else float("nan")

        ratio = st.median([r["second_run"] / r["steady"] - 1 for r in rs]) * 100
        settled = "| — | — | — |"
        if all("settled" in r for r in rs):
            settled = (f"| {1000 * st.median([r['settled'] for r in rs]):.2f} | "
                       f"{st.median([r['second_run'] / r['settled'] - 1 for r in rs]) * 100:+.1f}% | "
                       f"{st.median([r['settled_after'] for r in rs]):.2f} |")
        print(f"| {' '.join(k)} | {len(rs)} | " + " | ".join(f"{v:.1f}" for v in med)
              + f" | {phase('device'):.1f} | {phase('device_wait'):.1f} | {phase('prepare'):.1f} ({phase('buffers'):.1f}, "
              f"{phase('bind_groups'):.1f}) | {tot:.0f} | {wo:.0f} | {ratio:+.1f}% "
              + settled)
    clocks(path)


def clocks(path: str) -> None:
    """Per clock probe: the loop's µs and the run's ms for the second run, the median of runs 10–16, and the first
    run after a 0.1 s sleep and after a 0.1 s busy loop."""
    with tarfile.open(path) as t:
        probes = [(m.name, t.extractfile(m).read().decode()) for m in t.getmembers() if "clock_" in m.name]
    if probes:
        print("\n| clock probe | 2nd run: loop µs / ms | runs 10–16 | after 0.1 s asleep | after 0.1 s busy |"
              " after sleep then 20 ms busy |")
    for name, text in probes:
        try:
            d = json.loads(text.strip().splitlines()[-1])
        except (ValueError, IndexError):
            print(f"| {name} | no result |")
            continue

        def cell(r):
            return f"{r['work_us']:.1f} / {r['wall']:.3f}"

        tail = d["runs"][9:] or d["runs"]
        steady = f"{st.median(r['work_us'] for r in tail):.1f} / {st.median(r['wall'] for r in tail):.3f}"
        print(f"| {name.split('/')[-1]} | {cell(d['runs'][0])} | {steady} | {cell(d['after_sleep'][0])} | "
              f"{cell(d['after_busy'][0])} | {cell(d['after_sleep_then_busy'][0])} |")


if __name__ == "__main__":
    main(sys.argv[1])
