#!/usr/bin/env python3
"""The lines `bench/decode_ab.py` appended to a file, one row each: back-to-back ms per token, the run timed in one
pass and the steps alone (with --profile), and the four op kinds that took the most GPU time.

    python3 bench/decode_table.py $OUT/decode_ab.jsonl
"""

from __future__ import annotations

import json
import sys


def row(r: dict) -> str:
    gpu = r.get("gpu") or {}
    top = ", ".join(f"{k.split(' ')[0][:28]} {v:.3f}" for k, v, _ in gpu.get("top", [])[:4])
    line = f"{r.get('label', '?'):32s} b2b {r.get('b2b_ms') or 0:.3f}"
    if gpu:
        line += f" one pass {r.get('gpu_one_pass_ms') or 0:.3f} steps {gpu.get('total_ms', 0):.3f} | {top}"
    return line


def main(path: str) -> int:
    with open(path) as f:
        for text in f:
            try:
                print(row(json.loads(text)))
            except ValueError:
                continue
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
