"""Hand-edited variants of the split-KV decode kernel (`attn_decode_kv_*`, `wgsl/attn_decode_kv.wgsl.j2`) for an
experiment build of the EP (`--features wgsl-override`, `EXP_WGSL_OVERRIDE=<dir>`; `bench/README.md`).

The twentieth session found about 10 µs of every decode dispatch in the combine of the workgroup's key groups
(`docs/PERFORMANCE.md`, "Token ids checked on the host, ..."). The variant here merges a subgroup's key groups
with shuffles first (lanes L, 2L, ... apart), so only `128 / subgroup size` partials per row (4 on NVIDIA) meet in
workgroup memory, all rows at once, behind one barrier.

    python bench/experiments/decode_combine_variants.py OUT_DIR   # writes OUT_DIR/<tag>/<kernel>.wgsl

Tags: `A_control` (the golden as generated), `S_subgroup_merge`. Kernels: the d=64 and d=128 f16 ones without a
mask (ONNX Attention's decode in `attention_bench`) and with the boolean mask (GroupQueryAttention's).
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAMES = [f"attn_decode_kv_f16_d{d}_l{l}_r{r}_mask_{m}" for d, l in ((64, 8), (128, 16))
         for r in (1, 2, 4) for m in ("none", "bool")]
THREADS = 128
# The most subgroups a workgroup of 128 holds where the subgroup is 32 wide (NVIDIA); a narrower subgroup needs
# more room, which this experiment does not size for.
MAX_SUBGROUPS = 4


def geometry(name):
    d, l, rb = (int(x) for x in re.match(r"attn_decode_kv_f16_d(\d+)_l(\d+)_r(\d+)_", name).groups())
    return d, l, rb, d // l  # w: elements of a row per invocation


def subgroup_merge(src, name):
    d, l, rb, w = geometry(name)
    e, cpl = 8, w // 8
    head, _ = src.split("    // The key groups' partials combined, one row at a time.")
    head = head.replace("    @builtin(local_invocation_index) tid: u32,\n) {",
                        "    @builtin(local_invocation_index) tid: u32,\n    @builtin(subgroup_size) sg_size: u32,\n) {")
    head = re.sub(r"var<workgroup> red: array<f32, \d+>;",
                  f"var<workgroup> red: array<f32, {MAX_SUBGROUPS * rb * d}>;", head)
    out = [head, "    // Each subgroup's key groups merged by shuffles, then the subgroups through workgroup memory.\n"]
    out.append("    for (var off = L; off < sg_size; off = off * 2u) {\n")
    for r in range(rb):
        out.append(f"""        {{
            let mo = subgroupShuffleXor(m{r}, off);
            let lo = subgroupShuffleXor(l{r}, off);
            let mx = max(m{r}, mo);
            var fa = 0.0;
            if (m{r} != neg_inf()) {{
                fa = exp(m{r} - mx);
            }}
            var fb = 0.0;
            if (mo != neg_inf()) {{
                fb = exp(mo - mx);
            }}
""")
        for k in range(w):
            out.append(f"            acc{r}[{k}] = acc{r}[{k}] * fa + subgroupShuffleXor(acc{r}[{k}], off) * fb;\n")
        out.append(f"            l{r} = l{r} * fa + lo * fb;\n            m{r} = mx;\n        }}\n")
    out.append("    }\n    let sg = tid / sg_size;\n    let nsg = %du / sg_size;\n    if (tid %% sg_size < L) {\n" % THREADS)
    for r in range(rb):
        out.append(f"        ml[(sg * {rb}u + {r}u) * 2u] = m{r};\n        ml[(sg * {rb}u + {r}u) * 2u + 1u] = l{r};\n")
        for c in range(cpl):
            for j in range(e):
                out.append(f"        red[(sg * {rb}u + {r}u) * D + {c}u * L * E + li * E + {j}u] = acc{r}[{c * e + j}];\n")
    out.append(f"""    }}
    workgroupBarrier();
    for (var i = tid; i < {rb}u * D; i = i + {THREADS}u) {{
        let r = i / D;
        let col = i % D;
        let rg = blk * {rb}u + r;
        if (rg < p.rows) {{
            var mx = neg_inf();
            for (var g = 0u; g < nsg; g = g + 1u) {{
                mx = max(mx, ml[(g * {rb}u + r) * 2u]);
            }}
            var sum = 0.0;
            var lt = 0.0;
            for (var g = 0u; g < nsg; g = g + 1u) {{
                let mg = ml[(g * {rb}u + r) * 2u];
                if (mg != neg_inf()) {{
                    let f = exp(mg - mx);
                    sum = sum + red[(g * {rb}u + r) * D + col] * f;
                    lt = lt + ml[(g * {rb}u + r) * 2u + 1u] * f;
                }}
            }}
            let h = kvh * p.group + rg / p.sq;
            let out = (((b * p.heads + h) * p.sq + rg % p.sq) * p.splits + split) * (D + 2u);
            part[out + col] = sum;
            if (col == 0u) {{
                part[out + D] = mx;
                part[out + D + 1u] = lt;
            }}
        }}
    }}
}}
""")
    return "".join(out)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    for tag, fn in (("A_control", lambda s, n: s), ("S_subgroup_merge", subgroup_merge)):
        os.makedirs(os.path.join(sys.argv[1], tag), exist_ok=True)
        for name in NAMES:
            with open(os.path.join(ROOT, "goldens", f"{name}.wgsl")) as f:
                src = f.read()
            with open(os.path.join(sys.argv[1], tag, f"{name}.wgsl"), "w") as f:
                f.write(fn(src, name))


if __name__ == "__main__":
    main()
