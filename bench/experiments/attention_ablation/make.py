"""Hand-edited copies of the split f32 attention for timing ablations (issue 11, fifty-fourth session), written into
a folder for an experiment build's `EXP_WGSL_OVERRIDE`.

    python3 bench/experiments/attention_ablation/make.py [--out .carry/ablate]

`nosplitkv/`: `split8` rounds each scaled K and V value to f16 and leaves the lo parts zero, so the staging does no
hi/lo cut (what cutting K and V once, before the attention, could gain at most). Timing only: K and V then carry
f16's error. Copies of the two Whisper-tiny fp32 variants (`attn_coop_f32x3_d64_64x32_mask_none`, with and without
`_split`); `bench/h200_s53.sh` (part `ablate`) runs Whisper with them.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[3]
VARIANTS = ["attn_coop_f32x3_d64_64x32_mask_none", "attn_coop_f32x3_d64_64x32_mask_none_split"]

NO_SPLIT_KV = """fn split8(a: vec4<f32>, b: vec4<f32>, s: f32) -> Parts {
    // ABLATION (timing only): no hi/lo split of K and V, lo parts zero.
    let h = array<f16, 8>(f16(a.x * s), f16(a.y * s), f16(a.z * s), f16(a.w * s), f16(b.x * s), f16(b.y * s),
        f16(b.z * s), f16(b.w * s));
    return Parts(h, array<f16, 8>());
}
"""


def replace_function(text: str, name: str, body: str) -> str:
    """`text` with the WGSL function `name` (from `fn name(` to its closing brace at column 0) replaced by `body`."""
    start = text.index(f"fn {name}(")
    end = text.index("\n}\n", start) + 3
    return text[:start] + body + text[end:]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(REPO / ".carry" / "ablate"))
    args = ap.parse_args()
    out = pathlib.Path(args.out) / "nosplitkv"
    out.mkdir(parents=True, exist_ok=True)
    for name in VARIANTS:
        text = (REPO / "goldens" / f"{name}.wgsl").read_text()
        edited = replace_function(text, "split8", NO_SPLIT_KV)
        if edited == text:
            print(f"{name}: split8 unchanged", file=sys.stderr)
            return 1
        (out / f"{name}.wgsl").write_text(edited)
    print(f"wrote {len(VARIANTS)} variants into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
