struct Params {
    sq: u32,
    skv: u32,
    heads: u32,
    group: u32,
    q_stride: vec4<u32>,
    k_stride: vec4<u32>,
    v_stride: vec4<u32>,
    o_stride: vec4<u32>,
    m_stride: vec4<u32>,
    scale: f32,
    causal: u32,
    causal_offset: i32,
    // Scaled scores become softcap · tanh(s / softcap) where this is positive.
    softcap: f32,
    // Keys per chunk (a multiple of 16).
    chunk: u32,
    // Workgroups with work: batch · K/V heads · row blocks · splits.
    count: u32,
    splits: u32,
    // Query rows per K/V head (group · sq), and blocks of 8 of them.
    rows: u32,
    row_blocks: u32,
    kv_heads: u32,
    // Nonzero: the last chunk's workgroup of each (batch, K/V head, row block) combines the
    // chunks' partials into `o` itself (no combine dispatch).
    fused: u32,
    pad1: u32,
}

@group(0) @binding(0) var<storage, read> q: array<f32>;
// K and V rows in 16-byte chunks: contiguous rows whose starts are whole chunks.
@group(0) @binding(1) var<storage, read> k: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> v: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> m: array<f32>;
@group(0) @binding(4) var<storage, read_write> part: array<f32>;
@group(0) @binding(5) var<storage, read_write> o: array<f32>;
@group(0) @binding(6) var<storage, read_write> done: array<atomic<u32>>;
@group(0) @binding(7) var<uniform> p: Params;

const D: u32 = 128u;
// Invocations per key row (4 key groups in the workgroup).
const L: u32 = 32u;
// Keys per step: 4 per key group.
const STEP: u32 = 16u;
// Elements per 16-byte chunk.
const E: u32 = 4u;

// The subgroups' output columns of 1 row(s), then their maxima and sums.
var<workgroup> red: array<f32, 512>;
var<workgroup> ml: array<f32, 8>;
// The chunks counted done for this workgroup's rows, as its first invocation read them.
var<workgroup> counted: u32;

fn neg_inf() -> f32 {
    return bitcast<f32>(0xff800000u);
}

// softcap · tanh(x / softcap) where p.softcap > 0 (GroupQueryAttention's softcap, on the scaled
// score before the mask, as ONNX Runtime's CPU EP applies it), else x. tanh's argument is clamped
// where tanh is ±1 in f32, so no driver's exp-based tanh overflows.
fn capped(x: f32) -> f32 {
    if (p.softcap > 0.0) {
        return p.softcap * tanh(clamp(x / p.softcap, -9.0, 9.0));
    }
    return x;
}


fn chunk_f32(r: vec4<f32>) -> array<f32, 4> {
    return array<f32, 4>(r.x, r.y, r.z, r.w);
}

