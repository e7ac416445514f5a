enable f16;

struct Params {
    m: u32,
    n: u32,
    k: u32,
    k_blocks: u32,
    block: u32,
    col_words: u32,
    zp_stride: u32,
    flags: u32,
}

@group(0) @binding(0) var<storage, read> b: array<u32>;
@group(0) @binding(1) var<storage, read> scales: array<f16>;
@group(0) @binding(2) var<storage, read> zero_points: array<u32>;
@group(0) @binding(3) var<storage, read_write> w: array<f16>;
@group(0) @binding(4) var<uniform> p: Params;

const V: u32 = 8u;

// The zero point of block `kb` of column `n`.
fn zero_point(n: u32, kb: u32) -> f32 {
    let byte = n * p.zp_stride + kb / 2u;
    let shift = 8u * (byte % 4u) + 4u * (kb % 2u);
    return f32((zero_points[byte / 4u] >> shift) & 15u);
}

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if (g >= p.n * p.col_words) {
        return;
    }
    let n = g % p.n;
    let k0 = (g / p.n) * V;
    if (k0 >= p.k) {
        return;
    }
    let word = b[n * p.col_words + k0 / V];
    let kb = k0 / p.block;
    let s = f32(scales[n * p.k_blocks + kb]);
    let z = zero_point(n, kb);
    let kn = min(V, p.k - k0);
    for (var i = 0u; i < kn; i = i + 1u) {
        w[(k0 + i) * p.n + n] = f16((f32((word >> (4u * i)) & 15u) - z) * s);
    }
}
