enable f16;

struct Params {
    count: u32,
    k: u32,
    rows: u32,
    axis_len: u32,
    k_blocks: u32,
    block: u32,
    zp_stride: u32,
    code: u32,
}

@group(0) @binding(0) var<storage, read> data: array<u32>;
@group(0) @binding(1) var<storage, read> idx: array<u32>;
@group(0) @binding(2) var<storage, read> scales: array<f16>;
@group(0) @binding(3) var<storage, read_write> y: array<f16>;
@group(0) @binding(4) var<storage, read_write> status: array<u32>;
@group(0) @binding(5) var<uniform> p: Params;

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

// The 2-bit value at position `f` of the packed bytes, of which `word` holds the ones at `f`.
fn unpack(word: u32, f: u32) -> u32 {
    return (word >> (2u * (f % 16u))) & 3u;
}

// The zero point of block `kb` of table row `row`.
fn zero_point(row: u32, kb: u32) -> f32 {
    return 2.0;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let e = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if e >= p.count {
        return;
    }
    let k = e % p.k;
    let t = e / p.k;
    let j = index(t / p.rows);
    if j < 0 {
        y[e] = f16(0.0);
        status[0] = p.code;
        return;
    }
    let row = u32(j) * p.rows + t % p.rows;
    let kb = k / p.block;
    let f = row * p.k + k;
    let v = f32(unpack(data[f / 16u], f));
    y[e] = f16((v - zero_point(row, kb)) * f32(scales[row * p.k_blocks + kb]));
}