@compute @workgroup_size(128, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
    @builtin(subgroup_size) sg_size: u32,
) {
    let lin = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if (lin >= p.count) {
        return;
    }
    let split = lin % p.splits;
    let t1 = lin / p.splits;
    let blk = t1 % p.row_blocks;
    let t2 = t1 / p.row_blocks;
    let kvh = t2 % p.kv_heads;
    let b = t2 / p.kv_heads;
    // This invocation's key group and its place in a key row: chunks li, li + L, ...
    let li = tid % L;
    let kg = tid / L;
    let k_base = b * p.k_stride.x + kvh * p.k_stride.y;
    let v_base = b * p.v_stride.x + kvh * p.v_stride.y;

    // Row 0 of the block: query head h0, query row qi0; end0 keys it sees.
    let rg0 = blk * 8u + 0u;
    let live0 = rg0 < p.rows;
    let h0 = kvh * p.group + rg0 / p.sq;
    let qi0 = rg0 % p.sq;
    let m_base0 = b * p.m_stride.x + h0 * p.m_stride.y + qi0 * p.m_stride.z;
    var end0 = 0u;
    var q0: array<f32, 4>;
    if (live0) {
        end0 = p.skv;
        if (p.causal != 0u) {
            end0 = u32(clamp(i32(qi0) + p.causal_offset + 1, 0, i32(p.skv)));
        }
        let q_at = b * p.q_stride.x + h0 * p.q_stride.y + qi0 * p.q_stride.z;
        q0[0] = f32(q[q_at + (0u * L * E + li * E + 0u) * p.q_stride.w]);
        q0[1] = f32(q[q_at + (0u * L * E + li * E + 1u) * p.q_stride.w]);
        q0[2] = f32(q[q_at + (0u * L * E + li * E + 2u) * p.q_stride.w]);
        q0[3] = f32(q[q_at + (0u * L * E + li * E + 3u) * p.q_stride.w]);
    }
    var m0 = neg_inf();
    var l0 = 0.0;
    var acc0: array<f32, 4>;

    // Row 1 of the block: query head h1, query row qi1; end1 keys it sees.
    let rg1 = blk * 8u + 1u;
    let live1 = rg1 < p.rows;
    let h1 = kvh * p.group + rg1 / p.sq;
    let qi1 = rg1 % p.sq;
    let m_base1 = b * p.m_stride.x + h1 * p.m_stride.y + qi1 * p.m_stride.z;
    var end1 = 0u;
    var q1: array<f32, 4>;
    if (live1) {
        end1 = p.skv;
        if (p.causal != 0u) {
            end1 = u32(clamp(i32(qi1) + p.causal_offset + 1, 0, i32(p.skv)));
        }
        let q_at = b * p.q_stride.x + h1 * p.q_stride.y + qi1 * p.q_stride.z;
        q1[0] = f32(q[q_at + (0u * L * E + li * E + 0u) * p.q_stride.w]);
        q1[1] = f32(q[q_at + (0u * L * E + li * E + 1u) * p.q_stride.w]);
        q1[2] = f32(q[q_at + (0u * L * E + li * E + 2u) * p.q_stride.w]);
        q1[3] = f32(q[q_at + (0u * L * E + li * E + 3u) * p.q_stride.w]);
    }
    var m1 = neg_inf();
    var l1 = 0.0;
    var acc1: array<f32, 4>;

    // Row 2 of the block: query head h2, query row qi2; end2 keys it sees.
    let rg2 = blk * 8u + 2u;
    let live2 = rg2 < p.rows;
    let h2 = kvh * p.group + rg2 / p.sq;
    let qi2 = rg2 % p.sq;
    let m_base2 = b * p.m_stride.x + h2 * p.m_stride.y + qi2 * p.m_stride.z;
    var end2 = 0u;
    var q2: array<f32, 4>;
    if (live2) {
        end2 = p.skv;
        if (p.causal != 0u) {
            end2 = u32(clamp(i32(qi2) + p.causal_offset + 1, 0, i32(p.skv)));
        }
        let q_at = b * p.q_stride.x + h2 * p.q_stride.y + qi2 * p.q_stride.z;
        q2[0] = f32(q[q_at + (0u * L * E + li * E + 0u) * p.q_stride.w]);
        q2[1] = f32(q[q_at + (0u * L * E + li * E + 1u) * p.q_stride.w]);
        q2[2] = f32(q[q_at + (0u * L * E + li * E + 2u) * p.q_stride.w]);
        q2[3] = f32(q[q_at + (0u * L * E + li * E + 3u) * p.q_stride.w]);
    }
    var m2 = neg_inf();
    var l2 = 0.0;
    var acc2: array<f32, 4>;

    // Row 3 of the block: query head h3, query row qi3; end3 keys it sees.
    let rg3 = blk * 8u + 3u;
    let live3 = rg3 < p.rows;
    let h3 = kvh * p.group + rg3 / p.sq;
    let qi3 = rg3 % p.sq;
    let m_base3 = b * p.m_stride.x + h3 * p.m_stride.y + qi3 * p.m_stride.z;
    var end3 = 0u;
    var q3: array<f32, 4>;
    if (live3) {
        end3 = p.skv;
        if (p.causal != 0u) {
            end3 = u32(clamp(i32(qi3) + p.causal_offset + 1, 0, i32(p.skv)));
        }
        let q_at = b * p.q_stride.x + h3 * p.q_stride.y + qi3 * p.q_stride.z;
        q3[0] = f32(q[q_at + (0u * L * E + li * E + 0u) * p.q_stride.w]);
        q3[1] = f32(q[q_at + (0u * L * E + li * E + 1u) * p.q_stride.w]);
        q3[2] = f32(q[q_at + (0u * L * E + li * E + 2u) * p.q_stride.w]);
        q3[3] = f32(q[q_at + (0u * L * E + li * E + 3u) * p.q_stride.w]);
    }
    var m3 = neg_inf();
    var l3 = 0.0;
    var acc3: array<f32, 4>;

    // Row 4 of the block: query head h4, query row qi4; end4 keys it sees.
    let rg4 = blk * 8u + 4u;
    let live4 = rg4 < p.rows;
    let h4 = kvh * p.group + rg4 / p.sq;
    let qi4 = rg4 % p.sq;
    let m_base4 = b * p.m_stride.x + h4 * p.m_stride.y + qi4 * p.m_stride.z;
    var end4 = 0u;
    var q4: array<f32, 4>;
    if (live4) {
        end4 = p.skv;
        if (p.causal != 0u) {
            end4 = u32(clamp(i32(qi4) + p.causal_offset + 1, 0, i32(p.skv)));
        }
        let q_at = b * p.q_stride.x + h4 * p.q_stride.y + qi4 * p.q_stride.z;
        q4[0] = f32(q[q_at + (0u * L * E + li * E + 0u) * p.q_stride.w]);
        q4[1] = f32(q[q_at + (0u * L * E + li * E + 1u) * p.q_stride.w]);
        q4[2] = f32(q[q_at + (0u * L * E + li * E + 2u) * p.q_stride.w]);
        q4[3] = f32(q[q_at + (0u * L * E + li * E + 3u) * p.q_stride.w]);
    }
    var m4 = neg_inf();
    var l4 = 0.0;
    var acc4: array<f32, 4>;

    // Row 5 of the block: query head h5, query row qi5; end5 keys it sees.
    let rg5 = blk * 8u + 5u;
    let live5 = rg5 < p.rows;
    let h5 = kvh * p.group + rg5 / p.sq;
    let qi5 = rg5 % p.sq;
    let m_base5 = b * p.m_stride.x + h5 * p.m_stride.y + qi5 * p.m_stride.z;
    var end5 = 0u;
    var q5: array<f32, 4>;
    if (live5) {
        end5 = p.skv;
        if (p.causal != 0u) {
            end5 = u32(clamp(i32(qi5) + p.causal_offset + 1, 0, i32(p.skv)));
        }
        let q_at = b * p.q_stride.x + h5 * p.q_stride.y + qi5 * p.q_stride.z;
        q5[0] = f32(q[q_at + (0u * L * E + li * E + 0u) * p.q_stride.w]);
        q5[1] = f32(q[q_at + (0u * L * E + li * E + 1u) * p.q_stride.w]);
        q5[2] = f32(q[q_at + (0u * L * E + li * E + 2u) * p.q_stride.w]);
        q5[3] = f32(q[q_at + (0u * L * E + li * E + 3u) * p.q_stride.w]);
    }
    var m5 = neg_inf();
    var l5 = 0.0;
    var acc5: array<f32, 4>;

    // Row 6 of the block: query head h6, query row qi6; end6 keys it sees.
    let rg6 = blk * 8u + 6u;
    let live6 = rg6 < p.rows;
    let h6 = kvh * p.group + rg6 / p.sq;
    let qi6 = rg6 % p.sq;
    let m_base6 = b * p.m_stride.x + h6 * p.m_stride.y + qi6 * p.m_stride.z;
    var end6 = 0u;
    var q6: array<f32, 4>;
    if (live6) {
        end6 = p.skv;
        if (p.causal != 0u) {
            end6 = u32(clamp(i32(qi6) + p.causal_offset + 1, 0, i32(p.skv)));
        }
        let q_at = b * p.q_stride.x + h6 * p.q_stride.y + qi6 * p.q_stride.z;
        q6[0] = f32(q[q_at + (0u * L * E + li * E + 0u) * p.q_stride.w]);
        q6[1] = f32(q[q_at + (0u * L * E + li * E + 1u) * p.q_stride.w]);
        q6[2] = f32(q[q_at + (0u * L * E + li * E + 2u) * p.q_stride.w]);
        q6[3] = f32(q[q_at + (0u * L * E + li * E + 3u) * p.q_stride.w]);
    }
    var m6 = neg_inf();
    var l6 = 0.0;
    var acc6: array<f32, 4>;

    // Row 7 of the block: query head h7, query row qi7; end7 keys it sees.
    let rg7 = blk * 8u + 7u;
    let live7 = rg7 < p.rows;
    let h7 = kvh * p.group + rg7 / p.sq;
    let qi7 = rg7 % p.sq;
    let m_base7 = b * p.m_stride.x + h7 * p.m_stride.y + qi7 * p.m_stride.z;
    var end7 = 0u;
    var q7: array<f32, 4>;
    if (live7) {
        end7 = p.skv;
        if (p.causal != 0u) {
            end7 = u32(clamp(i32(qi7) + p.causal_offset + 1, 0, i32(p.skv)));
        }
        let q_at = b * p.q_stride.x + h7 * p.q_stride.y + qi7 * p.q_stride.z;
        q7[0] = f32(q[q_at + (0u * L * E + li * E + 0u) * p.q_stride.w]);
        q7[1] = f32(q[q_at + (0u * L * E + li * E + 1u) * p.q_stride.w]);
        q7[2] = f32(q[q_at + (0u * L * E + li * E + 2u) * p.q_stride.w]);
        q7[3] = f32(q[q_at + (0u * L * E + li * E + 3u) * p.q_stride.w]);
    }
    var m7 = neg_inf();
    var l7 = 0.0;
    var acc7: array<f32, 4>;

    var k_hi = end0;
    k_hi = max(k_hi, end1);
    k_hi = max(k_hi, end2);
    k_hi = max(k_hi, end3);
    k_hi = max(k_hi, end4);
    k_hi = max(k_hi, end5);
    k_hi = max(k_hi, end6);
    k_hi = max(k_hi, end7);
    let c0 = split * p.chunk;
    let c1 = min(c0 + p.chunk, k_hi);
    for (var j0 = c0; j0 < c1; j0 = j0 + STEP) {
        // All of the step's K and V loads are issued before any is used.
        let key0 = j0 + kg + 0u;
        let ok0 = key0 < c1;
        var kx0_0 = vec4<f32>();
        var vx0_0 = vec4<f32>();
        if (ok0) {
            let ka = (k_base + key0 * p.k_stride.z) / E + li;
            let va = (v_base + key0 * p.v_stride.z) / E + li;
            kx0_0 = k[ka + 0u * L];
            vx0_0 = v[va + 0u * L];
        }
        let key1 = j0 + kg + 4u;
        let ok1 = key1 < c1;
        var kx1_0 = vec4<f32>();
        var vx1_0 = vec4<f32>();
        if (ok1) {
            let ka = (k_base + key1 * p.k_stride.z) / E + li;
            let va = (v_base + key1 * p.v_stride.z) / E + li;
            kx1_0 = k[ka + 0u * L];
            vx1_0 = v[va + 0u * L];
        }
        let key2 = j0 + kg + 8u;
        let ok2 = key2 < c1;
        var kx2_0 = vec4<f32>();
        var vx2_0 = vec4<f32>();
        if (ok2) {
            let ka = (k_base + key2 * p.k_stride.z) / E + li;
            let va = (v_base + key2 * p.v_stride.z) / E + li;
            kx2_0 = k[ka + 0u * L];
            vx2_0 = v[va + 0u * L];
        }
        let key3 = j0 + kg + 12u;
        let ok3 = key3 < c1;
        var kx3_0 = vec4<f32>();
        var vx3_0 = vec4<f32>();
        if (ok3) {
            let ka = (k_base + key3 * p.k_stride.z) / E + li;
            let va = (v_base + key3 * p.v_stride.z) / E + li;
            kx3_0 = k[ka + 0u * L];
            vx3_0 = v[va + 0u * L];
        }
        // This invocation's share of each key's dot products, then the key row's sum.
        let kf0_0 = chunk_f32(kx0_0);
        var s0_0 = 0.0;
        s0_0 = fma(q0[0], kf0_0[0], s0_0);
        s0_0 = fma(q0[1], kf0_0[1], s0_0);
        s0_0 = fma(q0[2], kf0_0[2], s0_0);
        s0_0 = fma(q0[3], kf0_0[3], s0_0);
        var s0_1 = 0.0;
        s0_1 = fma(q1[0], kf0_0[0], s0_1);
        s0_1 = fma(q1[1], kf0_0[1], s0_1);
        s0_1 = fma(q1[2], kf0_0[2], s0_1);
        s0_1 = fma(q1[3], kf0_0[3], s0_1);
        var s0_2 = 0.0;
        s0_2 = fma(q2[0], kf0_0[0], s0_2);
        s0_2 = fma(q2[1], kf0_0[1], s0_2);
        s0_2 = fma(q2[2], kf0_0[2], s0_2);
        s0_2 = fma(q2[3], kf0_0[3], s0_2);
        var s0_3 = 0.0;
        s0_3 = fma(q3[0], kf0_0[0], s0_3);
        s0_3 = fma(q3[1], kf0_0[1], s0_3);
        s0_3 = fma(q3[2], kf0_0[2], s0_3);
        s0_3 = fma(q3[3], kf0_0[3], s0_3);
        var s0_4 = 0.0;
        s0_4 = fma(q4[0], kf0_0[0], s0_4);
        s0_4 = fma(q4[1], kf0_0[1], s0_4);
        s0_4 = fma(q4[2], kf0_0[2], s0_4);
        s0_4 = fma(q4[3], kf0_0[3], s0_4);
        var s0_5 = 0.0;
        s0_5 = fma(q5[0], kf0_0[0], s0_5);
        s0_5 = fma(q5[1], kf0_0[1], s0_5);
        s0_5 = fma(q5[2], kf0_0[2], s0_5);
        s0_5 = fma(q5[3], kf0_0[3], s0_5);
        var s0_6 = 0.0;
        s0_6 = fma(q6[0], kf0_0[0], s0_6);
        s0_6 = fma(q6[1], kf0_0[1], s0_6);
        s0_6 = fma(q6[2], kf0_0[2], s0_6);
        s0_6 = fma(q6[3], kf0_0[3], s0_6);
        var s0_7 = 0.0;
        s0_7 = fma(q7[0], kf0_0[0], s0_7);
        s0_7 = fma(q7[1], kf0_0[1], s0_7);
        s0_7 = fma(q7[2], kf0_0[2], s0_7);
        s0_7 = fma(q7[3], kf0_0[3], s0_7);
        let kf1_0 = chunk_f32(kx1_0);
        var s1_0 = 0.0;
        s1_0 = fma(q0[0], kf1_0[0], s1_0);
        s1_0 = fma(q0[1], kf1_0[1], s1_0);
        s1_0 = fma(q0[2], kf1_0[2], s1_0);
        s1_0 = fma(q0[3], kf1_0[3], s1_0);
        var s1_1 = 0.0;
        s1_1 = fma(q1[0], kf1_0[0], s1_1);
        s1_1 = fma(q1[1], kf1_0[1], s1_1);
        s1_1 = fma(q1[2], kf1_0[2], s1_1);
        s1_1 = fma(q1[3], kf1_0[3], s1_1);
        var s1_2 = 0.0;
        s1_2 = fma(q2[0], kf1_0[0], s1_2);
        s1_2 = fma(q2[1], kf1_0[1], s1_2);
        s1_2 = fma(q2[2], kf1_0[2], s1_2);
        s1_2 = fma(q2[3], kf1_0[3], s1_2);
        var s1_3 = 0.0;
        s1_3 = fma(q3[0], kf1_0[0], s1_3);
        s1_3 = fma(q3[1], kf1_0[1], s1_3);
        s1_3 = fma(q3[2], kf1_0[2], s1_3);
        s1_3 = fma(q3[3], kf1_0[3], s1_3);
        var s1_4 = 0.0;
        s1_4 = fma(q4[0], kf1_0[0], s1_4);
        s1_4 = fma(q4[1], kf1_0[1], s1_4);
        s1_4 = fma(q4[2], kf1_0[2], s1_4);
        s1_4 = fma(q4[3], kf1_0[3], s1_4);
        var s1_5 = 0.0;
        s1_5 = fma(q5[0], kf1_0[0], s1_5);
        s1_5 = fma(q5[1], kf1_0[1], s1_5);
        s1_5 = fma(q5[2], kf1_0[2], s1_5);
        s1_5 = fma(q5[3], kf1_0[3], s1_5);
        var s1_6 = 0.0;
        s1_6 = fma(q6[0], kf1_0[0], s1_6);
        s1_6 = fma(q6[1], kf1_0[1], s1_6);
        s1_6 = fma(q6[2], kf1_0[2], s1_6);
        s1_6 = fma(q6[3], kf1_0[3], s1_6);
        var s1_7 = 0.0;
        s1_7 = fma(q7[0], kf1_0[0], s1_7);
        s1_7 = fma(q7[1], kf1_0[1], s1_7);
        s1_7 = fma(q7[2], kf1_0[2], s1_7);
        s1_7 = fma(q7[3], kf1_0[3], s1_7);
        let kf2_0 = chunk_f32(kx2_0);
        var s2_0 = 0.0;
        s2_0 = fma(q0[0], kf2_0[0], s2_0);
        s2_0 = fma(q0[1], kf2_0[1], s2_0);
        s2_0 = fma(q0[2], kf2_0[2], s2_0);
        s2_0 = fma(q0[3], kf2_0[3], s2_0);
        var s2_1 = 0.0;
        s2_1 = fma(q1[0], kf2_0[0], s2_1);
        s2_1 = fma(q1[1], kf2_0[1], s2_1);
        s2_1 = fma(q1[2], kf2_0[2], s2_1);
        s2_1 = fma(q1[3], kf2_0[3], s2_1);
        var s2_2 = 0.0;
        s2_2 = fma(q2[0], kf2_0[0], s2_2);
        s2_2 = fma(q2[1], kf2_0[1], s2_2);
        s2_2 = fma(q2[2], kf2_0[2], s2_2);
        s2_2 = fma(q2[3], kf2_0[3], s2_2);
        var s2_3 = 0.0;
        s2_3 = fma(q3[0], kf2_0[0], s2_3);
        s2_3 = fma(q3[1], kf2_0[1], s2_3);
        s2_3 = fma(q3[2], kf2_0[2], s2_3);
        s2_3 = fma(q3[3], kf2_0[3], s2_3);
        var s2_4 = 0.0;
        s2_4 = fma(q4[0], kf2_0[0], s2_4);
        s2_4 = fma(q4[1], kf2_0[1], s2_4);
        s2_4 = fma(q4[2], kf2_0[2], s2_4);
        s2_4 = fma(q4[3], kf2_0[3], s2_4);
        var s2_5 = 0.0;
        s2_5 = fma(q5[0], kf2_0[0], s2_5);
        s2_5 = fma(q5[1], kf2_0[1], s2_5);
        s2_5 = fma(q5[2], kf2_0[2], s2_5);
        s2_5 = fma(q5[3], kf2_0[3], s2_5);
        var s2_6 = 0.0;
        s2_6 = fma(q6[0], kf2_0[0], s2_6);
        s2_6 = fma(q6[1], kf2_0[1], s2_6);
        s2_6 = fma(q6[2], kf2_0[2], s2_6);
        s2_6 = fma(q6[3], kf2_0[3], s2_6);
        var s2_7 = 0.0;
        s2_7 = fma(q7[0], kf2_0[0], s2_7);
        s2_7 = fma(q7[1], kf2_0[1], s2_7);
        s2_7 = fma(q7[2], kf2_0[2], s2_7);
        s2_7 = fma(q7[3], kf2_0[3], s2_7);
        let kf3_0 = chunk_f32(kx3_0);
        var s3_0 = 0.0;
        s3_0 = fma(q0[0], kf3_0[0], s3_0);
        s3_0 = fma(q0[1], kf3_0[1], s3_0);
        s3_0 = fma(q0[2], kf3_0[2], s3_0);
        s3_0 = fma(q0[3], kf3_0[3], s3_0);
        var s3_1 = 0.0;
        s3_1 = fma(q1[0], kf3_0[0], s3_1);
        s3_1 = fma(q1[1], kf3_0[1], s3_1);
        s3_1 = fma(q1[2], kf3_0[2], s3_1);
        s3_1 = fma(q1[3], kf3_0[3], s3_1);
        var s3_2 = 0.0;
        s3_2 = fma(q2[0], kf3_0[0], s3_2);
        s3_2 = fma(q2[1], kf3_0[1], s3_2);
        s3_2 = fma(q2[2], kf3_0[2], s3_2);
        s3_2 = fma(q2[3], kf3_0[3], s3_2);
        var s3_3 = 0.0;
        s3_3 = fma(q3[0], kf3_0[0], s3_3);
        s3_3 = fma(q3[1], kf3_0[1], s3_3);
        s3_3 = fma(q3[2], kf3_0[2], s3_3);
        s3_3 = fma(q3[3], kf3_0[3], s3_3);
        var s3_4 = 0.0;
        s3_4 = fma(q4[0], kf3_0[0], s3_4);
        s3_4 = fma(q4[1], kf3_0[1], s3_4);
        s3_4 = fma(q4[2], kf3_0[2], s3_4);
        s3_4 = fma(q4[3], kf3_0[3], s3_4);
        var s3_5 = 0.0;
        s3_5 = fma(q5[0], kf3_0[0], s3_5);
        s3_5 = fma(q5[1], kf3_0[1], s3_5);
        s3_5 = fma(q5[2], kf3_0[2], s3_5);
        s3_5 = fma(q5[3], kf3_0[3], s3_5);
        var s3_6 = 0.0;
        s3_6 = fma(q6[0], kf3_0[0], s3_6);
        s3_6 = fma(q6[1], kf3_0[1], s3_6);
        s3_6 = fma(q6[2], kf3_0[2], s3_6);
        s3_6 = fma(q6[3], kf3_0[3], s3_6);
        var s3_7 = 0.0;
        s3_7 = fma(q7[0], kf3_0[0], s3_7);
        s3_7 = fma(q7[1], kf3_0[1], s3_7);
        s3_7 = fma(q7[2], kf3_0[2], s3_7);
        s3_7 = fma(q7[3], kf3_0[3], s3_7);
        s0_0 = s0_0 + subgroupShuffleXor(s0_0, 16u);
        s0_1 = s0_1 + subgroupShuffleXor(s0_1, 16u);
        s0_2 = s0_2 + subgroupShuffleXor(s0_2, 16u);
        s0_3 = s0_3 + subgroupShuffleXor(s0_3, 16u);
        s0_4 = s0_4 + subgroupShuffleXor(s0_4, 16u);
        s0_5 = s0_5 + subgroupShuffleXor(s0_5, 16u);
        s0_6 = s0_6 + subgroupShuffleXor(s0_6, 16u);
        s0_7 = s0_7 + subgroupShuffleXor(s0_7, 16u);
        s1_0 = s1_0 + subgroupShuffleXor(s1_0, 16u);
        s1_1 = s1_1 + subgroupShuffleXor(s1_1, 16u);
        s1_2 = s1_2 + subgroupShuffleXor(s1_2, 16u);
        s1_3 = s1_3 + subgroupShuffleXor(s1_3, 16u);
        s1_4 = s1_4 + subgroupShuffleXor(s1_4, 16u);
        s1_5 = s1_5 + subgroupShuffleXor(s1_5, 16u);
        s1_6 = s1_6 + subgroupShuffleXor(s1_6, 16u);
        s1_7 = s1_7 + subgroupShuffleXor(s1_7, 16u);
        s2_0 = s2_0 + subgroupShuffleXor(s2_0, 16u);
        s2_1 = s2_1 + subgroupShuffleXor(s2_1, 16u);
        s2_2 = s2_2 + subgroupShuffleXor(s2_2, 16u);
        s2_3 = s2_3 + subgroupShuffleXor(s2_3, 16u);
        s2_4 = s2_4 + subgroupShuffleXor(s2_4, 16u);
        s2_5 = s2_5 + subgroupShuffleXor(s2_5, 16u);
        s2_6 = s2_6 + subgroupShuffleXor(s2_6, 16u);
        s2_7 = s2_7 + subgroupShuffleXor(s2_7, 16u);
        s3_0 = s3_0 + subgroupShuffleXor(s3_0, 16u);
        s3_1 = s3_1 + subgroupShuffleXor(s3_1, 16u);
        s3_2 = s3_2 + subgroupShuffleXor(s3_2, 16u);
        s3_3 = s3_3 + subgroupShuffleXor(s3_3, 16u);
        s3_4 = s3_4 + subgroupShuffleXor(s3_4, 16u);
        s3_5 = s3_5 + subgroupShuffleXor(s3_5, 16u);
        s3_6 = s3_6 + subgroupShuffleXor(s3_6, 16u);
        s3_7 = s3_7 + subgroupShuffleXor(s3_7, 16u);
        s0_0 = s0_0 + subgroupShuffleXor(s0_0, 8u);
        s0_1 = s0_1 + subgroupShuffleXor(s0_1, 8u);
        s0_2 = s0_2 + subgroupShuffleXor(s0_2, 8u);
        s0_3 = s0_3 + subgroupShuffleXor(s0_3, 8u);
        s0_4 = s0_4 + subgroupShuffleXor(s0_4, 8u);
        s0_5 = s0_5 + subgroupShuffleXor(s0_5, 8u);
        s0_6 = s0_6 + subgroupShuffleXor(s0_6, 8u);
        s0_7 = s0_7 + subgroupShuffleXor(s0_7, 8u);
        s1_0 = s1_0 + subgroupShuffleXor(s1_0, 8u);
        s1_1 = s1_1 + subgroupShuffleXor(s1_1, 8u);
        s1_2 = s1_2 + subgroupShuffleXor(s1_2, 8u);
        s1_3 = s1_3 + subgroupShuffleXor(s1_3, 8u);
        s1_4 = s1_4 + subgroupShuffleXor(s1_4, 8u);
        s1_5 = s1_5 + subgroupShuffleXor(s1_5, 8u);
        s1_6 = s1_6 + subgroupShuffleXor(s1_6, 8u);
        s1_7 = s1_7 + subgroupShuffleXor(s1_7, 8u);
        s2_0 = s2_0 + subgroupShuffleXor(s2_0, 8u);
        s2_1 = s2_1 + subgroupShuffleXor(s2_1, 8u);
        s2_2 = s2_2 + subgroupShuffleXor(s2_2, 8u);
        s2_3 = s2_3 + subgroupShuffleXor(s2_3, 8u);
        s2_4 = s2_4 + subgroupShuffleXor(s2_4, 8u);
        s2_5 = s2_5 + subgroupShuffleXor(s2_5, 8u);
        s2_6 = s2_6 + subgroupShuffleXor(s2_6, 8u);
        s2_7 = s2_7 + subgroupShuffleXor(s2_7, 8u);
        s3_0 = s3_0 + subgroupShuffleXor(s3_0, 8u);
        s3_1 = s3_1 + subgroupShuffleXor(s3_1, 8u);
        s3_2 = s3_2 + subgroupShuffleXor(s3_2, 8u);
        s3_3 = s3_3 + subgroupShuffleXor(s3_3, 8u);
        s3_4 = s3_4 + subgroupShuffleXor(s3_4, 8u);
        s3_5 = s3_5 + subgroupShuffleXor(s3_5, 8u);
        s3_6 = s3_6 + subgroupShuffleXor(s3_6, 8u);
        s3_7 = s3_7 + subgroupShuffleXor(s3_7, 8u);
        s0_0 = s0_0 + subgroupShuffleXor(s0_0, 4u);
        s0_1 = s0_1 + subgroupShuffleXor(s0_1, 4u);
        s0_2 = s0_2 + subgroupShuffleXor(s0_2, 4u);
        s0_3 = s0_3 + subgroupShuffleXor(s0_3, 4u);
        s0_4 = s0_4 + subgroupShuffleXor(s0_4, 4u);
        s0_5 = s0_5 + subgroupShuffleXor(s0_5, 4u);
        s0_6 = s0_6 + subgroupShuffleXor(s0_6, 4u);
        s0_7 = s0_7 + subgroupShuffleXor(s0_7, 4u);
        s1_0 = s1_0 + subgroupShuffleXor(s1_0, 4u);
        s1_1 = s1_1 + subgroupShuffleXor(s1_1, 4u);
        s1_2 = s1_2 + subgroupShuffleXor(s1_2, 4u);
        s1_3 = s1_3 + subgroupShuffleXor(s1_3, 4u);
        s1_4 = s1_4 + subgroupShuffleXor(s1_4, 4u);
        s1_5 = s1_5 + subgroupShuffleXor(s1_5, 4u);
        s1_6 = s1_6 + subgroupShuffleXor(s1_6, 4u);
        s1_7 = s1_7 + subgroupShuffleXor(s1_7, 4u);
        s2_0 = s2_0 + subgroupShuffleXor(s2_0, 4u);
        s2_1 = s2_1 + subgroupShuffleXor(s2_1, 4u);
        s2_2 = s2_2 + subgroupShuffleXor(s2_2, 4u);
        s2_3 = s2_3 + subgroupShuffleXor(s2_3, 4u);
        s2_4 = s2_4 + subgroupShuffleXor(s2_4, 4u);
        s2_5 = s2_5 + subgroupShuffleXor(s2_5, 4u);
        s2_6 = s2_6 + subgroupShuffleXor(s2_6, 4u);
        s2_7 = s2_7 + subgroupShuffleXor(s2_7, 4u);
        s3_0 = s3_0 + subgroupShuffleXor(s3_0, 4u);
        s3_1 = s3_1 + subgroupShuffleXor(s3_1, 4u);
        s3_2 = s3_2 + subgroupShuffleXor(s3_2, 4u);
        s3_3 = s3_3 + subgroupShuffleXor(s3_3, 4u);
        s3_4 = s3_4 + subgroupShuffleXor(s3_4, 4u);
        s3_5 = s3_5 + subgroupShuffleXor(s3_5, 4u);
        s3_6 = s3_6 + subgroupShuffleXor(s3_6, 4u);
        s3_7 = s3_7 + subgroupShuffleXor(s3_7, 4u);
        s0_0 = s0_0 + subgroupShuffleXor(s0_0, 2u);
        s0_1 = s0_1 + subgroupShuffleXor(s0_1, 2u);
        s0_2 = s0_2 + subgroupShuffleXor(s0_2, 2u);
        s0_3 = s0_3 + subgroupShuffleXor(s0_3, 2u);
        s0_4 = s0_4 + subgroupShuffleXor(s0_4, 2u);
        s0_5 = s0_5 + subgroupShuffleXor(s0_5, 2u);
        s0_6 = s0_6 + subgroupShuffleXor(s0_6, 2u);
        s0_7 = s0_7 + subgroupShuffleXor(s0_7, 2u);
        s1_0 = s1_0 + subgroupShuffleXor(s1_0, 2u);
        s1_1 = s1_1 + subgroupShuffleXor(s1_1, 2u);
        s1_2 = s1_2 + subgroupShuffleXor(s1_2, 2u);
        s1_3 = s1_3 + subgroupShuffleXor(s1_3, 2u);
        s1_4 = s1_4 + subgroupShuffleXor(s1_4, 2u);
        s1_5 = s1_5 + subgroupShuffleXor(s1_5, 2u);
        s1_6 = s1_6 + subgroupShuffleXor(s1_6, 2u);
        s1_7 = s1_7 + subgroupShuffleXor(s1_7, 2u);
        s2_0 = s2_0 + subgroupShuffleXor(s2_0, 2u);
        s2_1 = s2_1 + subgroupShuffleXor(s2_1, 2u);
        s2_2 = s2_2 + subgroupShuffleXor(s2_2, 2u);
        s2_3 = s2_3 + subgroupShuffleXor(s2_3, 2u);
        s2_4 = s2_4 + subgroupShuffleXor(s2_4, 2u);
        s2_5 = s2_5 + subgroupShuffleXor(s2_5, 2u);
        s2_6 = s2_6 + subgroupShuffleXor(s2_6, 2u);
        s2_7 = s2_7 + subgroupShuffleXor(s2_7, 2u);
        s3_0 = s3_0 + subgroupShuffleXor(s3_0, 2u);
        s3_1 = s3_1 + subgroupShuffleXor(s3_1, 2u);
        s3_2 = s3_2 + subgroupShuffleXor(s3_2, 2u);
        s3_3 = s3_3 + subgroupShuffleXor(s3_3, 2u);
        s3_4 = s3_4 + subgroupShuffleXor(s3_4, 2u);
        s3_5 = s3_5 + subgroupShuffleXor(s3_5, 2u);
        s3_6 = s3_6 + subgroupShuffleXor(s3_6, 2u);
        s3_7 = s3_7 + subgroupShuffleXor(s3_7, 2u);
        s0_0 = s0_0 + subgroupShuffleXor(s0_0, 1u);
        s0_1 = s0_1 + subgroupShuffleXor(s0_1, 1u);
        s0_2 = s0_2 + subgroupShuffleXor(s0_2, 1u);
        s0_3 = s0_3 + subgroupShuffleXor(s0_3, 1u);
        s0_4 = s0_4 + subgroupShuffleXor(s0_4, 1u);
        s0_5 = s0_5 + subgroupShuffleXor(s0_5, 1u);
        s0_6 = s0_6 + subgroupShuffleXor(s0_6, 1u);
        s0_7 = s0_7 + subgroupShuffleXor(s0_7, 1u);
        s1_0 = s1_0 + subgroupShuffleXor(s1_0, 1u);
        s1_1 = s1_1 + subgroupShuffleXor(s1_1, 1u);
        s1_2 = s1_2 + subgroupShuffleXor(s1_2, 1u);
        s1_3 = s1_3 + subgroupShuffleXor(s1_3, 1u);
        s1_4 = s1_4 + subgroupShuffleXor(s1_4, 1u);
        s1_5 = s1_5 + subgroupShuffleXor(s1_5, 1u);
        s1_6 = s1_6 + subgroupShuffleXor(s1_6, 1u);
        s1_7 = s1_7 + subgroupShuffleXor(s1_7, 1u);
        s2_0 = s2_0 + subgroupShuffleXor(s2_0, 1u);
        s2_1 = s2_1 + subgroupShuffleXor(s2_1, 1u);
        s2_2 = s2_2 + subgroupShuffleXor(s2_2, 1u);
        s2_3 = s2_3 + subgroupShuffleXor(s2_3, 1u);
        s2_4 = s2_4 + subgroupShuffleXor(s2_4, 1u);
        s2_5 = s2_5 + subgroupShuffleXor(s2_5, 1u);
        s2_6 = s2_6 + subgroupShuffleXor(s2_6, 1u);
        s2_7 = s2_7 + subgroupShuffleXor(s2_7, 1u);
        s3_0 = s3_0 + subgroupShuffleXor(s3_0, 1u);
        s3_1 = s3_1 + subgroupShuffleXor(s3_1, 1u);
        s3_2 = s3_2 + subgroupShuffleXor(s3_2, 1u);
        s3_3 = s3_3 + subgroupShuffleXor(s3_3, 1u);
        s3_4 = s3_4 + subgroupShuffleXor(s3_4, 1u);
        s3_5 = s3_5 + subgroupShuffleXor(s3_5, 1u);
        s3_6 = s3_6 + subgroupShuffleXor(s3_6, 1u);
        s3_7 = s3_7 + subgroupShuffleXor(s3_7, 1u);
        // Scale, cap and mask; keys past the chunk or a row's end are excluded.
        var x0_0 = neg_inf();
        if (ok0 && key0 < end0) {
            x0_0 = capped(s0_0 * p.scale);
            x0_0 = x0_0 + f32(m[m_base0 + key0 * p.m_stride.w]);
        }
        var x0_1 = neg_inf();
        if (ok0 && key0 < end1) {
            x0_1 = capped(s0_1 * p.scale);
            x0_1 = x0_1 + f32(m[m_base1 + key0 * p.m_stride.w]);
        }
        var x0_2 = neg_inf();
        if (ok0 && key0 < end2) {
            x0_2 = capped(s0_2 * p.scale);
            x0_2 = x0_2 + f32(m[m_base2 + key0 * p.m_stride.w]);
        }
        var x0_3 = neg_inf();
        if (ok0 && key0 < end3) {
            x0_3 = capped(s0_3 * p.scale);
            x0_3 = x0_3 + f32(m[m_base3 + key0 * p.m_stride.w]);
        }
        var x0_4 = neg_inf();
        if (ok0 && key0 < end4) {
            x0_4 = capped(s0_4 * p.scale);
            x0_4 = x0_4 + f32(m[m_base4 + key0 * p.m_stride.w]);
        }
        var x0_5 = neg_inf();
        if (ok0 && key0 < end5) {
            x0_5 = capped(s0_5 * p.scale);
            x0_5 = x0_5 + f32(m[m_base5 + key0 * p.m_stride.w]);
        }
        var x0_6 = neg_inf();
        if (ok0 && key0 < end6) {
            x0_6 = capped(s0_6 * p.scale);
            x0_6 = x0_6 + f32(m[m_base6 + key0 * p.m_stride.w]);
        }
        var x0_7 = neg_inf();
        if (ok0 && key0 < end7) {
            x0_7 = capped(s0_7 * p.scale);
            x0_7 = x0_7 + f32(m[m_base7 + key0 * p.m_stride.w]);
        }
        var x1_0 = neg_inf();
        if (ok1 && key1 < end0) {
            x1_0 = capped(s1_0 * p.scale);
            x1_0 = x1_0 + f32(m[m_base0 + key1 * p.m_stride.w]);
        }
        var x1_1 = neg_inf();
        if (ok1 && key1 < end1) {
            x1_1 = capped(s1_1 * p.scale);
            x1_1 = x1_1 + f32(m[m_base1 + key1 * p.m_stride.w]);
        }
        var x1_2 = neg_inf();
        if (ok1 && key1 < end2) {
            x1_2 = capped(s1_2 * p.scale);
            x1_2 = x1_2 + f32(m[m_base2 + key1 * p.m_stride.w]);
        }
        var x1_3 = neg_inf();
        if (ok1 && key1 < end3) {
            x1_3 = capped(s1_3 * p.scale);
            x1_3 = x1_3 + f32(m[m_base3 + key1 * p.m_stride.w]);
        }
        var x1_4 = neg_inf();
        if (ok1 && key1 < end4) {
            x1_4 = capped(s1_4 * p.scale);
            x1_4 = x1_4 + f32(m[m_base4 + key1 * p.m_stride.w]);
        }
        var x1_5 = neg_inf();
        if (ok1 && key1 < end5) {
            x1_5 = capped(s1_5 * p.scale);
            x1_5 = x1_5 + f32(m[m_base5 + key1 * p.m_stride.w]);
        }
        var x1_6 = neg_inf();
        if (ok1 && key1 < end6) {
            x1_6 = capped(s1_6 * p.scale);
            x1_6 = x1_6 + f32(m[m_base6 + key1 * p.m_stride.w]);
        }
        var x1_7 = neg_inf();
        if (ok1 && key1 < end7) {
            x1_7 = capped(s1_7 * p.scale);
            x1_7 = x1_7 + f32(m[m_base7 + key1 * p.m_stride.w]);
        }
        var x2_0 = neg_inf();
        if (ok2 && key2 < end0) {
            x2_0 = capped(s2_0 * p.scale);
            x2_0 = x2_0 + f32(m[m_base0 + key2 * p.m_stride.w]);
        }
        var x2_1 = neg_inf();
        if (ok2 && key2 < end1) {
            x2_1 = capped(s2_1 * p.scale);
            x2_1 = x2_1 + f32(m[m_base1 + key2 * p.m_stride.w]);
        }
        var x2_2 = neg_inf();
        if (ok2 && key2 < end2) {
            x2_2 = capped(s2_2 * p.scale);
            x2_2 = x2_2 + f32(m[m_base2 + key2 * p.m_stride.w]);
        }
        var x2_3 = neg_inf();
        if (ok2 && key2 < end3) {
            x2_3 = capped(s2_3 * p.scale);
            x2_3 = x2_3 + f32(m[m_base3 + key2 * p.m_stride.w]);
        }
        var x2_4 = neg_inf();
        if (ok2 && key2 < end4) {
            x2_4 = capped(s2_4 * p.scale);
            x2_4 = x2_4 + f32(m[m_base4 + key2 * p.m_stride.w]);
        }
        var x2_5 = neg_inf();
        if (ok2 && key2 < end5) {
            x2_5 = capped(s2_5 * p.scale);
            x2_5 = x2_5 + f32(m[m_base5 + key2 * p.m_stride.w]);
        }
        var x2_6 = neg_inf();
        if (ok2 && key2 < end6) {
            x2_6 = capped(s2_6 * p.scale);
            x2_6 = x2_6 + f32(m[m_base6 + key2 * p.m_stride.w]);
        }
        var x2_7 = neg_inf();
        if (ok2 && key2 < end7) {
            x2_7 = capped(s2_7 * p.scale);
            x2_7 = x2_7 + f32(m[m_base7 + key2 * p.m_stride.w]);
        }
        var x3_0 = neg_inf();
        if (ok3 && key3 < end0) {
            x3_0 = capped(s3_0 * p.scale);
            x3_0 = x3_0 + f32(m[m_base0 + key3 * p.m_stride.w]);
        }
        var x3_1 = neg_inf();
        if (ok3 && key3 < end1) {
            x3_1 = capped(s3_1 * p.scale);
            x3_1 = x3_1 + f32(m[m_base1 + key3 * p.m_stride.w]);
        }
        var x3_2 = neg_inf();
        if (ok3 && key3 < end2) {
            x3_2 = capped(s3_2 * p.scale);
            x3_2 = x3_2 + f32(m[m_base2 + key3 * p.m_stride.w]);
        }
        var x3_3 = neg_inf();
        if (ok3 && key3 < end3) {
            x3_3 = capped(s3_3 * p.scale);
            x3_3 = x3_3 + f32(m[m_base3 + key3 * p.m_stride.w]);
        }
        var x3_4 = neg_inf();
        if (ok3 && key3 < end4) {
            x3_4 = capped(s3_4 * p.scale);
            x3_4 = x3_4 + f32(m[m_base4 + key3 * p.m_stride.w]);
        }
        var x3_5 = neg_inf();
        if (ok3 && key3 < end5) {
            x3_5 = capped(s3_5 * p.scale);
            x3_5 = x3_5 + f32(m[m_base5 + key3 * p.m_stride.w]);
        }
        var x3_6 = neg_inf();
        if (ok3 && key3 < end6) {
            x3_6 = capped(s3_6 * p.scale);
            x3_6 = x3_6 + f32(m[m_base6 + key3 * p.m_stride.w]);
        }
        var x3_7 = neg_inf();
        if (ok3 && key3 < end7) {
            x3_7 = capped(s3_7 * p.scale);
            x3_7 = x3_7 + f32(m[m_base7 + key3 * p.m_stride.w]);
        }
        // Online softmax per row over the step's keys, and P·V into the output columns.
        let vf0_0 = chunk_f32(vx0_0);
        let vf1_0 = chunk_f32(vx1_0);
        let vf2_0 = chunk_f32(vx2_0);
        let vf3_0 = chunk_f32(vx3_0);
        {
            var t = x0_0;
            t = max(t, x1_0);
            t = max(t, x2_0);
            t = max(t, x3_0);
            let m_new = max(m0, t);
            if (m_new != neg_inf()) {
                let alpha = exp(m0 - m_new);
                let p0 = exp(x0_0 - m_new);
                let p1 = exp(x1_0 - m_new);
                let p2 = exp(x2_0 - m_new);
                let p3 = exp(x3_0 - m_new);
                l0 = l0 * alpha + p0 + p1 + p2 + p3;
                acc0[0] = fma(p0, vf0_0[0], fma(p1, vf1_0[0], fma(p2, vf2_0[0], fma(p3, vf3_0[0], acc0[0] * alpha))));
                acc0[1] = fma(p0, vf0_0[1], fma(p1, vf1_0[1], fma(p2, vf2_0[1], fma(p3, vf3_0[1], acc0[1] * alpha))));
                acc0[2] = fma(p0, vf0_0[2], fma(p1, vf1_0[2], fma(p2, vf2_0[2], fma(p3, vf3_0[2], acc0[2] * alpha))));
                acc0[3] = fma(p0, vf0_0[3], fma(p1, vf1_0[3], fma(p2, vf2_0[3], fma(p3, vf3_0[3], acc0[3] * alpha))));
                m0 = m_new;
            }
        }
        {
            var t = x0_1;
            t = max(t, x1_1);
            t = max(t, x2_1);
            t = max(t, x3_1);
            let m_new = max(m1, t);
            if (m_new != neg_inf()) {
                let alpha = exp(m1 - m_new);
                let p0 = exp(x0_1 - m_new);
                let p1 = exp(x1_1 - m_new);
                let p2 = exp(x2_1 - m_new);
                let p3 = exp(x3_1 - m_new);
                l1 = l1 * alpha + p0 + p1 + p2 + p3;
                acc1[0] = fma(p0, vf0_0[0], fma(p1, vf1_0[0], fma(p2, vf2_0[0], fma(p3, vf3_0[0], acc1[0] * alpha))));
                acc1[1] = fma(p0, vf0_0[1], fma(p1, vf1_0[1], fma(p2, vf2_0[1], fma(p3, vf3_0[1], acc1[1] * alpha))));
                acc1[2] = fma(p0, vf0_0[2], fma(p1, vf1_0[2], fma(p2, vf2_0[2], fma(p3, vf3_0[2], acc1[2] * alpha))));
                acc1[3] = fma(p0, vf0_0[3], fma(p1, vf1_0[3], fma(p2, vf2_0[3], fma(p3, vf3_0[3], acc1[3] * alpha))));
                m1 = m_new;
            }
        }
        {
            var t = x0_2;
            t = max(t, x1_2);
            t = max(t, x2_2);
            t = max(t, x3_2);
            let m_new = max(m2, t);
            if (m_new != neg_inf()) {
                let alpha = exp(m2 - m_new);
                let p0 = exp(x0_2 - m_new);
                let p1 = exp(x1_2 - m_new);
                let p2 = exp(x2_2 - m_new);
                let p3 = exp(x3_2 - m_new);
                l2 = l2 * alpha + p0 + p1 + p2 + p3;
                acc2[0] = fma(p0, vf0_0[0], fma(p1, vf1_0[0], fma(p2, vf2_0[0], fma(p3, vf3_0[0], acc2[0] * alpha))));
                acc2[1] = fma(p0, vf0_0[1], fma(p1, vf1_0[1], fma(p2, vf2_0[1], fma(p3, vf3_0[1], acc2[1] * alpha))));
                acc2[2] = fma(p0, vf0_0[2], fma(p1, vf1_0[2], fma(p2, vf2_0[2], fma(p3, vf3_0[2], acc2[2] * alpha))));
                acc2[3] = fma(p0, vf0_0[3], fma(p1, vf1_0[3], fma(p2, vf2_0[3], fma(p3, vf3_0[3], acc2[3] * alpha))));
                m2 = m_new;
            }
        }
        {
            var t = x0_3;
            t = max(t, x1_3);
            t = max(t, x2_3);
            t = max(t, x3_3);
            let m_new = max(m3, t);
            if (m_new != neg_inf()) {
                let alpha = exp(m3 - m_new);
                let p0 = exp(x0_3 - m_new);
                let p1 = exp(x1_3 - m_new);
                let p2 = exp(x2_3 - m_new);
                let p3 = exp(x3_3 - m_new);
                l3 = l3 * alpha + p0 + p1 + p2 + p3;
                acc3[0] = fma(p0, vf0_0[0], fma(p1, vf1_0[0], fma(p2, vf2_0[0], fma(p3, vf3_0[0], acc3[0] * alpha))));
                acc3[1] = fma(p0, vf0_0[1], fma(p1, vf1_0[1], fma(p2, vf2_0[1], fma(p3, vf3_0[1], acc3[1] * alpha))));
                acc3[2] = fma(p0, vf0_0[2], fma(p1, vf1_0[2], fma(p2, vf2_0[2], fma(p3, vf3_0[2], acc3[2] * alpha))));
                acc3[3] = fma(p0, vf0_0[3], fma(p1, vf1_0[3], fma(p2, vf2_0[3], fma(p3, vf3_0[3], acc3[3] * alpha))));
                m3 = m_new;
            }
        }
        {
            var t = x0_4;
            t = max(t, x1_4);
            t = max(t, x2_4);
            t = max(t, x3_4);
            let m_new = max(m4, t);
            if (m_new != neg_inf()) {
                let alpha = exp(m4 - m_new);
                let p0 = exp(x0_4 - m_new);
                let p1 = exp(x1_4 - m_new);
                let p2 = exp(x2_4 - m_new);
                let p3 = exp(x3_4 - m_new);
                l4 = l4 * alpha + p0 + p1 + p2 + p3;
                acc4[0] = fma(p0, vf0_0[0], fma(p1, vf1_0[0], fma(p2, vf2_0[0], fma(p3, vf3_0[0], acc4[0] * alpha))));
                acc4[1] = fma(p0, vf0_0[1], fma(p1, vf1_0[1], fma(p2, vf2_0[1], fma(p3, vf3_0[1], acc4[1] * alpha))));
                acc4[2] = fma(p0, vf0_0[2], fma(p1, vf1_0[2], fma(p2, vf2_0[2], fma(p3, vf3_0[2], acc4[2] * alpha))));
                acc4[3] = fma(p0, vf0_0[3], fma(p1, vf1_0[3], fma(p2, vf2_0[3], fma(p3, vf3_0[3], acc4[3] * alpha))));
                m4 = m_new;
            }
        }
        {
            var t = x0_5;
            t = max(t, x1_5);
            t = max(t, x2_5);
            t = max(t, x3_5);
            let m_new = max(m5, t);
            if (m_new != neg_inf()) {
                let alpha = exp(m5 - m_new);
                let p0 = exp(x0_5 - m_new);
                let p1 = exp(x1_5 - m_new);
                let p2 = exp(x2_5 - m_new);
                let p3 = exp(x3_5 - m_new);
                l5 = l5 * alpha + p0 + p1 + p2 + p3;
                acc5[0] = fma(p0, vf0_0[0], fma(p1, vf1_0[0], fma(p2, vf2_0[0], fma(p3, vf3_0[0], acc5[0] * alpha))));
                acc5[1] = fma(p0, vf0_0[1], fma(p1, vf1_0[1], fma(p2, vf2_0[1], fma(p3, vf3_0[1], acc5[1] * alpha))));
                acc5[2] = fma(p0, vf0_0[2], fma(p1, vf1_0[2], fma(p2, vf2_0[2], fma(p3, vf3_0[2], acc5[2] * alpha))));
                acc5[3] = fma(p0, vf0_0[3], fma(p1, vf1_0[3], fma(p2, vf2_0[3], fma(p3, vf3_0[3], acc5[3] * alpha))));
                m5 = m_new;
            }
        }
        {
            var t = x0_6;
            t = max(t, x1_6);
            t = max(t, x2_6);
            t = max(t, x3_6);
            let m_new = max(m6, t);
            if (m_new != neg_inf()) {
                let alpha = exp(m6 - m_new);
                let p0 = exp(x0_6 - m_new);
                let p1 = exp(x1_6 - m_new);
                let p2 = exp(x2_6 - m_new);
                let p3 = exp(x3_6 - m_new);
                l6 = l6 * alpha + p0 + p1 + p2 + p3;
                acc6[0] = fma(p0, vf0_0[0], fma(p1, vf1_0[0], fma(p2, vf2_0[0], fma(p3, vf3_0[0], acc6[0] * alpha))));
                acc6[1] = fma(p0, vf0_0[1], fma(p1, vf1_0[1], fma(p2, vf2_0[1], fma(p3, vf3_0[1], acc6[1] * alpha))));
                acc6[2] = fma(p0, vf0_0[2], fma(p1, vf1_0[2], fma(p2, vf2_0[2], fma(p3, vf3_0[2], acc6[2] * alpha))));
                acc6[3] = fma(p0, vf0_0[3], fma(p1, vf1_0[3], fma(p2, vf2_0[3], fma(p3, vf3_0[3], acc6[3] * alpha))));
                m6 = m_new;
            }
        }
        {
            var t = x0_7;
            t = max(t, x1_7);
            t = max(t, x2_7);
            t = max(t, x3_7);
            let m_new = max(m7, t);
            if (m_new != neg_inf()) {
                let alpha = exp(m7 - m_new);
                let p0 = exp(x0_7 - m_new);
                let p1 = exp(x1_7 - m_new);
                let p2 = exp(x2_7 - m_new);
                let p3 = exp(x3_7 - m_new);
                l7 = l7 * alpha + p0 + p1 + p2 + p3;
                acc7[0] = fma(p0, vf0_0[0], fma(p1, vf1_0[0], fma(p2, vf2_0[0], fma(p3, vf3_0[0], acc7[0] * alpha))));
                acc7[1] = fma(p0, vf0_0[1], fma(p1, vf1_0[1], fma(p2, vf2_0[1], fma(p3, vf3_0[1], acc7[1] * alpha))));
                acc7[2] = fma(p0, vf0_0[2], fma(p1, vf1_0[2], fma(p2, vf2_0[2], fma(p3, vf3_0[2], acc7[2] * alpha))));
                acc7[3] = fma(p0, vf0_0[3], fma(p1, vf1_0[3], fma(p2, vf2_0[3], fma(p3, vf3_0[3], acc7[3] * alpha))));
                m7 = m_new;
            }
        }
    }
    // A subgroup's key groups merged by shuffles (lanes L, 2L, ... apart): its first key group
    // then holds the subgroup's partials.
    for (var off = L; off < sg_size; off = off * 2u) {
        {
            let mo = subgroupShuffleXor(m0, off);
            let lo = subgroupShuffleXor(l0, off);
            let mx = max(m0, mo);
            var fa = 0.0;
            if (m0 != neg_inf()) {
                fa = exp(m0 - mx);
            }
            var fb = 0.0;
            if (mo != neg_inf()) {
                fb = exp(mo - mx);
            }
            acc0[0] = acc0[0] * fa + subgroupShuffleXor(acc0[0], off) * fb;
            acc0[1] = acc0[1] * fa + subgroupShuffleXor(acc0[1], off) * fb;
            acc0[2] = acc0[2] * fa + subgroupShuffleXor(acc0[2], off) * fb;
            acc0[3] = acc0[3] * fa + subgroupShuffleXor(acc0[3], off) * fb;
            l0 = l0 * fa + lo * fb;
            m0 = mx;
        }
        {
            let mo = subgroupShuffleXor(m1, off);
            let lo = subgroupShuffleXor(l1, off);
            let mx = max(m1, mo);
            var fa = 0.0;
            if (m1 != neg_inf()) {
                fa = exp(m1 - mx);
            }
            var fb = 0.0;
            if (mo != neg_inf()) {
                fb = exp(mo - mx);
            }
            acc1[0] = acc1[0] * fa + subgroupShuffleXor(acc1[0], off) * fb;
            acc1[1] = acc1[1] * fa + subgroupShuffleXor(acc1[1], off) * fb;
            acc1[2] = acc1[2] * fa + subgroupShuffleXor(acc1[2], off) * fb;
            acc1[3] = acc1[3] * fa + subgroupShuffleXor(acc1[3], off) * fb;
            l1 = l1 * fa + lo * fb;
            m1 = mx;
        }
        {
            let mo = subgroupShuffleXor(m2, off);
            let lo = subgroupShuffleXor(l2, off);
            let mx = max(m2, mo);
            var fa = 0.0;
            if (m2 != neg_inf()) {
                fa = exp(m2 - mx);
            }
            var fb = 0.0;
            if (mo != neg_inf()) {
                fb = exp(mo - mx);
            }
            acc2[0] = acc2[0] * fa + subgroupShuffleXor(acc2[0], off) * fb;
            acc2[1] = acc2[1] * fa + subgroupShuffleXor(acc2[1], off) * fb;
            acc2[2] = acc2[2] * fa + subgroupShuffleXor(acc2[2], off) * fb;
            acc2[3] = acc2[3] * fa + subgroupShuffleXor(acc2[3], off) * fb;
            l2 = l2 * fa + lo * fb;
            m2 = mx;
        }
        {
            let mo = subgroupShuffleXor(m3, off);
            let lo = subgroupShuffleXor(l3, off);
            let mx = max(m3, mo);
            var fa = 0.0;
            if (m3 != neg_inf()) {
                fa = exp(m3 - mx);
            }
            var fb = 0.0;
            if (mo != neg_inf()) {
                fb = exp(mo - mx);
            }
            acc3[0] = acc3[0] * fa + subgroupShuffleXor(acc3[0], off) * fb;
            acc3[1] = acc3[1] * fa + subgroupShuffleXor(acc3[1], off) * fb;
            acc3[2] = acc3[2] * fa + subgroupShuffleXor(acc3[2], off) * fb;
            acc3[3] = acc3[3] * fa + subgroupShuffleXor(acc3[3], off) * fb;
            l3 = l3 * fa + lo * fb;
            m3 = mx;
        }
        {
            let mo = subgroupShuffleXor(m4, off);
            let lo = subgroupShuffleXor(l4, off);
            let mx = max(m4, mo);
            var fa = 0.0;
            if (m4 != neg_inf()) {
                fa = exp(m4 - mx);
            }
            var fb = 0.0;
            if (mo != neg_inf()) {
                fb = exp(mo - mx);
            }
            acc4[0] = acc4[0] * fa + subgroupShuffleXor(acc4[0], off) * fb;
            acc4[1] = acc4[1] * fa + subgroupShuffleXor(acc4[1], off) * fb;
            acc4[2] = acc4[2] * fa + subgroupShuffleXor(acc4[2], off) * fb;
            acc4[3] = acc4[3] * fa + subgroupShuffleXor(acc4[3], off) * fb;
            l4 = l4 * fa + lo * fb;
            m4 = mx;
        }
        {
            let mo = subgroupShuffleXor(m5, off);
            let lo = subgroupShuffleXor(l5, off);
            let mx = max(m5, mo);
            var fa = 0.0;
            if (m5 != neg_inf()) {
                fa = exp(m5 - mx);
            }
            var fb = 0.0;
            if (mo != neg_inf()) {
                fb = exp(mo - mx);
            }
            acc5[0] = acc5[0] * fa + subgroupShuffleXor(acc5[0], off) * fb;
            acc5[1] = acc5[1] * fa + subgroupShuffleXor(acc5[1], off) * fb;
            acc5[2] = acc5[2] * fa + subgroupShuffleXor(acc5[2], off) * fb;
            acc5[3] = acc5[3] * fa + subgroupShuffleXor(acc5[3], off) * fb;
            l5 = l5 * fa + lo * fb;
            m5 = mx;
        }
        {
            let mo = subgroupShuffleXor(m6, off);
            let lo = subgroupShuffleXor(l6, off);
            let mx = max(m6, mo);
            var fa = 0.0;
            if (m6 != neg_inf()) {
                fa = exp(m6 - mx);
            }
            var fb = 0.0;
            if (mo != neg_inf()) {
                fb = exp(mo - mx);
            }
            acc6[0] = acc6[0] * fa + subgroupShuffleXor(acc6[0], off) * fb;
            acc6[1] = acc6[1] * fa + subgroupShuffleXor(acc6[1], off) * fb;
            acc6[2] = acc6[2] * fa + subgroupShuffleXor(acc6[2], off) * fb;
            acc6[3] = acc6[3] * fa + subgroupShuffleXor(acc6[3], off) * fb;
            l6 = l6 * fa + lo * fb;
            m6 = mx;
        }
        {
            let mo = subgroupShuffleXor(m7, off);
            let lo = subgroupShuffleXor(l7, off);
            let mx = max(m7, mo);
            var fa = 0.0;
            if (m7 != neg_inf()) {
                fa = exp(m7 - mx);
            }
            var fb = 0.0;
            if (mo != neg_inf()) {
                fb = exp(mo - mx);
            }
            acc7[0] = acc7[0] * fa + subgroupShuffleXor(acc7[0], off) * fb;
            acc7[1] = acc7[1] * fa + subgroupShuffleXor(acc7[1], off) * fb;
            acc7[2] = acc7[2] * fa + subgroupShuffleXor(acc7[2], off) * fb;
            acc7[3] = acc7[3] * fa + subgroupShuffleXor(acc7[3], off) * fb;
            l7 = l7 * fa + lo * fb;
            m7 = mx;
        }
    }
    // The subgroups' partials combined in workgroup memory, 1 row(s) at a time.
    let sg = tid / sg_size;
    let nsg = 128u / sg_size;
    let lead = tid % sg_size < L;
    if (lead) {
        ml[(sg * 1u + 0u) * 2u] = m0;
        ml[(sg * 1u + 0u) * 2u + 1u] = l0;
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 0u] = acc0[0];
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 1u] = acc0[1];
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 2u] = acc0[2];
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 3u] = acc0[3];
    }
    workgroupBarrier();
    for (var i = tid; i < 1u * D; i = i + 128u) {
        let r = i / D;
        let col = i % D;
        let rg = blk * 8u + 0u + r;
        if (rg < p.rows) {
            var mx = neg_inf();
            for (var g = 0u; g < nsg; g = g + 1u) {
                mx = max(mx, ml[(g * 1u + r) * 2u]);
            }
            var sum = 0.0;
            var lt = 0.0;
            for (var g = 0u; g < nsg; g = g + 1u) {
                let mg = ml[(g * 1u + r) * 2u];
                if (mg != neg_inf()) {
                    let f = exp(mg - mx);
                    sum = sum + red[(g * 1u + r) * D + col] * f;
                    lt = lt + ml[(g * 1u + r) * 2u + 1u] * f;
                }
            }
            let h = kvh * p.group + rg / p.sq;
            let out = (((b * p.heads + h) * p.sq + rg % p.sq) * p.splits + split) * (D + 2u);
            part[out + col] = sum;
            if (col == 0u) {
                part[out + D] = mx;
                part[out + D + 1u] = lt;
            }
        }
    }
    workgroupBarrier();
    if (lead) {
        ml[(sg * 1u + 0u) * 2u] = m1;
        ml[(sg * 1u + 0u) * 2u + 1u] = l1;
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 0u] = acc1[0];
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 1u] = acc1[1];
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 2u] = acc1[2];
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 3u] = acc1[3];
    }
    workgroupBarrier();
    for (var i = tid; i < 1u * D; i = i + 128u) {
        let r = i / D;
        let col = i % D;
        let rg = blk * 8u + 1u + r;
        if (rg < p.rows) {
            var mx = neg_inf();
            for (var g = 0u; g < nsg; g = g + 1u) {
                mx = max(mx, ml[(g * 1u + r) * 2u]);
            }
            var sum = 0.0;
            var lt = 0.0;
            for (var g = 0u; g < nsg; g = g + 1u) {
                let mg = ml[(g * 1u + r) * 2u];
                if (mg != neg_inf()) {
                    let f = exp(mg - mx);
                    sum = sum + red[(g * 1u + r) * D + col] * f;
                    lt = lt + ml[(g * 1u + r) * 2u + 1u] * f;
                }
            }
            let h = kvh * p.group + rg / p.sq;
            let out = (((b * p.heads + h) * p.sq + rg % p.sq) * p.splits + split) * (D + 2u);
            part[out + col] = sum;
            if (col == 0u) {
                part[out + D] = mx;
                part[out + D + 1u] = lt;
            }
        }
    }
    workgroupBarrier();
    if (lead) {
        ml[(sg * 1u + 0u) * 2u] = m2;
        ml[(sg * 1u + 0u) * 2u + 1u] = l2;
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 0u] = acc2[0];
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 1u] = acc2[1];
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 2u] = acc2[2];
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 3u] = acc2[3];
    }
    workgroupBarrier();
    for (var i = tid; i < 1u * D; i = i + 128u) {
        let r = i / D;
        let col = i % D;
        let rg = blk * 8u + 2u + r;
        if (rg < p.rows) {
            var mx = neg_inf();
            for (var g = 0u; g < nsg; g = g + 1u) {
                mx = max(mx, ml[(g * 1u + r) * 2u]);
            }
            var sum = 0.0;
            var lt = 0.0;
            for (var g = 0u; g < nsg; g = g + 1u) {
                let mg = ml[(g * 1u + r) * 2u];
                if (mg != neg_inf()) {
                    let f = exp(mg - mx);
                    sum = sum + red[(g * 1u + r) * D + col] * f;
                    lt = lt + ml[(g * 1u + r) * 2u + 1u] * f;
                }
            }
            let h = kvh * p.group + rg / p.sq;
            let out = (((b * p.heads + h) * p.sq + rg % p.sq) * p.splits + split) * (D + 2u);
            part[out + col] = sum;
            if (col == 0u) {
                part[out + D] = mx;
                part[out + D + 1u] = lt;
            }
        }
    }
    workgroupBarrier();
    if (lead) {
        ml[(sg * 1u + 0u) * 2u] = m3;
        ml[(sg * 1u + 0u) * 2u + 1u] = l3;
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 0u] = acc3[0];
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 1u] = acc3[1];
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 2u] = acc3[2];
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 3u] = acc3[3];
    }
    workgroupBarrier();
    for (var i = tid; i < 1u * D; i = i + 128u) {
        let r = i / D;
        let col = i % D;
        let rg = blk * 8u + 3u + r;
        if (rg < p.rows) {
            var mx = neg_inf();
            for (var g = 0u; g < nsg; g = g + 1u) {
                mx = max(mx, ml[(g * 1u + r) * 2u]);
            }
            var sum = 0.0;
            var lt = 0.0;
            for (var g = 0u; g < nsg; g = g + 1u) {
                let mg = ml[(g * 1u + r) * 2u];
                if (mg != neg_inf()) {
                    let f = exp(mg - mx);
                    sum = sum + red[(g * 1u + r) * D + col] * f;
                    lt = lt + ml[(g * 1u + r) * 2u + 1u] * f;
                }
            }
            let h = kvh * p.group + rg / p.sq;
            let out = (((b * p.heads + h) * p.sq + rg % p.sq) * p.splits + split) * (D + 2u);
            part[out + col] = sum;
            if (col == 0u) {
                part[out + D] = mx;
                part[out + D + 1u] = lt;
            }
        }
    }
    workgroupBarrier();
    if (lead) {
        ml[(sg * 1u + 0u) * 2u] = m4;
        ml[(sg * 1u + 0u) * 2u + 1u] = l4;
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 0u] = acc4[0];
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 1u] = acc4[1];
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 2u] = acc4[2];
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 3u] = acc4[3];
    }
    workgroupBarrier();
    for (var i = tid; i < 1u * D; i = i + 128u) {
        let r = i / D;
        let col = i % D;
        let rg = blk * 8u + 4u + r;
        if (rg < p.rows) {
            var mx = neg_inf();
            for (var g = 0u; g < nsg; g = g + 1u) {
                mx = max(mx, ml[(g * 1u + r) * 2u]);
            }
            var sum = 0.0;
            var lt = 0.0;
            for (var g = 0u; g < nsg; g = g + 1u) {
                let mg = ml[(g * 1u + r) * 2u];
                if (mg != neg_inf()) {
                    let f = exp(mg - mx);
                    sum = sum + red[(g * 1u + r) * D + col] * f;
                    lt = lt + ml[(g * 1u + r) * 2u + 1u] * f;
                }
            }
            let h = kvh * p.group + rg / p.sq;
            let out = (((b * p.heads + h) * p.sq + rg % p.sq) * p.splits + split) * (D + 2u);
            part[out + col] = sum;
            if (col == 0u) {
                part[out + D] = mx;
                part[out + D + 1u] = lt;
            }
        }
    }
    workgroupBarrier();
    if (lead) {
        ml[(sg * 1u + 0u) * 2u] = m5;
        ml[(sg * 1u + 0u) * 2u + 1u] = l5;
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 0u] = acc5[0];
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 1u] = acc5[1];
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 2u] = acc5[2];
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 3u] = acc5[3];
    }
    workgroupBarrier();
    for (var i = tid; i < 1u * D; i = i + 128u) {
        let r = i / D;
        let col = i % D;
        let rg = blk * 8u + 5u + r;
        if (rg < p.rows) {
            var mx = neg_inf();
            for (var g = 0u; g < nsg; g = g + 1u) {
                mx = max(mx, ml[(g * 1u + r) * 2u]);
            }
            var sum = 0.0;
            var lt = 0.0;
            for (var g = 0u; g < nsg; g = g + 1u) {
                let mg = ml[(g * 1u + r) * 2u];
                if (mg != neg_inf()) {
                    let f = exp(mg - mx);
                    sum = sum + red[(g * 1u + r) * D + col] * f;
                    lt = lt + ml[(g * 1u + r) * 2u + 1u] * f;
                }
            }
            let h = kvh * p.group + rg / p.sq;
            let out = (((b * p.heads + h) * p.sq + rg % p.sq) * p.splits + split) * (D + 2u);
            part[out + col] = sum;
            if (col == 0u) {
                part[out + D] = mx;
                part[out + D + 1u] = lt;
            }
        }
    }
    workgroupBarrier();
    if (lead) {
        ml[(sg * 1u + 0u) * 2u] = m6;
        ml[(sg * 1u + 0u) * 2u + 1u] = l6;
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 0u] = acc6[0];
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 1u] = acc6[1];
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 2u] = acc6[2];
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 3u] = acc6[3];
    }
    workgroupBarrier();
    for (var i = tid; i < 1u * D; i = i + 128u) {
        let r = i / D;
        let col = i % D;
        let rg = blk * 8u + 6u + r;
        if (rg < p.rows) {
            var mx = neg_inf();
            for (var g = 0u; g < nsg; g = g + 1u) {
                mx = max(mx, ml[(g * 1u + r) * 2u]);
            }
            var sum = 0.0;
            var lt = 0.0;
            for (var g = 0u; g < nsg; g = g + 1u) {
                let mg = ml[(g * 1u + r) * 2u];
                if (mg != neg_inf()) {
                    let f = exp(mg - mx);
                    sum = sum + red[(g * 1u + r) * D + col] * f;
                    lt = lt + ml[(g * 1u + r) * 2u + 1u] * f;
                }
            }
            let h = kvh * p.group + rg / p.sq;
            let out = (((b * p.heads + h) * p.sq + rg % p.sq) * p.splits + split) * (D + 2u);
            part[out + col] = sum;
            if (col == 0u) {
                part[out + D] = mx;
                part[out + D + 1u] = lt;
            }
        }
    }
    workgroupBarrier();
    if (lead) {
        ml[(sg * 1u + 0u) * 2u] = m7;
        ml[(sg * 1u + 0u) * 2u + 1u] = l7;
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 0u] = acc7[0];
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 1u] = acc7[1];
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 2u] = acc7[2];
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 3u] = acc7[3];
    }
    workgroupBarrier();
    for (var i = tid; i < 1u * D; i = i + 128u) {
        let r = i / D;
        let col = i % D;
        let rg = blk * 8u + 7u + r;
        if (rg < p.rows) {
            var mx = neg_inf();
            for (var g = 0u; g < nsg; g = g + 1u) {
                mx = max(mx, ml[(g * 1u + r) * 2u]);
            }
            var sum = 0.0;
            var lt = 0.0;
            for (var g = 0u; g < nsg; g = g + 1u) {
                let mg = ml[(g * 1u + r) * 2u];
                if (mg != neg_inf()) {
                    let f = exp(mg - mx);
                    sum = sum + red[(g * 1u + r) * D + col] * f;
                    lt = lt + ml[(g * 1u + r) * 2u + 1u] * f;
                }
            }
            let h = kvh * p.group + rg / p.sq;
            let out = (((b * p.heads + h) * p.sq + rg % p.sq) * p.splits + split) * (D + 2u);
            part[out + col] = sum;
            if (col == 0u) {
                part[out + D] = mx;
                part[out + D + 1u] = lt;
            }
        }
    }
