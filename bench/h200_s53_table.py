#!/usr/bin/env python3
"""The tables `bench/h200_s53.sh` prints: the probe's compile times and registers per shader and mode, the cold
start-up arms (`bench/startup_table.py`), and each speed run's median, bound and GPU lines for ours.

    python3 bench/h200_s53_table.py all.tgz
"""
import collections
import json
import re
import subprocess
import sys
import tarfile


def probe(t: tarfile.TarFile) -> None:
    rows = collections.defaultdict(list)
    for m in t.getmembers():
        if re.search(r"stats_\d+\.json$", m.name):
            for x in json.load(t.extractfile(m)):
                if "compile_ms" not in x:
                    print("error", x.get("shader"), x.get("mode"), str(x.get("error"))[:300])
                    continue
                st = x["stats"]
                regs = next((v for k, v in st.items() if "egister" in k), "-")
                size = next((v for k, v in st.items() if "inary" in k), "-")
                rows[(x["shader"], x["mode"])].append((x["compile_ms"], regs, size))
    print("| shader | mode | compile ms (rounds) | registers | binary |")
    print("|---|---|---|---|---|")
    for (s, m), v in sorted(rows.items()):
        print(f"| {s} | {m} | {' / '.join(f'{c:.0f}' for c, _, _ in v)} | {v[0][1]} | {v[0][2]} |")


def speed(t: tarfile.TarFile) -> None:
    for m in sorted(t.getmembers(), key=lambda m: m.name):
        if re.search(r"speed(\d|ab)_\d+\.txt$", m.name):
            text = t.extractfile(m).read().decode(errors="replace")
            for line in text.splitlines():
                if re.search(r"wgpu EP \(ours\)|wgpu EP profile|max rel|error|Error", line):
                    print(m.name.split("/")[-1], line.strip()[:220])
        if re.search(r"speed(\d|ab)_\d+/.*results\.json$", m.name):
            gpu_lines(re.search(r"speed\w+?_\d+", m.name).group(0), json.load(t.extractfile(m)))
        if re.search(r"speed(\d|ab)_\d+/.*iobinding\.md$", m.name):
            text = t.extractfile(m).read().decode(errors="replace")
            for line in text.splitlines():
                if line.startswith("| whisper"):
                    print(re.search(r"speed\w+?_\d+", m.name).group(0), line)


def gpu_lines(arm: str, results: dict) -> None:
    """Ours per case: numpy median, bound, back to back, GPU ms and the attention's share of it."""
    for case in results.get("cases", []):
        o = case.get("results", {}).get("ours", {})
        prof, bound = o.get("gpu_profile") or {}, o.get("bound") or {}
        attn = (prof.get("by_ops") or {}).get("FlashAttention(fused)", {}).get("gpu_ms")
        print(f"{arm} {case.get('name')}: median {o.get('median_ms')}, bound {bound.get('median_ms')}, "
              f"b2b {bound.get('back_to_back_ms')}, GPU {prof.get('gpu_ms')}, attention {attn}, "
              f"diff {(o.get('diff') or {}).get('max_rel')}")


def main(path: str) -> None:
    with tarfile.open(path) as t:
        probe(t)
        speed(t)
    subprocess.run([sys.executable, "bench/startup_table.py", path], check=False)


if __name__ == "__main__":
    main(sys.argv[1])
