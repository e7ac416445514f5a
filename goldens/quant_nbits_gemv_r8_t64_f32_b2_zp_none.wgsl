struct Params {
    m: u32,
    n: u32,
    k: u32,
    // Blocks per column, the block size, packed words per column of B, bytes per column of
    // the packed zero points.
    k_blocks: u32,
    block: u32,
    col_words: u32,
    zp_stride: u32,
    // Bit 0: add the bias.
    flags: u32,
}

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<u32>;
@group(0) @binding(2) var<storage, read> scales: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<uniform> p: Params;

const T: u32 = 64u;
// Rows of A per workgroup, values per packed word.
const R: u32 = 8u;
const V: u32 = 16u;
// Packed words per invocation and pass.
const U: u32 = 4u;

var<workgroup> w_part: array<array<f32, T>, R>;

// The zero point of block `kb` of column `n`.
fn zero_point(n: u32, kb: u32) -> f32 {
    return 2.0;
}

// Adds the products of packed word `word` (values k0.. of a column, dequantised with scale `s`
// and zero point `z`) with rows m0.. of A to `acc`. Loops of constant trip counts (unrolled:
// `q` and `acc` stay in registers); only the last block's last word may run past K.
fn accumulate(acc: ptr<function, array<f32, R>>, word: u32, s: f32, z: f32, k0: u32, m0: u32, rows: u32) {
    var q: array<f32, V>;
    for (var i = 0u; i < V; i = i + 1u) {
        q[i] = (f32((word >> (2u * i)) & 3u) - z) * s;
    }
    let full = k0 + V <= p.k;
    let kn = min(V, p.k - k0);
    for (var r = 0u; r < R; r = r + 1u) {
        if (r < rows) {
            let base = (m0 + r) * p.k + k0;
            var sum = 0.0;
            if (full) {
                for (var i = 0u; i < V; i = i + 1u) {
                    sum = fma(f32(a[base + i]), q[i], sum);
                }
            } else {
                for (var i = 0u; i < kn; i = i + 1u) {
                    sum = fma(f32(a[base + i]), q[i], sum);
                }
            }
            (*acc)[r] = (*acc)[r] + sum;
        }
    }
}

@compute @workgroup_size(64, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let g = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    let n = g % p.n;
    let m0 = (g / p.n) * R;
    if (m0 >= p.m) {
        return;
    }
    let rows = min(R, p.m - m0);
    var acc: array<f32, R>;
    // U words per invocation and pass, T apart (each load coalesced), loaded with their scales
    // and zero points before any is used, so U loads per invocation are in flight.
    let words = min(p.col_words, (p.k + V - 1u) / V);
    for (var w0 = tid; w0 < words; w0 = w0 + U * T) {
        var word: array<u32, U>;
        var s: array<f32, U>;
        var z: array<f32, U>;
        for (var u = 0u; u < U; u = u + 1u) {
            let w = w0 + u * T;
            if (w < words) {
                let kb = (w * V) / p.block;
                word[u] = b[n * p.col_words + w];
                s[u] = f32(scales[n * p.k_blocks + kb]);
                z[u] = zero_point(n, kb);
            }
        }
        for (var u = 0u; u < U; u = u + 1u) {
            let w = w0 + u * T;
            if (w < words) {
                accumulate(&acc, word[u], s[u], z[u], w * V, m0, rows);
            }
        }
    }
    for (var r = 0u; r < R; r = r + 1u) {
        w_part[r][tid] = acc[r];
    }
    workgroupBarrier();
    for (var s = T / 2u; s > 0u; s = s >> 1u) {
        if (tid < s) {
            for (var r = 0u; r < R; r = r + 1u) {
                w_part[r][tid] = w_part[r][tid] + w_part[r][tid + s];
            }
        }
        workgroupBarrier();
    }
    if (tid < rows) {
        var v = w_part[tid][0];
        if ((p.flags & 1u) != 0u) {
            v = v + f32(bias[n]);
        }
        y[(m0 + tid) * p.n + n] = f32(v);
    }
}
