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

// A and B in 16-byte chunks.
@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> b: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> scales: array<f32>;
// The up projection's packed weights and scales (its zero points are the middle of the range).
@group(0) @binding(3) var<storage, read> b_up: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read> scales_up: array<f32>;
@group(0) @binding(5) var<storage, read> bias: array<f32>;
// Y's shape: multiplies the result where flags bit 2 says so (a gated product).
@group(0) @binding(6) var<storage, read> gate: array<f32>;
// The norm's skip and γ (one row each, in 16-byte chunks like A), and its sum x + skip.
@group(0) @binding(7) var<storage, read> skip: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read> gamma: array<vec4<f32>>;
@group(0) @binding(9) var<storage, read_write> y: array<f32>;
@group(0) @binding(10) var<storage, read_write> sum_out: array<vec4<f32>>;
@group(0) @binding(11) var<uniform> p: Params;

// Invocations per workgroup, per column group, columns per group, values per 16-byte chunk of B.
const T: u32 = 256u;
const L: u32 = 8u;
const CL: u32 = 4u;
const CV: u32 = 32u;

// The zero point of block `kb` of column `n`.
fn zero_point(n: u32, kb: u32) -> f32 {
    return 8.0;
}


// The up projection's zero point: the middle of the range.
fn zero_point_up(n: u32, kb: u32) -> f32 {
    return 8.0;
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
    @builtin(local_invocation_index) tid: u32,
) {
    let g = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    let groups = (p.n + CL - 1u) / CL;
    let group = g * (T / L) + tid / L;
    if (g * (T / L) >= groups) {
        return;
    }
    let lane = tid % L;
    // Groups past N repeat the last column (their sums are not stored); every invocation takes
    // part in the shuffles.
    let n0 = min(group, groups - 1u) * CL;
    let col0 = min(n0 + 0u, p.n - 1u);
    var acc0 = 0.0;
    var up0 = 0.0;
    let col1 = min(n0 + 1u, p.n - 1u);
    var acc1 = 0.0;
    var up1 = 0.0;
    let col2 = min(n0 + 2u, p.n - 1u);
    var acc2 = 0.0;
    var up2 = 0.0;
    let col3 = min(n0 + 3u, p.n - 1u);
    var acc3 = 0.0;
    var up3 = 0.0;
    // The squares of x + skip this invocation read; the first group of the first workgroup stores the sum.
    var ss = 0.0;
    let writes = g == 0u && tid < L;
    let chunks = p.k / CV;
    let col_chunks = p.col_words / 4u;
    var ch = lane;
    for (; ch + 1u * L < chunks; ch = ch + 2u * L) {
        let ch0 = ch + 0u * L;
        let ch1 = ch + 1u * L;
        {
            let w0_0 = b[col0 * col_chunks + ch0];
            let v0_0 = b_up[col0 * col_chunks + ch0];
            let w0_1 = b[col1 * col_chunks + ch0];
            let v0_1 = b_up[col1 * col_chunks + ch0];
            let w0_2 = b[col2 * col_chunks + ch0];
            let v0_2 = b_up[col2 * col_chunks + ch0];
            let w0_3 = b[col3 * col_chunks + ch0];
            let v0_3 = b_up[col3 * col_chunks + ch0];
            let w1_0 = b[col0 * col_chunks + ch1];
            let v1_0 = b_up[col0 * col_chunks + ch1];
            let w1_1 = b[col1 * col_chunks + ch1];
            let v1_1 = b_up[col1 * col_chunks + ch1];
            let w1_2 = b[col2 * col_chunks + ch1];
            let v1_2 = b_up[col2 * col_chunks + ch1];
            let w1_3 = b[col3 * col_chunks + ch1];
            let v1_3 = b_up[col3 * col_chunks + ch1];
            let xr0_0 = a[ch0 * 8u + 0u];
            let sk0_0 = skip[ch0 * 8u + 0u];
            let gm0_0 = gamma[ch0 * 8u + 0u];
            let xr0_1 = a[ch0 * 8u + 1u];
            let sk0_1 = skip[ch0 * 8u + 1u];
            let gm0_1 = gamma[ch0 * 8u + 1u];
            let xr0_2 = a[ch0 * 8u + 2u];
            let sk0_2 = skip[ch0 * 8u + 2u];
            let gm0_2 = gamma[ch0 * 8u + 2u];
            let xr0_3 = a[ch0 * 8u + 3u];
            let sk0_3 = skip[ch0 * 8u + 3u];
            let gm0_3 = gamma[ch0 * 8u + 3u];
            let xr0_4 = a[ch0 * 8u + 4u];
            let sk0_4 = skip[ch0 * 8u + 4u];
            let gm0_4 = gamma[ch0 * 8u + 4u];
            let xr0_5 = a[ch0 * 8u + 5u];
            let sk0_5 = skip[ch0 * 8u + 5u];
            let gm0_5 = gamma[ch0 * 8u + 5u];
            let xr0_6 = a[ch0 * 8u + 6u];
            let sk0_6 = skip[ch0 * 8u + 6u];
            let gm0_6 = gamma[ch0 * 8u + 6u];
            let xr0_7 = a[ch0 * 8u + 7u];
            let sk0_7 = skip[ch0 * 8u + 7u];
            let gm0_7 = gamma[ch0 * 8u + 7u];
            let xr1_0 = a[ch1 * 8u + 0u];
            let sk1_0 = skip[ch1 * 8u + 0u];
            let gm1_0 = gamma[ch1 * 8u + 0u];
            let xr1_1 = a[ch1 * 8u + 1u];
            let sk1_1 = skip[ch1 * 8u + 1u];
            let gm1_1 = gamma[ch1 * 8u + 1u];
            let xr1_2 = a[ch1 * 8u + 2u];
            let sk1_2 = skip[ch1 * 8u + 2u];
            let gm1_2 = gamma[ch1 * 8u + 2u];
            let xr1_3 = a[ch1 * 8u + 3u];
            let sk1_3 = skip[ch1 * 8u + 3u];
            let gm1_3 = gamma[ch1 * 8u + 3u];
            let xr1_4 = a[ch1 * 8u + 4u];
            let sk1_4 = skip[ch1 * 8u + 4u];
            let gm1_4 = gamma[ch1 * 8u + 4u];
            let xr1_5 = a[ch1 * 8u + 5u];
            let sk1_5 = skip[ch1 * 8u + 5u];
            let gm1_5 = gamma[ch1 * 8u + 5u];
            let xr1_6 = a[ch1 * 8u + 6u];
            let sk1_6 = skip[ch1 * 8u + 6u];
            let gm1_6 = gamma[ch1 * 8u + 6u];
            let xr1_7 = a[ch1 * 8u + 7u];
            let sk1_7 = skip[ch1 * 8u + 7u];
            let gm1_7 = gamma[ch1 * 8u + 7u];
            let kb0 = ch0 * CV / p.block;
            let s0_0 = f32(scales[col0 * p.k_blocks + kb0]);
            let t0_0 = f32(scales_up[col0 * p.k_blocks + kb0]);
            let s0_1 = f32(scales[col1 * p.k_blocks + kb0]);
            let t0_1 = f32(scales_up[col1 * p.k_blocks + kb0]);
            let s0_2 = f32(scales[col2 * p.k_blocks + kb0]);
            let t0_2 = f32(scales_up[col2 * p.k_blocks + kb0]);
            let s0_3 = f32(scales[col3 * p.k_blocks + kb0]);
            let t0_3 = f32(scales_up[col3 * p.k_blocks + kb0]);
            let kb1 = ch1 * CV / p.block;
            let s1_0 = f32(scales[col0 * p.k_blocks + kb1]);
            let t1_0 = f32(scales_up[col0 * p.k_blocks + kb1]);
            let s1_1 = f32(scales[col1 * p.k_blocks + kb1]);
            let t1_1 = f32(scales_up[col1 * p.k_blocks + kb1]);
            let s1_2 = f32(scales[col2 * p.k_blocks + kb1]);
            let t1_2 = f32(scales_up[col2 * p.k_blocks + kb1]);
            let s1_3 = f32(scales[col3 * p.k_blocks + kb1]);
            let t1_3 = f32(scales_up[col3 * p.k_blocks + kb1]);
            {
                let xs0_0 = xr0_0 + sk0_0;
                ss = ss + dot(xs0_0, xs0_0);
                let ar0_0 = xs0_0 * gm0_0;
                if (writes) {
                    sum_out[ch0 * 8u + 0u] = xs0_0;
                }
                let xs0_1 = xr0_1 + sk0_1;
                ss = ss + dot(xs0_1, xs0_1);
                let ar0_1 = xs0_1 * gm0_1;
                if (writes) {
                    sum_out[ch0 * 8u + 1u] = xs0_1;
                }
                let xs0_2 = xr0_2 + sk0_2;
                ss = ss + dot(xs0_2, xs0_2);
                let ar0_2 = xs0_2 * gm0_2;
                if (writes) {
                    sum_out[ch0 * 8u + 2u] = xs0_2;
                }
                let xs0_3 = xr0_3 + sk0_3;
                ss = ss + dot(xs0_3, xs0_3);
                let ar0_3 = xs0_3 * gm0_3;
                if (writes) {
                    sum_out[ch0 * 8u + 3u] = xs0_3;
                }
                let xs0_4 = xr0_4 + sk0_4;
                ss = ss + dot(xs0_4, xs0_4);
                let ar0_4 = xs0_4 * gm0_4;
                if (writes) {
                    sum_out[ch0 * 8u + 4u] = xs0_4;
                }
                let xs0_5 = xr0_5 + sk0_5;
                ss = ss + dot(xs0_5, xs0_5);
                let ar0_5 = xs0_5 * gm0_5;
                if (writes) {
                    sum_out[ch0 * 8u + 5u] = xs0_5;
                }
                let xs0_6 = xr0_6 + sk0_6;
                ss = ss + dot(xs0_6, xs0_6);
                let ar0_6 = xs0_6 * gm0_6;
                if (writes) {
                    sum_out[ch0 * 8u + 6u] = xs0_6;
                }
                let xs0_7 = xr0_7 + sk0_7;
                ss = ss + dot(xs0_7, xs0_7);
                let ar0_7 = xs0_7 * gm0_7;
                if (writes) {
                    sum_out[ch0 * 8u + 7u] = xs0_7;
                }
                let hs = ar0_0 + ar0_1 + ar0_2 + ar0_3 + ar0_4 + ar0_5 + ar0_6 + ar0_7;
                let a_sum = (hs.x + hs.y) + (hs.z + hs.w);
                {
                    var d0 = 0.0;
                    d0 = fma(ar0_0.x, f32(extractBits(w0_0[0u], 0u, 4u)), d0);
                    d0 = fma(ar0_0.y, f32(extractBits(w0_0[0u], 4u, 4u)), d0);
                    d0 = fma(ar0_0.z, f32(extractBits(w0_0[0u], 8u, 4u)), d0);
                    d0 = fma(ar0_0.w, f32(extractBits(w0_0[0u], 12u, 4u)), d0);
                    d0 = fma(ar0_1.x, f32(extractBits(w0_0[0u], 16u, 4u)), d0);
                    d0 = fma(ar0_1.y, f32(extractBits(w0_0[0u], 20u, 4u)), d0);
                    d0 = fma(ar0_1.z, f32(extractBits(w0_0[0u], 24u, 4u)), d0);
                    d0 = fma(ar0_1.w, f32(extractBits(w0_0[0u], 28u, 4u)), d0);
                    var d1 = 0.0;
                    d1 = fma(ar0_2.x, f32(extractBits(w0_0[1u], 0u, 4u)), d1);
                    d1 = fma(ar0_2.y, f32(extractBits(w0_0[1u], 4u, 4u)), d1);
                    d1 = fma(ar0_2.z, f32(extractBits(w0_0[1u], 8u, 4u)), d1);
                    d1 = fma(ar0_2.w, f32(extractBits(w0_0[1u], 12u, 4u)), d1);
                    d1 = fma(ar0_3.x, f32(extractBits(w0_0[1u], 16u, 4u)), d1);
                    d1 = fma(ar0_3.y, f32(extractBits(w0_0[1u], 20u, 4u)), d1);
                    d1 = fma(ar0_3.z, f32(extractBits(w0_0[1u], 24u, 4u)), d1);
                    d1 = fma(ar0_3.w, f32(extractBits(w0_0[1u], 28u, 4u)), d1);
                    var d2 = 0.0;
                    d2 = fma(ar0_4.x, f32(extractBits(w0_0[2u], 0u, 4u)), d2);
                    d2 = fma(ar0_4.y, f32(extractBits(w0_0[2u], 4u, 4u)), d2);
                    d2 = fma(ar0_4.z, f32(extractBits(w0_0[2u], 8u, 4u)), d2);
                    d2 = fma(ar0_4.w, f32(extractBits(w0_0[2u], 12u, 4u)), d2);
                    d2 = fma(ar0_5.x, f32(extractBits(w0_0[2u], 16u, 4u)), d2);
                    d2 = fma(ar0_5.y, f32(extractBits(w0_0[2u], 20u, 4u)), d2);
                    d2 = fma(ar0_5.z, f32(extractBits(w0_0[2u], 24u, 4u)), d2);
                    d2 = fma(ar0_5.w, f32(extractBits(w0_0[2u], 28u, 4u)), d2);
                    var d3 = 0.0;
                    d3 = fma(ar0_6.x, f32(extractBits(w0_0[3u], 0u, 4u)), d3);
                    d3 = fma(ar0_6.y, f32(extractBits(w0_0[3u], 4u, 4u)), d3);
                    d3 = fma(ar0_6.z, f32(extractBits(w0_0[3u], 8u, 4u)), d3);
                    d3 = fma(ar0_6.w, f32(extractBits(w0_0[3u], 12u, 4u)), d3);
                    d3 = fma(ar0_7.x, f32(extractBits(w0_0[3u], 16u, 4u)), d3);
                    d3 = fma(ar0_7.y, f32(extractBits(w0_0[3u], 20u, 4u)), d3);
                    d3 = fma(ar0_7.z, f32(extractBits(w0_0[3u], 24u, 4u)), d3);
                    d3 = fma(ar0_7.w, f32(extractBits(w0_0[3u], 28u, 4u)), d3);
                    let z = zero_point(col0, kb0);
                    acc0 = fma(s0_0, ((d0 + d1) + (d2 + d3)) - z * a_sum, acc0);
                }
                {
                    var d0 = 0.0;
                    d0 = fma(ar0_0.x, f32(extractBits(v0_0[0u], 0u, 4u)), d0);
                    d0 = fma(ar0_0.y, f32(extractBits(v0_0[0u], 4u, 4u)), d0);
                    d0 = fma(ar0_0.z, f32(extractBits(v0_0[0u], 8u, 4u)), d0);
                    d0 = fma(ar0_0.w, f32(extractBits(v0_0[0u], 12u, 4u)), d0);
                    d0 = fma(ar0_1.x, f32(extractBits(v0_0[0u], 16u, 4u)), d0);
                    d0 = fma(ar0_1.y, f32(extractBits(v0_0[0u], 20u, 4u)), d0);
                    d0 = fma(ar0_1.z, f32(extractBits(v0_0[0u], 24u, 4u)), d0);
                    d0 = fma(ar0_1.w, f32(extractBits(v0_0[0u], 28u, 4u)), d0);
                    var d1 = 0.0;
                    d1 = fma(ar0_2.x, f32(extractBits(v0_0[1u], 0u, 4u)), d1);
                    d1 = fma(ar0_2.y, f32(extractBits(v0_0[1u], 4u, 4u)), d1);
                    d1 = fma(ar0_2.z, f32(extractBits(v0_0[1u], 8u, 4u)), d1);
                    d1 = fma(ar0_2.w, f32(extractBits(v0_0[1u], 12u, 4u)), d1);
                    d1 = fma(ar0_3.x, f32(extractBits(v0_0[1u], 16u, 4u)), d1);
                    d1 = fma(ar0_3.y, f32(extractBits(v0_0[1u], 20u, 4u)), d1);
                    d1 = fma(ar0_3.z, f32(extractBits(v0_0[1u], 24u, 4u)), d1);
                    d1 = fma(ar0_3.w, f32(extractBits(v0_0[1u], 28u, 4u)), d1);
                    var d2 = 0.0;
                    d2 = fma(ar0_4.x, f32(extractBits(v0_0[2u], 0u, 4u)), d2);
                    d2 = fma(ar0_4.y, f32(extractBits(v0_0[2u], 4u, 4u)), d2);
                    d2 = fma(ar0_4.z, f32(extractBits(v0_0[2u], 8u, 4u)), d2);
                    d2 = fma(ar0_4.w, f32(extractBits(v0_0[2u], 12u, 4u)), d2);
                    d2 = fma(ar0_5.x, f32(extractBits(v0_0[2u], 16u, 4u)), d2);
                    d2 = fma(ar0_5.y, f32(extractBits(v0_0[2u], 20u, 4u)), d2);
                    d2 = fma(ar0_5.z, f32(extractBits(v0_0[2u], 24u, 4u)), d2);
                    d2 = fma(ar0_5.w, f32(extractBits(v0_0[2u], 28u, 4u)), d2);
                    var d3 = 0.0;
                    d3 = fma(ar0_6.x, f32(extractBits(v0_0[3u], 0u, 4u)), d3);
                    d3 = fma(ar0_6.y, f32(extractBits(v0_0[3u], 4u, 4u)), d3);
                    d3 = fma(ar0_6.z, f32(extractBits(v0_0[3u], 8u, 4u)), d3);
                    d3 = fma(ar0_6.w, f32(extractBits(v0_0[3u], 12u, 4u)), d3);
                    d3 = fma(ar0_7.x, f32(extractBits(v0_0[3u], 16u, 4u)), d3);
                    d3 = fma(ar0_7.y, f32(extractBits(v0_0[3u], 20u, 4u)), d3);
                    d3 = fma(ar0_7.z, f32(extractBits(v0_0[3u], 24u, 4u)), d3);
                    d3 = fma(ar0_7.w, f32(extractBits(v0_0[3u], 28u, 4u)), d3);
                    let z = zero_point_up(col0, kb0);
                    up0 = fma(t0_0, ((d0 + d1) + (d2 + d3)) - z * a_sum, up0);
                }
                {
                    var d0 = 0.0;
                    d0 = fma(ar0_0.x, f32(extractBits(w0_1[0u], 0u, 4u)), d0);
                    d0 = fma(ar0_0.y, f32(extractBits(w0_1[0u], 4u, 4u)), d0);
                    d0 = fma(ar0_0.z, f32(extractBits(w0_1[0u], 8u, 4u)), d0);
                    d0 = fma(ar0_0.w, f32(extractBits(w0_1[0u], 12u, 4u)), d0);
                    d0 = fma(ar0_1.x, f32(extractBits(w0_1[0u], 16u, 4u)), d0);
                    d0 = fma(ar0_1.y, f32(extractBits(w0_1[0u], 20u, 4u)), d0);
                    d0 = fma(ar0_1.z, f32(extractBits(w0_1[0u], 24u, 4u)), d0);
                    d0 = fma(ar0_1.w, f32(extractBits(w0_1[0u], 28u, 4u)), d0);
                    var d1 = 0.0;
                    d1 = fma(ar0_2.x, f32(extractBits(w0_1[1u], 0u, 4u)), d1);
                    d1 = fma(ar0_2.y, f32(extractBits(w0_1[1u], 4u, 4u)), d1);
                    d1 = fma(ar0_2.z, f32(extractBits(w0_1[1u], 8u, 4u)), d1);
                    d1 = fma(ar0_2.w, f32(extractBits(w0_1[1u], 12u, 4u)), d1);
                    d1 = fma(ar0_3.x, f32(extractBits(w0_1[1u], 16u, 4u)), d1);
                    d1 = fma(ar0_3.y, f32(extractBits(w0_1[1u], 20u, 4u)), d1);
                    d1 = fma(ar0_3.z, f32(extractBits(w0_1[1u], 24u, 4u)), d1);
                    d1 = fma(ar0_3.w, f32(extractBits(w0_1[1u], 28u, 4u)), d1);
                    var d2 = 0.0;
                    d2 = fma(ar0_4.x, f32(extractBits(w0_1[2u], 0u, 4u)), d2);
                    d2 = fma(ar0_4.y, f32(extractBits(w0_1[2u], 4u, 4u)), d2);
                    d2 = fma(ar0_4.z, f32(extractBits(w0_1[2u], 8u, 4u)), d2);
                    d2 = fma(ar0_4.w, f32(extractBits(w0_1[2u], 12u, 4u)), d2);
                    d2 = fma(ar0_5.x, f32(extractBits(w0_1[2u], 16u, 4u)), d2);
                    d2 = fma(ar0_5.y, f32(extractBits(w0_1[2u], 20u, 4u)), d2);
                    d2 = fma(ar0_5.z, f32(extractBits(w0_1[2u], 24u, 4u)), d2);
                    d2 = fma(ar0_5.w, f32(extractBits(w0_1[2u], 28u, 4u)), d2);
                    var d3 = 0.0;
                    d3 = fma(ar0_6.x, f32(extractBits(w0_1[3u], 0u, 4u)), d3);
                    d3 = fma(ar0_6.y, f32(extractBits(w0_1[3u], 4u, 4u)), d3);
                    d3 = fma(ar0_6.z, f32(extractBits(w0_1[3u], 8u, 4u)), d3);
                    d3 = fma(ar0_6.w, f32(extractBits(w0_1[3u], 12u, 4u)), d3);
                    d3 = fma(ar0_7.x, f32(extractBits(w0_1[3u], 16u, 4u)), d3);
                    d3 = fma(ar0_7.y, f32(extractBits(w0_1[3u], 20u, 4u)), d3);
                    d3 = fma(ar0_7.z, f32(extractBits(w0_1[3u], 24u, 4u)), d3);
                    d3 = fma(ar0_7.w, f32(extractBits(w0_1[3u], 28u, 4u)), d3);
                    let z = zero_point(col1, kb0);
                    acc1 = fma(s0_1, ((d0 + d1) + (d2 + d3)) - z * a_sum, acc1);
                }
                {
                    var d0 = 0.0;
                    d0 = fma(ar0_0.x, f32(extractBits(v0_1[0u], 0u, 4u)), d0);
                    d0 = fma(ar0_0.y, f32(extractBits(v0_1[0u], 4u, 4u)), d0);
                    d0 = fma(ar0_0.z, f32(extractBits(v0_1[0u], 8u, 4u)), d0);
                    d0 = fma(ar0_0.w, f32(extractBits(v0_1[0u], 12u, 4u)), d0);
                    d0 = fma(ar0_1.x, f32(extractBits(v0_1[0u], 16u, 4u)), d0);
                    d0 = fma(ar0_1.y, f32(extractBits(v0_1[0u], 20u, 4u)), d0);
                    d0 = fma(ar0_1.z, f32(extractBits(v0_1[0u], 24u, 4u)), d0);
                    d0 = fma(ar0_1.w, f32(extractBits(v0_1[0u], 28u, 4u)), d0);
                    var d1 = 0.0;
                    d1 = fma(ar0_2.x, f32(extractBits(v0_1[1u], 0u, 4u)), d1);
                    d1 = fma(ar0_2.y, f32(extractBits(v0_1[1u], 4u, 4u)), d1);
                    d1 = fma(ar0_2.z, f32(extractBits(v0_1[1u], 8u, 4u)), d1);
                    d1 = fma(ar0_2.w, f32(extractBits(v0_1[1u], 12u, 4u)), d1);
                    d1 = fma(ar0_3.x, f32(extractBits(v0_1[1u], 16u, 4u)), d1);
                    d1 = fma(ar0_3.y, f32(extractBits(v0_1[1u], 20u, 4u)), d1);
                    d1 = fma(ar0_3.z, f32(extractBits(v0_1[1u], 24u, 4u)), d1);
                    d1 = fma(ar0_3.w, f32(extractBits(v0_1[1u], 28u, 4u)), d1);
                    var d2 = 0.0;
                    d2 = fma(ar0_4.x, f32(extractBits(v0_1[2u], 0u, 4u)), d2);
                    d2 = fma(ar0_4.y, f32(extractBits(v0_1[2u], 4u, 4u)), d2);
                    d2 = fma(ar0_4.z, f32(extractBits(v0_1[2u], 8u, 4u)), d2);
                    d2 = fma(ar0_4.w, f32(extractBits(v0_1[2u], 12u, 4u)), d2);
                    d2 = fma(ar0_5.x, f32(extractBits(v0_1[2u], 16u, 4u)), d2);
                    d2 = fma(ar0_5.y, f32(extractBits(v0_1[2u], 20u, 4u)), d2);
                    d2 = fma(ar0_5.z, f32(extractBits(v0_1[2u], 24u, 4u)), d2);
                    d2 = fma(ar0_5.w, f32(extractBits(v0_1[2u], 28u, 4u)), d2);
                    var d3 = 0.0;
                    d3 = fma(ar0_6.x, f32(extractBits(v0_1[3u], 0u, 4u)), d3);
                    d3 = fma(ar0_6.y, f32(extractBits(v0_1[3u], 4u, 4u)), d3);
                    d3 = fma(ar0_6.z, f32(extractBits(v0_1[3u], 8u, 4u)), d3);
                    d3 = fma(ar0_6.w, f32(extractBits(v0_1[3u], 12u, 4u)), d3);
                    d3 = fma(ar0_7.x, f32(extractBits(v0_1[3u], 16u, 4u)), d3);
                    d3 = fma(ar0_7.y, f32(extractBits(v0_1[3u], 20u, 4u)), d3);
                    d3 = fma(ar0_7.z, f32(extractBits(v0_1[3u], 24u, 4u)), d3);
                    d3 = fma(ar0_7.w, f32(extractBits(v0_1[3u], 28u, 4u)), d3);
                    let z = zero_point_up(col1, kb0);
                    up1 = fma(t0_1, ((d0 + d1) + (d2 + d3)) - z * a_sum, up1);
                }
                {
                    var d0 = 0.0;
                    d0 = fma(ar0_0.x, f32(extractBits(w0_2[0u], 0u, 4u)), d0);
                    d0 = fma(ar0_0.y, f32(extractBits(w0_2[0u], 4u, 4u)), d0);
                    d0 = fma(ar0_0.z, f32(extractBits(w0_2[0u], 8u, 4u)), d0);
                    d0 = fma(ar0_0.w, f32(extractBits(w0_2[0u], 12u, 4u)), d0);
                    d0 = fma(ar0_1.x, f32(extractBits(w0_2[0u], 16u, 4u)), d0);
                    d0 = fma(ar0_1.y, f32(extractBits(w0_2[0u], 20u, 4u)), d0);
                    d0 = fma(ar0_1.z, f32(extractBits(w0_2[0u], 24u, 4u)), d0);
                    d0 = fma(ar0_1.w, f32(extractBits(w0_2[0u], 28u, 4u)), d0);
                    var d1 = 0.0;
                    d1 = fma(ar0_2.x, f32(extractBits(w0_2[1u], 0u, 4u)), d1);
                    d1 = fma(ar0_2.y, f32(extractBits(w0_2[1u], 4u, 4u)), d1);
                    d1 = fma(ar0_2.z, f32(extractBits(w0_2[1u], 8u, 4u)), d1);
                    d1 = fma(ar0_2.w, f32(extractBits(w0_2[1u], 12u, 4u)), d1);
                    d1 = fma(ar0_3.x, f32(extractBits(w0_2[1u], 16u, 4u)), d1);
                    d1 = fma(ar0_3.y, f32(extractBits(w0_2[1u], 20u, 4u)), d1);
                    d1 = fma(ar0_3.z, f32(extractBits(w0_2[1u], 24u, 4u)), d1);
                    d1 = fma(ar0_3.w, f32(extractBits(w0_2[1u], 28u, 4u)), d1);
                    var d2 = 0.0;
                    d2 = fma(ar0_4.x, f32(extractBits(w0_2[2u], 0u, 4u)), d2);
                    d2 = fma(ar0_4.y, f32(extractBits(w0_2[2u], 4u, 4u)), d2);
                    d2 = fma(ar0_4.z, f32(extractBits(w0_2[2u], 8u, 4u)), d2);
                    d2 = fma(ar0_4.w, f32(extractBits(w0_2[2u], 12u, 4u)), d2);
                    d2 = fma(ar0_5.x, f32(extractBits(w0_2[2u], 16u, 4u)), d2);
                    d2 = fma(ar0_5.y, f32(extractBits(w0_2[2u], 20u, 4u)), d2);
                    d2 = fma(ar0_5.z, f32(extractBits(w0_2[2u], 24u, 4u)), d2);
                    d2 = fma(ar0_5.w, f32(extractBits(w0_2[2u], 28u, 4u)), d2);
                    var d3 = 0.0;
                    d3 = fma(ar0_6.x, f32(extractBits(w0_2[3u], 0u, 4u)), d3);
                    d3 = fma(ar0_6.y, f32(extractBits(w0_2[3u], 4u, 4u)), d3);
                    d3 = fma(ar0_6.z, f32(extractBits(w0_2[3u], 8u, 4u)), d3);
                    d3 = fma(ar0_6.w, f32(extractBits(w0_2[3u], 12u, 4u)), d3);
                    d3 = fma(ar0_7.x, f32(extractBits(w0_2[3u], 16u, 4u)), d3);
                    d3 = fma(ar0_7.y, f32(extractBits(w0_2[3u], 20u, 4u)), d3);
                    d3 = fma(ar0_7.z, f32(extractBits(w0_2[3u], 24u, 4u)), d3);
                    d3 = fma(ar0_7.w, f32(extractBits(w0_2[3u], 28u, 4u)), d3);
                    let z = zero_point(col2, kb0);
                    acc2 = fma(s0_2, ((d0 + d1) + (d2 + d3)) - z * a_sum, acc2);
                }
                {
                    var d0 = 0.0;
                    d0 = fma(ar0_0.x, f32(extractBits(v0_2[0u], 0u, 4u)), d0);
                    d0 = fma(ar0_0.y, f32(extractBits(v0_2[0u], 4u, 4u)), d0);
                    d0 = fma(ar0_0.z, f32(extractBits(v0_2[0u], 8u, 4u)), d0);
                    d0 = fma(ar0_0.w, f32(extractBits(v0_2[0u], 12u, 4u)), d0);
                    d0 = fma(ar0_1.x, f32(extractBits(v0_2[0u], 16u, 4u)), d0);
                    d0 = fma(ar0_1.y, f32(extractBits(v0_2[0u], 20u, 4u)), d0);
                    d0 = fma(ar0_1.z, f32(extractBits(v0_2[0u], 24u, 4u)), d0);
                    d0 = fma(ar0_1.w, f32(extractBits(v0_2[0u], 28u, 4u)), d0);
                    var d1 = 0.0;
                    d1 = fma(ar0_2.x, f32(extractBits(v0_2[1u], 0u, 4u)), d1);
                    d1 = fma(ar0_2.y, f32(extractBits(v0_2[1u], 4u, 4u)), d1);
                    d1 = fma(ar0_2.z, f32(extractBits(v0_2[1u], 8u, 4u)), d1);
                    d1 = fma(ar0_2.w, f32(extractBits(v0_2[1u], 12u, 4u)), d1);
                    d1 = fma(ar0_3.x, f32(extractBits(v0_2[1u], 16u, 4u)), d1);
                    d1 = fma(ar0_3.y, f32(extractBits(v0_2[1u], 20u, 4u)), d1);
                    d1 = fma(ar0_3.z, f32(extractBits(v0_2[1u], 24u, 4u)), d1);
                    d1 = fma(ar0_3.w, f32(extractBits(v0_2[1u], 28u, 4u)), d1);
                    var d2 = 0.0;
                    d2 = fma(ar0_4.x, f32(extractBits(v0_2[2u], 0u, 4u)), d2);
                    d2 = fma(ar0_4.y, f32(extractBits(v0_2[2u], 4u, 4u)), d2);
                    d2 = fma(ar0_4.z, f32(extractBits(v0_2[2u], 8u, 4u)), d2);
                    d2 = fma(ar0_4.w, f32(extractBits(v0_2[2u], 12u, 4u)), d2);
                    d2 = fma(ar0_5.x, f32(extractBits(v0_2[2u], 16u, 4u)), d2);
                    d2 = fma(ar0_5.y, f32(extractBits(v0_2[2u], 20u, 4u)), d2);
                    d2 = fma(ar0_5.z, f32(extractBits(v0_2[2u], 24u, 4u)), d2);
                    d2 = fma(ar0_5.w, f32(extractBits(v0_2[2u], 28u, 4u)), d2);
                    var d3 = 0.0;
                    d3 = fma(ar0_6.x, f32(extractBits(v0_2[3u], 0u, 4u)), d3);
                    d3 = fma(ar0_6.y, f32(extractBits(v0_2[3u], 4u, 4u)), d3);
                    d3 = fma(ar0_6.z, f32(extractBits(v0_2[3u], 8u, 4u)), d3);
                    d3 = fma(ar0_6.w, f32(extractBits(v0_2[3u], 12u, 4u)), d3);
                    d3 = fma(ar0_7.x, f32(extractBits(v0_2[3u], 16u, 4u)), d3);
                    d3 = fma(ar0_7.y, f32(extractBits(v0_2[3u], 20u, 4u)), d3);
                    d3 = fma(ar0_7.z, f32(extractBits(v0_2[3u], 24u, 4u)), d3);
                    d3 = fma(ar0_7.w, f32(extractBits(v0_2[3u], 28u, 4u)), d3);
                    let z = zero_point_up(col2, kb0);
                    up2 = fma(t0_2, ((d0 + d1) + (d2 + d3)) - z * a_sum, up2);
                }
                {
                    var d0 = 0.0;
                    d0 = fma(ar0_0.x, f32(extractBits(w0_3[0u], 0u, 4u)), d0);
                    d0 = fma(ar0_0.y, f32(extractBits(w0_3[0u], 4u, 4u)), d0);
                    d0 = fma(ar0_0.z, f32(extractBits(w0_3[0u], 8u, 4u)), d0);
                    d0 = fma(ar0_0.w, f32(extractBits(w0_3[0u], 12u, 4u)), d0);
                    d0 = fma(ar0_1.x, f32(extractBits(w0_3[0u], 16u, 4u)), d0);
                    d0 = fma(ar0_1.y, f32(extractBits(w0_3[0u], 20u, 4u)), d0);
                    d0 = fma(ar0_1.z, f32(extractBits(w0_3[0u], 24u, 4u)), d0);
                    d0 = fma(ar0_1.w, f32(extractBits(w0_3[0u], 28u, 4u)), d0);
                    var d1 = 0.0;
                    d1 = fma(ar0_2.x, f32(extractBits(w0_3[1u], 0u, 4u)), d1);
                    d1 = fma(ar0_2.y, f32(extractBits(w0_3[1u], 4u, 4u)), d1);
                    d1 = fma(ar0_2.z, f32(extractBits(w0_3[1u], 8u, 4u)), d1);
                    d1 = fma(ar0_2.w, f32(extractBits(w0_3[1u], 12u, 4u)), d1);
                    d1 = fma(ar0_3.x, f32(extractBits(w0_3[1u], 16u, 4u)), d1);
                    d1 = fma(ar0_3.y, f32(extractBits(w0_3[1u], 20u, 4u)), d1);
                    d1 = fma(ar0_3.z, f32(extractBits(w0_3[1u], 24u, 4u)), d1);
                    d1 = fma(ar0_3.w, f32(extractBits(w0_3[1u], 28u, 4u)), d1);
                    var d2 = 0.0;
                    d2 = fma(ar0_4.x, f32(extractBits(w0_3[2u], 0u, 4u)), d2);
                    d2 = fma(ar0_4.y, f32(extractBits(w0_3[2u], 4u, 4u)), d2);
                    d2 = fma(ar0_4.z, f32(extractBits(w0_3[2u], 8u, 4u)), d2);
                    d2 = fma(ar0_4.w, f32(extractBits(w0_3[2u], 12u, 4u)), d2);
                    d2 = fma(ar0_5.x, f32(extractBits(w0_3[2u], 16u, 4u)), d2);
                    d2 = fma(ar0_5.y, f32(extractBits(w0_3[2u], 20u, 4u)), d2);
                    d2 = fma(ar0_5.z, f32(extractBits(w0_3[2u], 24u, 4u)), d2);
                    d2 = fma(ar0_5.w, f32(extractBits(w0_3[2u], 28u, 4u)), d2);
                    var d3 = 0.0;
                    d3 = fma(ar0_6.x, f32(extractBits(w0_3[3u], 0u, 4u)), d3);
                    d3 = fma(ar0_6.y, f32(extractBits(w0_3[3u], 4u, 4u)), d3);
                    d3 = fma(ar0_6.z, f32(extractBits(w0_3[3u], 8u, 4u)), d3);
                    d3 = fma(ar0_6.w, f32(extractBits(w0_3[3u], 12u, 4u)), d3);
                    d3 = fma(ar0_7.x, f32(extractBits(w0_3[3u], 16u, 4u)), d3);
                    d3 = fma(ar0_7.y, f32(extractBits(w0_3[3u], 20u, 4u)), d3);
                    d3 = fma(ar0_7.z, f32(extractBits(w0_3[3u], 24u, 4u)), d3);
                    d3 = fma(ar0_7.w, f32(extractBits(w0_3[3u], 28u, 4u)), d3);
                    let z = zero_point(col3, kb0);
                    acc3 = fma(s0_3, ((d0 + d1) + (d2 + d3)) - z * a_sum, acc3);
                }
                {
                    var d0 = 0.0;
                    d0 = fma(ar0_0.x, f32(extractBits(v0_3[0u], 0u, 4u)), d0);
                    d0 = fma(ar0_0.y, f32(extractBits(v0_3[0u], 4u, 4u)), d0);
                    d0 = fma(ar0_0.z, f32(extractBits(v0_3[0u], 8u, 4u)), d0);
                    d0 = fma(ar0_0.w, f32(extractBits(v0_3[0u], 12u, 4u)), d0);
                    d0 = fma(ar0_1.x, f32(extractBits(v0_3[0u], 16u, 4u)), d0);
                    d0 = fma(ar0_1.y, f32(extractBits(v0_3[0u], 20u, 4u)), d0);
                    d0 = fma(ar0_1.z, f32(extractBits(v0_3[0u], 24u, 4u)), d0);
                    d0 = fma(ar0_1.w, f32(extractBits(v0_3[0u], 28u, 4u)), d0);
                    var d1 = 0.0;
                    d1 = fma(ar0_2.x, f32(extractBits(v0_3[1u], 0u, 4u)), d1);
                    d1 = fma(ar0_2.y, f32(extractBits(v0_3[1u], 4u, 4u)), d1);
                    d1 = fma(ar0_2.z, f32(extractBits(v0_3[1u], 8u, 4u)), d1);
                    d1 = fma(ar0_2.w, f32(extractBits(v0_3[1u], 12u, 4u)), d1);
                    d1 = fma(ar0_3.x, f32(extractBits(v0_3[1u], 16u, 4u)), d1);
                    d1 = fma(ar0_3.y, f32(extractBits(v0_3[1u], 20u, 4u)), d1);
                    d1 = fma(ar0_3.z, f32(extractBits(v0_3[1u], 24u, 4u)), d1);
                    d1 = fma(ar0_3.w, f32(extractBits(v0_3[1u], 28u, 4u)), d1);
                    var d2 = 0.0;
                    d2 = fma(ar0_4.x, f32(extractBits(v0_3[2u], 0u, 4u)), d2);
                    d2 = fma(ar0_4.y, f32(extractBits(v0_3[2u], 4u, 4u)), d2);
                    d2 = fma(ar0_4.z, f32(extractBits(v0_3[2u], 8u, 4u)), d2);
                    d2 = fma(ar0_4.w, f32(extractBits(v0_3[2u], 12u, 4u)), d2);
                    d2 = fma(ar0_5.x, f32(extractBits(v0_3[2u], 16u, 4u)), d2);
                    d2 = fma(ar0_5.y, f32(extractBits(v0_3[2u], 20u, 4u)), d2);
                    d2 = fma(ar0_5.z, f32(extractBits(v0_3[2u], 24u, 4u)), d2);
                    d2 = fma(ar0_5.w, f32(extractBits(v0_3[2u], 28u, 4u)), d2);
                    var d3 = 0.0;
                    d3 = fma(ar0_6.x, f32(extractBits(v0_3[3u], 0u, 4u)), d3);
                    d3 = fma(ar0_6.y, f32(extractBits(v0_3[3u], 4u, 4u)), d3);
                    d3 = fma(ar0_6.z, f32(extractBits(v0_3[3u], 8u, 4u)), d3);
                    d3 = fma(ar0_6.w, f32(extractBits(v0_3[3u], 12u, 4u)), d3);
                    d3 = fma(ar0_7.x, f32(extractBits(v0_3[3u], 16u, 4u)), d3);
                    d3 = fma(ar0_7.y, f32(extractBits(v0_3[3u], 20u, 4u)), d3);
                    d3 = fma(ar0_7.z, f32(extractBits(v0_3[3u], 24u, 4u)), d3);
                    d3 = fma(ar0_7.w, f32(extractBits(v0_3[3u], 28u, 4u)), d3);
                    let z = zero_point_up(col3, kb0);
                    up3 = fma(t0_3, ((d0 + d1) + (d2 + d3)) - z * a_sum, up3);
                }
            }
            {
                let xs1_0 = xr1_0 + sk1_0;
                ss = ss + dot(xs1_0, xs1_0);
                let ar1_0 = xs1_0 * gm1_0;
                if (writes) {
                    sum_out[ch1 * 8u + 0u] = xs1_0;
                }
                let xs1_1 = xr1_1 + sk1_1;
                ss = ss + dot(xs1_1, xs1_1);
                let ar1_1 = xs1_1 * gm1_1;
                if (writes) {
                    sum_out[ch1 * 8u + 1u] = xs1_1;
                }
                let xs1_2 = xr1_2 + sk1_2;
                ss = ss + dot(xs1_2, xs1_2);
                let ar1_2 = xs1_2 * gm1_2;
                if (writes) {
                    sum_out[ch1 * 8u + 2u] = xs1_2;
                }
                let xs1_3 = xr1_3 + sk1_3;
                ss = ss + dot(xs1_3, xs1_3);
                let ar1_3 = xs1_3 * gm1_3;
                if (writes) {
                    sum_out[ch1 * 8u + 3u] = xs1_3;
                }
                let xs1_4 = xr1_4 + sk1_4;
                ss = ss + dot(xs1_4, xs1_4);
                let ar1_4 = xs1_4 * gm1_4;
                if (writes) {
                    sum_out[ch1 * 8u + 4u] = xs1_4;
                }
                let xs1_5 = xr1_5 + sk1_5;
                ss = ss + dot(xs1_5, xs1_5);
                let ar1_5 = xs1_5 * gm1_5;
                if (writes) {
                    sum_out[ch1 * 8u + 5u] = xs1_5;
                }
                let xs1_6 = xr1_6 + sk1_6;
                ss = ss + dot(xs1_6, xs1_6);
                let ar1_6 = xs1_6 * gm1_6;
                if (writes) {
                    sum_out[ch1 * 8u + 6u] = xs1_6;
                }
                let xs1_7 = xr1_7 + sk1_7;
                ss = ss + dot(xs1_7, xs1_7);
                let ar1_7 = xs1_7 * gm1_7;
                if (writes) {
                    sum_out[ch1 * 8u + 7u] = xs1_7;
                }
                let hs = ar1_0 + ar1_1 + ar1_2 + ar1_3 + ar1_4 + ar1_5 + ar1_6 + ar1_7;
                let a_sum = (hs.x + hs.y) + (hs.z + hs.w);
                {
                    var d0 = 0.0;
                    d0 = fma(ar1_0.x, f32(extractBits(w1_0[0u], 0u, 4u)), d0);
                    d0 = fma(ar1_0.y, f32(extractBits(w1_0[0u], 4u, 4u)), d0);
                    d0 = fma(ar1_0.z, f32(extractBits(w1_0[0u], 8u, 4u)), d0);
                    d0 = fma(ar1_0.w, f32(extractBits(w1_0[0u], 12u, 4u)), d0);
                    d0 = fma(ar1_1.x, f32(extractBits(w1_0[0u], 16u, 4u)), d0);
                    d0 = fma(ar1_1.y, f32(extractBits(w1_0[0u], 20u, 4u)), d0);
                    d0 = fma(ar1_1.z, f32(extractBits(w1_0[0u], 24u, 4u)), d0);
                    d0 = fma(ar1_1.w, f32(extractBits(w1_0[0u], 28u, 4u)), d0);
                    var d1 = 0.0;
                    d1 = fma(ar1_2.x, f32(extractBits(w1_0[1u], 0u, 4u)), d1);
                    d1 = fma(ar1_2.y, f32(extractBits(w1_0[1u], 4u, 4u)), d1);
                    d1 = fma(ar1_2.z, f32(extractBits(w1_0[1u], 8u, 4u)), d1);
                    d1 = fma(ar1_2.w, f32(extractBits(w1_0[1u], 12u, 4u)), d1);
                    d1 = fma(ar1_3.x, f32(extractBits(w1_0[1u], 16u, 4u)), d1);
                    d1 = fma(ar1_3.y, f32(extractBits(w1_0[1u], 20u, 4u)), d1);
                    d1 = fma(ar1_3.z, f32(extractBits(w1_0[1u], 24u, 4u)), d1);
                    d1 = fma(ar1_3.w, f32(extractBits(w1_0[1u], 28u, 4u)), d1);
                    var d2 = 0.0;
                    d2 = fma(ar1_4.x, f32(extractBits(w1_0[2u], 0u, 4u)), d2);
                    d2 = fma(ar1_4.y, f32(extractBits(w1_0[2u], 4u, 4u)), d2);
                    d2 = fma(ar1_4.z, f32(extractBits(w1_0[2u], 8u, 4u)), d2);
                    d2 = fma(ar1_4.w, f32(extractBits(w1_0[2u], 12u, 4u)), d2);
                    d2 = fma(ar1_5.x, f32(extractBits(w1_0[2u], 16u, 4u)), d2);
                    d2 = fma(ar1_5.y, f32(extractBits(w1_0[2u], 20u, 4u)), d2);
                    d2 = fma(ar1_5.z, f32(extractBits(w1_0[2u], 24u, 4u)), d2);
                    d2 = fma(ar1_5.w, f32(extractBits(w1_0[2u], 28u, 4u)), d2);
                    var d3 = 0.0;
                    d3 = fma(ar1_6.x, f32(extractBits(w1_0[3u], 0u, 4u)), d3);
                    d3 = fma(ar1_6.y, f32(extractBits(w1_0[3u], 4u, 4u)), d3);
                    d3 = fma(ar1_6.z, f32(extractBits(w1_0[3u], 8u, 4u)), d3);
                    d3 = fma(ar1_6.w, f32(extractBits(w1_0[3u], 12u, 4u)), d3);
                    d3 = fma(ar1_7.x, f32(extractBits(w1_0[3u], 16u, 4u)), d3);
                    d3 = fma(ar1_7.y, f32(extractBits(w1_0[3u], 20u, 4u)), d3);
                    d3 = fma(ar1_7.z, f32(extractBits(w1_0[3u], 24u, 4u)), d3);
                    d3 = fma(ar1_7.w, f32(extractBits(w1_0[3u], 28u, 4u)), d3);
                    let z = zero_point(col0, kb1);
                    acc0 = fma(s1_0, ((d0 + d1) + (d2 + d3)) - z * a_sum, acc0);
                }
                {
                    var d0 = 0.0;
                    d0 = fma(ar1_0.x, f32(extractBits(v1_0[0u], 0u, 4u)), d0);
                    d0 = fma(ar1_0.y, f32(extractBits(v1_0[0u], 4u, 4u)), d0);
                    d0 = fma(ar1_0.z, f32(extractBits(v1_0[0u], 8u, 4u)), d0);
                    d0 = fma(ar1_0.w, f32(extractBits(v1_0[0u], 12u, 4u)), d0);
                    d0 = fma(ar1_1.x, f32(extractBits(v1_0[0u], 16u, 4u)), d0);
                    d0 = fma(ar1_1.y, f32(extractBits(v1_0[0u], 20u, 4u)), d0);
                    d0 = fma(ar1_1.z, f32(extractBits(v1_0[0u], 24u, 4u)), d0);
                    d0 = fma(ar1_1.w, f32(extractBits(v1_0[0u], 28u, 4u)), d0);
                    var d1 = 0.0;
                    d1 = fma(ar1_2.x, f32(extractBits(v1_0[1u], 0u, 4u)), d1);
                    d1 = fma(ar1_2.y, f32(extractBits(v1_0[1u], 4u, 4u)), d1);
                    d1 = fma(ar1_2.z, f32(extractBits(v1_0[1u], 8u, 4u)), d1);
                    d1 = fma(ar1_2.w, f32(extractBits(v1_0[1u], 12u, 4u)), d1);
                    d1 = fma(ar1_3.x, f32(extractBits(v1_0[1u], 16u, 4u)), d1);
                    d1 = fma(ar1_3.y, f32(extractBits(v1_0[1u], 20u, 4u)), d1);
                    d1 = fma(ar1_3.z, f32(extractBits(v1_0[1u], 24u, 4u)), d1);
                    d1 = fma(ar1_3.w, f32(extractBits(v1_0[1u], 28u, 4u)), d1);
                    var d2 = 0.0;
                    d2 = fma(ar1_4.x, f32(extractBits(v1_0[2u], 0u, 4u)), d2);
                    d2 = fma(ar1_4.y, f32(extractBits(v1_0[2u], 4u, 4u)), d2);
                    d2 = fma(ar1_4.z, f32(extractBits(v1_0[2u], 8u, 4u)), d2);
                    d2 = fma(ar1_4.w, f32(extractBits(v1_0[2u], 12u, 4u)), d2);
                    d2 = fma(ar1_5.x, f32(extractBits(v1_0[2u], 16u, 4u)), d2);
                    d2 = fma(ar1_5.y, f32(extractBits(v1_0[2u], 20u, 4u)), d2);
                    d2 = fma(ar1_5.z, f32(extractBits(v1_0[2u], 24u, 4u)), d2);
                    d2 = fma(ar1_5.w, f32(extractBits(v1_0[2u], 28u, 4u)), d2);
                    var d3 = 0.0;
                    d3 = fma(ar1_6.x, f32(extractBits(v1_0[3u], 0u, 4u)), d3);
                    d3 = fma(ar1_6.y, f32(extractBits(v1_0[3u], 4u, 4u)), d3);
                    d3 = fma(ar1_6.z, f32(extractBits(v1_0[3u], 8u, 4u)), d3);
                    d3 = fma(ar1_6.w, f32(extractBits(v1_0[3u], 12u, 4u)), d3);
                    d3 = fma(ar1_7.x, f32(extractBits(v1_0[3u], 16u, 4u)), d3);
                    d3 = fma(ar1_7.y, f32(extractBits(v1_0[3u], 20u, 4u)), d3);
                    d3 = fma(ar1_7.z, f32(extractBits(v1_0[3u], 24u, 4u)), d3);
                    d3 = fma(ar1_7.w, f32(extractBits(v1_0[3u], 28u, 4u)), d3);
                    let z = zero_point_up(col0, kb1);
                    up0 = fma(t1_0, ((d0 + d1) + (d2 + d3)) - z * a_sum, up0);
                }
                {
                    var d0 = 0.0;
                    d0 = fma(ar1_0.x, f32(extractBits(w1_1[0u], 0u, 4u)), d0);
                    d0 = fma(ar1_0.y, f32(extractBits(w1_1[0u], 4u, 4u)), d0);
                    d0 = fma(ar1_0.z, f32(extractBits(w1_1[0u], 8u, 4u)), d0);
                    d0 = fma(ar1_0.w, f32(extractBits(w1_1[0u], 12u, 4u)), d0);
                    d0 = fma(ar1_1.x, f32(extractBits(w1_1[0u], 16u, 4u)), d0);
                    d0 = fma(ar1_1.y, f32(extractBits(w1_1[0u], 20u, 4u)), d0);
                    d0 = fma(ar1_1.z, f32(extractBits(w1_1[0u], 24u, 4u)), d0);
                    d0 = fma(ar1_1.w, f32(extractBits(w1_1[0u], 28u, 4u)), d0);
                    var d1 = 0.0;
                    d1 = fma(ar1_2.x, f32(extractBits(w1_1[1u], 0u, 4u)), d1);
                    d1 = fma(ar1_2.y, f32(extractBits(w1_1[1u], 4u, 4u)), d1);
                    d1 = fma(ar1_2.z, f32(extractBits(w1_1[1u], 8u, 4u)), d1);
                    d1 = fma(ar1_2.w, f32(extractBits(w1_1[1u], 12u, 4u)), d1);
                    d1 = fma(ar1_3.x, f32(extractBits(w1_1[1u], 16u, 4u)), d1);
                    d1 = fma(ar1_3.y, f32(extractBits(w1_1[1u], 20u, 4u)), d1);
                    d1 = fma(ar1_3.z, f32(extractBits(w1_1[1u], 24u, 4u)), d1);
                    d1 = fma(ar1_3.w, f32(extractBits(w1_1[1u], 28u, 4u)), d1);
                    var d2 = 0.0;
                    d2 = fma(ar1_4.x, f32(extractBits(w1_1[2u], 0u, 4u)), d2);
                    d2 = fma(ar1_4.y, f32(extractBits(w1_1[2u], 4u, 4u)), d2);
                    d2 = fma(ar1_4.z, f32(extractBits(w1_1[2u], 8u, 4u)), d2);
                    d2 = fma(ar1_4.w, f32(extractBits(w1_1[2u], 12u, 4u)), d2);
                    d2 = fma(ar1_5.x, f32(extractBits(w1_1[2u], 16u, 4u)), d2);
                    d2 = fma(ar1_5.y, f32(extractBits(w1_1[2u], 20u, 4u)), d2);
                    d2 = fma(ar1_5.z, f32(extractBits(w1_1[2u], 24u, 4u)), d2);
                    d2 = fma(ar1_5.w, f32(extractBits(w1_1[2u], 28u, 4u)), d2);
                    var d3 = 0.0;
                    d3 = fma(ar1_6.x, f32(extractBits(w1_1[3u], 0u, 4u)), d3);
                    d3 = fma(ar1_6.y, f32(extractBits(w1_1[3u], 4u, 4u)), d3);
                    d3 = fma(ar1_6.z, f32(extractBits(w1_1[3u], 8u, 4u)), d3);
                    d3 = fma(ar1_6.w, f32(extractBits(w1_1[3u], 12u, 4u)), d3);
                    d3 = fma(ar1_7.x, f32(extractBits(w1_1[3u], 16u, 4u)), d3);
                    d3 = fma(ar1_7.y, f32(extractBits(w1_1[3u], 20u, 4u)), d3);
                    d3 = fma(ar1_7.z, f32(extractBits(w1_1[3u], 24u, 4u)), d3);
                    d3 = fma(ar1_7.w, f32(extractBits(w1_1[3u], 28u, 4u)), d3);
                    let z = zero_point(col1, kb1);
                    acc1 = fma(s1_1, ((d0 + d1) + (d2 + d3)) - z * a_sum, acc1);
                }
                {
                    var d0 = 0.0;
                    d0 = fma(ar1_0.x, f32(extractBits(v1_1[0u], 0u, 4u)), d0);
                    d0 = fma(ar1_0.y, f32(extractBits(v1_1[0u], 4u, 4u)), d0);
                    d0 = fma(ar1_0.z, f32(extractBits(v1_1[0u], 8u, 4u)), d0);
                    d0 = fma(ar1_0.w, f32(extractBits(v1_1[0u], 12u, 4u)), d0);
                    d0 = fma(ar1_1.x, f32(extractBits(v1_1[0u], 16u, 4u)), d0);
                    d0 = fma(ar1_1.y, f32(extractBits(v1_1[0u], 20u, 4u)), d0);
                    d0 = fma(ar1_1.z, f32(extractBits(v1_1[0u], 24u, 4u)), d0);
                    d0 = fma(ar1_1.w, f32(extractBits(v1_1[0u], 28u, 4u)), d0);
                    var d1 = 0.0;
                    d1 = fma(ar1_2.x, f32(extractBits(v1_1[1u], 0u, 4u)), d1);
                    d1 = fma(ar1_2.y, f32(extractBits(v1_1[1u], 4u, 4u)), d1);
                    d1 = fma(ar1_2.z, f32(extractBits(v1_1[1u], 8u, 4u)), d1);
                    d1 = fma(ar1_2.w, f32(extractBits(v1_1[1u], 12u, 4u)), d1);
                    d1 = fma(ar1_3.x, f32(extractBits(v1_1[1u], 16u, 4u)), d1);
                    d1 = fma(ar1_3.y, f32(extractBits(v1_1[1u], 20u, 4u)), d1);
                    d1 = fma(ar1_3.z, f32(extractBits(v1_1[1u], 24u, 4u)), d1);
                    d1 = fma(ar1_3.w, f32(extractBits(v1_1[1u], 28u, 4u)), d1);
                    var d2 = 0.0;
                    d2 = fma(ar1_4.x, f32(extractBits(v1_1[2u], 0u, 4u)), d2);
                    d2 = fma(ar1_4.y, f32(extractBits(v1_1[2u], 4u, 4u)), d2);
                    d2 = fma(ar1_4.z, f32(extractBits(v1_1[2u], 8u, 4u)), d2);
                    d2 = fma(ar1_4.w, f32(extractBits(v1_1[2u], 12u, 4u)), d2);
                    d2 = fma(ar1_5.x, f32(extractBits(v1_1[2u], 16u, 4u)), d2);
                    d2 = fma(ar1_5.y, f32(extractBits(v1_1[2u], 20u, 4u)), d2);
                    d2 = fma(ar1_5.z, f32(extractBits(v1_1[2u], 24u, 4u)), d2);
                    d2 = fma(ar1_5.w, f32(extractBits(v1_1[2u], 28u, 4u)), d2);
                    var d3 = 0.0;
                    d3 = fma(ar1_6.x, f32(extractBits(v1_1[3u], 0u, 4u)), d3);
                    d3 = fma(ar1_6.y, f32(extractBits(v1_1[3u], 4u, 4u)), d3);
                    d3 = fma(ar1_6.z, f32(extractBits(v1_1[3u], 8u, 4u)), d3);
                    d3 = fma(ar1_6.w, f32(extractBits(v1_1[3u], 12u, 4u)), d3);
                    d3 = fma(ar1_7.x, f32(extractBits(v1_1[3u], 16u, 4u)), d3);
                    d3 = fma(ar1_7.y, f32(extractBits(v1_1[3u], 20u, 4u)), d3);
                    d3 = fma(ar1_7.z, f32(extractBits(v1_1[3u], 24u, 4u)), d3);
                    d3 = fma(ar1_7.w, f32(extractBits(v1_1[3u], 28u, 4u)), d3);
                    let z = zero_point_up(col1, kb1);
                    up1 = fma(t1_1, ((d0 + d1) + (d2 + d3)) - z * a_sum, up1);
                }
                {
                    var d0 = 0.0;
                    d0 = fma(ar1_0.x, f32(extractBits(w1_2[0u], 0u, 4u)), d0);
                    d0 = fma(ar1_0.y, f32(extractBits(w1_2[0u], 4u, 4u)), d0);
                    d0 = fma(ar1_0.z, f32(extractBits(w1_2[0u], 8u, 4u)), d0);
                    d0 = fma(ar1_0.w, f32(extractBits(w1_2[0u], 12u, 4u)), d0);
                    d0 = fma(ar1_1.x, f32(extractBits(w1_2[0u], 16u, 4u)), d0);
                    d0 = fma(ar1_1.y, f32(extractBits(w1_2[0u], 20u, 4u)), d0);
                    d0 = fma(ar1_1.z, f32(extractBits(w1_2[0u], 24u, 4u)), d0);
                    d0 = fma(ar1_1.w, f32(extractBits(w1_2[0u], 28u, 4u)), d0);
                    var d1 = 0.0;
                    d1 = fma(ar1_2.x, f32(extractBits(w1_2[1u], 0u, 4u)), d1);
                    d1 = fma(ar1_2.y, f32(extractBits(w1_2[1u], 4u, 4u)), d1);
                    d1 = fma(ar1_2.z, f32(extractBits(w1_2[1u], 8u, 4u)), d1);
                    d1 = fma(ar1_2.w, f32(extractBits(w1_2[1u], 12u, 4u)), d1);
                    d1 = fma(ar1_3.x, f32(extractBits(w1_2[1u], 16u, 4u)), d1);
                    d1 = fma(ar1_3.y, f32(extractBits(w1_2[1u], 20u, 4u)), d1);
                    d1 = fma(ar1_3.z, f32(extractBits(w1_2[1u], 24u, 4u)), d1);
                    d1 = fma(ar1_3.w, f32(extractBits(w1_2[1u], 28u, 4u)), d1);
                    var d2 = 0.0;
                    d2 = fma(ar1_4.x, f32(extractBits(w1_2[2u], 0u, 4u)), d2);
                    d2 = fma(ar1_4.y, f32(extractBits(w1_2[2u], 4u, 4u)), d2);
                    d2 = fma(ar1_4.z, f32(extractBits(w1_2[2u], 8u, 4u)), d2);
                    d2 = fma(ar1_4.w, f32(extractBits(w1_2[2u], 12u, 4u)), d2);
                    d2 = fma(ar1_5.x, f32(extractBits(w1_2[2u], 16u, 4u)), d2);
                    d2 = fma(ar1_5.y, f32(extractBits(w1_2[2u], 20u, 4u)), d2);
                    d2 = fma(ar1_5.z, f32(extractBits(w1_2[2u], 24u, 4u)), d2);
                    d2 = fma(ar1_5.w, f32(extractBits(w1_2[2u], 28u, 4u)), d2);
                    var d3 = 0.0;
                    d3 = fma(ar1_6.x, f32(extractBits(w1_2[3u], 0u, 4u)), d3);
                    d3 = fma(ar1_6.y, f32(extractBits(w1_2[3u], 4u, 4u)), d3);
                    d3 = fma(ar1_6.z, f32(extractBits(w1_2[3u], 8u, 4u)), d3);
                    d3 = fma(ar1_6.w, f32(extractBits(w1_2[3u], 12u, 4u)), d3);
                    d3 = fma(ar1_7.x, f32(extractBits(w1_2[3u], 16u, 4u)), d3);
                    d3 = fma(ar1_7.y, f32(extractBits(w1_2[3u], 20u, 4u)), d3);
                    d3 = fma(ar1_7.z, f32(extractBits(w1_2[3u], 24u, 4u)), d3);
                    d3 = fma(ar1_7.w, f32(extractBits(w1_2[3u], 28u, 4u)), d3);
                    let z = zero_point(col2, kb1);
                    acc2 = fma(s1_2, ((d0 + d1) + (d2 + d3)) - z * a_sum, acc2);
                }
                {
                    var d0 = 0.0;
                    d0 = fma(ar1_0.x, f32(extractBits(v1_2[0u], 0u, 4u)), d0);
                    d0 = fma(ar1_0.y, f32(extractBits(v1_2[0u], 4u, 4u)), d0);
                    d0 = fma(ar1_0.z, f32(extractBits(v1_2[0u], 8u, 4u)), d0);
                    d0 = fma(ar1_0.w, f32(extractBits(v1_2[0u], 12u, 4u)), d0);
                    d0 = fma(ar1_1.x, f32(extractBits(v1_2[0u], 16u, 4u)), d0);
                    d0 = fma(ar1_1.y, f32(extractBits(v1_2[0u], 20u, 4u)), d0);
                    d0 = fma(ar1_1.z, f32(extractBits(v1_2[0u], 24u, 4u)), d0);
                    d0 = fma(ar1_1.w, f32(extractBits(v1_2[0u], 28u, 4u)), d0);
                    var d1 = 0.0;
                    d1 = fma(ar1_2.x, f32(extractBits(v1_2[1u], 0u, 4u)), d1);
                    d1 = fma(ar1_2.y, f32(extractBits(v1_2[1u], 4u, 4u)), d1);
                    d1 = fma(ar1_2.z, f32(extractBits(v1_2[1u], 8u, 4u)), d1);
                    d1 = fma(ar1_2.w, f32(extractBits(v1_2[1u], 12u, 4u)), d1);
                    d1 = fma(ar1_3.x, f32(extractBits(v1_2[1u], 16u, 4u)), d1);
                    d1 = fma(ar1_3.y, f32(extractBits(v1_2[1u], 20u, 4u)), d1);
                    d1 = fma(ar1_3.z, f32(extractBits(v1_2[1u], 24u, 4u)), d1);
                    d1 = fma(ar1_3.w, f32(extractBits(v1_2[1u], 28u, 4u)), d1);
                    var d2 = 0.0;
                    d2 = fma(ar1_4.x, f32(extractBits(v1_2[2u], 0u, 4u)), d2);
                    d2 = fma(ar1_4.y, f32(extractBits(v1_2[2u], 4u, 4u)), d2);
                    d2 = fma(ar1_4.z, f32(extractBits(v1_2[2u], 8u, 4u)), d2);
                    d2 = fma(ar1_4.w, f32(extractBits(v1_2[2u], 12u, 4u)), d2);
                    d2 = fma(ar1_5.x, f32(extractBits(v1_2[2u], 16u, 4u)), d2);
                    d2 = fma(ar1_5.y, f32(extractBits(v1_2[2u], 20u, 4u)), d2);
                    d2 = fma(ar1_5.z, f32(extractBits(v1_2[2u], 24u, 4u)), d2);
                    d2 = fma(ar1_5.w, f32(extractBits(v1_2[2u], 28u, 4u)), d2);
                    var d3 = 0.0;
                    d3 = fma(ar1_6.x, f32(extractBits(v1_2[3u], 0u, 4u)), d3);
                    d3 = fma(ar1_6.y, f32(extractBits(v1_2[3u], 4u, 4u)), d3);
                    d3 = fma(ar1_6.z, f32(extractBits(v1_2[3u], 8u, 4u)), d3);
                    d3 = fma(ar1_6.w, f32(extractBits(v1_2[3u], 12u, 4u)), d3);
                    d3 = fma(ar1_7.x, f32(extractBits(v1_2[3u], 16u, 4u)), d3);
                    d3 = fma(ar1_7.y, f32(extractBits(v1_2[3u], 20u, 4u)), d3);
                    d3 = fma(ar1_7.z, f32(extractBits(v1_2[3u], 24u, 4u)), d3);
                    d3 = fma(ar1_7.w, f32(extractBits(v1_2[3u], 28u, 4u)), d3);
                    let z = zero_point_up(col2, kb1);
                    up2 = fma(t1_2, ((d0 + d1) + (d2 + d3)) - z * a_sum, up2);
                }
                {
                    var d0 = 0.0;
                    d0 = fma(ar1_0.x, f32(extractBits(w1_3[0u], 0u, 4u)), d0);
                    d0 = fma(ar1_0.y, f32(extractBits(w1_3[0u], 4u, 4u)), d0);
                    d0 = fma(ar1_0.z, f32(extractBits(w1_3[0u], 8u, 4u)), d0);
                    d0 = fma(ar1_0.w, f32(extractBits(w1_3[0u], 12u, 4u)), d0);
                    d0 = fma(ar1_1.x, f32(extractBits(w1_3[0u], 16u, 4u)), d0);
                    d0 = fma(ar1_1.y, f32(extractBits(w1_3[0u], 20u, 4u)), d0);
                    d0 = fma(ar1_1.z, f32(extractBits(w1_3[0u], 24u, 4u)), d0);
                    d0 = fma(ar1_1.w, f32(extractBits(w1_3[0u], 28u, 4u)), d0);
                    var d1 = 0.0;
                    d1 = fma(ar1_2.x, f32(extractBits(w1_3[1u], 0u, 4u)), d1);
                    d1 = fma(ar1_2.y, f32(extractBits(w1_3[1u], 4u, 4u)), d1);
                    d1 = fma(ar1_2.z, f32(extractBits(w1_3[1u], 8u, 4u)), d1);
                    d1 = fma(ar1_2.w, f32(extractBits(w1_3[1u], 12u, 4u)), d1);
                    d1 = fma(ar1_3.x, f32(extractBits(w1_3[1u], 16u, 4u)), d1);
                    d1 = fma(ar1_3.y, f32(extractBits(w1_3[1u], 20u, 4u)), d1);
                    d1 = fma(ar1_3.z, f32(extractBits(w1_3[1u], 24u, 4u)), d1);
                    d1 = fma(ar1_3.w, f32(extractBits(w1_3[1u], 28u, 4u)), d1);
                    var d2 = 0.0;
                    d2 = fma(ar1_4.x, f32(extractBits(w1_3[2u], 0u, 4u)), d2);
                    d2 = fma(ar1_4.y, f32(extractBits(w1_3[2u], 4u, 4u)), d2);
                    d2 = fma(ar1_4.z, f32(extractBits(w1_3[2u], 8u, 4u)), d2);
                    d2 = fma(ar1_4.w, f32(extractBits(w1_3[2u], 12u, 4u)), d2);
                    d2 = fma(ar1_5.x, f32(extractBits(w1_3[2u], 16u, 4u)), d2);
                    d2 = fma(ar1_5.y, f32(extractBits(w1_3[2u], 20u, 4u)), d2);
                    d2 = fma(ar1_5.z, f32(extractBits(w1_3[2u], 24u, 4u)), d2);
                    d2 = fma(ar1_5.w, f32(extractBits(w1_3[2u], 28u, 4u)), d2);
                    var d3 = 0.0;
                    d3 = fma(ar1_6.x, f32(extractBits(w1_3[3u], 0u, 4u)), d3);
                    d3 = fma(ar1_6.y, f32(extractBits(w1_3[3u], 4u, 4u)), d3);
                    d3 = fma(ar1_6.z, f32(extractBits(w1_3[3u], 8u, 4u)), d3);
                    d3 = fma(ar1_6.w, f32(extractBits(w1_3[3u], 12u, 4u)), d3);
                    d3 = fma(ar1_7.x, f32(extractBits(w1_3[3u], 16u, 4u)), d3);
                    d3 = fma(ar1_7.y, f32(extractBits(w1_3[3u], 20u, 4u)), d3);
                    d3 = fma(ar1_7.z, f32(extractBits(w1_3[3u], 24u, 4u)), d3);
                    d3 = fma(ar1_7.w, f32(extractBits(w1_3[3u], 28u, 4u)), d3);
                    let z = zero_point(col3, kb1);
                    acc3 = fma(s1_3, ((d0 + d1) + (d2 + d3)) - z * a_sum, acc3);
                }
                {
                    var d0 = 0.0;
                    d0 = fma(ar1_0.x, f32(extractBits(v1_3[0u], 0u, 4u)), d0);
                    d0 = fma(ar1_0.y, f32(extractBits(v1_3[0u], 4u, 4u)), d0);
                    d0 = fma(ar1_0.z, f32(extractBits(v1_3[0u], 8u, 4u)), d0);
                    d0 = fma(ar1_0.w, f32(extractBits(v1_3[0u], 12u, 4u)), d0);
                    d0 = fma(ar1_1.x, f32(extractBits(v1_3[0u], 16u, 4u)), d0);
                    d0 = fma(ar1_1.y, f32(extractBits(v1_3[0u], 20u, 4u)), d0);
                    d0 = fma(ar1_1.z, f32(extractBits(v1_3[0u], 24u, 4u)), d0);
                    d0 = fma(ar1_1.w, f32(extractBits(v1_3[0u], 28u, 4u)), d0);
                    var d1 = 0.0;
                    d1 = fma(ar1_2.x, f32(extractBits(v1_3[1u], 0u, 4u)), d1);
                    d1 = fma(ar1_2.y, f32(extractBits(v1_3[1u], 4u, 4u)), d1);
                    d1 = fma(ar1_2.z, f32(extractBits(v1_3[1u], 8u, 4u)), d1);
                    d1 = fma(ar1_2.w, f32(extractBits(v1_3[1u], 12u, 4u)), d1);
                    d1 = fma(ar1_3.x, f32(extractBits(v1_3[1u], 16u, 4u)), d1);
                    d1 = fma(ar1_3.y, f32(extractBits(v1_3[1u], 20u, 4u)), d1);
                    d1 = fma(ar1_3.z, f32(extractBits(v1_3[1u], 24u, 4u)), d1);
                    d1 = fma(ar1_3.w, f32(extractBits(v1_3[1u], 28u, 4u)), d1);
                    var d2 = 0.0;
                    d2 = fma(ar1_4.x, f32(extractBits(v1_3[2u], 0u, 4u)), d2);
                    d2 = fma(ar1_4.y, f32(extractBits(v1_3[2u], 4u, 4u)), d2);
                    d2 = fma(ar1_4.z, f32(extractBits(v1_3[2u], 8u, 4u)), d2);
                    d2 = fma(ar1_4.w, f32(extractBits(v1_3[2u], 12u, 4u)), d2);
                    d2 = fma(ar1_5.x, f32(extractBits(v1_3[2u], 16u, 4u)), d2);
                    d2 = fma(ar1_5.y, f32(extractBits(v1_3[2u], 20u, 4u)), d2);
                    d2 = fma(ar1_5.z, f32(extractBits(v1_3[2u], 24u, 4u)), d2);
                    d2 = fma(ar1_5.w, f32(extractBits(v1_3[2u], 28u, 4u)), d2);
                    var d3 = 0.0;
                    d3 = fma(ar1_6.x, f32(extractBits(v1_3[3u], 0u, 4u)), d3);
                    d3 = fma(ar1_6.y, f32(extractBits(v1_3[3u], 4u, 4u)), d3);
                    d3 = fma(ar1_6.z, f32(extractBits(v1_3[3u], 8u, 4u)), d3);
                    d3 = fma(ar1_6.w, f32(extractBits(v1_3[3u], 12u, 4u)), d3);
                    d3 = fma(ar1_7.x, f32(extractBits(v1_3[3u], 16u, 4u)), d3);
                    d3 = fma(ar1_7.y, f32(extractBits(v1_3[3u], 20u, 4u)), d3);
                    d3 = fma(ar1_7.z, f32(extractBits(v1_3[3u], 24u, 4u)), d3);
                    d3 = fma(ar1_7.w, f32(extractBits(v1_3[3u], 28u, 4u)), d3);
                    let z = zero_point_up(col3, kb1);
                    up3 = fma(t1_3, ((d0 + d1) + (d2 + d3)) - z * a_sum, up3);
                }
            }
        }
    }
    for (; ch < chunks; ch = ch + L) {
        let ch0 = ch;
        {
            let w0_0 = b[col0 * col_chunks + ch0];
            let v0_0 = b_up[col0 * col_chunks + ch0];
            let w0_1 = b[col1 * col_chunks + ch0];
            let v0_1 = b_up[col1 * col_chunks + ch0];
            let w0_2 = b[col2 * col_chunks + ch0];
            let v0_2 = b_up[col2 * col_chunks + ch0];
            let w0_3 = b[col3 * col_chunks + ch0];
            let v0_3 = b_up[col3 * col_chunks + ch0];
            let xr0_0 = a[ch0 * 8u + 0u];
            let sk0_0 = skip[ch0 * 8u + 0u];
            let gm0_0 = gamma[ch0 * 8u + 0u];
            let xr0_1 = a[ch0 * 8u + 1u];
            let sk0_1 = skip[ch0 * 8u + 1u];
            let gm0_1 = gamma[ch0 * 8u + 1u];
            let xr0_2 = a[ch0 * 8u + 2u];
            let sk0_2 = skip[ch0 * 8u + 2u];
            let gm0_2 = gamma[ch0 * 8u + 2u];
            let xr0_3 = a[ch0 * 8u + 3u];
            let sk0_3 = skip[ch0 * 8u + 3u];
            let gm0_3 = gamma[ch0 * 8u + 3u];
            let xr0_4 = a[ch0 * 8u + 4u];
            let sk0_4 = skip[ch0 * 8u + 4u];
            let gm0_4 = gamma[ch0 * 8u + 4u];
            let xr0_5 = a[ch0 * 8u + 5u];
            let sk0_5 = skip[ch0 * 8u + 5u];
            let gm0_5 = gamma[ch0 * 8u + 5u];
            let xr0_6 = a[ch0 * 8u + 6u];
            let sk0_6 = skip[ch0 * 8u + 6u];
            let gm0_6 = gamma[ch0 * 8u + 6u];
            let xr0_7 = a[ch0 * 8u + 7u];
            let sk0_7 = skip[ch0 * 8u + 7u];
            let gm0_7 = gamma[ch0 * 8u + 7u];
            let kb0 = ch0 * CV / p.block;
            let s0_0 = f32(scales[col0 * p.k_blocks + kb0]);
            let t0_0 = f32(scales_up[col0 * p.k_blocks + kb0]);
            let s0_1 = f32(scales[col1 * p.k_blocks + kb0]);
            let t0_1 = f32(scales_up[col1 * p.k_blocks + kb0]);
            let s0_2 = f32(scales[col2 * p.k_blocks + kb0]);
            let t0_2 = f32(scales_up[col2 * p.k_blocks + kb0]);
            let s0_3 = f32(scales[col3 * p.k_blocks + kb0]);
            let t0_3 = f32(scales_up[col3 * p.k_blocks + kb0]);
            {
                let xs0_0 = xr0_0 + sk0_0;
                ss = ss + dot(xs0_0, xs0_0);
                let ar0_0 = xs0_0 * gm0_0;
                if (writes) {
                    sum_out[ch0 * 8u + 0u] = xs0_0;
                }
                let xs0_1 = xr0_1 + sk0_1;
                ss = ss + dot(xs0_1, xs0_1);
                let ar0_1 = xs0_1 * gm0_1;
                if (writes) {
                    sum_out[ch0 * 8u + 1u] = xs0_1;
                }
                let xs0_2 = xr0_2 + sk0_2;
                ss = ss + dot(xs0_2, xs0_2);
                let ar0_2 = xs0_2 * gm0_2;
                if (writes) {
                    sum_out[ch0 * 8u + 2u] = xs0_2;
                }
                let xs0_3 = xr0_3 + sk0_3;
                ss = ss + dot(xs0_3, xs0_3);
                let ar0_3 = xs0_3 * gm0_3;
                if (writes) {
                    sum_out[ch0 * 8u + 3u] = xs0_3;
                }
                let xs0_4 = xr0_4 + sk0_4;
                ss = ss + dot(xs0_4, xs0_4);
                let ar0_4 = xs0_4 * gm0_4;
                if (writes) {
                    sum_out[ch0 * 8u + 4u] = xs0_4;
                }
                let xs0_5 = xr0_5 + sk0_5;
                ss = ss + dot(xs0_5, xs0_5);
                let ar0_5 = xs0_5 * gm0_5;
                if (writes) {
                    sum_out[ch0 * 8u + 5u] = xs0_5;
                }
                let xs0_6 = xr0_6 + sk0_6;
                ss = ss + dot(xs0_6, xs0_6);
                let ar0_6 = xs0_6 * gm0_6;
                if (writes) {
                    sum_out[ch0 * 8u + 6u] = xs0_6;
                }
                let xs0_7 = xr0_7 + sk0_7;
                ss = ss + dot(xs0_7, xs0_7);
                let ar0_7 = xs0_7 * gm0_7;
                if (writes) {
                    sum_out[ch0 * 8u + 7u] = xs0_7;
                }
                let hs = ar0_0 + ar0_1 + ar0_2 + ar0_3 + ar0_4 + ar0_5 + ar0_6 + ar0_7;
                let a_sum = (hs.x + hs.y) + (hs.z + hs.w);
                {
                    var d0 = 0.0;
                    d0 = fma(ar0_0.x, f32(extractBits(w0_0[0u], 0u, 4u)), d0);
                    d0 = fma(ar0_0.y, f32(extractBits(w0_0[0u], 4u, 4u)), d0);
                    d0 = fma(ar0_0.z, f32(extractBits(w0_0[0u], 8u, 4u)), d0);
                    d0 = fma(ar0_0.w, f32(extractBits(w0_0[0u], 12u, 4u)), d0);
                    d0 = fma(ar0_1.x, f32(extractBits(w0_0[0u], 16u, 4u)), d0);
                    d0 = fma(ar0_1.y, f32(extractBits(w0_0[0u], 20u, 4u)), d0);
                    d0 = fma(ar0_1.z, f32(extractBits(w0_0[0u], 24u, 4u)), d0);
                    d0 = fma(ar0_1.w, f32(extractBits(w0_0[0u], 28u, 4u)), d0);
                    var d1 = 0.0;
                    d1 = fma(ar0_2.x, f32(extractBits(w0_0[1u], 0u, 4u)), d1);
                    d1 = fma(ar0_2.y, f32(extractBits(w0_0[1u], 4u, 4u)), d1);
                    d1 = fma(ar0_2.z, f32(extractBits(w0_0[1u], 8u, 4u)), d1);
                    d1 = fma(ar0_2.w, f32(extractBits(w0_0[1u], 12u, 4u)), d1);
                    d1 = fma(ar0_3.x, f32(extractBits(w0_0[1u], 16u, 4u)), d1);
                    d1 = fma(ar0_3.y, f32(extractBits(w0_0[1u], 20u, 4u)), d1);
                    d1 = fma(ar0_3.z, f32(extractBits(w0_0[1u], 24u, 4u)), d1);
                    d1 = fma(ar0_3.w, f32(extractBits(w0_0[1u], 28u, 4u)), d1);
                    var d2 = 0.0;
                    d2 = fma(ar0_4.x, f32(extractBits(w0_0[2u], 0u, 4u)), d2);
                    d2 = fma(ar0_4.y, f32(extractBits(w0_0[2u], 4u, 4u)), d2);
                    d2 = fma(ar0_4.z, f32(extractBits(w0_0[2u], 8u, 4u)), d2);
                    d2 = fma(ar0_4.w, f32(extractBits(w0_0[2u], 12u, 4u)), d2);
                    d2 = fma(ar0_5.x, f32(extractBits(w0_0[2u], 16u, 4u)), d2);
                    d2 = fma(ar0_5.y, f32(extractBits(w0_0[2u], 20u, 4u)), d2);
                    d2 = fma(ar0_5.z, f32(extractBits(w0_0[2u], 24u, 4u)), d2);
                    d2 = fma(ar0_5.w, f32(extractBits(w0_0[2u], 28u, 4u)), d2);
                    var d3 = 0.0;
                    d3 = fma(ar0_6.x, f32(extractBits(w0_0[3u], 0u, 4u)), d3);
                    d3 = fma(ar0_6.y, f32(extractBits(w0_0[3u], 4u, 4u)), d3);
                    d3 = fma(ar0_6.z, f32(extractBits(w0_0[3u], 8u, 4u)), d3);
                    d3 = fma(ar0_6.w, f32(extractBits(w0_0[3u], 12u, 4u)), d3);
                    d3 = fma(ar0_7.x, f32(extractBits(w0_0[3u], 16u, 4u)), d3);
                    d3 = fma(ar0_7.y, f32(extractBits(w0_0[3u], 20u, 4u)), d3);
                    d3 = fma(ar0_7.z, f32(extractBits(w0_0[3u], 24u, 4u)), d3);
                    d3 = fma(ar0_7.w, f32(extractBits(w0_0[3u], 28u, 4u)), d3);
                    let z = zero_point(col0, kb0);
                    acc0 = fma(s0_0, ((d0 + d1) + (d2 + d3)) - z * a_sum, acc0);
                }
                {
                    var d0 = 0.0;
                    d0 = fma(ar0_0.x, f32(extractBits(v0_0[0u], 0u, 4u)), d0);
                    d0 = fma(ar0_0.y, f32(extractBits(v0_0[0u], 4u, 4u)), d0);
                    d0 = fma(ar0_0.z, f32(extractBits(v0_0[0u], 8u, 4u)), d0);
                    d0 = fma(ar0_0.w, f32(extractBits(v0_0[0u], 12u, 4u)), d0);
                    d0 = fma(ar0_1.x, f32(extractBits(v0_0[0u], 16u, 4u)), d0);
                    d0 = fma(ar0_1.y, f32(extractBits(v0_0[0u], 20u, 4u)), d0);
                    d0 = fma(ar0_1.z, f32(extractBits(v0_0[0u], 24u, 4u)), d0);
                    d0 = fma(ar0_1.w, f32(extractBits(v0_0[0u], 28u, 4u)), d0);
                    var d1 = 0.0;
                    d1 = fma(ar0_2.x, f32(extractBits(v0_0[1u], 0u, 4u)), d1);
                    d1 = fma(ar0_2.y, f32(extractBits(v0_0[1u], 4u, 4u)), d1);
                    d1 = fma(ar0_2.z, f32(extractBits(v0_0[1u], 8u, 4u)), d1);
                    d1 = fma(ar0_2.w, f32(extractBits(v0_0[1u], 12u, 4u)), d1);
                    d1 = fma(ar0_3.x, f32(extractBits(v0_0[1u], 16u, 4u)), d1);
                    d1 = fma(ar0_3.y, f32(extractBits(v0_0[1u], 20u, 4u)), d1);
                    d1 = fma(ar0_3.z, f32(extractBits(v0_0[1u], 24u, 4u)), d1);
                    d1 = fma(ar0_3.w, f32(extractBits(v0_0[1u], 28u, 4u)), d1);
                    var d2 = 0.0;
                    d2 = fma(ar0_4.x, f32(extractBits(v0_0[2u], 0u, 4u)), d2);
                    d2 = fma(ar0_4.y, f32(extractBits(v0_0[2u], 4u, 4u)), d2);
                    d2 = fma(ar0_4.z, f32(extractBits(v0_0[2u], 8u, 4u)), d2);
                    d2 = fma(ar0_4.w, f32(extractBits(v0_0[2u], 12u, 4u)), d2);
                    d2 = fma(ar0_5.x, f32(extractBits(v0_0[2u], 16u, 4u)), d2);
                    d2 = fma(ar0_5.y, f32(extractBits(v0_0[2u], 20u, 4u)), d2);
                    d2 = fma(ar0_5.z, f32(extractBits(v0_0[2u], 24u, 4u)), d2);
                    d2 = fma(ar0_5.w, f32(extractBits(v0_0[2u], 28u, 4u)), d2);
                    var d3 = 0.0;
                    d3 = fma(ar0_6.x, f32(extractBits(v0_0[3u], 0u, 4u)), d3);
                    d3 = fma(ar0_6.y, f32(extractBits(v0_0[3u], 4u, 4u)), d3);
                    d3 = fma(ar0_6.z, f32(extractBits(v0_0[3u], 8u, 4u)), d3);
                    d3 = fma(ar0_6.w, f32(extractBits(v0_0[3u], 12u, 4u)), d3);
                    d3 = fma(ar0_7.x, f32(extractBits(v0_0[3u], 16u, 4u)), d3);
                    d3 = fma(ar0_7.y, f32(extractBits(v0_0[3u], 20u, 4u)), d3);
                    d3 = fma(ar0_7.z, f32(extractBits(v0_0[3u], 24u, 4u)), d3);
                    d3 = fma(ar0_7.w, f32(extractBits(v0_0[3u], 28u, 4u)), d3);
                    let z = zero_point_up(col0, kb0);
                    up0 = fma(t0_0, ((d0 + d1) + (d2 + d3)) - z * a_sum, up0);
                }
                {
                    var d0 = 0.0;
                    d0 = fma(ar0_0.x, f32(extractBits(w0_1[0u], 0u, 4u)), d0);
                    d0 = fma(ar0_0.y, f32(extractBits(w0_1[0u], 4u, 4u)), d0);
                    d0 = fma(ar0_0.z, f32(extractBits(w0_1[0u], 8u, 4u)), d0);
                    d0 = fma(ar0_0.w, f32(extractBits(w0_1[0u], 12u, 4u)), d0);
                    d0 = fma(ar0_1.x, f32(extractBits(w0_1[0u], 16u, 4u)), d0);
                    d0 = fma(ar0_1.y, f32(extractBits(w0_1[0u], 20u, 4u)), d0);
                    d0 = fma(ar0_1.z, f32(extractBits(w0_1[0u], 24u, 4u)), d0);
                    d0 = fma(ar0_1.w, f32(extractBits(w0_1[0u], 28u, 4u)), d0);
                    var d1 = 0.0;
                    d1 = fma(ar0_2.x, f32(extractBits(w0_1[1u], 0u, 4u)), d1);
                    d1 = fma(ar0_2.y, f32(extractBits(w0_1[1u], 4u, 4u)), d1);
                    d1 = fma(ar0_2.z, f32(extractBits(w0_1[1u], 8u, 4u)), d1);
                    d1 = fma(ar0_2.w, f32(extractBits(w0_1[1u], 12u, 4u)), d1);
                    d1 = fma(ar0_3.x, f32(extractBits(w0_1[1u], 16u, 4u)), d1);
                    d1 = fma(ar0_3.y, f32(extractBits(w0_1[1u], 20u, 4u)), d1);
                    d1 = fma(ar0_3.z, f32(extractBits(w0_1[1u], 24u, 4u)), d1);
                    d1 = fma(ar0_3.w, f32(extractBits(w0_1[1u], 28u, 4u)), d1);
                    var d2 = 0.0;
                    d2 = fma(ar0_4.x, f32(extractBits(w0_1[2u], 0u, 4u)), d2);
                    d2 = fma(ar0_4.y, f32(extractBits(w0_1[2u], 4u, 4u)), d2);
                    d2 = fma(ar0_4.z, f32(extractBits(w0_1[2u], 8u, 4u)), d2);
                    d2 = fma(ar0_4.w, f32(extractBits(w0_1[2u], 12u, 4u)), d2);
                    d2 = fma(ar0_5.x, f32(extractBits(w0_1[2u], 16u, 4u)), d2);
                    d2 = fma(ar0_5.y, f32(extractBits(w0_1[2u], 20u, 4u)), d2);
                    d2 = fma(ar0_5.z, f32(extractBits(w0_1[2u], 24u, 4u)), d2);
                    d2 = fma(ar0_5.w, f32(extractBits(w0_1[2u], 28u, 4u)), d2);
                    var d3 = 0.0;
                    d3 = fma(ar0_6.x, f32(extractBits(w0_1[3u], 0u, 4u)), d3);
                    d3 = fma(ar0_6.y, f32(extractBits(w0_1[3u], 4u, 4u)), d3);
                    d3 = fma(ar0_6.z, f32(extractBits(w0_1[3u], 8u, 4u)), d3);
                    d3 = fma(ar0_6.w, f32(extractBits(w0_1[3u], 12u, 4u)), d3);
                    d3 = fma(ar0_7.x, f32(extractBits(w0_1[3u], 16u, 4u)), d3);
                    d3 = fma(ar0_7.y, f32(extractBits(w0_1[3u], 20u, 4u)), d3);
                    d3 = fma(ar0_7.z, f32(extractBits(w0_1[3u], 24u, 4u)), d3);
                    d3 = fma(ar0_7.w, f32(extractBits(w0_1[3u], 28u, 4u)), d3);
                    let z = zero_point(col1, kb0);
                    acc1 = fma(s0_1, ((d0 + d1) + (d2 + d3)) - z * a_sum, acc1);
                }
                {
                    var d0 = 0.0;
                    d0 = fma(ar0_0.x, f32(extractBits(v0_1[0u], 0u, 4u)), d0);
                    d0 = fma(ar0_0.y, f32(extractBits(v0_1[0u], 4u, 4u)), d0);
                    d0 = fma(ar0_0.z, f32(extractBits(v0_1[0u], 8u, 4u)), d0);
                    d0 = fma(ar0_0.w, f32(extractBits(v0_1[0u], 12u, 4u)), d0);
                    d0 = fma(ar0_1.x, f32(extractBits(v0_1[0u], 16u, 4u)), d0);
                    d0 = fma(ar0_1.y, f32(extractBits(v0_1[0u], 20u, 4u)), d0);
                    d0 = fma(ar0_1.z, f32(extractBits(v0_1[0u], 24u, 4u)), d0);
                    d0 = fma(ar0_1.w, f32(extractBits(v0_1[0u], 28u, 4u)), d0);
                    var d1 = 0.0;
                    d1 = fma(ar0_2.x, f32(extractBits(v0_1[1u], 0u, 4u)), d1);
                    d1 = fma(ar0_2.y, f32(extractBits(v0_1[1u], 4u, 4u)), d1);
                    d1 = fma(ar0_2.z, f32(extractBits(v0_1[1u], 8u, 4u)), d1);
                    d1 = fma(ar0_2.w, f32(extractBits(v0_1[1u], 12u, 4u)), d1);
                    d1 = fma(ar0_3.x, f32(extractBits(v0_1[1u], 16u, 4u)), d1);
                    d1 = fma(ar0_3.y, f32(extractBits(v0_1[1u], 20u, 4u)), d1);
                    d1 = fma(ar0_3.z, f32(extractBits(v0_1[1u], 24u, 4u)), d1);
                    d1 = fma(ar0_3.w, f32(extractBits(v0_1[1u], 28u, 4u)), d1);
                    var d2 = 0.0;
                    d2 = fma(ar0_4.x, f32(extractBits(v0_1[2u], 0u, 4u)), d2);
                    d2 = fma(ar0_4.y, f32(extractBits(v0_1[2u], 4u, 4u)), d2);
                    d2 = fma(ar0_4.z, f32(extractBits(v0_1[2u], 8u, 4u)), d2);
                    d2 = fma(ar0_4.w, f32(extractBits(v0_1[2u], 12u, 4u)), d2);
                    d2 = fma(ar0_5.x, f32(extractBits(v0_1[2u], 16u, 4u)), d2);
                    d2 = fma(ar0_5.y, f32(extractBits(v0_1[2u], 20u, 4u)), d2);
                    d2 = fma(ar0_5.z, f32(extractBits(v0_1[2u], 24u, 4u)), d2);
                    d2 = fma(ar0_5.w, f32(extractBits(v0_1[2u], 28u, 4u)), d2);
                    var d3 = 0.0;
                    d3 = fma(ar0_6.x, f32(extractBits(v0_1[3u], 0u, 4u)), d3);
                    d3 = fma(ar0_6.y, f32(extractBits(v0_1[3u], 4u, 4u)), d3);
                    d3 = fma(ar0_6.z, f32(extractBits(v0_1[3u], 8u, 4u)), d3);
                    d3 = fma(ar0_6.w, f32(extractBits(v0_1[3u], 12u, 4u)), d3);
                    d3 = fma(ar0_7.x, f32(extractBits(v0_1[3u], 16u, 4u)), d3);
                    d3 = fma(ar0_7.y, f32(extractBits(v0_1[3u], 20u, 4u)), d3);
                    d3 = fma(ar0_7.z, f32(extractBits(v0_1[3u], 24u, 4u)), d3);
                    d3 = fma(ar0_7.w, f32(extractBits(v0_1[3u], 28u, 4u)), d3);
                    let z = zero_point_up(col1, kb0);
                    up1 = fma(t0_1, ((d0 + d1) + (d2 + d3)) - z * a_sum, up1);
                }
                {
                    var d0 = 0.0;
                    d0 = fma(ar0_0.x, f32(extractBits(w0_2[0u], 0u, 4u)), d0);
                    d0 = fma(ar0_0.y, f32(extractBits(w0_2[0u], 4u, 4u)), d0);
                    d0 = fma(ar0_0.z, f32(extractBits(w0_2[0u], 8u, 4u)), d0);
                    d0 = fma(ar0_0.w, f32(extractBits(w0_2[0u], 12u, 4u)), d0);
                    d0 = fma(ar0_1.x, f32(extractBits(w0_2[0u], 16u, 4u)), d0);
                    d0 = fma(ar0_1.y, f32(extractBits(w0_2[0u], 20u, 4u)), d0);
                    d0 = fma(ar0_1.z, f32(extractBits(w0_2[0u], 24u, 4u)), d0);
                    d0 = fma(ar0_1.w, f32(extractBits(w0_2[0u], 28u, 4u)), d0);
                    var d1 = 0.0;
                    d1 = fma(ar0_2.x, f32(extractBits(w0_2[1u], 0u, 4u)), d1);
                    d1 = fma(ar0_2.y, f32(extractBits(w0_2[1u], 4u, 4u)), d1);
                    d1 = fma(ar0_2.z, f32(extractBits(w0_2[1u], 8u, 4u)), d1);
                    d1 = fma(ar0_2.w, f32(extractBits(w0_2[1u], 12u, 4u)), d1);
                    d1 = fma(ar0_3.x, f32(extractBits(w0_2[1u], 16u, 4u)), d1);
                    d1 = fma(ar0_3.y, f32(extractBits(w0_2[1u], 20u, 4u)), d1);
                    d1 = fma(ar0_3.z, f32(extractBits(w0_2[1u], 24u, 4u)), d1);
                    d1 = fma(ar0_3.w, f32(extractBits(w0_2[1u], 28u, 4u)), d1);
                    var d2 = 0.0;
                    d2 = fma(ar0_4.x, f32(extractBits(w0_2[2u], 0u, 4u)), d2);
                    d2 = fma(ar0_4.y, f32(extractBits(w0_2[2u], 4u, 4u)), d2);
                    d2 = fma(ar0_4.z, f32(extractBits(w0_2[2u], 8u, 4u)), d2);
                    d2 = fma(ar0_4.w, f32(extractBits(w0_2[2u], 12u, 4u)), d2);
                    d2 = fma(ar0_5.x, f32(extractBits(w0_2[2u], 16u, 4u)), d2);
                    d2 = fma(ar0_5.y, f32(extractBits(w0_2[2u], 20u, 4u)), d2);
                    d2 = fma(ar0_5.z, f32(extractBits(w0_2[2u], 24u, 4u)), d2);
                    d2 = fma(ar0_5.w, f32(extractBits(w0_2[2u], 28u, 4u)), d2);
                    var d3 = 0.0;
                    d3 = fma(ar0_6.x, f32(extractBits(w0_2[3u], 0u, 4u)), d3);
                    d3 = fma(ar0_6.y, f32(extractBits(w0_2[3u], 4u, 4u)), d3);
                    d3 = fma(ar0_6.z, f32(extractBits(w0_2[3u], 8u, 4u)), d3);
                    d3 = fma(ar0_6.w, f32(extractBits(w0_2[3u], 12u, 4u)), d3);
                    d3 = fma(ar0_7.x, f32(extractBits(w0_2[3u], 16u, 4u)), d3);
                    d3 = fma(ar0_7.y, f32(extractBits(w0_2[3u], 20u, 4u)), d3);
                    d3 = fma(ar0_7.z, f32(extractBits(w0_2[3u], 24u, 4u)), d3);
                    d3 = fma(ar0_7.w, f32(extractBits(w0_2[3u], 28u, 4u)), d3);
                    let z = zero_point(col2, kb0);
                    acc2 = fma(s0_2, ((d0 + d1) + (d2 + d3)) - z * a_sum, acc2);
                }
                {
                    var d0 = 0.0;
                    d0 = fma(ar0_0.x, f32(extractBits(v0_2[0u], 0u, 4u)), d0);
                    d0 = fma(ar0_0.y, f32(extractBits(v0_2[0u], 4u, 4u)), d0);
                    d0 = fma(ar0_0.z, f32(extractBits(v0_2[0u], 8u, 4u)), d0);
                    d0 = fma(ar0_0.w, f32(extractBits(v0_2[0u], 12u, 4u)), d0);
                    d0 = fma(ar0_1.x, f32(extractBits(v0_2[0u], 16u, 4u)), d0);
                    d0 = fma(ar0_1.y, f32(extractBits(v0_2[0u], 20u, 4u)), d0);
                    d0 = fma(ar0_1.z, f32(extractBits(v0_2[0u], 24u, 4u)), d0);
                    d0 = fma(ar0_1.w, f32(extractBits(v0_2[0u], 28u, 4u)), d0);
                    var d1 = 0.0;
                    d1 = fma(ar0_2.x, f32(extractBits(v0_2[1u], 0u, 4u)), d1);
                    d1 = fma(ar0_2.y, f32(extractBits(v0_2[1u], 4u, 4u)), d1);
                    d1 = fma(ar0_2.z, f32(extractBits(v0_2[1u], 8u, 4u)), d1);
                    d1 = fma(ar0_2.w, f32(extractBits(v0_2[1u], 12u, 4u)), d1);
                    d1 = fma(ar0_3.x, f32(extractBits(v0_2[1u], 16u, 4u)), d1);
                    d1 = fma(ar0_3.y, f32(extractBits(v0_2[1u], 20u, 4u)), d1);
                    d1 = fma(ar0_3.z, f32(extractBits(v0_2[1u], 24u, 4u)), d1);
                    d1 = fma(ar0_3.w, f32(extractBits(v0_2[1u], 28u, 4u)), d1);
                    var d2 = 0.0;
                    d2 = fma(ar0_4.x, f32(extractBits(v0_2[2u], 0u, 4u)), d2);
                    d2 = fma(ar0_4.y, f32(extractBits(v0_2[2u], 4u, 4u)), d2);
                    d2 = fma(ar0_4.z, f32(extractBits(v0_2[2u], 8u, 4u)), d2);
                    d2 = fma(ar0_4.w, f32(extractBits(v0_2[2u], 12u, 4u)), d2);
                    d2 = fma(ar0_5.x, f32(extractBits(v0_2[2u], 16u, 4u)), d2);
                    d2 = fma(ar0_5.y, f32(extractBits(v0_2[2u], 20u, 4u)), d2);
                    d2 = fma(ar0_5.z, f32(extractBits(v0_2[2u], 24u, 4u)), d2);
                    d2 = fma(ar0_5.w, f32(extractBits(v0_2[2u], 28u, 4u)), d2);
                    var d3 = 0.0;
                    d3 = fma(ar0_6.x, f32(extractBits(v0_2[3u], 0u, 4u)), d3);
                    d3 = fma(ar0_6.y, f32(extractBits(v0_2[3u], 4u, 4u)), d3);
                    d3 = fma(ar0_6.z, f32(extractBits(v0_2[3u], 8u, 4u)), d3);
                    d3 = fma(ar0_6.w, f32(extractBits(v0_2[3u], 12u, 4u)), d3);
                    d3 = fma(ar0_7.x, f32(extractBits(v0_2[3u], 16u, 4u)), d3);
                    d3 = fma(ar0_7.y, f32(extractBits(v0_2[3u], 20u, 4u)), d3);
                    d3 = fma(ar0_7.z, f32(extractBits(v0_2[3u], 24u, 4u)), d3);
                    d3 = fma(ar0_7.w, f32(extractBits(v0_2[3u], 28u, 4u)), d3);
                    let z = zero_point_up(col2, kb0);
                    up2 = fma(t0_2, ((d0 + d1) + (d2 + d3)) - z * a_sum, up2);
                }
                {
                    var d0 = 0.0;
                    d0 = fma(ar0_0.x, f32(extractBits(w0_3[0u], 0u, 4u)), d0);
                    d0 = fma(ar0_0.y, f32(extractBits(w0_3[0u], 4u, 4u)), d0);
                    d0 = fma(ar0_0.z, f32(extractBits(w0_3[0u], 8u, 4u)), d0);
                    d0 = fma(ar0_0.w, f32(extractBits(w0_3[0u], 12u, 4u)), d0);
                    d0 = fma(ar0_1.x, f32(extractBits(w0_3[0u], 16u, 4u)), d0);
                    d0 = fma(ar0_1.y, f32(extractBits(w0_3[0u], 20u, 4u)), d0);
                    d0 = fma(ar0_1.z, f32(extractBits(w0_3[0u], 24u, 4u)), d0);
                    d0 = fma(ar0_1.w, f32(extractBits(w0_3[0u], 28u, 4u)), d0);
                    var d1 = 0.0;
                    d1 = fma(ar0_2.x, f32(extractBits(w0_3[1u], 0u, 4u)), d1);
                    d1 = fma(ar0_2.y, f32(extractBits(w0_3[1u], 4u, 4u)), d1);
                    d1 = fma(ar0_2.z, f32(extractBits(w0_3[1u], 8u, 4u)), d1);
                    d1 = fma(ar0_2.w, f32(extractBits(w0_3[1u], 12u, 4u)), d1);
                    d1 = fma(ar0_3.x, f32(extractBits(w0_3[1u], 16u, 4u)), d1);
                    d1 = fma(ar0_3.y, f32(extractBits(w0_3[1u], 20u, 4u)), d1);
                    d1 = fma(ar0_3.z, f32(extractBits(w0_3[1u], 24u, 4u)), d1);
                    d1 = fma(ar0_3.w, f32(extractBits(w0_3[1u], 28u, 4u)), d1);
                    var d2 = 0.0;
                    d2 = fma(ar0_4.x, f32(extractBits(w0_3[2u], 0u, 4u)), d2);
                    d2 = fma(ar0_4.y, f32(extractBits(w0_3[2u], 4u, 4u)), d2);
                    d2 = fma(ar0_4.z, f32(extractBits(w0_3[2u], 8u, 4u)), d2);
                    d2 = fma(ar0_4.w, f32(extractBits(w0_3[2u], 12u, 4u)), d2);
                    d2 = fma(ar0_5.x, f32(extractBits(w0_3[2u], 16u, 4u)), d2);
                    d2 = fma(ar0_5.y, f32(extractBits(w0_3[2u], 20u, 4u)), d2);
                    d2 = fma(ar0_5.z, f32(extractBits(w0_3[2u], 24u, 4u)), d2);
                    d2 = fma(ar0_5.w, f32(extractBits(w0_3[2u], 28u, 4u)), d2);
                    var d3 = 0.0;
                    d3 = fma(ar0_6.x, f32(extractBits(w0_3[3u], 0u, 4u)), d3);
                    d3 = fma(ar0_6.y, f32(extractBits(w0_3[3u], 4u, 4u)), d3);
                    d3 = fma(ar0_6.z, f32(extractBits(w0_3[3u], 8u, 4u)), d3);
                    d3 = fma(ar0_6.w, f32(extractBits(w0_3[3u], 12u, 4u)), d3);
                    d3 = fma(ar0_7.x, f32(extractBits(w0_3[3u], 16u, 4u)), d3);
                    d3 = fma(ar0_7.y, f32(extractBits(w0_3[3u], 20u, 4u)), d3);
                    d3 = fma(ar0_7.z, f32(extractBits(w0_3[3u], 24u, 4u)), d3);
                    d3 = fma(ar0_7.w, f32(extractBits(w0_3[3u], 28u, 4u)), d3);
                    let z = zero_point(col3, kb0);
                    acc3 = fma(s0_3, ((d0 + d1) + (d2 + d3)) - z * a_sum, acc3);
                }
                {
                    var d0 = 0.0;
                    d0 = fma(ar0_0.x, f32(extractBits(v0_3[0u], 0u, 4u)), d0);
                    d0 = fma(ar0_0.y, f32(extractBits(v0_3[0u], 4u, 4u)), d0);
                    d0 = fma(ar0_0.z, f32(extractBits(v0_3[0u], 8u, 4u)), d0);
                    d0 = fma(ar0_0.w, f32(extractBits(v0_3[0u], 12u, 4u)), d0);
                    d0 = fma(ar0_1.x, f32(extractBits(v0_3[0u], 16u, 4u)), d0);
                    d0 = fma(ar0_1.y, f32(extractBits(v0_3[0u], 20u, 4u)), d0);
                    d0 = fma(ar0_1.z, f32(extractBits(v0_3[0u], 24u, 4u)), d0);
                    d0 = fma(ar0_1.w, f32(extractBits(v0_3[0u], 28u, 4u)), d0);
                    var d1 = 0.0;
                    d1 = fma(ar0_2.x, f32(extractBits(v0_3[1u], 0u, 4u)), d1);
                    d1 = fma(ar0_2.y, f32(extractBits(v0_3[1u], 4u, 4u)), d1);
                    d1 = fma(ar0_2.z, f32(extractBits(v0_3[1u], 8u, 4u)), d1);
                    d1 = fma(ar0_2.w, f32(extractBits(v0_3[1u], 12u, 4u)), d1);
                    d1 = fma(ar0_3.x, f32(extractBits(v0_3[1u], 16u, 4u)), d1);
                    d1 = fma(ar0_3.y, f32(extractBits(v0_3[1u], 20u, 4u)), d1);
                    d1 = fma(ar0_3.z, f32(extractBits(v0_3[1u], 24u, 4u)), d1);
                    d1 = fma(ar0_3.w, f32(extractBits(v0_3[1u], 28u, 4u)), d1);
                    var d2 = 0.0;
                    d2 = fma(ar0_4.x, f32(extractBits(v0_3[2u], 0u, 4u)), d2);
                    d2 = fma(ar0_4.y, f32(extractBits(v0_3[2u], 4u, 4u)), d2);
                    d2 = fma(ar0_4.z, f32(extractBits(v0_3[2u], 8u, 4u)), d2);
                    d2 = fma(ar0_4.w, f32(extractBits(v0_3[2u], 12u, 4u)), d2);
                    d2 = fma(ar0_5.x, f32(extractBits(v0_3[2u], 16u, 4u)), d2);
                    d2 = fma(ar0_5.y, f32(extractBits(v0_3[2u], 20u, 4u)), d2);
                    d2 = fma(ar0_5.z, f32(extractBits(v0_3[2u], 24u, 4u)), d2);
                    d2 = fma(ar0_5.w, f32(extractBits(v0_3[2u], 28u, 4u)), d2);
                    var d3 = 0.0;
                    d3 = fma(ar0_6.x, f32(extractBits(v0_3[3u], 0u, 4u)), d3);
                    d3 = fma(ar0_6.y, f32(extractBits(v0_3[3u], 4u, 4u)), d3);
                    d3 = fma(ar0_6.z, f32(extractBits(v0_3[3u], 8u, 4u)), d3);
                    d3 = fma(ar0_6.w, f32(extractBits(v0_3[3u], 12u, 4u)), d3);
                    d3 = fma(ar0_7.x, f32(extractBits(v0_3[3u], 16u, 4u)), d3);
                    d3 = fma(ar0_7.y, f32(extractBits(v0_3[3u], 20u, 4u)), d3);
                    d3 = fma(ar0_7.z, f32(extractBits(v0_3[3u], 24u, 4u)), d3);
                    d3 = fma(ar0_7.w, f32(extractBits(v0_3[3u], 28u, 4u)), d3);
                    let z = zero_point_up(col3, kb0);
                    up3 = fma(t0_3, ((d0 + d1) + (d2 + d3)) - z * a_sum, up3);
                }
            }
        }
    }
    acc0 = acc0 + subgroupShuffleXor(acc0, 4u);
    up0 = up0 + subgroupShuffleXor(up0, 4u);
    acc1 = acc1 + subgroupShuffleXor(acc1, 4u);
    up1 = up1 + subgroupShuffleXor(up1, 4u);
    acc2 = acc2 + subgroupShuffleXor(acc2, 4u);
    up2 = up2 + subgroupShuffleXor(up2, 4u);
    acc3 = acc3 + subgroupShuffleXor(acc3, 4u);
    up3 = up3 + subgroupShuffleXor(up3, 4u);
    acc0 = acc0 + subgroupShuffleXor(acc0, 2u);
    up0 = up0 + subgroupShuffleXor(up0, 2u);
    acc1 = acc1 + subgroupShuffleXor(acc1, 2u);
    up1 = up1 + subgroupShuffleXor(up1, 2u);
    acc2 = acc2 + subgroupShuffleXor(acc2, 2u);
    up2 = up2 + subgroupShuffleXor(up2, 2u);
    acc3 = acc3 + subgroupShuffleXor(acc3, 2u);
    up3 = up3 + subgroupShuffleXor(up3, 2u);
    acc0 = acc0 + subgroupShuffleXor(acc0, 1u);
    up0 = up0 + subgroupShuffleXor(up0, 1u);
    acc1 = acc1 + subgroupShuffleXor(acc1, 1u);
    up1 = up1 + subgroupShuffleXor(up1, 1u);
    acc2 = acc2 + subgroupShuffleXor(acc2, 1u);
    up2 = up2 + subgroupShuffleXor(up2, 1u);
    acc3 = acc3 + subgroupShuffleXor(acc3, 1u);
    up3 = up3 + subgroupShuffleXor(up3, 1u);
    ss = ss + subgroupShuffleXor(ss, 4u);
    ss = ss + subgroupShuffleXor(ss, 2u);
    ss = ss + subgroupShuffleXor(ss, 1u);
    let rstd = inverseSqrt(ss / f32(p.k) + bitcast<f32>(p.zp_stride));
    var sums = array<f32, CL>(acc0 * rstd, acc1 * rstd, acc2 * rstd, acc3 * rstd);
    var ups = array<f32, CL>(up0 * rstd, up1 * rstd, up2 * rstd, up3 * rstd);
    let col = group * CL + lane;
    if (lane < CL && group < groups && col < p.n) {
        y[col] = f32(epilogue(sums[lane], col, col) * ups[lane]);
    }
}
