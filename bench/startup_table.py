#!/usr/bin/env python3
"""The table the start-up device scripts print last (`bench/h200_s51.sh`, `h200_s51b.sh`): from a tarball of
`bench/startup.py --json` files named `<config>_<mode>_<round>.json`, per (config, mode) the medians of each column,
of our `device` (opening) and `device_wait` phases, the total from import to first result with and without the
import, and the second run against the steady median.

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
                cfg, mode = m.name.split("/")[-1].split("_")[:2]
                rows[(cfg, mode)].extend(json.load(t.extractfile(m))["rows"])
    print("| ms | n | " + " | ".join(KEYS) + " | device | device_wait | import → first | without import | 2nd/steady |")
    for k in sorted(rows, key=lambda k: (k[1], k[0])):
        rs = [r for r in rows[k] if all(x in r for x in KEYS)]
        if not rs:
            continue
        med = [1000 * st.median([r[x] for r in rs]) for x in KEYS]
        tot = 1000 * st.median([sum(r[x] for x in KEYS[:4]) for r in rs])
        wo = 1000 * st.median([sum(r[x] for x in KEYS[1:4]) for r in rs])

        def phase(p):
            return st.median([r["phases"][p]["ms"] for r in rs]) if "phases" in rs[0] else float("nan")

        ratio = st.median([r["second_run"] / r["steady"] - 1 for r in rs]) * 100
        print(f"| {' '.join(k)} | {len(rs)} | " + " | ".join(f"{v:.1f}" for v in med)
              + f" | {phase('device'):.1f} | {phase('device_wait'):.1f} | {tot:.0f} | {wo:.0f} | {ratio:+.1f}% |")


if __name__ == "__main__":
    main(sys.argv[1])
