"""A decode loop whose KV cache grows every token, as Hugging Face Optimum's ORTModelForCausalLM and hand-written
loops run a decoder (not genai's loop, whose cache has one fixed shape): each token feeds the previous presents back
as pasts, one longer, with numpy I/O. Every token is a new set of input shapes for our EP, so this times what a new
set costs (our `prepare` phase) beside the whole token.

    python3 bench/growing_cache.py --model DIR/model.onnx --lib LIB [--lib LIB2 ...] [--prompt 200] [--tokens 64]

Each library runs in its own process, one after another; prints one JSON line and one table row per library.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def one(model: str, lib: str, prompt: int, tokens: int) -> dict:
    import genai_bench as gb
    import iobind
    import providers as prov

    p = prov.our_provider(lib, "--lib", {})
    if not p.available:
        return {"lib": lib, "error": p.reason}
    sess = p.session(model, strict=False)
    rng = np.random.default_rng(0)
    names = [o.name for o in sess.get_outputs()]
    out = sess.run(None, gb.feeds_for(sess, prompt, 0, rng))
    walls, prepares = [], []
    total = prompt
    for _ in range(tokens):
        feeds = gb.feeds_for(sess, 1, total, rng)
        for n, v in zip(names, out):
            if n.startswith("present"):
                feeds[n.replace("present", "past_key_values")] = v
        before = iobind.LOCATOR.startup_stats(lib)["prepare"]["ms"]
        t = time.perf_counter()
        out = sess.run(None, feeds)
        walls.append((time.perf_counter() - t) * 1e3)
        prepares.append(iobind.LOCATOR.startup_stats(lib)["prepare"]["ms"] - before)
        total += 1
    steady = slice(8, None)  # the first tokens still compile pipelines
    return {"lib": lib, "prompt": prompt, "tokens": tokens, "token_ms_median": float(np.median(walls[steady])),
            "prepare_ms_median": float(np.median(prepares[steady])), "tok_s": 1e3 / float(np.median(walls[steady])),
            "token_ms_first8": [round(w, 2) for w in walls[:8]]}


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        print(json.dumps(one(**json.loads(sys.argv[2]))), flush=True)
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--lib", action="append", required=True)
    ap.add_argument("--prompt", type=int, default=200)
    ap.add_argument("--tokens", type=int, default=64)
    args = ap.parse_args()
    print("| library | token ms (median) | of it, prepare ms | tok/s |\n|---|---|---|---|")
    for lib in args.lib:
        spec = json.dumps({"model": args.model, "lib": str(Path(lib).resolve()), "prompt": args.prompt,
                           "tokens": args.tokens})
        r = subprocess.run([sys.executable, __file__, "--one", spec], capture_output=True, text=True, timeout=600)
        lines = [x for x in r.stdout.splitlines() if x.startswith("{")]
        if r.returncode != 0 or not lines:
            print(f"| {lib} | failed: exit {r.returncode} {r.stderr[-300:]} | | |")
            continue
        row = json.loads(lines[-1])
        print(json.dumps(row), file=sys.stderr)
        print(f"| {lib} | {row['token_ms_median']:.2f} | {row['prepare_ms_median']:.2f} | {row['tok_s']:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
