// Strided copy of 1-byte elements (Transpose, Slice, Split, Expand): output element
// e, decomposed over the output dims (innermost first), reads input element
// base + sum(coord[d] * stride[d]); strides are two's complement (negative Slice steps) and
// the u32 arithmetic wraps, so the sum is exact once it lands in range. An invocation copies
// p.run consecutive output elements (a multiple of 4: whole u32 words), dividing once and then
// stepping along the innermost dim: CPU adapters take long runs, GPUs short ones.
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

struct Params {
    count: u32,
    items: u32,
    rank: u32,
    base: u32,
    run: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
    // Dims (innermost first, at least one; unused ones 1) and their input strides.
    dims: array<vec4<u32>, 2>,
    strides: array<vec4<u32>, 2>,
}

fn load(s: u32) -> u32 {
    return (src[s / 4u] >> ((s % 4u) * 8u)) & 255u;
}

// The input offset of output element e and its innermost coordinate.
fn locate(e: u32) -> vec2<u32> {
    let inner = e % p.dims[0].x;
    var rest = e / p.dims[0].x;
    var s = p.base + inner * p.strides[0].x;
    for (var d = 1u; d < p.rank; d++) {
        let n = p.dims[d / 4u][d % 4u];
        s += (rest % n) * p.strides[d / 4u][d % 4u];
        rest /= n;
    }
    return vec2<u32>(s, inner);
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.items {
        return;
    }
    let first = i * p.run;
    var at = locate(first);
    var word = 0u;
    for (var m = 0u; m < p.run; m++) {
        let e = first + m;
        if e >= p.count {
            break;
        }
        let v = load(at.x);
        word |= v << ((m % 4u) * 8u);
        if m % 4u == 3u || e + 1u == p.count {
            dst[e / 4u] = word;
            word = 0u;
        }
        at += vec2<u32>(p.strides[0].x, 1u);
        if at.y == p.dims[0].x {
            at = locate(e + 1u);
        }
    }
}