if (p.fused == 0u) {
        return;
    }
    storageBarrier();
    if (tid == 0u) {
        counted = atomicAdd(&done[t1], 1u) + 1u;
    }
    if (workgroupUniformLoad(&counted) != p.splits) {
        return;
    }
    storageBarrier();
    let lane = tid % sg_size;
    let pw = D + 2u;
    for (var r = sg; r < 8u; r = r + nsg) {
        let rg = blk * 8u + r;
        if (rg < p.rows) {
            let h = kvh * p.group + rg / p.sq;
            let base = ((b * p.heads + h) * p.sq + rg % p.sq) * p.splits * pw + D;
            var mx = neg_inf();
            for (var s = lane; s < p.splits; s = s + sg_size) {
                mx = max(mx, part[base + s * pw]);
            }
            mx = subgroupMax(mx);
            var lt = 0.0;
            for (var s = lane; s < p.splits; s = s + sg_size) {
                let ms = part[base + s * pw];
                var f = 0.0;
                if (ms != neg_inf()) {
                    f = exp(ms - mx);
                }
                red[r * p.splits + s] = f;
                lt = lt + f * part[base + s * pw + 1u];
            }
            lt = subgroupAdd(lt);
            for (var s = lane; s < p.splits; s = s + sg_size) {
                red[r * p.splits + s] = red[r * p.splits + s] / lt;
            }
        }
    }
    workgroupBarrier();
    for (var i = tid; i < 256u; i = i + 128u) {
        let r = i / 32u;
        let col = (i % 32u) * 4u;
        let rg = blk * 8u + r;
        if (rg < p.rows) {
            let h = kvh * p.group + rg / p.sq;
            let qi = rg % p.sq;
            let at = ((b * p.heads + h) * p.sq + qi) * p.splits * pw + col;
            let wr = r * p.splits;
            var acc = vec4<f32>();
            var s = 0u;
            for (; s + 4u <= p.splits; s = s + 4u) {
                let pa0 = at + (s + 0u) * pw;
                let px0 = vec4<f32>(part[pa0], part[pa0 + 1u], part[pa0 + 2u], part[pa0 + 3u]);
                let pa1 = at + (s + 1u) * pw;
                let px1 = vec4<f32>(part[pa1], part[pa1 + 1u], part[pa1 + 2u], part[pa1 + 3u]);
                let pa2 = at + (s + 2u) * pw;
                let px2 = vec4<f32>(part[pa2], part[pa2 + 1u], part[pa2 + 2u], part[pa2 + 3u]);
                let pa3 = at + (s + 3u) * pw;
                let px3 = vec4<f32>(part[pa3], part[pa3 + 1u], part[pa3 + 2u], part[pa3 + 3u]);
                acc = acc + px0 * red[wr + s] + px1 * red[wr + s + 1u] + px2 * red[wr + s + 2u] + px3 * red[wr + s + 3u];
            }
            for (; s < p.splits; s = s + 1u) {
                let pa = at + s * pw;
                acc = acc + vec4<f32>(part[pa], part[pa + 1u], part[pa + 2u], part[pa + 3u]) * red[wr + s];
            }
            let ob = b * p.o_stride.x + h * p.o_stride.y + qi * p.o_stride.z + col * p.o_stride.w;
            for (var c = 0u; c < 4u; c = c + 1u) {
                o[ob + c * p.o_stride.w] = f32(acc[c]);
            }
        }
    }
    if (tid == 0u) {
        atomicStore(&done[t1], 0u);
    }
}
