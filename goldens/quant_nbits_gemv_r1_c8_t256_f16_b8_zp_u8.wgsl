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

@group(0) @binding(0) var<storage, read> a: array<f16>;
@group(0) @binding(1) var<storage, read> b: array<u32>;
@group(0) @binding(2) var<storage, read> scales: array<f16>;
@group(0) @binding(3) var<storage, read> zero_points: array<u32>;
@group(0) @binding(4) var<storage, read> bias: array<f16>;
// Y's shape: multiplies the result where flags bit 2 says so (a gated product).
@group(0) @binding(5) var<storage, read> gate: array<f16>;
@group(0) @binding(6) var<storage, read_write> y: array<f16>;
@group(0) @binding(7) var<uniform> p: Params;

// Invocations per column, columns per workgroup, rows of A per workgroup, values per packed word.
// Invocations, columns and rows of A per workgroup, values per packed word.
const T: u32 = 256u;
const C: u32 = 8u;
const R: u32 = 1u;
const V: u32 = 4u;
// Invocations that add one column's partials in the first level (T / 32 each).
const L: u32 = 32u;

var<workgroup> w_part: array<f32, 2048>;
var<workgroup> w_sum: array<f32, 256>;

// The zero point of block `kb` of column `n`.
fn zero_point(n: u32, kb: u32) -> f32 {
    let byte = n * p.zp_stride + kb / 1u;
    let shift = 8u * (byte % 4u);
    return f32((zero_points[byte / 4u] >> shift) & 255u);
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
            a0_sum = a0[0] + a0[1] + a0[2] + a0[3];
        }
        {
            let word = b[col0 * p.col_words + w];
            let s = f32(scales[col0 * p.k_blocks + kb]);
            let z = zero_point(col0, kb);
            let q0 = f32(extractBits(word, 0u, 8u));
            let q1 = f32(extractBits(word, 8u, 8u));
            let q2 = f32(extractBits(word, 16u, 8u));
            let q3 = f32(extractBits(word, 24u, 8u));
            var dot0 = 0.0;
            dot0 = fma(a0[0], q0, dot0);
            dot0 = fma(a0[1], q1, dot0);
            dot0 = fma(a0[2], q2, dot0);
            dot0 = fma(a0[3], q3, dot0);
            acc0[0] = fma(s, dot0 - z * a0_sum, acc0[0]);
        }
        {
            let word = b[col1 * p.col_words + w];
            let s = f32(scales[col1 * p.k_blocks + kb]);
            let z = zero_point(col1, kb);
            let q0 = f32(extractBits(word, 0u, 8u));
            let q1 = f32(extractBits(word, 8u, 8u));
            let q2 = f32(extractBits(word, 16u, 8u));
            let q3 = f32(extractBits(word, 24u, 8u));
            var dot0 = 0.0;
            dot0 = fma(a0[0], q0, dot0);
            dot0 = fma(a0[1], q1, dot0);
            dot0 = fma(a0[2], q2, dot0);
            dot0 = fma(a0[3], q3, dot0);
            acc0[1] = fma(s, dot0 - z * a0_sum, acc0[1]);
        }
        {
            let word = b[col2 * p.col_words + w];
            let s = f32(scales[col2 * p.k_blocks + kb]);
            let z = zero_point(col2, kb);
            let q0 = f32(extractBits(word, 0u, 8u));
            let q1 = f32(extractBits(word, 8u, 8u));
            let q2 = f32(extractBits(word, 16u, 8u));
            let q3 = f32(extractBits(word, 24u, 8u));
            var dot0 = 0.0;
            dot0 = fma(a0[0], q0, dot0);
            dot0 = fma(a0[1], q1, dot0);
            dot0 = fma(a0[2], q2, dot0);
            dot0 = fma(a0[3], q3, dot0);
            acc0[2] = fma(s, dot0 - z * a0_sum, acc0[2]);
        }
        {
            let word = b[col3 * p.col_words + w];
            let s = f32(scales[col3 * p.k_blocks + kb]);
            let z = zero_point(col3, kb);
            let q0 = f32(extractBits(word, 0u, 8u));
            let q1 = f32(extractBits(word, 8u, 8u));
            let q2 = f32(extractBits(word, 16u, 8u));
            let q3 = f32(extractBits(word, 24u, 8u));
            var dot0 = 0.0;
            dot0 = fma(a0[0], q0, dot0);
            dot0 = fma(a0[1], q1, dot0);
            dot0 = fma(a0[2], q2, dot0);
            dot0 = fma(a0[3], q3, dot0);
            acc0[3] = fma(s, dot0 - z * a0_sum, acc0[3]);
        }
        {
            let word = b[col4 * p.col_words + w];
            let s = f32(scales[col4 * p.k_blocks + kb]);
            let z = zero_point(col4, kb);
            let q0 = f32(extractBits(word, 0u, 8u));
            let q1 = f32(extractBits(word, 8u, 8u));
            let q2 = f32(extractBits(word, 16u, 8u));
            let q3 = f32(extractBits(word, 24u, 8u));
            var dot0 = 0.0;
            dot0 = fma(a0[0], q0, dot0);
            dot0 = fma(a0[1], q1, dot0);
            dot0 = fma(a0[2], q2, dot0);
            dot0 = fma(a0[3], q3, dot0);
            acc0[4] = fma(s, dot0 - z * a0_sum, acc0[4]);
        }
        {
            let word = b[col5 * p.col_words + w];
            let s = f32(scales[col5 * p.k_blocks + kb]);
            let z = zero_point(col5, kb);
            let q0 = f32(extractBits(word, 0u, 8u));
            let q1 = f32(extractBits(word, 8u, 8u));
            let q2 = f32(extractBits(word, 16u, 8u));
            let q3 = f32(extractBits(word, 24u, 8u));
            var dot0 = 0.0;
            dot0 = fma(a0[0], q0, dot0);
            dot0 = fma(a0[1], q1, dot0);
            dot0 = fma(a0[2], q2, dot0);
            dot0 = fma(a0[3], q3, dot0);
            acc0[5] = fma(s, dot0 - z * a0_sum, acc0[5]);
        }
        {
            let word = b[col6 * p.col_words + w];
            let s = f32(scales[col6 * p.k_blocks + kb]);
            let z = zero_point(col6, kb);
            let q0 = f32(extractBits(word, 0u, 8u));
            let q1 = f32(extractBits(word, 8u, 8u));
            let q2 = f32(extractBits(word, 16u, 8u));
            let q3 = f32(extractBits(word, 24u, 8u));
            var dot0 = 0.0;
            dot0 = fma(a0[0], q0, dot0);
            dot0 = fma(a0[1], q1, dot0);
            dot0 = fma(a0[2], q2, dot0);
            dot0 = fma(a0[3], q3, dot0);
            acc0[6] = fma(s, dot0 - z * a0_sum, acc0[6]);
        }
        {
            let word = b[col7 * p.col_words + w];
            let s = f32(scales[col7 * p.k_blocks + kb]);
            let z = zero_point(col7, kb);
            let q0 = f32(extractBits(word, 0u, 8u));
            let q1 = f32(extractBits(word, 8u, 8u));
            let q2 = f32(extractBits(word, 16u, 8u));
            let q3 = f32(extractBits(word, 24u, 8u));
            var dot0 = 0.0;
            dot0 = fma(a0[0], q0, dot0);
            dot0 = fma(a0[1], q1, dot0);
            dot0 = fma(a0[2], q2, dot0);
            dot0 = fma(a0[3], q3, dot0);
            acc0[7] = fma(s, dot0 - z * a0_sum, acc0[7]);
        }
    }
    if (0u < rows) {
        let v = column_sums(acc0, tid);
        if (tid < C && n0 + tid < p.n) {
            let i = (m0 + 0u) * p.n + n0 + tid;
            y[i] = f16(epilogue(v, i, n0 + tid));
        }
    }
}
