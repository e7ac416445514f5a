#!/usr/bin/env python3
"""Tables of `bench/decode_ab.py --prefix` files: each dispatch's cost in the run summed over a token's layers, one
column per label (setting), then each setting's back-to-back ms, the run in one pass and the steps alone.

    python3 bench/prefix_table.py PREFIX.jsonl DECODE_AB.jsonl [--by step|kernel]

`--by step` (the default): consecutive dispatches of one step name, keyed by that name and its first grid;
`--by kernel`: the attention's kernels (`attn*`, `gqa*`) by kernel name, every other dispatch by its step name, with
each cost alone in parentheses.
"""

from __future__ import annotations

import argparse
import collections
import json


def step_rows(rows: list[dict], labels: list[str]) -> tuple[dict, list[str]]:
    by, keys = collections.defaultdict(float), []
    for label in labels:
        prev = None
        for r in (r for r in rows if r["label"] == label):
            name = r["ops"].split(" [")[0].replace("SkipSimplifiedLayerNormalization", "SSLN")[:48]
            if name != prev:
                key = f"{name} ({r.get('workgroups')} wg)"
                prev = name
                if key not in keys:
                    keys.append(key)
            by[(label, key)] += r["in_run_ms"]
    return by, keys


def kernel_rows(rows: list[dict]) -> tuple[dict, list[str]]:
    by, keys = collections.defaultdict(float), []
    for r in rows:
        kernel = r["ops"].split(" [")[-1].rstrip("]")
        key = kernel if "attn" in kernel or "gqa" in kernel else r["ops"].split(" [")[0][:40]
        if key not in keys:
            keys.append(key)
        by[(r["label"], key)] += r["in_run_ms"]
        by[(r["label"], key + " alone")] += r["alone_ms"]
    return by, keys


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("prefix")
    ap.add_argument("decode_ab")
    ap.add_argument("--by", choices=["step", "kernel"], default="step")
    args = ap.parse_args()
    rows = [json.loads(line) for line in open(args.prefix)]
    labels = list(dict.fromkeys(r["label"] for r in rows))
    alone = args.by == "kernel"
    by, keys = kernel_rows(rows) if alone else step_rows(rows, labels)
    cell = (lambda lab, k: f"{by[(lab, k)]:.3f} ({by[(lab, k + ' alone')]:.3f})") if alone else (
        lambda lab, k: f"{by[(lab, k)]:.3f}")
    head = "ms per token in the run (alone)" if alone else "step, ms per token in the run"
    print(f"| {head} | " + " | ".join(lab.split()[-1] for lab in labels) + " |")
    print("|---|" + "---|" * len(labels))
    for k in keys:
        print(f"| {k} | " + " | ".join(cell(lab, k) for lab in labels) + " |")
    print("| total | " + " | ".join(f"{sum(by[(lab, k)] for k in keys):.3f}" for lab in labels) + " |")
    for line in open(args.decode_ab):
        r = json.loads(line)
        print(r["label"], "b2b", round(r.get("b2b_ms") or 0, 3), "one pass", round(r.get("gpu_one_pass_ms") or 0, 3),
              "steps", round((r.get("gpu") or {}).get("total_ms", 0), 3), "dispatches",
              (r.get("host") or {}).get("dispatches"))


if __name__ == "__main__":
    main()
