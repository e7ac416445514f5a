"""Hand-edited variants of COOP_WIDE (gemm_f16_coop_128x256_k16_w4x4_s2_p2) for `kernel_bench` with
KERNEL_BENCH_OVERRIDE=<dir>: improvements to the main loop's code and ablations that say where its time goes.

    python bench/experiments/coop_wide_variants.py OUT_DIR [BASE.wgsl]   # writes OUT_DIR/<tag>/<kernel>.wgsl
(the first set on the mat2x4<f16> template, the second on the f16x8 one that replaced it)
"""

import os
import re
import sys

NAME = "gemm_f16_coop_128x256_k16_w4x4_s2_p2_ss"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def loop_span(src):
    start = src.index("    for (var s = 0u; s < n_slices; s = s + 2u) {")
    end = src.index("    let c_base")
    return start, end


def in_loop(src, fn):
    s, e = loop_span(src)
    return src[:s] + fn(src[s:e]) + src[e:]


def u4(src):
    """16-byte global loads (vec4<u32>) instead of mat2x4<f16> (two 8-byte loads)."""
    src = src.replace("var<storage, read> a: array<mat2x4<f16>>", "var<storage, read> a: array<vec4<u32>>")
    src = src.replace("var<storage, read> b: array<mat2x4<f16>>", "var<storage, read> b: array<vec4<u32>>")
    src = re.sub(r"var (r[ab]x?0): mat2x4<f16>;", r"var \1: vec4<u32>;", src)
    src = re.sub(r"(r[ab]x?0) = mat2x4<f16>\(\);", r"\1 = vec4<u32>();", src)
    src = re.sub(r"array<f16, 8>\((r[ab]x?0)\[0\]\.x, [^;]*\);", r"h8(\1);", src)
    helper = """
fn h8(r: vec4<u32>) -> array<f16, 8> {
    // naga 30 types bitcast<vec2<f16>>(u32) as f32, so through unpack2x16float (exact for finite halves)
    let h0 = vec2<f16>(unpack2x16float(r.x));
    let h1 = vec2<f16>(unpack2x16float(r.y));
    let h2 = vec2<f16>(unpack2x16float(r.z));
    let h3 = vec2<f16>(unpack2x16float(r.w));
    return array<f16, 8>(h0.x, h0.y, h1.x, h1.y, h2.x, h2.y, h3.x, h3.y);
}
"""
    return src.replace("const BK: u32", helper + "\nconst BK: u32", 1)


def u4s(src):
    """u4, and the staging tiles as vec4<u32>: one 16-byte store per chunk; fragments load through a u32
    pointer (cooperative loads reinterpret memory; the stride counts u32s)."""
    src = u4(src)
    src = src.replace("var<workgroup> a_tile: array<array<f16, 8>, 768>;", "var<workgroup> a_tile: array<vec4<u32>, 768>;")
    src = src.replace("var<workgroup> b_tile: array<array<f16, 8>, 1056>;", "var<workgroup> b_tile: array<vec4<u32>, 1056>;")
    src = re.sub(r"h8\((r[ab]x?0)\);", r"\1;", src)
    src = re.sub(r"(coopLoadT?<coop_mat16x16<f16, [AB]>>\(&[ab]_tile\[e[ab]\d_\dc\])\[0\], S([AB])\)",
                 r"\1.x, S\2 / 2u)", src)
    return src


