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

// Invocations per column, columns per workgroup, rows of A per workgroup, values per packed word.
const T: u32 = 32u;
const C: u32 = 8u;
const R: u32 = 8u;
const V: u32 = 4u;
// Packed words per invocation and pass (the template unrolls them).
const U: u32 = 8u;

var<workgroup> w_part: array<array<f32, 256>, R>;

// The zero point of block `kb` of column `n`.
fn zero_point(n: u32, kb: u32) -> f32 {
    return f32(zero_points[n * p.k_blocks + kb]);
}
// Adds the products of packed word `word` (values k0.. of a column, dequantised with scale `s`
// and zero point `z`) with row `row` of A; only the last block's last word may run past K (its
// missing values count as zero). Unrolled by the template: every value is a register.
fn dot_word(word: u32, s: f32, z: f32, k0: u32, row: u32) -> f32 {
    let base = row * p.k + k0;
    let kn = min(V, p.k - k0);
    var sum = 0.0;
    sum = fma(select(0.0, f32(a[base + 0u]), 0u < kn), (f32((word >> 0u) & 255u) - z) * s, sum);
    sum = fma(select(0.0, f32(a[base + 1u]), 1u < kn), (f32((word >> 8u) & 255u) - z) * s, sum);
    sum = fma(select(0.0, f32(a[base + 2u]), 2u < kn), (f32((word >> 16u) & 255u) - z) * s, sum);
    sum = fma(select(0.0, f32(a[base + 3u]), 3u < kn), (f32((word >> 24u) & 255u) - z) * s, sum);
    return sum;
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
    let lane = tid % T;
    let n = n0 + tid / T;
    var acc0 = 0.0;
    var acc1 = 0.0;
    var acc2 = 0.0;
    var acc3 = 0.0;
    var acc4 = 0.0;
    var acc5 = 0.0;
    var acc6 = 0.0;
    var acc7 = 0.0;
    // U words per invocation and pass, T apart (each load coalesced), loaded with their scales
    // and zero points before any is used, so U loads per invocation are in flight.
    var words = min(p.col_words, (p.k + V - 1u) / V);
    if (n >= p.n) {
        words = 0u;
    }
    for (var w0 = lane; w0 < words; w0 = w0 + U * T) {
        let w0 = w0 + 0u * T;
        let ok0 = w0 < words;
        let kb0 = min(w0, words - 1u) * V / p.block;
        let word0 = select(0u, b[n * p.col_words + w0], ok0);
        let s0 = select(0.0, f32(scales[n * p.k_blocks + kb0]), ok0);
        let z0 = zero_point(n, kb0);
        let w1 = w0 + 1u * T;
        let ok1 = w1 < words;
        let kb1 = min(w1, words - 1u) * V / p.block;
        let word1 = select(0u, b[n * p.col_words + w1], ok1);
        let s1 = select(0.0, f32(scales[n * p.k_blocks + kb1]), ok1);
        let z1 = zero_point(n, kb1);
        let w2 = w0 + 2u * T;
        let ok2 = w2 < words;
        let kb2 = min(w2, words - 1u) * V / p.block;
        let word2 = select(0u, b[n * p.col_words + w2], ok2);
        let s2 = select(0.0, f32(scales[n * p.k_blocks + kb2]), ok2);
        let z2 = zero_point(n, kb2);
        let w3 = w0 + 3u * T;
        let ok3 = w3 < words;
        let kb3 = min(w3, words - 1u) * V / p.block;
        let word3 = select(0u, b[n * p.col_words + w3], ok3);
        let s3 = select(0.0, f32(scales[n * p.k_blocks + kb3]), ok3);
        let z3 = zero_point(n, kb3);
        let w4 = w0 + 4u * T;
        let ok4 = w4 < words;
        let kb4 = min(w4, words - 1u) * V / p.block;
        let word4 = select(0u, b[n * p.col_words + w4], ok4);
        let s4 = select(0.0, f32(scales[n * p.k_blocks + kb4]), ok4);
        let z4 = zero_point(n, kb4);
        let w5 = w0 + 5u * T;
        let ok5 = w5 < words;
        let kb5 = min(w5, words - 1u) * V / p.block;
        let word5 = select(0u, b[n * p.col_words + w5], ok5);
        let s5 = select(0.0, f32(scales[n * p.k_blocks + kb5]), ok5);
        let z5 = zero_point(n, kb5);
        let w6 = w0 + 6u * T;
        let ok6 = w6 < words;
        let kb6 = min(w6, words - 1u) * V / p.block;
        let word6 = select(0u, b[n * p.col_words + w6], ok6);
        let s6 = select(0.0, f32(scales[n * p.k_blocks + kb6]), ok6);
        let z6 = zero_point(n, kb6);
        let w7 = w0 + 7u * T;
        let ok7 = w7 < words;
        let kb7 = min(w7, words - 1u) * V / p.block;
        let word7 = select(0u, b[n * p.col_words + w7], ok7);
        let s7 = select(0.0, f32(scales[n * p.k_blocks + kb7]), ok7);
        let z7 = zero_point(n, kb7);
        if (ok0) {
            if (0u < rows) {
                acc0 = acc0 + dot_word(word0, s0, z0, w0 * V, m0 + 0u);
            }
            if (1u < rows) {
                acc1 = acc1 + dot_word(word0, s0, z0, w0 * V, m0 + 1u);
            }
            if (2u < rows) {
                acc2 = acc2 + dot_word(word0, s0, z0, w0 * V, m0 + 2u);
            }
            if (3u < rows) {
                acc3 = acc3 + dot_word(word0, s0, z0, w0 * V, m0 + 3u);
            }
            if (4u < rows) {
                acc4 = acc4 + dot_word(word0, s0, z0, w0 * V, m0 + 4u);
            }
            if (5u < rows) {
                acc5 = acc5 + dot_word(word0, s0, z0, w0 * V, m0 + 5u);
            }
            if (6u < rows) {
                acc6 = acc6 + dot_word(word0, s0, z0, w0 * V, m0 + 6u);
            }
            if (7u < rows) {
                acc7 = acc7 + dot_word(word0, s0, z0, w0 * V, m0 + 7u);
            }
        }
        if (ok1) {
            if (0u < rows) {
                acc0 = acc0 + dot_word(word1, s1, z1, w1 * V, m0 + 0u);
            }
            if (1u < rows) {
                acc1 = acc1 + dot_word(word1, s1, z1, w1 * V, m0 + 1u);
            }
            if (2u < rows) {
                acc2 = acc2 + dot_word(word1, s1, z1, w1 * V, m0 + 2u);
            }
            if (3u < rows) {
                acc3 = acc3 + dot_word(word1, s1, z1, w1 * V, m0 + 3u);
            }
            if (4u < rows) {
                acc4 = acc4 + dot_word(word1, s1, z1, w1 * V, m0 + 4u);
            }
            if (5u < rows) {
                acc5 = acc5 + dot_word(word1, s1, z1, w1 * V, m0 + 5u);
            }
            if (6u < rows) {
                acc6 = acc6 + dot_word(word1, s1, z1, w1 * V, m0 + 6u);
            }
            if (7u < rows) {
                acc7 = acc7 + dot_word(word1, s1, z1, w1 * V, m0 + 7u);
            }
        }
        if (ok2) {
            if (0u < rows) {
                acc0 = acc0 + dot_word(word2, s2, z2, w2 * V, m0 + 0u);
            }
            if (1u < rows) {
                acc1 = acc1 + dot_word(word2, s2, z2, w2 * V, m0 + 1u);
            }
            if (2u < rows) {
                acc2 = acc2 + dot_word(word2, s2, z2, w2 * V, m0 + 2u);
            }
            if (3u < rows) {
                acc3 = acc3 + dot_word(word2, s2, z2, w2 * V, m0 + 3u);
            }
            if (4u < rows) {
                acc4 = acc4 + dot_word(word2, s2, z2, w2 * V, m0 + 4u);
            }
            if (5u < rows) {
                acc5 = acc5 + dot_word(word2, s2, z2, w2 * V, m0 + 5u);
            }
            if (6u < rows) {
                acc6 = acc6 + dot_word(word2, s2, z2, w2 * V, m0 + 6u);
            }
            if (7u < rows) {
                acc7 = acc7 + dot_word(word2, s2, z2, w2 * V, m0 + 7u);
            }
        }
        if (ok3) {
            if (0u < rows) {
                acc0 = acc0 + dot_word(word3, s3, z3, w3 * V, m0 + 0u);
            }
            if (1u < rows) {
                acc1 = acc1 + dot_word(word3, s3, z3, w3 * V, m0 + 1u);
            }
            if (2u < rows) {
                acc2 = acc2 + dot_word(word3, s3, z3, w3 * V, m0 + 2u);
            }
            if (3u < rows) {
                acc3 = acc3 + dot_word(word3, s3, z3, w3 * V, m0 + 3u);
            }
            if (4u < rows) {
                acc4 = acc4 + dot_word(word3, s3, z3, w3 * V, m0 + 4u);
            }
            if (5u < rows) {
                acc5 = acc5 + dot_word(word3, s3, z3, w3 * V, m0 + 5u);
            }
            if (6u < rows) {
                acc6 = acc6 + dot_word(word3, s3, z3, w3 * V, m0 + 6u);
            }
            if (7u < rows) {
                acc7 = acc7 + dot_word(word3, s3, z3, w3 * V, m0 + 7u);
            }
        }
        if (ok4) {
            if (0u < rows) {
                acc0 = acc0 + dot_word(word4, s4, z4, w4 * V, m0 + 0u);
            }
            if (1u < rows) {
                acc1 = acc1 + dot_word(word4, s4, z4, w4 * V, m0 + 1u);
            }
            if (2u < rows) {
                acc2 = acc2 + dot_word(word4, s4, z4, w4 * V, m0 + 2u);
            }
            if (3u < rows) {
                acc3 = acc3 + dot_word(word4, s4, z4, w4 * V, m0 + 3u);
            }
            if (4u < rows) {
                acc4 = acc4 + dot_word(word4, s4, z4, w4 * V, m0 + 4u);
            }
            if (5u < rows) {
                acc5 = acc5 + dot_word(word4, s4, z4, w4 * V, m0 + 5u);
            }
            if (6u < rows) {
                acc6 = acc6 + dot_word(word4, s4, z4, w4 * V, m0 + 6u);
            }
            if (7u < rows) {
                acc7 = acc7 + dot_word(word4, s4, z4, w4 * V, m0 + 7u);
            }
        }
        if (ok5) {
            if (0u < rows) {
                acc0 = acc0 + dot_word(word5, s5, z5, w5 * V, m0 + 0u);
            }
            if (1u < rows) {
                acc1 = acc1 + dot_word(word5, s5, z5, w5 * V, m0 + 1u);
            }
            if (2u < rows) {
                acc2 = acc2 + dot_word(word5, s5, z5, w5 * V, m0 + 2u);
            }
            if (3u < rows) {
                acc3 = acc3 + dot_word(word5, s5, z5, w5 * V, m0 + 3u);
            }
            if (4u < rows) {
                acc4 = acc4 + dot_word(word5, s5, z5, w5 * V, m0 + 4u);
            }
            if (5u < rows) {
                acc5 = acc5 + dot_word(word5, s5, z5, w5 * V, m0 + 5u);
            }
            if (6u < rows) {
                acc6 = acc6 + dot_word(word5, s5, z5, w5 * V, m0 + 6u);
            }
            if (7u < rows) {
                acc7 = acc7 + dot_word(word5, s5, z5, w5 * V, m0 + 7u);
            }
        }
        if (ok6) {
            if (0u < rows) {
                acc0 = acc0 + dot_word(word6, s6, z6, w6 * V, m0 + 0u);
            }
            if (1u < rows) {
                acc1 = acc1 + dot_word(word6, s6, z6, w6 * V, m0 + 1u);
            }
            if (2u < rows) {
                acc2 = acc2 + dot_word(word6, s6, z6, w6 * V, m0 + 2u);
            }
            if (3u < rows) {
                acc3 = acc3 + dot_word(word6, s6, z6, w6 * V, m0 + 3u);
            }
            if (4u < rows) {
                acc4 = acc4 + dot_word(word6, s6, z6, w6 * V, m0 + 4u);
            }
            if (5u < rows) {
                acc5 = acc5 + dot_word(word6, s6, z6, w6 * V, m0 + 5u);
            }
            if (6u < rows) {
                acc6 = acc6 + dot_word(word6, s6, z6, w6 * V, m0 + 6u);
            }
            if (7u < rows) {
                acc7 = acc7 + dot_word(word6, s6, z6, w6 * V, m0 + 7u);
            }
        }
        if (ok7) {
            if (0u < rows) {
                acc0 = acc0 + dot_word(word7, s7, z7, w7 * V, m0 + 0u);
            }
            if (1u < rows) {
                acc1 = acc1 + dot_word(word7, s7, z7, w7 * V, m0 + 1u);
            }
            if (2u < rows) {
                acc2 = acc2 + dot_word(word7, s7, z7, w7 * V, m0 + 2u);
            }
            if (3u < rows) {
                acc3 = acc3 + dot_word(word7, s7, z7, w7 * V, m0 + 3u);
            }
            if (4u < rows) {
                acc4 = acc4 + dot_word(word7, s7, z7, w7 * V, m0 + 4u);
            }
            if (5u < rows) {
                acc5 = acc5 + dot_word(word7, s7, z7, w7 * V, m0 + 5u);
            }
            if (6u < rows) {
                acc6 = acc6 + dot_word(word7, s7, z7, w7 * V, m0 + 6u);
            }
            if (7u < rows) {
                acc7 = acc7 + dot_word(word7, s7, z7, w7 * V, m0 + 7u);
            }
        }
    }
    w_part[0][tid] = acc0;
    w_part[1][tid] = acc1;
    w_part[2][tid] = acc2;
    w_part[3][tid] = acc3;
    w_part[4][tid] = acc4;
    w_part[5][tid] = acc5;
    w_part[6][tid] = acc6;
    w_part[7][tid] = acc7;
    workgroupBarrier();
    // Invocation r·C + c adds the T partials of column n0 + c, row m0 + r.
    let c = tid % C;
    let r = tid / C;
    if (r < rows && n0 + c < p.n) {
        var v = 0.0;
        for (var l = 0u; l < T; l = l + 1u) {
            v = v + w_part[r][c * T + l];
        }
        if ((p.flags & 1u) != 0u) {
            v = v + f32(bias[n0 + c]);
        }
        y[(m0 + r) * p.n + n0 + c] = f32(v);
    }
}
