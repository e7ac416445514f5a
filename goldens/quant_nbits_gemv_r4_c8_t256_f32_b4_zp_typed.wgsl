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

// Invocations per column, columns per workgroup, rows of A per workgroup, values per packed word.
// Invocations, columns and rows of A per workgroup, values per packed word.
const T: u32 = 256u;
const C: u32 = 8u;
const R: u32 = 4u;
const V: u32 = 8u;
// Invocations that add one column's partials in the first level (T / 32 each).
const L: u32 = 32u;

var<workgroup> w_part: array<f32, 2048>;
var<workgroup> w_sum: array<f32, 256>;

// The zero point of block `kb` of column `n`.
fn zero_point(n: u32, kb: u32) -> f32 {
    return f32(zero_points[n * p.k_blocks + kb]);
}

// The sum over invocations of `x` (each invocation's partial for column c) for every column:
// meaningful in invocations c < C.
fn column_sums(x: array<f32, C>, tid: u32) -> f32 {
    workgroupBarrier();
    for (var c = 0u; c < C; c = c + 1u) {
        w_part[c * T + tid] = x[c];
    }
    workgroupBarrier();
    let c = tid / L;
    let part = tid % L;
    if (c < C) {
        var v = 0.0;
        for (var i = 0u; i < T / L; i = i + 1u) {
            v = v + w_part[c * T + part * (T / L) + i];
        }
        w_sum[c * L + part] = v;
    }
    workgroupBarrier();
    var total = 0.0;
    if (tid < C) {
        for (var i = 0u; i < L; i = i + 1u) {
            total = total + w_sum[tid * L + i];
        }
    }
    return total;
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
    let col_groups = (p.n + C - 1u) / C;
    let n0 = (g % col_groups) * C;
    let m0 = (g / col_groups) * R;
    if (m0 >= p.m) {
        return;
    }
    let rows = min(R, p.m - m0);
    // Columns past N repeat the last one (their sums are not stored).
    let col0 = min(n0 + 0u, p.n - 1u);
    let col1 = min(n0 + 1u, p.n - 1u);
    let col2 = min(n0 + 2u, p.n - 1u);
    let col3 = min(n0 + 3u, p.n - 1u);
    let col4 = min(n0 + 4u, p.n - 1u);
    let col5 = min(n0 + 5u, p.n - 1u);
    let col6 = min(n0 + 6u, p.n - 1u);
    let col7 = min(n0 + 7u, p.n - 1u);
    var acc0 = array<f32, C>(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    var acc1 = array<f32, C>(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    var acc2 = array<f32, C>(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    var acc3 = array<f32, C>(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    let words = min(p.col_words, (p.k + V - 1u) / V);
    for (var w = tid; w < words; w = w + T) {
        let k0 = w * V;
        let kn = min(V, p.k - k0);
        let kb = k0 / p.block;
        // The word's values of A, once for every column (past K they count as zero), and their
        // sum: Σ a·(q − z)·s = s·(Σ a·q − z·Σ a).
        var a0: array<f32, V>;
        var a0_sum = 0.0;
        if (0u < rows) {
            let base = (m0 + 0u) * p.k + k0;
            a0[0] = select(0.0, f32(a[base + min(0u, kn - 1u)]), 0u < kn);
            a0[1] = select(0.0, f32(a[base + min(1u, kn - 1u)]), 1u < kn);
            a0[2] = select(0.0, f32(a[base + min(2u, kn - 1u)]), 2u < kn);
            a0[3] = select(0.0, f32(a[base + min(3u, kn - 1u)]), 3u < kn);
            a0[4] = select(0.0, f32(a[base + min(4u, kn - 1u)]), 4u < kn);
            a0[5] = select(0.0, f32(a[base + min(5u, kn - 1u)]), 5u < kn);
            a0[6] = select(0.0, f32(a[base + min(6u, kn - 1u)]), 6u < kn);
            a0[7] = select(0.0, f32(a[base + min(7u, kn - 1u)]), 7u < kn);
            a0_sum = a0[0] + a0[1] + a0[2] + a0[3] + a0[4] + a0[5] + a0[6] + a0[7];
        }
        var a1: array<f32, V>;
        var a1_sum = 0.0;
        if (1u < rows) {
            let base = (m0 + 1u) * p.k + k0;
            a1[0] = select(0.0, f32(a[base + min(0u, kn - 1u)]), 0u < kn);
            a1[1] = select(0.0, f32(a[base + min(1u, kn - 1u)]), 1u < kn);
            a1[2] = select(0.0, f32(a[base + min(2u, kn - 1u)]), 2u < kn);
            a1[3] = select(0.0, f32(a[base + min(3u, kn - 1u)]), 3u < kn);
            a1[4] = select(0.0, f32(a[base + min(4u, kn - 1u)]), 4u < kn);
            a1[5] = select(0.0, f32(a[base + min(5u, kn - 1u)]), 5u < kn);
            a1[6] = select(0.0, f32(a[base + min(6u, kn - 1u)]), 6u < kn);
            a1[7] = select(0.0, f32(a[base + min(7u, kn - 1u)]), 7u < kn);
            a1_sum = a1[0] + a1[1] + a1[2] + a1[3] + a1[4] + a1[5] + a1[6] + a1[7];
        }
        var a2: array<f32, V>;
        var a2_sum = 0.0;
        if (2u < rows) {
            let base = (m0 + 2u) * p.k + k0;
            a2[0] = select(0.0, f32(a[base + min(0u, kn - 1u)]), 0u < kn);
            a2[1] = select(0.0, f32(a[base + min(1u, kn - 1u)]), 1u < kn);
            a2[2] = select(0.0, f32(a[base + min(2u, kn - 1u)]), 2u < kn);
            a2[3] = select(0.0, f32(a[base + min(3u, kn - 1u)]), 3u < kn);
            a2[4] = select(0.0, f32(a[base + min(4u, kn - 1u)]), 4u < kn);
            a2[5] = select(0.0, f32(a[base + min(5u, kn - 1u)]), 5u < kn);
            a2[6] = select(0.0, f32(a[base + min(6u, kn - 1u)]), 6u < kn);
            a2[7] = select(0.0, f32(a[base + min(7u, kn - 1u)]), 7u < kn);
            a2_sum = a2[0] + a2[1] + a2[2] + a2[3] + a2[4] + a2[5] + a2[6] + a2[7];
        }
        var a3: array<f32, V>;
        var a3_sum = 0.0;
        if (3u < rows) {
            let base = (m0 + 3u) * p.k + k0;
            a3[0] = select(0.0, f32(a[base + min(0u, kn - 1u)]), 0u < kn);
            a3[1] = select(0.0, f32(a[base + min(1u, kn - 1u)]), 1u < kn);
            a3[2] = select(0.0, f32(a[base + min(2u, kn - 1u)]), 2u < kn);
            a3[3] = select(0.0, f32(a[base + min(3u, kn - 1u)]), 3u < kn);
            a3[4] = select(0.0, f32(a[base + min(4u, kn - 1u)]), 4u < kn);
            a3[5] = select(0.0, f32(a[base + min(5u, kn - 1u)]), 5u < kn);
            a3[6] = select(0.0, f32(a[base + min(6u, kn - 1u)]), 6u < kn);
            a3[7] = select(0.0, f32(a[base + min(7u, kn - 1u)]), 7u < kn);
            a3_sum = a3[0] + a3[1] + a3[2] + a3[3] + a3[4] + a3[5] + a3[6] + a3[7];
        }
        {
            let word = b[col0 * p.col_words + w];
            let s = f32(scales[col0 * p.k_blocks + kb]);
            let z = zero_point(col0, kb);
            let q0 = f32(extractBits(word, 0u, 4u));
            let q1 = f32(extractBits(word, 4u, 4u));
            let q2 = f32(extractBits(word, 8u, 4u));
            let q3 = f32(extractBits(word, 12u, 4u));
            let q4 = f32(extractBits(word, 16u, 4u));
            let q5 = f32(extractBits(word, 20u, 4u));
            let q6 = f32(extractBits(word, 24u, 4u));
            let q7 = f32(extractBits(word, 28u, 4u));
            var dot0 = 0.0;
            dot0 = fma(a0[0], q0, dot0);
            dot0 = fma(a0[1], q1, dot0);
            dot0 = fma(a0[2], q2, dot0);
            dot0 = fma(a0[3], q3, dot0);
            dot0 = fma(a0[4], q4, dot0);
            dot0 = fma(a0[5], q5, dot0);
            dot0 = fma(a0[6], q6, dot0);
            dot0 = fma(a0[7], q7, dot0);
            acc0[0] = fma(s, dot0 - z * a0_sum, acc0[0]);
            var dot1 = 0.0;
            dot1 = fma(a1[0], q0, dot1);
            dot1 = fma(a1[1], q1, dot1);
            dot1 = fma(a1[2], q2, dot1);
            dot1 = fma(a1[3], q3, dot1);
            dot1 = fma(a1[4], q4, dot1);
            dot1 = fma(a1[5], q5, dot1);
            dot1 = fma(a1[6], q6, dot1);
            dot1 = fma(a1[7], q7, dot1);
            acc1[0] = fma(s, dot1 - z * a1_sum, acc1[0]);
            var dot2 = 0.0;
            dot2 = fma(a2[0], q0, dot2);
            dot2 = fma(a2[1], q1, dot2);
            dot2 = fma(a2[2], q2, dot2);
            dot2 = fma(a2[3], q3, dot2);
            dot2 = fma(a2[4], q4, dot2);
            dot2 = fma(a2[5], q5, dot2);
            dot2 = fma(a2[6], q6, dot2);
            dot2 = fma(a2[7], q7, dot2);
            acc2[0] = fma(s, dot2 - z * a2_sum, acc2[0]);
            var dot3 = 0.0;
            dot3 = fma(a3[0], q0, dot3);
            dot3 = fma(a3[1], q1, dot3);
            dot3 = fma(a3[2], q2, dot3);
            dot3 = fma(a3[3], q3, dot3);
            dot3 = fma(a3[4], q4, dot3);
            dot3 = fma(a3[5], q5, dot3);
            dot3 = fma(a3[6], q6, dot3);
            dot3 = fma(a3[7], q7, dot3);
            acc3[0] = fma(s, dot3 - z * a3_sum, acc3[0]);
        }
        {
            let word = b[col1 * p.col_words + w];
            let s = f32(scales[col1 * p.k_blocks + kb]);
            let z = zero_point(col1, kb);
            let q0 = f32(extractBits(word, 0u, 4u));
            let q1 = f32(extractBits(word, 4u, 4u));
            let q2 = f32(extractBits(word, 8u, 4u));
            let q3 = f32(extractBits(word, 12u, 4u));
            let q4 = f32(extractBits(word, 16u, 4u));
            let q5 = f32(extractBits(word, 20u, 4u));
            let q6 = f32(extractBits(word, 24u, 4u));
            let q7 = f32(extractBits(word, 28u, 4u));
            var dot0 = 0.0;
            dot0 = fma(a0[0], q0, dot0);
            dot0 = fma(a0[1], q1, dot0);
            dot0 = fma(a0[2], q2, dot0);
            dot0 = fma(a0[3], q3, dot0);
            dot0 = fma(a0[4], q4, dot0);
            dot0 = fma(a0[5], q5, dot0);
            dot0 = fma(a0[6], q6, dot0);
            dot0 = fma(a0[7], q7, dot0);
            acc0[1] = fma(s, dot0 - z * a0_sum, acc0[1]);
            var dot1 = 0.0;
            dot1 = fma(a1[0], q0, dot1);
            dot1 = fma(a1[1], q1, dot1);
            dot1 = fma(a1[2], q2, dot1);
            dot1 = fma(a1[3], q3, dot1);
            dot1 = fma(a1[4], q4, dot1);
            dot1 = fma(a1[5], q5, dot1);
            dot1 = fma(a1[6], q6, dot1);
            dot1 = fma(a1[7], q7, dot1);
            acc1[1] = fma(s, dot1 - z * a1_sum, acc1[1]);
            var dot2 = 0.0;
            dot2 = fma(a2[0], q0, dot2);
            dot2 = fma(a2[1], q1, dot2);
            dot2 = fma(a2[2], q2, dot2);
            dot2 = fma(a2[3], q3, dot2);
            dot2 = fma(a2[4], q4, dot2);
            dot2 = fma(a2[5], q5, dot2);
            dot2 = fma(a2[6], q6, dot2);
            dot2 = fma(a2[7], q7, dot2);
            acc2[1] = fma(s, dot2 - z * a2_sum, acc2[1]);
            var dot3 = 0.0;
            dot3 = fma(a3[0], q0, dot3);
            dot3 = fma(a3[1], q1, dot3);
            dot3 = fma(a3[2], q2, dot3);
            dot3 = fma(a3[3], q3, dot3);
            dot3 = fma(a3[4], q4, dot3);
            dot3 = fma(a3[5], q5, dot3);
            dot3 = fma(a3[6], q6, dot3);
            dot3 = fma(a3[7], q7, dot3);
            acc3[1] = fma(s, dot3 - z * a3_sum, acc3[1]);
        }
        {
            let word = b[col2 * p.col_words + w];
            let s = f32(scales[col2 * p.k_blocks + kb]);
            let z = zero_point(col2, kb);
            let q0 = f32(extractBits(word, 0u, 4u));
            let q1 = f32(extractBits(word, 4u, 4u));
            let q2 = f32(extractBits(word, 8u, 4u));
            let q3 = f32(extractBits(word, 12u, 4u));
            let q4 = f32(extractBits(word, 16u, 4u));
            let q5 = f32(extractBits(word, 20u, 4u));
            let q6 = f32(extractBits(word, 24u, 4u));
            let q7 = f32(extractBits(word, 28u, 4u));
            var dot0 = 0.0;
            dot0 = fma(a0[0], q0, dot0);
            dot0 = fma(a0[1], q1, dot0);
            dot0 = fma(a0[2], q2, dot0);
            dot0 = fma(a0[3], q3, dot0);
            dot0 = fma(a0[4], q4, dot0);
            dot0 = fma(a0[5], q5, dot0);
            dot0 = fma(a0[6], q6, dot0);
            dot0 = fma(a0[7], q7, dot0);
            acc0[2] = fma(s, dot0 - z * a0_sum, acc0[2]);
            var dot1 = 0.0;
            dot1 = fma(a1[0], q0, dot1);
            dot1 = fma(a1[1], q1, dot1);
            dot1 = fma(a1[2], q2, dot1);
            dot1 = fma(a1[3], q3, dot1);
            dot1 = fma(a1[4], q4, dot1);
            dot1 = fma(a1[5], q5, dot1);
            dot1 = fma(a1[6], q6, dot1);
            dot1 = fma(a1[7], q7, dot1);
            acc1[2] = fma(s, dot1 - z * a1_sum, acc1[2]);
            var dot2 = 0.0;
            dot2 = fma(a2[0], q0, dot2);
            dot2 = fma(a2[1], q1, dot2);
            dot2 = fma(a2[2], q2, dot2);
            dot2 = fma(a2[3], q3, dot2);
            dot2 = fma(a2[4], q4, dot2);
            dot2 = fma(a2[5], q5, dot2);
            dot2 = fma(a2[6], q6, dot2);
            dot2 = fma(a2[7], q7, dot2);
            acc2[2] = fma(s, dot2 - z * a2_sum, acc2[2]);
            var dot3 = 0.0;
            dot3 = fma(a3[0], q0, dot3);
            dot3 = fma(a3[1], q1, dot3);
            dot3 = fma(a3[2], q2, dot3);
            dot3 = fma(a3[3], q3, dot3);
            dot3 = fma(a3[4], q4, dot3);
            dot3 = fma(a3[5], q5, dot3);
            dot3 = fma(a3[6], q6, dot3);
            dot3 = fma(a3[7], q7, dot3);
            acc3[2] = fma(s, dot3 - z * a3_sum, acc3[2]);
        }
        {
            let word = b[col3 * p.col_words + w];
            let s = f32(scales[col3 * p.k_blocks + kb]);
            let z = zero_point(col3, kb);
            let q0 = f32(extractBits(word, 0u, 4u));
            let q1 = f32(extractBits(word, 4u, 4u));
            let q2 = f32(extractBits(word, 8u, 4u));
            let q3 = f32(extractBits(word, 12u, 4u));
            let q4 = f32(extractBits(word, 16u, 4u));
            let q5 = f32(extractBits(word, 20u, 4u));
            let q6 = f32(extractBits(word, 24u, 4u));
            let q7 = f32(extractBits(word, 28u, 4u));
            var dot0 = 0.0;
            dot0 = fma(a0[0], q0, dot0);
            dot0 = fma(a0[1], q1, dot0);
            dot0 = fma(a0[2], q2, dot0);
            dot0 = fma(a0[3], q3, dot0);
            dot0 = fma(a0[4], q4, dot0);
            dot0 = fma(a0[5], q5, dot0);
            dot0 = fma(a0[6], q6, dot0);
            dot0 = fma(a0[7], q7, dot0);
            acc0[3] = fma(s, dot0 - z * a0_sum, acc0[3]);
            var dot1 = 0.0;
            dot1 = fma(a1[0], q0, dot1);
            dot1 = fma(a1[1], q1, dot1);
            dot1 = fma(a1[2], q2, dot1);
            dot1 = fma(a1[3], q3, dot1);
            dot1 = fma(a1[4], q4, dot1);
            dot1 = fma(a1[5], q5, dot1);
            dot1 = fma(a1[6], q6, dot1);
            dot1 = fma(a1[7], q7, dot1);
            acc1[3] = fma(s, dot1 - z * a1_sum, acc1[3]);
            var dot2 = 0.0;
            dot2 = fma(a2[0], q0, dot2);
            dot2 = fma(a2[1], q1, dot2);
            dot2 = fma(a2[2], q2, dot2);
            dot2 = fma(a2[3], q3, dot2);
            dot2 = fma(a2[4], q4, dot2);
            dot2 = fma(a2[5], q5, dot2);
            dot2 = fma(a2[6], q6, dot2);
            dot2 = fma(a2[7], q7, dot2);
            acc2[3] = fma(s, dot2 - z * a2_sum, acc2[3]);
            var dot3 = 0.0;
            dot3 = fma(a3[0], q0, dot3);
            dot3 = fma(a3[1], q1, dot3);
            dot3 = fma(a3[2], q2, dot3);
            dot3 = fma(a3[3], q3, dot3);
            dot3 = fma(a3[4], q4, dot3);
            dot3 = fma(a3[5], q5, dot3);
            dot3 = fma(a3[6], q6, dot3);
            dot3 = fma(a3[7], q7, dot3);
            acc3[3] = fma(s, dot3 - z * a3_sum, acc3[3]);
        }
        {
            let word = b[col4 * p.col_words + w];
            let s = f32(scales[col4 * p.k_blocks + kb]);
            let z = zero_point(col4, kb);
            let q0 = f32(extractBits(word, 0u, 4u));
            let q1 = f32(extractBits(word, 4u, 4u));
            let q2 = f32(extractBits(word, 8u, 4u));
            let q3 = f32(extractBits(word, 12u, 4u));
            let q4 = f32(extractBits(word, 16u, 4u));
            let q5 = f32(extractBits(word, 20u, 4u));
            let q6 = f32(extractBits(word, 24u, 4u));
            let q7 = f32(extractBits(word, 28u, 4u));
            var dot0 = 0.0;
            dot0 = fma(a0[0], q0, dot0);
            dot0 = fma(a0[1], q1, dot0);
            dot0 = fma(a0[2], q2, dot0);
            dot0 = fma(a0[3], q3, dot0);
            dot0 = fma(a0[4], q4, dot0);
            dot0 = fma(a0[5], q5, dot0);
            dot0 = fma(a0[6], q6, dot0);
            dot0 = fma(a0[7], q7, dot0);
            acc0[4] = fma(s, dot0 - z * a0_sum, acc0[4]);
            var dot1 = 0.0;
            dot1 = fma(a1[0], q0, dot1);
            dot1 = fma(a1[1], q1, dot1);
            dot1 = fma(a1[2], q2, dot1);
            dot1 = fma(a1[3], q3, dot1);
            dot1 = fma(a1[4], q4, dot1);
            dot1 = fma(a1[5], q5, dot1);
            dot1 = fma(a1[6], q6, dot1);
            dot1 = fma(a1[7], q7, dot1);
            acc1[4] = fma(s, dot1 - z * a1_sum, acc1[4]);
            var dot2 = 0.0;
            dot2 = fma(a2[0], q0, dot2);
            dot2 = fma(a2[1], q1, dot2);
            dot2 = fma(a2[2], q2, dot2);
            dot2 = fma(a2[3], q3, dot2);
            dot2 = fma(a2[4], q4, dot2);
            dot2 = fma(a2[5], q5, dot2);
            dot2 = fma(a2[6], q6, dot2);
            dot2 = fma(a2[7], q7, dot2);
            acc2[4] = fma(s, dot2 - z * a2_sum, acc2[4]);
            var dot3 = 0.0;
            dot3 = fma(a3[0], q0, dot3);
            dot3 = fma(a3[1], q1, dot3);
            dot3 = fma(a3[2], q2, dot3);
            dot3 = fma(a3[3], q3, dot3);
            dot3 = fma(a3[4], q4, dot3);
            dot3 = fma(a3[5], q5, dot3);
            dot3 = fma(a3[6], q6, dot3);
            dot3 = fma(a3[7], q7, dot3);
            acc3[4] = fma(s, dot3 - z * a3_sum, acc3[4]);
        }
        {
            let word = b[col5 * p.col_words + w];
            let s = f32(scales[col5 * p.k_blocks + kb]);
            let z = zero_point(col5, kb);
            let q0 = f32(extractBits(word, 0u, 4u));
            let q1 = f32(extractBits(word, 4u, 4u));
            let q2 = f32(extractBits(word, 8u, 4u));
            let q3 = f32(extractBits(word, 12u, 4u));
            let q4 = f32(extractBits(word, 16u, 4u));
            let q5 = f32(extractBits(word, 20u, 4u));
            let q6 = f32(extractBits(word, 24u, 4u));
            let q7 = f32(extractBits(word, 28u, 4u));
            var dot0 = 0.0;
            dot0 = fma(a0[0], q0, dot0);
            dot0 = fma(a0[1], q1, dot0);
            dot0 = fma(a0[2], q2, dot0);
            dot0 = fma(a0[3], q3, dot0);
            dot0 = fma(a0[4], q4, dot0);
            dot0 = fma(a0[5], q5, dot0);
            dot0 = fma(a0[6], q6, dot0);
            dot0 = fma(a0[7], q7, dot0);
            acc0[5] = fma(s, dot0 - z * a0_sum, acc0[5]);
            var dot1 = 0.0;
            dot1 = fma(a1[0], q0, dot1);
            dot1 = fma(a1[1], q1, dot1);
            dot1 = fma(a1[2], q2, dot1);
            dot1 = fma(a1[3], q3, dot1);
            dot1 = fma(a1[4], q4, dot1);
            dot1 = fma(a1[5], q5, dot1);
            dot1 = fma(a1[6], q6, dot1);
            dot1 = fma(a1[7], q7, dot1);
            acc1[5] = fma(s, dot1 - z * a1_sum, acc1[5]);
            var dot2 = 0.0;
            dot2 = fma(a2[0], q0, dot2);
            dot2 = fma(a2[1], q1, dot2);
            dot2 = fma(a2[2], q2, dot2);
            dot2 = fma(a2[3], q3, dot2);
            dot2 = fma(a2[4], q4, dot2);
            dot2 = fma(a2[5], q5, dot2);
            dot2 = fma(a2[6], q6, dot2);
            dot2 = fma(a2[7], q7, dot2);
            acc2[5] = fma(s, dot2 - z * a2_sum, acc2[5]);
            var dot3 = 0.0;
            dot3 = fma(a3[0], q0, dot3);
            dot3 = fma(a3[1], q1, dot3);
            dot3 = fma(a3[2], q2, dot3);
            dot3 = fma(a3[3], q3, dot3);
            dot3 = fma(a3[4], q4, dot3);
            dot3 = fma(a3[5], q5, dot3);
            dot3 = fma(a3[6], q6, dot3);
            dot3 = fma(a3[7], q7, dot3);
            acc3[5] = fma(s, dot3 - z * a3_sum, acc3[5]);
        }
        {
            let word = b[col6 * p.col_words + w];
            let s = f32(scales[col6 * p.k_blocks + kb]);
            let z = zero_point(col6, kb);
            let q0 = f32(extractBits(word, 0u, 4u));
            let q1 = f32(extractBits(word, 4u, 4u));
            let q2 = f32(extractBits(word, 8u, 4u));
            let q3 = f32(extractBits(word, 12u, 4u));
            let q4 = f32(extractBits(word, 16u, 4u));
            let q5 = f32(extractBits(word, 20u, 4u));
            let q6 = f32(extractBits(word, 24u, 4u));
            let q7 = f32(extractBits(word, 28u, 4u));
            var dot0 = 0.0;
            dot0 = fma(a0[0], q0, dot0);
            dot0 = fma(a0[1], q1, dot0);
            dot0 = fma(a0[2], q2, dot0);
            dot0 = fma(a0[3], q3, dot0);
            dot0 = fma(a0[4], q4, dot0);
            dot0 = fma(a0[5], q5, dot0);
            dot0 = fma(a0[6], q6, dot0);
            dot0 = fma(a0[7], q7, dot0);
            acc0[6] = fma(s, dot0 - z * a0_sum, acc0[6]);
            var dot1 = 0.0;
            dot1 = fma(a1[0], q0, dot1);
            dot1 = fma(a1[1], q1, dot1);
            dot1 = fma(a1[2], q2, dot1);
            dot1 = fma(a1[3], q3, dot1);
            dot1 = fma(a1[4], q4, dot1);
            dot1 = fma(a1[5], q5, dot1);
            dot1 = fma(a1[6], q6, dot1);
            dot1 = fma(a1[7], q7, dot1);
            acc1[6] = fma(s, dot1 - z * a1_sum, acc1[6]);
            var dot2 = 0.0;
            dot2 = fma(a2[0], q0, dot2);
            dot2 = fma(a2[1], q1, dot2);
            dot2 = fma(a2[2], q2, dot2);
            dot2 = fma(a2[3], q3, dot2);
            dot2 = fma(a2[4], q4, dot2);
            dot2 = fma(a2[5], q5, dot2);
            dot2 = fma(a2[6], q6, dot2);
            dot2 = fma(a2[7], q7, dot2);
            acc2[6] = fma(s, dot2 - z * a2_sum, acc2[6]);
            var dot3 = 0.0;
            dot3 = fma(a3[0], q0, dot3);
            dot3 = fma(a3[1], q1, dot3);
            dot3 = fma(a3[2], q2, dot3);
            dot3 = fma(a3[3], q3, dot3);
            dot3 = fma(a3[4], q4, dot3);
            dot3 = fma(a3[5], q5, dot3);
            dot3 = fma(a3[6], q6, dot3);
            dot3 = fma(a3[7], q7, dot3);
            acc3[6] = fma(s, dot3 - z * a3_sum, acc3[6]);
        }
        {
            let word = b[col7 * p.col_words + w];
            let s = f32(scales[col7 * p.k_blocks + kb]);
            let z = zero_point(col7, kb);
            let q0 = f32(extractBits(word, 0u, 4u));
            let q1 = f32(extractBits(word, 4u, 4u));
            let q2 = f32(extractBits(word, 8u, 4u));
            let q3 = f32(extractBits(word, 12u, 4u));
            let q4 = f32(extractBits(word, 16u, 4u));
            let q5 = f32(extractBits(word, 20u, 4u));
            let q6 = f32(extractBits(word, 24u, 4u));
            let q7 = f32(extractBits(word, 28u, 4u));
            var dot0 = 0.0;
            dot0 = fma(a0[0], q0, dot0);
            dot0 = fma(a0[1], q1, dot0);
            dot0 = fma(a0[2], q2, dot0);
            dot0 = fma(a0[3], q3, dot0);
            dot0 = fma(a0[4], q4, dot0);
            dot0 = fma(a0[5], q5, dot0);
            dot0 = fma(a0[6], q6, dot0);
            dot0 = fma(a0[7], q7, dot0);
            acc0[7] = fma(s, dot0 - z * a0_sum, acc0[7]);
            var dot1 = 0.0;
            dot1 = fma(a1[0], q0, dot1);
            dot1 = fma(a1[1], q1, dot1);
            dot1 = fma(a1[2], q2, dot1);
            dot1 = fma(a1[3], q3, dot1);
            dot1 = fma(a1[4], q4, dot1);
            dot1 = fma(a1[5], q5, dot1);
            dot1 = fma(a1[6], q6, dot1);
            dot1 = fma(a1[7], q7, dot1);
            acc1[7] = fma(s, dot1 - z * a1_sum, acc1[7]);
            var dot2 = 0.0;
            dot2 = fma(a2[0], q0, dot2);
            dot2 = fma(a2[1], q1, dot2);
            dot2 = fma(a2[2], q2, dot2);
            dot2 = fma(a2[3], q3, dot2);
            dot2 = fma(a2[4], q4, dot2);
            dot2 = fma(a2[5], q5, dot2);
            dot2 = fma(a2[6], q6, dot2);
            dot2 = fma(a2[7], q7, dot2);
            acc2[7] = fma(s, dot2 - z * a2_sum, acc2[7]);
            var dot3 = 0.0;
            dot3 = fma(a3[0], q0, dot3);
            dot3 = fma(a3[1], q1, dot3);
            dot3 = fma(a3[2], q2, dot3);
            dot3 = fma(a3[3], q3, dot3);
            dot3 = fma(a3[4], q4, dot3);
            dot3 = fma(a3[5], q5, dot3);
            dot3 = fma(a3[6], q6, dot3);
            dot3 = fma(a3[7], q7, dot3);
            acc3[7] = fma(s, dot3 - z * a3_sum, acc3[7]);
        }
    }
    if (0u < rows) {
        let v = column_sums(acc0, tid);
        if (tid < C && n0 + tid < p.n) {
            let i = (m0 + 0u) * p.n + n0 + tid;
            y[i] = f32(epilogue(v, i, n0 + tid));
        }
    }
    if (1u < rows) {
        let v = column_sums(acc1, tid);
        if (tid < C && n0 + tid < p.n) {
            let i = (m0 + 1u) * p.n + n0 + tid;
            y[i] = f32(epilogue(v, i, n0 + tid));
        }
    }
    if (2u < rows) {
        let v = column_sums(acc2, tid);
        if (tid < C && n0 + tid < p.n) {
            let i = (m0 + 2u) * p.n + n0 + tid;
            y[i] = f32(epilogue(v, i, n0 + tid));
        }
    }
    if (3u < rows) {
        let v = column_sums(acc3, tid);
        if (tid < C && n0 + tid < p.n) {
            let i = (m0 + 3u) * p.n + n0 + tid;
            y[i] = f32(epilogue(v, i, n0 + tid));
        }
    }
}
