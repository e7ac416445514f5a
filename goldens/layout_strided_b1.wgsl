// Strided copy of 1-byte elements (Transpose, Slice, Split, Expand): output element
// e, decomposed over the output dims (innermost first), reads input element
// base + sum(coord[d] * stride[d]); strides are two's complement (negative Slice steps) and
// the u32 arithmetic wraps, so the sum is exact once it lands in range.
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

struct Params {
    count: u32,
    items: u32,
    rank: u32,
    base: u32,
    dims: array<vec4<u32>, 2>,
    strides: array<vec4<u32>, 2>,
}

fn load(s: u32) -> u32 {
    return (src[s / 4u] >> ((s % 4u) * 8u)) & 255u;
}

fn fetch(e: u32) -> u32 {
    var rest = e;
    var s = p.base;
    for (var d = 0u; d < p.rank; d++) {
        let n = p.dims[d / 4u][d % 4u];
        s += (rest % n) * p.strides[d / 4u][d % 4u];
        rest /= n;
    }
    return load(s);
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
    var word = 0u;
    for (var k = 0u; k < 4u; k++) {
        let e = i * 4u + k;
        if e < p.count {
            word |= fetch(e) << (k * 8u);
        }
    }
    dst[i] = word;
}

