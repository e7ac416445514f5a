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
    // Bit 0: add the bias; bit 1: SiLU (x · sigmoid(x)); bit 2: times the gate.
    flags: u32,
}

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<u32>;
@group(0) @binding(2) var<storage, read> scales: array<f32>;
@group(0) @binding(3) var<storage, read> zero_points: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;
// Y's shape: multiplies the result where flags bit 2 says so (a gated product).
@group(0) @binding(5) var<storage, read> gate: array<f32>;
@group(0) @binding(6) var<storage, read_write> y: array<f32>;
@group(0) @binding(7) var<uniform> p: Params;

// The tile of Y (rows, columns), the slice of K, values per packed word, words per column of a slice.
const TM: u32 = 64u;
const TN: u32 = 64u;
const TK: u32 = 32u;
const V: u32 = 4u;
const WPC: u32 = TK / V;

// A's slice as [k][m], B's as [k][n].
var<workgroup> sa: array<f32, 2048>;
var<workgroup> sb: array<f32, 2048>;

// The zero point of block `kb` of column `n`.
fn zero_point(n: u32, kb: u32) -> f32 {
    return f32(zero_points[n * p.k_blocks + kb]);
}

// The bias, SiLU and gate (flags bits 0-2) on the sum for element `i` of Y, column `col`.
fn epilogue(sum: f32, i: u32, col: u32) -> f32 {
    var v = sum;
    if ((p.flags & 1u) != 0u) {
        v = v + f32(bias[col]);
    }
    if ((p.flags & 2u) != 0u) {
        v = v / (1.0 + exp(-v));
    }
    if ((p.flags & 4u) != 0u) {
        v = v * f32(gate[i]);
    }
    return v;
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
    var acc: array<f32, 16>;
    for (var k0 = 0u; k0 < p.k; k0 = k0 + TK) {
        // A: 8 values per invocation, consecutive invocations along a row.
        for (var i = 0u; i < 8u; i = i + 1u) {
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
        // B: TN · WPC packed words, dequantised; zeros past N and K.
        for (var w = lid; w < TN * WPC; w = w + 256u) {
            let nn = w / WPC;
            let wi = w % WPC;
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
                let q = (f32((word >> (8u * i)) & 255u) - z) * s;
                sb[(wi * V + i) * TN + nn] = select(0.0, q, kw + i < p.k);
            }
        }
        workgroupBarrier();
        for (var kk = 0u; kk < TK; kk = kk + 1u) {
            var av: array<f32, 4>;
            var bv: array<f32, 4>;
            for (var i = 0u; i < 4u; i = i + 1u) {
                av[i] = sa[kk * TM + ty + 16u * i];
                bv[i] = sb[kk * TN + tx + 16u * i];
            }
            for (var i = 0u; i < 4u; i = i + 1u) {
                for (var j = 0u; j < 4u; j = j + 1u) {
                    acc[4u * i + j] = fma(av[i], bv[j], acc[4u * i + j]);
                }
            }
        }
        workgroupBarrier();
    }
    for (var i = 0u; i < 16u; i = i + 1u) {
        let gm = m_base + ty + 16u * (i / 4u);
        let gn = n_base + tx + 16u * (i % 4u);
        if (gm < p.m && gn < p.n) {
            let o = gm * p.n + gn;
            y[o] = f32(epilogue(acc[i], o, gn));
        }
    }
}
