// Concat of 1-byte elements, up to 4 inputs per dispatch: output element e is
// (outer o, axis position a, inner); the bound input whose axis range holds a provides it, and
// an element of an input bound by another dispatch keeps the output's value, so the dispatches
// of a long Concat each rewrite whole words and never race on one.
@group(0) @binding(0) var<storage, read> src0: array<u32>;
@group(0) @binding(1) var<storage, read> src1: array<u32>;
@group(0) @binding(2) var<storage, read> src2: array<u32>;
@group(0) @binding(3) var<storage, read> src3: array<u32>;
@group(0) @binding(4) var<storage, read_write> dst: array<u32>;
@group(0) @binding(5) var<uniform> p: Params;

struct Params {
    count: u32,
    words: u32,
    run: u32,
    items: u32,
    inner: u32,
    axis: u32,
    pad0: u32,
    pad1: u32,
    // Axis offset and length of each bound input (length 0 for an unused slot).
    first: vec4<u32>,
    len: vec4<u32>,
}

fn load0(s: u32) -> u32 {
    return (src0[s / 4u] >> ((s % 4u) * 8u)) & 255u;
}

fn load1(s: u32) -> u32 {
    return (src1[s / 4u] >> ((s % 4u) * 8u)) & 255u;
}

fn load2(s: u32) -> u32 {
    return (src2[s / 4u] >> ((s % 4u) * 8u)) & 255u;
}

fn load3(s: u32) -> u32 {
    return (src3[s / 4u] >> ((s % 4u) * 8u)) & 255u;
}

fn keep(s: u32) -> u32 {
    return (dst[s / 4u] >> ((s % 4u) * 8u)) & 255u;
}

fn fetch(e: u32) -> u32 {
    let inner = e % p.inner;
    let t = e / p.inner;
    let a = t % p.axis;
    let o = t / p.axis;
    if a >= p.first[0] && a - p.first[0] < p.len[0] {
        return load0((o * p.len[0] + a - p.first[0]) * p.inner + inner);
    }
    if a >= p.first[1] && a - p.first[1] < p.len[1] {
        return load1((o * p.len[1] + a - p.first[1]) * p.inner + inner);
    }
    if a >= p.first[2] && a - p.first[2] < p.len[2] {
        return load2((o * p.len[2] + a - p.first[2]) * p.inner + inner);
    }
    if a >= p.first[3] && a - p.first[3] < p.len[3] {
        return load3((o * p.len[3] + a - p.first[3]) * p.inner + inner);
    }
    return keep(e);
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
    let end = min(i * p.run + p.run, p.words);
    for (var w = i * p.run; w < end; w++) {
        var word = 0u;
        for (var k = 0u; k < 4u; k++) {
            let e = w * 4u + k;
            if e < p.count {
                word |= fetch(e) << (k * 8u);
            }
        }
        dst[w] = word;
    }
}