def inc(src):
    """Running global indices, one add per load, instead of (off + k * stride) / VW per load."""
    s, _ = loop_span(src)
    pre = """    let a_step = BK * p.a_cs / VW;
    let b_step = BK * p.b_rs / VW;
    var ia0 = (a_off0 + (k_begin + 2u * BK) * p.a_cs) / VW;
    var ib0 = (b_off0 + (k_begin + 2u * BK) * p.b_rs) / VW;
"""
    src = src[:s] + pre + src[s:]

    def body(loop):
        loop = re.sub(r"a\[\(a_off0 \+ k_(even|odd) \* p\.a_cs\) / VW\];", "a[ia0];", loop)
        loop = re.sub(r"b\[\(b_off0 \+ k_(even|odd) \* p\.b_rs\) / VW\];", "b[ib0];", loop)
        # advance after each of the two loads per operand (even, odd)
        loop = re.sub(r"(        rb(x?)0 = [^\n]*\n        if \(b_ok0[^\n]*\n[^\n]*\n        }\n)",
                      r"\1        ia0 = ia0 + a_step;\n        ib0 = ib0 + b_step;\n", loop)
        return loop

    return in_loop(src, body)


def nobar(src):
    """Ablation: no barrier in the main loop (wrong results)."""
    return in_loop(src, lambda t: t.replace("        workgroupBarrier();\n", ""))


def noload(src):
    """Ablation: no global loads in the main loop (stages stale registers; wrong results)."""
    def body(t):
        t = re.sub(r"        r[ab]x?0 = mat2x4<f16>\(\);\n        if \([^\n]*\n[^\n]*\n        }\n", "", t)
        return t
    return in_loop(src, body)


def nostage(src):
    """Ablation: neither global loads nor staging stores in the main loop (wrong results)."""
    def body(t):
        t = re.sub(r"        if \(ae0 < 256u\) {\n        a_tile[^\n]*\n        }\n", "", t)
        t = re.sub(r"        b_tile\[[^\n]*\n", "", t)
        return t
    return in_loop(noload(src), body)


def w32(src):
    """(On the f16x8 template.) Staging tiles as u32 words: four 4-byte stores per chunk, and fragments
    loaded through a u32 pointer (cooperative loads may reinterpret memory; the stride counts u32s). On the
    H200 (driver 580) the first dispatch lost the device: not a form to use."""
    src = src.replace("var<workgroup> a_tile: array<array<f16, 8>, 768>;", "var<workgroup> a_tile: array<u32, 3072>;")
    src = src.replace("var<workgroup> b_tile: array<array<f16, 8>, 1056>;", "var<workgroup> b_tile: array<u32, 4224>;")
    src = re.sub(r"([ab])_tile\[([^\n]*?) / VW\] = f16x8\((r[ab]x?0)\);",
                 r"{ let w = (\2) / VW * 4u; \1_tile[w] = \3.x; \1_tile[w + 1u] = \3.y; "
                 r"\1_tile[w + 2u] = \3.z; \1_tile[w + 3u] = \3.w; }", src)
    src = re.sub(r"(coopLoadT?<coop_mat16x16<f16, [AB]>>\(&[ab]_tile\[e[ab]\d_\dc)\]\[0\], S([AB])\)",
                 r"\1 * 4u], S\2 / 2u)", src)
    return src


def nokguard(src):
    """(On the f16x8 template.) Loads in the main loop guarded along M/N only, not along K (right only where K
    is a multiple of the slice depth)."""
    return in_loop(src, lambda t: re.sub(r"if \(([ab]_ok0) && k_(even|odd) \+ [ab]_k0 < k_end\)", r"if (\1)", t))


NEW_VARIANTS = {"w32": w32, "nokguard": nokguard, "w32nok": lambda s: nokguard(w32(s))}

VARIANTS = {"u4": u4, "u4s": u4s, "inc": inc, "u4inc": lambda s: inc(u4(s)), "nobar": nobar, "noload": noload,
            "nostage": nostage}


def main():
    out = sys.argv[1]
    src = open(sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "goldens", NAME + ".wgsl")).read()
    table = NEW_VARIANTS if "f16x8" in src else VARIANTS
    for tag, fn in table.items():
        v = fn(src)
        assert v != src, tag
        os.makedirs(os.path.join(out, tag), exist_ok=True)
        with open(os.path.join(out, tag, NAME + ".wgsl"), "w") as f:
            f.write(v)


if __name__ == "__main__":
    main()
