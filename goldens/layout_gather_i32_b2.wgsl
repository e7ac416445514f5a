// Gather of 2-byte elements with int32 indices: output element e is
// (outer o, index q, inner) and reads data[o, indices[q], inner]. A negative index counts from
// the end; an index still out of range (ONNX Runtime's CPU EP fails the run, which a kernel
// cannot) yields zero and reads nothing.
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read> idx: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;
@group(0) @binding(3) var<uniform> p: Params;

struct Params {
    count: u32,
    words: u32,
    run: u32,
    items: u32,
    inner: u32,
    axis_len: u32,
    indices: u32,
    pad: u32,
}

fn load(s: u32) -> u32 {
    return (src[s / 2u] >> ((s % 2u) * 16u)) & 65535u;
}

// Index q wrapped into [0, axis_len), or -1 when out of range.
fn index(q: u32) -> i32 {
    var j = bitcast<i32>(idx[q]);
    let n = i32(p.axis_len);
    if j < 0 {
        j += n;
    }
    if j < 0 || j >= n {
        return -1;
    }
    return j;
}

fn fetch(e: u32) -> u32 {
    let inner = e % p.inner;
    let t = e / p.inner;
    let j = index(t % p.indices);
    if j < 0 {
        return 0u;
    }
    return load(((t / p.indices) * p.axis_len + u32(j)) * p.inner + inner);
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
        for (var k = 0u; k < 2u; k++) {
            let e = w * 2u + k;
            if e < p.count {
                word |= fetch(e) << (k * 16u);
            }
        }
        dst[w] = word;
    }
}

