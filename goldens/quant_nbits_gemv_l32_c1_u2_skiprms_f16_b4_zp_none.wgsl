enable f16;

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
@group(0) @binding(0) var<storage, read> a: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> b: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> scales: array<f16>;
@group(0) @binding(3) var<storage, read> bias: array<f16>;
// Y's shape: multiplies the result where flags bit 2 says so (a gated product).
@group(0) @binding(4) var<storage, read> gate: array<f16>;
// The norm's skip and γ (one row each, in 16-byte chunks like A), and its sum x + skip.
@group(0) @binding(5) var<storage, read> skip: array<vec4<u32>>;
@group(0) @binding(6) var<storage, read> gamma: array<vec4<u32>>;
@group(0) @binding(7) var<storage, read_write> y: array<f16>;
@group(0) @binding(8) var<storage, read_write> sum_out: array<vec4<u32>>;
@group(0) @binding(9) var<uniform> p: Params;

// Invocations per workgroup, per column group, columns per group, values per 16-byte chunk of B.
const T: u32 = 256u;
const L: u32 = 32u;
const CL: u32 = 1u;
const CV: u32 = 32u;

// The zero point of block `kb` of column `n`.
fn zero_point(n: u32, kb: u32) -> f32 {
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
            let ar0_0 = a[ch0 * 4u + 0u];
            let sk0_0 = skip[ch0 * 4u + 0u];
            let gm0_0 = gamma[ch0 * 4u + 0u];
            let ar0_1 = a[ch0 * 4u + 1u];
            let sk0_1 = skip[ch0 * 4u + 1u];
            let gm0_1 = gamma[ch0 * 4u + 1u];
            let ar0_2 = a[ch0 * 4u + 2u];
            let sk0_2 = skip[ch0 * 4u + 2u];
            let gm0_2 = gamma[ch0 * 4u + 2u];
            let ar0_3 = a[ch0 * 4u + 3u];
            let sk0_3 = skip[ch0 * 4u + 3u];
            let gm0_3 = gamma[ch0 * 4u + 3u];
            let ar1_0 = a[ch1 * 4u + 0u];
            let sk1_0 = skip[ch1 * 4u + 0u];
            let gm1_0 = gamma[ch1 * 4u + 0u];
            let ar1_1 = a[ch1 * 4u + 1u];
            let sk1_1 = skip[ch1 * 4u + 1u];
            let gm1_1 = gamma[ch1 * 4u + 1u];
            let ar1_2 = a[ch1 * 4u + 2u];
            let sk1_2 = skip[ch1 * 4u + 2u];
            let gm1_2 = gamma[ch1 * 4u + 2u];
            let ar1_3 = a[ch1 * 4u + 3u];
            let sk1_3 = skip[ch1 * 4u + 3u];
            let gm1_3 = gamma[ch1 * 4u + 3u];
            let kb0 = ch0 * CV / p.block;
            let s0_0 = f32(scales[col0 * p.k_blocks + kb0]);
            let kb1 = ch1 * CV / p.block;
            let s1_0 = f32(scales[col0 * p.k_blocks + kb1]);
            {
                let xs0_0 = unpack2x16float(ar0_0[0u]) + unpack2x16float(sk0_0[0u]);
                ss = fma(xs0_0.x, xs0_0.x, fma(xs0_0.y, xs0_0.y, ss));
                let h0_0 = xs0_0 * unpack2x16float(gm0_0[0u]);
                let xs0_1 = unpack2x16float(ar0_0[1u]) + unpack2x16float(sk0_0[1u]);
                ss = fma(xs0_1.x, xs0_1.x, fma(xs0_1.y, xs0_1.y, ss));
                let h0_1 = xs0_1 * unpack2x16float(gm0_0[1u]);
                let xs0_2 = unpack2x16float(ar0_0[2u]) + unpack2x16float(sk0_0[2u]);
                ss = fma(xs0_2.x, xs0_2.x, fma(xs0_2.y, xs0_2.y, ss));
                let h0_2 = xs0_2 * unpack2x16float(gm0_0[2u]);
                let xs0_3 = unpack2x16float(ar0_0[3u]) + unpack2x16float(sk0_0[3u]);
                ss = fma(xs0_3.x, xs0_3.x, fma(xs0_3.y, xs0_3.y, ss));
                let h0_3 = xs0_3 * unpack2x16float(gm0_0[3u]);
                if (writes) {
                    sum_out[ch0 * 4u + 0u] = vec4<u32>(pack2x16float(xs0_0), pack2x16float(xs0_1), pack2x16float(xs0_2), pack2x16float(xs0_3));
                }
                let xs0_4 = unpack2x16float(ar0_1[0u]) + unpack2x16float(sk0_1[0u]);
                ss = fma(xs0_4.x, xs0_4.x, fma(xs0_4.y, xs0_4.y, ss));
                let h0_4 = xs0_4 * unpack2x16float(gm0_1[0u]);
                let xs0_5 = unpack2x16float(ar0_1[1u]) + unpack2x16float(sk0_1[1u]);
                ss = fma(xs0_5.x, xs0_5.x, fma(xs0_5.y, xs0_5.y, ss));
                let h0_5 = xs0_5 * unpack2x16float(gm0_1[1u]);
                let xs0_6 = unpack2x16float(ar0_1[2u]) + unpack2x16float(sk0_1[2u]);
                ss = fma(xs0_6.x, xs0_6.x, fma(xs0_6.y, xs0_6.y, ss));
                let h0_6 = xs0_6 * unpack2x16float(gm0_1[2u]);
                let xs0_7 = unpack2x16float(ar0_1[3u]) + unpack2x16float(sk0_1[3u]);
                ss = fma(xs0_7.x, xs0_7.x, fma(xs0_7.y, xs0_7.y, ss));
                let h0_7 = xs0_7 * unpack2x16float(gm0_1[3u]);
                if (writes) {
                    sum_out[ch0 * 4u + 1u] = vec4<u32>(pack2x16float(xs0_4), pack2x16float(xs0_5), pack2x16float(xs0_6), pack2x16float(xs0_7));
                }
                let xs0_8 = unpack2x16float(ar0_2[0u]) + unpack2x16float(sk0_2[0u]);
                ss = fma(xs0_8.x, xs0_8.x, fma(xs0_8.y, xs0_8.y, ss));
                let h0_8 = xs0_8 * unpack2x16float(gm0_2[0u]);
                let xs0_9 = unpack2x16float(ar0_2[1u]) + unpack2x16float(sk0_2[1u]);
                ss = fma(xs0_9.x, xs0_9.x, fma(xs0_9.y, xs0_9.y, ss));
                let h0_9 = xs0_9 * unpack2x16float(gm0_2[1u]);
                let xs0_10 = unpack2x16float(ar0_2[2u]) + unpack2x16float(sk0_2[2u]);
                ss = fma(xs0_10.x, xs0_10.x, fma(xs0_10.y, xs0_10.y, ss));
                let h0_10 = xs0_10 * unpack2x16float(gm0_2[2u]);
                let xs0_11 = unpack2x16float(ar0_2[3u]) + unpack2x16float(sk0_2[3u]);
                ss = fma(xs0_11.x, xs0_11.x, fma(xs0_11.y, xs0_11.y, ss));
                let h0_11 = xs0_11 * unpack2x16float(gm0_2[3u]);
                if (writes) {
                    sum_out[ch0 * 4u + 2u] = vec4<u32>(pack2x16float(xs0_8), pack2x16float(xs0_9), pack2x16float(xs0_10), pack2x16float(xs0_11));
                }
                let xs0_12 = unpack2x16float(ar0_3[0u]) + unpack2x16float(sk0_3[0u]);
                ss = fma(xs0_12.x, xs0_12.x, fma(xs0_12.y, xs0_12.y, ss));
                let h0_12 = xs0_12 * unpack2x16float(gm0_3[0u]);
                let xs0_13 = unpack2x16float(ar0_3[1u]) + unpack2x16float(sk0_3[1u]);
                ss = fma(xs0_13.x, xs0_13.x, fma(xs0_13.y, xs0_13.y, ss));
                let h0_13 = xs0_13 * unpack2x16float(gm0_3[1u]);
                let xs0_14 = unpack2x16float(ar0_3[2u]) + unpack2x16float(sk0_3[2u]);
                ss = fma(xs0_14.x, xs0_14.x, fma(xs0_14.y, xs0_14.y, ss));
                let h0_14 = xs0_14 * unpack2x16float(gm0_3[2u]);
                let xs0_15 = unpack2x16float(ar0_3[3u]) + unpack2x16float(sk0_3[3u]);
                ss = fma(xs0_15.x, xs0_15.x, fma(xs0_15.y, xs0_15.y, ss));
                let h0_15 = xs0_15 * unpack2x16float(gm0_3[3u]);
                if (writes) {
                    sum_out[ch0 * 4u + 3u] = vec4<u32>(pack2x16float(xs0_12), pack2x16float(xs0_13), pack2x16float(xs0_14), pack2x16float(xs0_15));
                }
                let hs = h0_0 + h0_1 + h0_2 + h0_3 + h0_4 + h0_5 + h0_6 + h0_7 + h0_8 + h0_9 + h0_10 + h0_11 + h0_12 + h0_13 + h0_14 + h0_15;
                let a_sum = hs.x + hs.y;
                {
                    var d0 = 0.0;
                    d0 = fma(h0_0.x, f32(extractBits(w0_0[0u], 0u, 4u)), d0);
                    d0 = fma(h0_0.y, f32(extractBits(w0_0[0u], 4u, 4u)), d0);
                    d0 = fma(h0_1.x, f32(extractBits(w0_0[0u], 8u, 4u)), d0);
                    d0 = fma(h0_1.y, f32(extractBits(w0_0[0u], 12u, 4u)), d0);
                    d0 = fma(h0_2.x, f32(extractBits(w0_0[0u], 16u, 4u)), d0);
                    d0 = fma(h0_2.y, f32(extractBits(w0_0[0u], 20u, 4u)), d0);
                    d0 = fma(h0_3.x, f32(extractBits(w0_0[0u], 24u, 4u)), d0);
                    d0 = fma(h0_3.y, f32(extractBits(w0_0[0u], 28u, 4u)), d0);
                    var d1 = 0.0;
                    d1 = fma(h0_4.x, f32(extractBits(w0_0[1u], 0u, 4u)), d1);
                    d1 = fma(h0_4.y, f32(extractBits(w0_0[1u], 4u, 4u)), d1);
                    d1 = fma(h0_5.x, f32(extractBits(w0_0[1u], 8u, 4u)), d1);
                    d1 = fma(h0_5.y, f32(extractBits(w0_0[1u], 12u, 4u)), d1);
                    d1 = fma(h0_6.x, f32(extractBits(w0_0[1u], 16u, 4u)), d1);
                    d1 = fma(h0_6.y, f32(extractBits(w0_0[1u], 20u, 4u)), d1);
                    d1 = fma(h0_7.x, f32(extractBits(w0_0[1u], 24u, 4u)), d1);
                    d1 = fma(h0_7.y, f32(extractBits(w0_0[1u], 28u, 4u)), d1);
                    var d2 = 0.0;
                    d2 = fma(h0_8.x, f32(extractBits(w0_0[2u], 0u, 4u)), d2);
                    d2 = fma(h0_8.y, f32(extractBits(w0_0[2u], 4u, 4u)), d2);
                    d2 = fma(h0_9.x, f32(extractBits(w0_0[2u], 8u, 4u)), d2);
                    d2 = fma(h0_9.y, f32(extractBits(w0_0[2u], 12u, 4u)), d2);
                    d2 = fma(h0_10.x, f32(extractBits(w0_0[2u], 16u, 4u)), d2);
                    d2 = fma(h0_10.y, f32(extractBits(w0_0[2u], 20u, 4u)), d2);
                    d2 = fma(h0_11.x, f32(extractBits(w0_0[2u], 24u, 4u)), d2);
                    d2 = fma(h0_11.y, f32(extractBits(w0_0[2u], 28u, 4u)), d2);
                    var d3 = 0.0;
                    d3 = fma(h0_12.x, f32(extractBits(w0_0[3u], 0u, 4u)), d3);
                    d3 = fma(h0_12.y, f32(extractBits(w0_0[3u], 4u, 4u)), d3);
                    d3 = fma(h0_13.x, f32(extractBits(w0_0[3u], 8u, 4u)), d3);
                    d3 = fma(h0_13.y, f32(extractBits(w0_0[3u], 12u, 4u)), d3);
                    d3 = fma(h0_14.x, f32(extractBits(w0_0[3u], 16u, 4u)), d3);
                    d3 = fma(h0_14.y, f32(extractBits(w0_0[3u], 20u, 4u)), d3);
                    d3 = fma(h0_15.x, f32(extractBits(w0_0[3u], 24u, 4u)), d3);
                    d3 = fma(h0_15.y, f32(extractBits(w0_0[3u], 28u, 4u)), d3);
                    let z = zero_point(col0, kb0);
                    acc0 = fma(s0_0, ((d0 + d1) + (d2 + d3)) - z * a_sum, acc0);
                }
            }
            {
                let xs1_0 = unpack2x16float(ar1_0[0u]) + unpack2x16float(sk1_0[0u]);
                ss = fma(xs1_0.x, xs1_0.x, fma(xs1_0.y, xs1_0.y, ss));
                let h1_0 = xs1_0 * unpack2x16float(gm1_0[0u]);
                let xs1_1 = unpack2x16float(ar1_0[1u]) + unpack2x16float(sk1_0[1u]);
                ss = fma(xs1_1.x, xs1_1.x, fma(xs1_1.y, xs1_1.y, ss));
                let h1_1 = xs1_1 * unpack2x16float(gm1_0[1u]);
                let xs1_2 = unpack2x16float(ar1_0[2u]) + unpack2x16float(sk1_0[2u]);
                ss = fma(xs1_2.x, xs1_2.x, fma(xs1_2.y, xs1_2.y, ss));
                let h1_2 = xs1_2 * unpack2x16float(gm1_0[2u]);
                let xs1_3 = unpack2x16float(ar1_0[3u]) + unpack2x16float(sk1_0[3u]);
                ss = fma(xs1_3.x, xs1_3.x, fma(xs1_3.y, xs1_3.y, ss));
                let h1_3 = xs1_3 * unpack2x16float(gm1_0[3u]);
                if (writes) {
                    sum_out[ch1 * 4u + 0u] = vec4<u32>(pack2x16float(xs1_0), pack2x16float(xs1_1), pack2x16float(xs1_2), pack2x16float(xs1_3));
                }
                let xs1_4 = unpack2x16float(ar1_1[0u]) + unpack2x16float(sk1_1[0u]);
                ss = fma(xs1_4.x, xs1_4.x, fma(xs1_4.y, xs1_4.y, ss));
                let h1_4 = xs1_4 * unpack2x16float(gm1_1[0u]);
                let xs1_5 = unpack2x16float(ar1_1[1u]) + unpack2x16float(sk1_1[1u]);
                ss = fma(xs1_5.x, xs1_5.x, fma(xs1_5.y, xs1_5.y, ss));
                let h1_5 = xs1_5 * unpack2x16float(gm1_1[1u]);
                let xs1_6 = unpack2x16float(ar1_1[2u]) + unpack2x16float(sk1_1[2u]);
                ss = fma(xs1_6.x, xs1_6.x, fma(xs1_6.y, xs1_6.y, ss));
                let h1_6 = xs1_6 * unpack2x16float(gm1_1[2u]);
                let xs1_7 = unpack2x16float(ar1_1[3u]) + unpack2x16float(sk1_1[3u]);
                ss = fma(xs1_7.x, xs1_7.x, fma(xs1_7.y, xs1_7.y, ss));
                let h1_7 = xs1_7 * unpack2x16float(gm1_1[3u]);
                if (writes) {
                    sum_out[ch1 * 4u + 1u] = vec4<u32>(pack2x16float(xs1_4), pack2x16float(xs1_5), pack2x16float(xs1_6), pack2x16float(xs1_7));
                }
                let xs1_8 = unpack2x16float(ar1_2[0u]) + unpack2x16float(sk1_2[0u]);
                ss = fma(xs1_8.x, xs1_8.x, fma(xs1_8.y, xs1_8.y, ss));
                let h1_8 = xs1_8 * unpack2x16float(gm1_2[0u]);
                let xs1_9 = unpack2x16float(ar1_2[1u]) + unpack2x16float(sk1_2[1u]);
                ss = fma(xs1_9.x, xs1_9.x, fma(xs1_9.y, xs1_9.y, ss));
                let h1_9 = xs1_9 * unpack2x16float(gm1_2[1u]);
                let xs1_10 = unpack2x16float(ar1_2[2u]) + unpack2x16float(sk1_2[2u]);
                ss = fma(xs1_10.x, xs1_10.x, fma(xs1_10.y, xs1_10.y, ss));
                let h1_10 = xs1_10 * unpack2x16float(gm1_2[2u]);
                let xs1_11 = unpack2x16float(ar1_2[3u]) + unpack2x16float(sk1_2[3u]);
                ss = fma(xs1_11.x, xs1_11.x, fma(xs1_11.y, xs1_11.y, ss));
                let h1_11 = xs1_11 * unpack2x16float(gm1_2[3u]);
                if (writes) {
                    sum_out[ch1 * 4u + 2u] = vec4<u32>(pack2x16float(xs1_8), pack2x16float(xs1_9), pack2x16float(xs1_10), pack2x16float(xs1_11));
                }
                let xs1_12 = unpack2x16float(ar1_3[0u]) + unpack2x16float(sk1_3[0u]);
                ss = fma(xs1_12.x, xs1_12.x, fma(xs1_12.y, xs1_12.y, ss));
                let h1_12 = xs1_12 * unpack2x16float(gm1_3[0u]);
                let xs1_13 = unpack2x16float(ar1_3[1u]) + unpack2x16float(sk1_3[1u]);
                ss = fma(xs1_13.x, xs1_13.x, fma(xs1_13.y, xs1_13.y, ss));
                let h1_13 = xs1_13 * unpack2x16float(gm1_3[1u]);
                let xs1_14 = unpack2x16float(ar1_3[2u]) + unpack2x16float(sk1_3[2u]);
                ss = fma(xs1_14.x, xs1_14.x, fma(xs1_14.y, xs1_14.y, ss));
                let h1_14 = xs1_14 * unpack2x16float(gm1_3[2u]);
                let xs1_15 = unpack2x16float(ar1_3[3u]) + unpack2x16float(sk1_3[3u]);
                ss = fma(xs1_15.x, xs1_15.x, fma(xs1_15.y, xs1_15.y, ss));
                let h1_15 = xs1_15 * unpack2x16float(gm1_3[3u]);
                if (writes) {
                    sum_out[ch1 * 4u + 3u] = vec4<u32>(pack2x16float(xs1_12), pack2x16float(xs1_13), pack2x16float(xs1_14), pack2x16float(xs1_15));
                }
                let hs = h1_0 + h1_1 + h1_2 + h1_3 + h1_4 + h1_5 + h1_6 + h1_7 + h1_8 + h1_9 + h1_10 + h1_11 + h1_12 + h1_13 + h1_14 + h1_15;
                let a_sum = hs.x + hs.y;
                {
                    var d0 = 0.0;
                    d0 = fma(h1_0.x, f32(extractBits(w1_0[0u], 0u, 4u)), d0);
                    d0 = fma(h1_0.y, f32(extractBits(w1_0[0u], 4u, 4u)), d0);
                    d0 = fma(h1_1.x, f32(extractBits(w1_0[0u], 8u, 4u)), d0);
                    d0 = fma(h1_1.y, f32(extractBits(w1_0[0u], 12u, 4u)), d0);
                    d0 = fma(h1_2.x, f32(extractBits(w1_0[0u], 16u, 4u)), d0);
                    d0 = fma(h1_2.y, f32(extractBits(w1_0[0u], 20u, 4u)), d0);
                    d0 = fma(h1_3.x, f32(extractBits(w1_0[0u], 24u, 4u)), d0);
                    d0 = fma(h1_3.y, f32(extractBits(w1_0[0u], 28u, 4u)), d0);
                    var d1 = 0.0;
                    d1 = fma(h1_4.x, f32(extractBits(w1_0[1u], 0u, 4u)), d1);
                    d1 = fma(h1_4.y, f32(extractBits(w1_0[1u], 4u, 4u)), d1);
                    d1 = fma(h1_5.x, f32(extractBits(w1_0[1u], 8u, 4u)), d1);
                    d1 = fma(h1_5.y, f32(extractBits(w1_0[1u], 12u, 4u)), d1);
                    d1 = fma(h1_6.x, f32(extractBits(w1_0[1u], 16u, 4u)), d1);
                    d1 = fma(h1_6.y, f32(extractBits(w1_0[1u], 20u, 4u)), d1);
                    d1 = fma(h1_7.x, f32(extractBits(w1_0[1u], 24u, 4u)), d1);
                    d1 = fma(h1_7.y, f32(extractBits(w1_0[1u], 28u, 4u)), d1);
                    var d2 = 0.0;
                    d2 = fma(h1_8.x, f32(extractBits(w1_0[2u], 0u, 4u)), d2);
                    d2 = fma(h1_8.y, f32(extractBits(w1_0[2u], 4u, 4u)), d2);
                    d2 = fma(h1_9.x, f32(extractBits(w1_0[2u], 8u, 4u)), d2);
                    d2 = fma(h1_9.y, f32(extractBits(w1_0[2u], 12u, 4u)), d2);
                    d2 = fma(h1_10.x, f32(extractBits(w1_0[2u], 16u, 4u)), d2);
                    d2 = fma(h1_10.y, f32(extractBits(w1_0[2u], 20u, 4u)), d2);
                    d2 = fma(h1_11.x, f32(extractBits(w1_0[2u], 24u, 4u)), d2);
                    d2 = fma(h1_11.y, f32(extractBits(w1_0[2u], 28u, 4u)), d2);
                    var d3 = 0.0;
                    d3 = fma(h1_12.x, f32(extractBits(w1_0[3u], 0u, 4u)), d3);
                    d3 = fma(h1_12.y, f32(extractBits(w1_0[3u], 4u, 4u)), d3);
                    d3 = fma(h1_13.x, f32(extractBits(w1_0[3u], 8u, 4u)), d3);
                    d3 = fma(h1_13.y, f32(extractBits(w1_0[3u], 12u, 4u)), d3);
                    d3 = fma(h1_14.x, f32(extractBits(w1_0[3u], 16u, 4u)), d3);
                    d3 = fma(h1_14.y, f32(extractBits(w1_0[3u], 20u, 4u)), d3);
                    d3 = fma(h1_15.x, f32(extractBits(w1_0[3u], 24u, 4u)), d3);
                    d3 = fma(h1_15.y, f32(extractBits(w1_0[3u], 28u, 4u)), d3);
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
            let ar0_0 = a[ch0 * 4u + 0u];
            let sk0_0 = skip[ch0 * 4u + 0u];
            let gm0_0 = gamma[ch0 * 4u + 0u];
            let ar0_1 = a[ch0 * 4u + 1u];
            let sk0_1 = skip[ch0 * 4u + 1u];
            let gm0_1 = gamma[ch0 * 4u + 1u];
            let ar0_2 = a[ch0 * 4u + 2u];
            let sk0_2 = skip[ch0 * 4u + 2u];
            let gm0_2 = gamma[ch0 * 4u + 2u];
            let ar0_3 = a[ch0 * 4u + 3u];
            let sk0_3 = skip[ch0 * 4u + 3u];
            let gm0_3 = gamma[ch0 * 4u + 3u];
            let kb0 = ch0 * CV / p.block;
            let s0_0 = f32(scales[col0 * p.k_blocks + kb0]);
            {
                let xs0_0 = unpack2x16float(ar0_0[0u]) + unpack2x16float(sk0_0[0u]);
                ss = fma(xs0_0.x, xs0_0.x, fma(xs0_0.y, xs0_0.y, ss));
                let h0_0 = xs0_0 * unpack2x16float(gm0_0[0u]);
                let xs0_1 = unpack2x16float(ar0_0[1u]) + unpack2x16float(sk0_0[1u]);
                ss = fma(xs0_1.x, xs0_1.x, fma(xs0_1.y, xs0_1.y, ss));
                let h0_1 = xs0_1 * unpack2x16float(gm0_0[1u]);
                let xs0_2 = unpack2x16float(ar0_0[2u]) + unpack2x16float(sk0_0[2u]);
                ss = fma(xs0_2.x, xs0_2.x, fma(xs0_2.y, xs0_2.y, ss));
                let h0_2 = xs0_2 * unpack2x16float(gm0_0[2u]);
                let xs0_3 = unpack2x16float(ar0_0[3u]) + unpack2x16float(sk0_0[3u]);
                ss = fma(xs0_3.x, xs0_3.x, fma(xs0_3.y, xs0_3.y, ss));
                let h0_3 = xs0_3 * unpack2x16float(gm0_0[3u]);
                if (writes) {
                    sum_out[ch0 * 4u + 0u] = vec4<u32>(pack2x16float(xs0_0), pack2x16float(xs0_1), pack2x16float(xs0_2), pack2x16float(xs0_3));
                }
                let xs0_4 = unpack2x16float(ar0_1[0u]) + unpack2x16float(sk0_1[0u]);
                ss = fma(xs0_4.x, xs0_4.x, fma(xs0_4.y, xs0_4.y, ss));
                let h0_4 = xs0_4 * unpack2x16float(gm0_1[0u]);
                let xs0_5 = unpack2x16float(ar0_1[1u]) + unpack2x16float(sk0_1[1u]);
                ss = fma(xs0_5.x, xs0_5.x, fma(xs0_5.y, xs0_5.y, ss));
                let h0_5 = xs0_5 * unpack2x16float(gm0_1[1u]);
                let xs0_6 = unpack2x16float(ar0_1[2u]) + unpack2x16float(sk0_1[2u]);
                ss = fma(xs0_6.x, xs0_6.x, fma(xs0_6.y, xs0_6.y, ss));
                let h0_6 = xs0_6 * unpack2x16float(gm0_1[2u]);
                let xs0_7 = unpack2x16float(ar0_1[3u]) + unpack2x16float(sk0_1[3u]);
                ss = fma(xs0_7.x, xs0_7.x, fma(xs0_7.y, xs0_7.y, ss));
                let h0_7 = xs0_7 * unpack2x16float(gm0_1[3u]);
                if (writes) {
                    sum_out[ch0 * 4u + 1u] = vec4<u32>(pack2x16float(xs0_4), pack2x16float(xs0_5), pack2x16float(xs0_6), pack2x16float(xs0_7));
                }
                let xs0_8 = unpack2x16float(ar0_2[0u]) + unpack2x16float(sk0_2[0u]);
                ss = fma(xs0_8.x, xs0_8.x, fma(xs0_8.y, xs0_8.y, ss));
                let h0_8 = xs0_8 * unpack2x16float(gm0_2[0u]);
                let xs0_9 = unpack2x16float(ar0_2[1u]) + unpack2x16float(sk0_2[1u]);
                ss = fma(xs0_9.x, xs0_9.x, fma(xs0_9.y, xs0_9.y, ss));
                let h0_9 = xs0_9 * unpack2x16float(gm0_2[1u]);
                let xs0_10 = unpack2x16float(ar0_2[2u]) + unpack2x16float(sk0_2[2u]);
                ss = fma(xs0_10.x, xs0_10.x, fma(xs0_10.y, xs0_10.y, ss));
                let h0_10 = xs0_10 * unpack2x16float(gm0_2[2u]);
                let xs0_11 = unpack2x16float(ar0_2[3u]) + unpack2x16float(sk0_2[3u]);
                ss = fma(xs0_11.x, xs0_11.x, fma(xs0_11.y, xs0_11.y, ss));
                let h0_11 = xs0_11 * unpack2x16float(gm0_2[3u]);
                if (writes) {
                    sum_out[ch0 * 4u + 2u] = vec4<u32>(pack2x16float(xs0_8), pack2x16float(xs0_9), pack2x16float(xs0_10), pack2x16float(xs0_11));
                }
                let xs0_12 = unpack2x16float(ar0_3[0u]) + unpack2x16float(sk0_3[0u]);
                ss = fma(xs0_12.x, xs0_12.x, fma(xs0_12.y, xs0_12.y, ss));
                let h0_12 = xs0_12 * unpack2x16float(gm0_3[0u]);
                let xs0_13 = unpack2x16float(ar0_3[1u]) + unpack2x16float(sk0_3[1u]);
                ss = fma(xs0_13.x, xs0_13.x, fma(xs0_13.y, xs0_13.y, ss));
                let h0_13 = xs0_13 * unpack2x16float(gm0_3[1u]);
                let xs0_14 = unpack2x16float(ar0_3[2u]) + unpack2x16float(sk0_3[2u]);
                ss = fma(xs0_14.x, xs0_14.x, fma(xs0_14.y, xs0_14.y, ss));
                let h0_14 = xs0_14 * unpack2x16float(gm0_3[2u]);
                let xs0_15 = unpack2x16float(ar0_3[3u]) + unpack2x16float(sk0_3[3u]);
                ss = fma(xs0_15.x, xs0_15.x, fma(xs0_15.y, xs0_15.y, ss));
                let h0_15 = xs0_15 * unpack2x16float(gm0_3[3u]);
                if (writes) {
                    sum_out[ch0 * 4u + 3u] = vec4<u32>(pack2x16float(xs0_12), pack2x16float(xs0_13), pack2x16float(xs0_14), pack2x16float(xs0_15));
                }
                let hs = h0_0 + h0_1 + h0_2 + h0_3 + h0_4 + h0_5 + h0_6 + h0_7 + h0_8 + h0_9 + h0_10 + h0_11 + h0_12 + h0_13 + h0_14 + h0_15;
                let a_sum = hs.x + hs.y;
                {
                    var d0 = 0.0;
                    d0 = fma(h0_0.x, f32(extractBits(w0_0[0u], 0u, 4u)), d0);
                    d0 = fma(h0_0.y, f32(extractBits(w0_0[0u], 4u, 4u)), d0);
                    d0 = fma(h0_1.x, f32(extractBits(w0_0[0u], 8u, 4u)), d0);
                    d0 = fma(h0_1.y, f32(extractBits(w0_0[0u], 12u, 4u)), d0);
                    d0 = fma(h0_2.x, f32(extractBits(w0_0[0u], 16u, 4u)), d0);
                    d0 = fma(h0_2.y, f32(extractBits(w0_0[0u], 20u, 4u)), d0);
                    d0 = fma(h0_3.x, f32(extractBits(w0_0[0u], 24u, 4u)), d0);
                    d0 = fma(h0_3.y, f32(extractBits(w0_0[0u], 28u, 4u)), d0);
                    var d1 = 0.0;
                    d1 = fma(h0_4.x, f32(extractBits(w0_0[1u], 0u, 4u)), d1);
                    d1 = fma(h0_4.y, f32(extractBits(w0_0[1u], 4u, 4u)), d1);
                    d1 = fma(h0_5.x, f32(extractBits(w0_0[1u], 8u, 4u)), d1);
                    d1 = fma(h0_5.y, f32(extractBits(w0_0[1u], 12u, 4u)), d1);
                    d1 = fma(h0_6.x, f32(extractBits(w0_0[1u], 16u, 4u)), d1);
                    d1 = fma(h0_6.y, f32(extractBits(w0_0[1u], 20u, 4u)), d1);
                    d1 = fma(h0_7.x, f32(extractBits(w0_0[1u], 24u, 4u)), d1);
                    d1 = fma(h0_7.y, f32(extractBits(w0_0[1u], 28u, 4u)), d1);
                    var d2 = 0.0;
                    d2 = fma(h0_8.x, f32(extractBits(w0_0[2u], 0u, 4u)), d2);
                    d2 = fma(h0_8.y, f32(extractBits(w0_0[2u], 4u, 4u)), d2);
                    d2 = fma(h0_9.x, f32(extractBits(w0_0[2u], 8u, 4u)), d2);
                    d2 = fma(h0_9.y, f32(extractBits(w0_0[2u], 12u, 4u)), d2);
                    d2 = fma(h0_10.x, f32(extractBits(w0_0[2u], 16u, 4u)), d2);
                    d2 = fma(h0_10.y, f32(extractBits(w0_0[2u], 20u, 4u)), d2);
                    d2 = fma(h0_11.x, f32(extractBits(w0_0[2u], 24u, 4u)), d2);
                    d2 = fma(h0_11.y, f32(extractBits(w0_0[2u], 28u, 4u)), d2);
                    var d3 = 0.0;
                    d3 = fma(h0_12.x, f32(extractBits(w0_0[3u], 0u, 4u)), d3);
                    d3 = fma(h0_12.y, f32(extractBits(w0_0[3u], 4u, 4u)), d3);
                    d3 = fma(h0_13.x, f32(extractBits(w0_0[3u], 8u, 4u)), d3);
                    d3 = fma(h0_13.y, f32(extractBits(w0_0[3u], 12u, 4u)), d3);
                    d3 = fma(h0_14.x, f32(extractBits(w0_0[3u], 16u, 4u)), d3);
                    d3 = fma(h0_14.y, f32(extractBits(w0_0[3u], 20u, 4u)), d3);
                    d3 = fma(h0_15.x, f32(extractBits(w0_0[3u], 24u, 4u)), d3);
                    d3 = fma(h0_15.y, f32(extractBits(w0_0[3u], 28u, 4u)), d3);
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
        y[col] = f16(epilogue(sums[lane], col, col));
    }
}
