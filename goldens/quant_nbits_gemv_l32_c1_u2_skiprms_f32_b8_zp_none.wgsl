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
@group(0) @binding(3) var<storage, read> bias: array<f32>;
// Y's shape: multiplies the result where flags bit 2 says so (a gated product).
@group(0) @binding(4) var<storage, read> gate: array<f32>;
// The norm's skip and γ (one row each, in 16-byte chunks like A), and its sum x + skip.
@group(0) @binding(5) var<storage, read> skip: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> gamma: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> y: array<f32>;
@group(0) @binding(8) var<storage, read_write> sum_out: array<vec4<f32>>;
@group(0) @binding(9) var<uniform> p: Params;

// Invocations per workgroup, per column group, columns per group, values per 16-byte chunk of B.
const T: u32 = 256u;
const L: u32 = 32u;
const CL: u32 = 1u;
const CV: u32 = 16u;

// The zero point of block `kb` of column `n`.
fn zero_point(n: u32, kb: u32) -> f32 {
    return 128.0;
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
            let w1_0 = b[col0 * col_chunks + ch1];
            let xr0_0 = a[ch0 * 4u + 0u];
            let sk0_0 = skip[ch0 * 4u + 0u];
            let gm0_0 = gamma[ch0 * 4u + 0u];
            let xr0_1 = a[ch0 * 4u + 1u];
            let sk0_1 = skip[ch0 * 4u + 1u];
            let gm0_1 = gamma[ch0 * 4u + 1u];
            let xr0_2 = a[ch0 * 4u + 2u];
            let sk0_2 = skip[ch0 * 4u + 2u];
            let gm0_2 = gamma[ch0 * 4u + 2u];
            let xr0_3 = a[ch0 * 4u + 3u];
            let sk0_3 = skip[ch0 * 4u + 3u];
            let gm0_3 = gamma[ch0 * 4u + 3u];
            let xr1_0 = a[ch1 * 4u + 0u];
            let sk1_0 = skip[ch1 * 4u + 0u];
            let gm1_0 = gamma[ch1 * 4u + 0u];
            let xr1_1 = a[ch1 * 4u + 1u];
            let sk1_1 = skip[ch1 * 4u + 1u];
            let gm1_1 = gamma[ch1 * 4u + 1u];
            let xr1_2 = a[ch1 * 4u + 2u];
            let sk1_2 = skip[ch1 * 4u + 2u];
            let gm1_2 = gamma[ch1 * 4u + 2u];
            let xr1_3 = a[ch1 * 4u + 3u];
            let sk1_3 = skip[ch1 * 4u + 3u];
            let gm1_3 = gamma[ch1 * 4u + 3u];
            let kb0 = ch0 * CV / p.block;
            let s0_0 = f32(scales[col0 * p.k_blocks + kb0]);
            let kb1 = ch1 * CV / p.block;
            let s1_0 = f32(scales[col0 * p.k_blocks + kb1]);
            {
                let xs0_0 = xr0_0 + sk0_0;
                ss = ss + dot(xs0_0, xs0_0);
                let ar0_0 = xs0_0 * gm0_0;
                if (writes) {
                    sum_out[ch0 * 4u + 0u] = xs0_0;
                }
                let xs0_1 = xr0_1 + sk0_1;
                ss = ss + dot(xs0_1, xs0_1);
                let ar0_1 = xs0_1 * gm0_1;
                if (writes) {
                    sum_out[ch0 * 4u + 1u] = xs0_1;
                }
                let xs0_2 = xr0_2 + sk0_2;
                ss = ss + dot(xs0_2, xs0_2);
                let ar0_2 = xs0_2 * gm0_2;
                if (writes) {
                    sum_out[ch0 * 4u + 2u] = xs0_2;
                }
                let xs0_3 = xr0_3 + sk0_3;
                ss = ss + dot(xs0_3, xs0_3);
                let ar0_3 = xs0_3 * gm0_3;
                if (writes) {
                    sum_out[ch0 * 4u + 3u] = xs0_3;
                }
                let hs = ar0_0 + ar0_1 + ar0_2 + ar0_3;
                let a_sum = (hs.x + hs.y) + (hs.z + hs.w);
                {
                    var d0 = 0.0;
                    d0 = fma(ar0_0.x, f32(extractBits(w0_0[0u], 0u, 8u)), d0);
                    d0 = fma(ar0_0.y, f32(extractBits(w0_0[0u], 8u, 8u)), d0);
                    d0 = fma(ar0_0.z, f32(extractBits(w0_0[0u], 16u, 8u)), d0);
                    d0 = fma(ar0_0.w, f32(extractBits(w0_0[0u], 24u, 8u)), d0);
                    var d1 = 0.0;
                    d1 = fma(ar0_1.x, f32(extractBits(w0_0[1u], 0u, 8u)), d1);
                    d1 = fma(ar0_1.y, f32(extractBits(w0_0[1u], 8u, 8u)), d1);
                    d1 = fma(ar0_1.z, f32(extractBits(w0_0[1u], 16u, 8u)), d1);
                    d1 = fma(ar0_1.w, f32(extractBits(w0_0[1u], 24u, 8u)), d1);
                    var d2 = 0.0;
                    d2 = fma(ar0_2.x, f32(extractBits(w0_0[2u], 0u, 8u)), d2);
                    d2 = fma(ar0_2.y, f32(extractBits(w0_0[2u], 8u, 8u)), d2);
                    d2 = fma(ar0_2.z, f32(extractBits(w0_0[2u], 16u, 8u)), d2);
                    d2 = fma(ar0_2.w, f32(extractBits(w0_0[2u], 24u, 8u)), d2);
                    var d3 = 0.0;
                    d3 = fma(ar0_3.x, f32(extractBits(w0_0[3u], 0u, 8u)), d3);
                    d3 = fma(ar0_3.y, f32(extractBits(w0_0[3u], 8u, 8u)), d3);
                    d3 = fma(ar0_3.z, f32(extractBits(w0_0[3u], 16u, 8u)), d3);
                    d3 = fma(ar0_3.w, f32(extractBits(w0_0[3u], 24u, 8u)), d3);
                    let z = zero_point(col0, kb0);
                    acc0 = fma(s0_0, ((d0 + d1) + (d2 + d3)) - z * a_sum, acc0);
                }
            }
            {
                let xs1_0 = xr1_0 + sk1_0;
                ss = ss + dot(xs1_0, xs1_0);
                let ar1_0 = xs1_0 * gm1_0;
                if (writes) {
                    sum_out[ch1 * 4u + 0u] = xs1_0;
                }
                let xs1_1 = xr1_1 + sk1_1;
                ss = ss + dot(xs1_1, xs1_1);
                let ar1_1 = xs1_1 * gm1_1;
                if (writes) {
                    sum_out[ch1 * 4u + 1u] = xs1_1;
                }
                let xs1_2 = xr1_2 + sk1_2;
                ss = ss + dot(xs1_2, xs1_2);
                let ar1_2 = xs1_2 * gm1_2;
                if (writes) {
                    sum_out[ch1 * 4u + 2u] = xs1_2;
                }
                let xs1_3 = xr1_3 + sk1_3;
                ss = ss + dot(xs1_3, xs1_3);
                let ar1_3 = xs1_3 * gm1_3;
                if (writes) {
                    sum_out[ch1 * 4u + 3u] = xs1_3;
                }
                let hs = ar1_0 + ar1_1 + ar1_2 + ar1_3;
                let a_sum = (hs.x + hs.y) + (hs.z + hs.w);
                {
                    var d0 = 0.0;
                    d0 = fma(ar1_0.x, f32(extractBits(w1_0[0u], 0u, 8u)), d0);
                    d0 = fma(ar1_0.y, f32(extractBits(w1_0[0u], 8u, 8u)), d0);
                    d0 = fma(ar1_0.z, f32(extractBits(w1_0[0u], 16u, 8u)), d0);
                    d0 = fma(ar1_0.w, f32(extractBits(w1_0[0u], 24u, 8u)), d0);
                    var d1 = 0.0;
                    d1 = fma(ar1_1.x, f32(extractBits(w1_0[1u], 0u, 8u)), d1);
                    d1 = fma(ar1_1.y, f32(extractBits(w1_0[1u], 8u, 8u)), d1);
                    d1 = fma(ar1_1.z, f32(extractBits(w1_0[1u], 16u, 8u)), d1);
                    d1 = fma(ar1_1.w, f32(extractBits(w1_0[1u], 24u, 8u)), d1);
                    var d2 = 0.0;
                    d2 = fma(ar1_2.x, f32(extractBits(w1_0[2u], 0u, 8u)), d2);
                    d2 = fma(ar1_2.y, f32(extractBits(w1_0[2u], 8u, 8u)), d2);
                    d2 = fma(ar1_2.z, f32(extractBits(w1_0[2u], 16u, 8u)), d2);
                    d2 = fma(ar1_2.w, f32(extractBits(w1_0[2u], 24u, 8u)), d2);
                    var d3 = 0.0;
                    d3 = fma(ar1_3.x, f32(extractBits(w1_0[3u], 0u, 8u)), d3);
                    d3 = fma(ar1_3.y, f32(extractBits(w1_0[3u], 8u, 8u)), d3);
                    d3 = fma(ar1_3.z, f32(extractBits(w1_0[3u], 16u, 8u)), d3);
                    d3 = fma(ar1_3.w, f32(extractBits(w1_0[3u], 24u, 8u)), d3);
                    let z = zero_point(col0, kb1);
                    acc0 = fma(s1_0, ((d0 + d1) + (d2 + d3)) - z * a_sum, acc0);
                }
            }
        }
    }
    for (; ch < chunks; ch = ch + L) {
        let ch0 = ch;
        {
            let w0_0 = b[col0 * col_chunks + ch0];
            let xr0_0 = a[ch0 * 4u + 0u];
            let sk0_0 = skip[ch0 * 4u + 0u];
            let gm0_0 = gamma[ch0 * 4u + 0u];
            let xr0_1 = a[ch0 * 4u + 1u];
            let sk0_1 = skip[ch0 * 4u + 1u];
            let gm0_1 = gamma[ch0 * 4u + 1u];
            let xr0_2 = a[ch0 * 4u + 2u];
            let sk0_2 = skip[ch0 * 4u + 2u];
            let gm0_2 = gamma[ch0 * 4u + 2u];
            let xr0_3 = a[ch0 * 4u + 3u];
            let sk0_3 = skip[ch0 * 4u + 3u];
            let gm0_3 = gamma[ch0 * 4u + 3u];
            let kb0 = ch0 * CV / p.block;
            let s0_0 = f32(scales[col0 * p.k_blocks + kb0]);
            {
                let xs0_0 = xr0_0 + sk0_0;
                ss = ss + dot(xs0_0, xs0_0);
                let ar0_0 = xs0_0 * gm0_0;
                if (writes) {
                    sum_out[ch0 * 4u + 0u] = xs0_0;
                }
                let xs0_1 = xr0_1 + sk0_1;
                ss = ss + dot(xs0_1, xs0_1);
                let ar0_1 = xs0_1 * gm0_1;
                if (writes) {
                    sum_out[ch0 * 4u + 1u] = xs0_1;
                }
                let xs0_2 = xr0_2 + sk0_2;
                ss = ss + dot(xs0_2, xs0_2);
                let ar0_2 = xs0_2 * gm0_2;
                if (writes) {
                    sum_out[ch0 * 4u + 2u] = xs0_2;
                }
                let xs0_3 = xr0_3 + sk0_3;
                ss = ss + dot(xs0_3, xs0_3);
                let ar0_3 = xs0_3 * gm0_3;
                if (writes) {
                    sum_out[ch0 * 4u + 3u] = xs0_3;
                }
                let hs = ar0_0 + ar0_1 + ar0_2 + ar0_3;
                let a_sum = (hs.x + hs.y) + (hs.z + hs.w);
                {
                    var d0 = 0.0;
                    d0 = fma(ar0_0.x, f32(extractBits(w0_0[0u], 0u, 8u)), d0);
                    d0 = fma(ar0_0.y, f32(extractBits(w0_0[0u], 8u, 8u)), d0);
                    d0 = fma(ar0_0.z, f32(extractBits(w0_0[0u], 16u, 8u)), d0);
                    d0 = fma(ar0_0.w, f32(extractBits(w0_0[0u], 24u, 8u)), d0);
                    var d1 = 0.0;
                    d1 = fma(ar0_1.x, f32(extractBits(w0_0[1u], 0u, 8u)), d1);
                    d1 = fma(ar0_1.y, f32(extractBits(w0_0[1u], 8u, 8u)), d1);
                    d1 = fma(ar0_1.z, f32(extractBits(w0_0[1u], 16u, 8u)), d1);
                    d1 = fma(ar0_1.w, f32(extractBits(w0_0[1u], 24u, 8u)), d1);
                    var d2 = 0.0;
                    d2 = fma(ar0_2.x, f32(extractBits(w0_0[2u], 0u, 8u)), d2);
                    d2 = fma(ar0_2.y, f32(extractBits(w0_0[2u], 8u, 8u)), d2);
                    d2 = fma(ar0_2.z, f32(extractBits(w0_0[2u], 16u, 8u)), d2);
                    d2 = fma(ar0_2.w, f32(extractBits(w0_0[2u], 24u, 8u)), d2);
                    var d3 = 0.0;
                    d3 = fma(ar0_3.x, f32(extractBits(w0_0[3u], 0u, 8u)), d3);
                    d3 = fma(ar0_3.y, f32(extractBits(w0_0[3u], 8u, 8u)), d3);
                    d3 = fma(ar0_3.z, f32(extractBits(w0_0[3u], 16u, 8u)), d3);
                    d3 = fma(ar0_3.w, f32(extractBits(w0_0[3u], 24u, 8u)), d3);
                    let z = zero_point(col0, kb0);
                    acc0 = fma(s0_0, ((d0 + d1) + (d2 + d3)) - z * a_sum, acc0);
                }
            }
        }
    }
    acc0 = acc0 + subgroupShuffleXor(acc0, 16u);
    acc0 = acc0 + subgroupShuffleXor(acc0, 8u);
    acc0 = acc0 + subgroupShuffleXor(acc0, 4u);
    acc0 = acc0 + subgroupShuffleXor(acc0, 2u);
    acc0 = acc0 + subgroupShuffleXor(acc0, 1u);
    ss = ss + subgroupShuffleXor(ss, 16u);
    ss = ss + subgroupShuffleXor(ss, 8u);
    ss = ss + subgroupShuffleXor(ss, 4u);
    ss = ss + subgroupShuffleXor(ss, 2u);
    ss = ss + subgroupShuffleXor(ss, 1u);
    let rstd = inverseSqrt(ss / f32(p.k) + bitcast<f32>(p.zp_stride));
    var sums = array<f32, CL>(acc0 * rstd);
    let col = group * CL + lane;
    if (lane < CL && group < groups && col < p.n) {
        y[col] = f32(epilogue(sums[lane], col, col));
    }
}
