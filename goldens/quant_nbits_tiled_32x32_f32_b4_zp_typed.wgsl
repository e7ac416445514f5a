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
@group(0) @binding(3) var<storage, read> zero_points: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(5) var<storage, read_write> y: array<f32>;
@group(0) @binding(6) var<uniform> p: Params;

// The tile of Y (rows, columns), the slice of K, values per packed word, words per column of a slice.
const TM: u32 = 32u;
const TN: u32 = 32u;
const TK: u32 = 32u;
const V: u32 = 8u;
const WPC: u32 = TK / V;

// A's slice as [k][m], B's as [k][n].
var<workgroup> sa: array<f32, 1024>;
var<workgroup> sb: array<f32, 1024>;

// The zero point of block `kb` of column `n`.
fn zero_point(n: u32, kb: u32) -> f32 {
    return f32(zero_points[n * p.k_blocks + kb]);
}

@compute @workgroup_size(256, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let tiles_n = (p.n + TN - 1u) / TN;
    let g = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    let m_base = (g / tiles_n) * TM;
    let n_base = (g % tiles_n) * TN;
    if (m_base >= p.m) {
        return;
    }
    let tx = lid % 16u;
    let ty = lid / 16u;
    var c00 = 0.0;
    var c01 = 0.0;
    var c10 = 0.0;
    var c11 = 0.0;
    for (var k0 = 0u; k0 < p.k; k0 = k0 + TK) {
        // A: 4 values per invocation, consecutive invocations along a row.
        for (var i = 0u; i < 4u; i = i + 1u) {
            let e = lid + i * 256u;
            let mm = e / TK;
            let kk = e % TK;
            let gm = m_base + mm;
            let gk = k0 + kk;
            var v = 0.0;
            if (gm < p.m && gk < p.k) {
                v = f32(a[gm * p.k + gk]);
            }
            sa[kk * TM + mm] = v;
        }
        // B: one packed word per invocation (TN · WPC of them), dequantised; zeros past N and K.
        if (lid < TN * WPC) {
            let nn = lid / WPC;
            let wi = lid % WPC;
            let gn = n_base + nn;
            let kw = k0 + wi * V;
            var word = 0u;
            var s = 0.0;
            var z = 0.0;
            if (gn < p.n && kw < p.k) {
                word = b[gn * p.col_words + kw / V];
                let kb = kw / p.block;
                s = f32(scales[gn * p.k_blocks + kb]);
                z = zero_point(gn, kb);
            }
            for (var i = 0u; i < V; i = i + 1u) {
                let q = (f32((word >> (4u * i)) & 15u) - z) * s;
                sb[(wi * V + i) * TN + nn] = select(0.0, q, kw + i < p.k);
            }
        }
        workgroupBarrier();
        for (var kk = 0u; kk < TK; kk = kk + 1u) {
            let a0 = sa[kk * TM + 2u * ty];
            let a1 = sa[kk * TM + 2u * ty + 1u];
            let b0 = sb[kk * TN + 2u * tx];
            let b1 = sb[kk * TN + 2u * tx + 1u];
            c00 = fma(a0, b0, c00);
            c01 = fma(a0, b1, c01);
            c10 = fma(a1, b0, c10);
            c11 = fma(a1, b1, c11);
        }
        workgroupBarrier();
    }
    let c = array<f32, 4>(c00, c01, c10, c11);
    for (var i = 0u; i < 4u; i = i + 1u) {
        let gm = m_base + 2u * ty + i / 2u;
        let gn = n_base + 2u * tx + i % 2u;
        if (gm < p.m && gn < p.n) {
            var v = c[i];
            if ((p.flags & 1u) != 0u) {
                v = v + f32(bias[gn]);
            }
            y[gm * p.n + gn] = f32(v);
        }
    }
}
