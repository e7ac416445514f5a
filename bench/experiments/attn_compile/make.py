"""Hand-specialised copies of the f16 tensor-core attention, for pipeline_stats' cold compile times (issue 15):
what the driver's compile of `attn_coop_f16_d64_128x32_mask_none_split` spends on paths Whisper never takes.

    python3 bench/experiments/attn_compile/make.py OUT_DIR

Writes the golden itself and
- `..._novec`: K/V staged only as 8-half chunks (the element-by-element `stage_kv` for strided or unaligned rows
  removed), as when `vec_kv` is known at compile time;
- `..._novec_nocausal`: that, and no causal masking (the causal branches and the per-key causal test gone).
Timing only: these are not kernels the runtime builds.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

NAME = "attn_coop_f16_d64_128x32_mask_none_split"


def novec(src: str) -> str:
    start = src.index("// Stages `BC` rows of K and of V from key k0")
    end = src.index("// The next tile's K and V rows")
    src = src[:start] + src[end:]
    src = src.replace("if (p.vec_kv != 0u && k_begin < k_end) {", "if (k_begin < k_end) {")
    old = re.search(r"        if \(p\.vec_kv != 0u\) \{\n(.*?)        \} else \{\n            stage_kv\(k_base, v_base, k0, tid\);\n        \}\n",
                    src, re.S)
    assert old, "the staging branch moved"
    body = "\n".join(line[4:] for line in old.group(1).splitlines()) + "\n"
    src = src[:old.start()] + body + src[old.end():]
    assert "stage_kv" not in src and "vec_kv != 0u" not in src
    return src


def nocausal(src: str) -> str:
    src = re.sub(r" && \(p\.causal == 0u \|\| i32\(k0 \+ c(\d+)\) <= i32\(qi\) \+ p\.causal_offset\)\)", ")", src)
    src = src.replace(" || (p.causal != 0u && i32(k0 + BC - 1u) > i32(q0) + p.causal_offset)", "")
    src = src.replace("if (p.causal != 0u) {", "if (false) {")
    assert "p.causal " not in src and "p.causal)" not in src
    return src


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    root = Path(__file__).resolve().parents[3]
    src = (root / "goldens" / f"{NAME}.wgsl").read_text()
    (out / f"{NAME}.wgsl").write_text(src)
    (out / f"{NAME}_novec.wgsl").write_text(novec(src))
    (out / f"{NAME}_novec_nocausal.wgsl").write_text(nocausal(novec(src)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
