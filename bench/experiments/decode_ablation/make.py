"""Hand-edited copies of the K/V-head decode attention for timing ablations (issues 13 and 18, sixtieth session),
written into folders for an experiment build's `EXP_WGSL_OVERRIDE`.

    python3 bench/experiments/decode_ablation/make.py [--out .carry/ablate] [--variant NAME]

Each folder holds the variant Llama-3.2-1B decodes with on NVIDIA (`attn_decode_kv_f16_d64_l8_r4_s32_mask_seqlens`)
with one part of its chain cut, so a bound token's per-dispatch profile (`bench/decode_ab.py --prefix`) shows what
that part costs inside the run. Timing only: every one of them writes a wrong output.

- `nolast`: returns before the last workgroup's combine (no storage barriers, no counter, no read of the partials);
- `nopart`: returns after the key loop (no merges by shuffles, no workgroup-memory combine, no partials), keeping the
  loop's results alive through a write no run takes;
- `noloop`: the key loop runs no step (no K/V loads; the merges and the combine still run);
- `bare`: `noloop` and `nopart` together (the dispatch with its index arithmetic and nothing else);
- `nosb`: the combine without its two storage barriers;
- `nomerge`: the key groups of a subgroup not merged by shuffles (the workgroup-memory combine and the rest run);
- `nolds`: returns after the merges by shuffles (no workgroup-memory combine, no partials, no last combine);
- `partsink`: `nolast` with the partials' stores behind a condition no run meets (the combine's arithmetic stays).
"""

from __future__ import annotations

import argparse
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[3]
NAME = "attn_decode_kv_f16_d64_l8_r4_s32_mask_seqlens"
ROWS, WIDTH = 4, 8

LOOP_END = "    let c1 = min(c0 + p.chunk, k_hi);\n"
MERGE = "    // A subgroup's key groups merged by shuffles"
LAST = "if (p.fused == 0u) {"
SUBGROUPS = "    // The subgroups' partials combined in workgroup memory"
PART_STORES = [
    ("            part[out + col] = sum;\n", "            if (sum == 1234.5) { part[out + col] = sum; } // ABLATION\n"),
    ("                part[out + D] = mx;\n", "                if (mx == 1234.5) { part[out + D] = mx; } // ABLATION\n"),
    ("                part[out + D + 1u] = lt;\n", "                if (lt == 1234.5) { part[out + D + 1u] = lt; } // ABLATION\n"),
]


def sink() -> str:
    terms = [f"acc{r}[{c}]" for r in range(ROWS) for c in range(WIDTH)] + [f"l{r}" for r in range(ROWS)]
    terms += [f"m{r}" for r in range(ROWS)]
    return (
        "    // ABLATION (timing only): the loop's results kept alive by a write no run takes.\n"
        f"    let keep = {' + '.join(terms)};\n"
        "    if (keep == 1234.5) {\n        part[tid] = keep;\n    }\n    return;\n"
    )


def edit(text: str, variant: str) -> str:
    out = text
    if variant in ("noloop", "bare"):
        out = out.replace(LOOP_END, "    let c1 = c0; // ABLATION: no key step\n")
    if variant in ("nopart", "bare"):
        at = out.index(MERGE)
        out = out[:at] + sink() + out[at:]
    if variant == "nolast":
        out = out.replace(LAST, "return; // ABLATION: no last-workgroup combine\n" + LAST)
    if variant == "nomerge":
        merge = "for (var off = L; off < sg_size; off = off * 2u) {"
        out = out.replace(merge, "for (var off = L; off < 1u; off = off * 2u) { // ABLATION: no merge")
    if variant == "nolds":
        at = out.index(SUBGROUPS)
        out = out[:at] + sink() + out[at:]
    if variant == "partsink":
        out = out.replace(LAST, "return; // ABLATION: no last-workgroup combine\n" + LAST)
        for old, new in PART_STORES:
            out = out.replace(old, new)
    if variant == "nosb":
        out = out.replace("    storageBarrier();\n", "    // ABLATION: storageBarrier();\n")
    return out


VARIANTS = ["nolast", "nopart", "noloop", "bare", "nosb", "nomerge", "nolds", "partsink"]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(REPO / ".carry" / "ablate"))
    args = ap.parse_args()
    text = (REPO / "goldens" / f"{NAME}.wgsl").read_text()
    for variant in VARIANTS:
        edited = edit(text, variant)
        if edited == text:
            print(f"{variant}: unchanged", file=sys.stderr)
            return 1
        out = pathlib.Path(args.out) / variant
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{NAME}.wgsl").write_text(edited)
    print(f"wrote {len(VARIANTS)} variants into {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
