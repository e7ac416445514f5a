"""Short tables of a device call's JSON lines, printed last by the H200 scripts.

  python3 bench/summary.py attention ab_attention.txt   # attention_bench rows under "== label" lines: µs, GB/s
  python3 bench/summary.py decode decode_ab.jsonl [decode_grid.jsonl] [--top N]   # decode_ab: ms per token; the
                                                        # profile's GPU time, dispatch count and dearest products
"""
import json
import sys


def attention(path):
    label = ""
    for line in open(path):
        if line.startswith("== "):
            label = line[3:].strip()
        elif line.startswith("{"):
            r = json.loads(line)
            g = r.get("ours_gpu_ms")
            rate = f"{r['bytes'] / g / 1e6:6.0f} GB/s" if g else "     — GB/s"
            print(f"{label:>24} {r['case']:<34} {g * 1e3 if g else float('nan'):7.1f} us {rate}")


def decode(ab, grid=None, top=6):
    for line in open(ab):
        r = json.loads(line)
        print(f"{r['label']:>32}: back to back {r.get('b2b_ms') or 0:.3f} ms, waited {r.get('median_ms') or 0:.3f} ms")
    for line in open(grid) if grid else []:
        r = json.loads(line)
        g = r.get("gpu") or {}
        print(f"== {r['label']}: b2b {r.get('b2b_ms')} ms, GPU {g.get('total_ms', 0):.3f} ms, {g.get('steps')} dispatches")
        for name, ms, n in (g.get("top") or [])[:top]:
            print(f"  {ms / n * 1e3:7.1f} us x{n:<3} {name[:90]}")


def main(argv):
    top = 6
    if "--top" in argv:
        i = argv.index("--top")
        top = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    if argv[:1] == ["attention"] and len(argv) == 2:
        attention(argv[1])
    elif argv[:1] == ["decode"] and len(argv) in (2, 3):
        decode(argv[1], argv[2] if len(argv) == 3 else None, top)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
