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
    // Keys per chunk (a multiple of 32).
    chunk: u32,
    // Workgroups with work: batch · K/V heads · row blocks · splits.
    count: u32,
    splits: u32,
    // Query rows per K/V head (group · sq), and blocks of 1 of them.
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
@group(0) @binding(3) var<storage, read_write> part: array<f32>;
@group(0) @binding(4) var<storage, read_write> o: array<f32>;
@group(0) @binding(5) var<storage, read_write> done: array<atomic<u32>>;
@group(0) @binding(6) var<uniform> p: Params;

const D: u32 = 128u;
// Invocations per key row (8 key groups in the workgroup).
const L: u32 = 16u;
// Keys per step: 4 per key group.
const STEP: u32 = 32u;
// Elements per 16-byte chunk.
const E: u32 = 4u;

// The subgroups' output columns of 1 row(s), then their maxima and sums.
var<workgroup> red: array<f32, 1024>;
var<workgroup> ml: array<f32, 16>;
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
    let rg0 = blk * 1u + 0u;
    let live0 = rg0 < p.rows;
    let h0 = kvh * p.group + rg0 / p.sq;
    let qi0 = rg0 % p.sq;
    var end0 = 0u;
    var q0: array<f32, 8>;
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
        q0[4] = f32(q[q_at + (1u * L * E + li * E + 0u) * p.q_stride.w]);
        q0[5] = f32(q[q_at + (1u * L * E + li * E + 1u) * p.q_stride.w]);
        q0[6] = f32(q[q_at + (1u * L * E + li * E + 2u) * p.q_stride.w]);
        q0[7] = f32(q[q_at + (1u * L * E + li * E + 3u) * p.q_stride.w]);
    }
    var m0 = neg_inf();
    var l0 = 0.0;
    var acc0: array<f32, 8>;

    var k_hi = end0;
    let c0 = split * p.chunk;
    let c1 = min(c0 + p.chunk, k_hi);
    for (var j0 = c0; j0 < c1; j0 = j0 + STEP) {
        // All of the step's K and V loads are issued before any is used.
        let key0 = j0 + kg + 0u;
        let ok0 = key0 < c1;
        var kx0_0 = vec4<f32>();
        var vx0_0 = vec4<f32>();
        var kx0_1 = vec4<f32>();
        var vx0_1 = vec4<f32>();
        if (ok0) {
            let ka = (k_base + key0 * p.k_stride.z) / E + li;
            let va = (v_base + key0 * p.v_stride.z) / E + li;
            kx0_0 = k[ka + 0u * L];
            vx0_0 = v[va + 0u * L];
            kx0_1 = k[ka + 1u * L];
            vx0_1 = v[va + 1u * L];
        }
        let key1 = j0 + kg + 8u;
        let ok1 = key1 < c1;
        var kx1_0 = vec4<f32>();
        var vx1_0 = vec4<f32>();
        var kx1_1 = vec4<f32>();
        var vx1_1 = vec4<f32>();
        if (ok1) {
            let ka = (k_base + key1 * p.k_stride.z) / E + li;
            let va = (v_base + key1 * p.v_stride.z) / E + li;
            kx1_0 = k[ka + 0u * L];
            vx1_0 = v[va + 0u * L];
            kx1_1 = k[ka + 1u * L];
            vx1_1 = v[va + 1u * L];
        }
        let key2 = j0 + kg + 16u;
        let ok2 = key2 < c1;
        var kx2_0 = vec4<f32>();
        var vx2_0 = vec4<f32>();
        var kx2_1 = vec4<f32>();
        var vx2_1 = vec4<f32>();
        if (ok2) {
            let ka = (k_base + key2 * p.k_stride.z) / E + li;
            let va = (v_base + key2 * p.v_stride.z) / E + li;
            kx2_0 = k[ka + 0u * L];
            vx2_0 = v[va + 0u * L];
            kx2_1 = k[ka + 1u * L];
            vx2_1 = v[va + 1u * L];
        }
        let key3 = j0 + kg + 24u;
        let ok3 = key3 < c1;
        var kx3_0 = vec4<f32>();
        var vx3_0 = vec4<f32>();
        var kx3_1 = vec4<f32>();
        var vx3_1 = vec4<f32>();
        if (ok3) {
            let ka = (k_base + key3 * p.k_stride.z) / E + li;
            let va = (v_base + key3 * p.v_stride.z) / E + li;
            kx3_0 = k[ka + 0u * L];
            vx3_0 = v[va + 0u * L];
            kx3_1 = k[ka + 1u * L];
            vx3_1 = v[va + 1u * L];
        }
        // This invocation's share of each key's dot products, then the key row's sum.
        let kf0_0 = chunk_f32(kx0_0);
        let kf0_1 = chunk_f32(kx0_1);
        var s0_0 = 0.0;
        s0_0 = fma(q0[0], kf0_0[0], s0_0);
        s0_0 = fma(q0[1], kf0_0[1], s0_0);
        s0_0 = fma(q0[2], kf0_0[2], s0_0);
        s0_0 = fma(q0[3], kf0_0[3], s0_0);
        s0_0 = fma(q0[4], kf0_1[0], s0_0);
        s0_0 = fma(q0[5], kf0_1[1], s0_0);
        s0_0 = fma(q0[6], kf0_1[2], s0_0);
        s0_0 = fma(q0[7], kf0_1[3], s0_0);
        let kf1_0 = chunk_f32(kx1_0);
        let kf1_1 = chunk_f32(kx1_1);
        var s1_0 = 0.0;
        s1_0 = fma(q0[0], kf1_0[0], s1_0);
        s1_0 = fma(q0[1], kf1_0[1], s1_0);
        s1_0 = fma(q0[2], kf1_0[2], s1_0);
        s1_0 = fma(q0[3], kf1_0[3], s1_0);
        s1_0 = fma(q0[4], kf1_1[0], s1_0);
        s1_0 = fma(q0[5], kf1_1[1], s1_0);
        s1_0 = fma(q0[6], kf1_1[2], s1_0);
        s1_0 = fma(q0[7], kf1_1[3], s1_0);
        let kf2_0 = chunk_f32(kx2_0);
        let kf2_1 = chunk_f32(kx2_1);
        var s2_0 = 0.0;
        s2_0 = fma(q0[0], kf2_0[0], s2_0);
        s2_0 = fma(q0[1], kf2_0[1], s2_0);
        s2_0 = fma(q0[2], kf2_0[2], s2_0);
        s2_0 = fma(q0[3], kf2_0[3], s2_0);
        s2_0 = fma(q0[4], kf2_1[0], s2_0);
        s2_0 = fma(q0[5], kf2_1[1], s2_0);
        s2_0 = fma(q0[6], kf2_1[2], s2_0);
        s2_0 = fma(q0[7], kf2_1[3], s2_0);
        let kf3_0 = chunk_f32(kx3_0);
        let kf3_1 = chunk_f32(kx3_1);
        var s3_0 = 0.0;
        s3_0 = fma(q0[0], kf3_0[0], s3_0);
        s3_0 = fma(q0[1], kf3_0[1], s3_0);
        s3_0 = fma(q0[2], kf3_0[2], s3_0);
        s3_0 = fma(q0[3], kf3_0[3], s3_0);
        s3_0 = fma(q0[4], kf3_1[0], s3_0);
        s3_0 = fma(q0[5], kf3_1[1], s3_0);
        s3_0 = fma(q0[6], kf3_1[2], s3_0);
        s3_0 = fma(q0[7], kf3_1[3], s3_0);
        s0_0 = s0_0 + subgroupShuffleXor(s0_0, 8u);
        s1_0 = s1_0 + subgroupShuffleXor(s1_0, 8u);
        s2_0 = s2_0 + subgroupShuffleXor(s2_0, 8u);
        s3_0 = s3_0 + subgroupShuffleXor(s3_0, 8u);
        s0_0 = s0_0 + subgroupShuffleXor(s0_0, 4u);
        s1_0 = s1_0 + subgroupShuffleXor(s1_0, 4u);
        s2_0 = s2_0 + subgroupShuffleXor(s2_0, 4u);
        s3_0 = s3_0 + subgroupShuffleXor(s3_0, 4u);
        s0_0 = s0_0 + subgroupShuffleXor(s0_0, 2u);
        s1_0 = s1_0 + subgroupShuffleXor(s1_0, 2u);
        s2_0 = s2_0 + subgroupShuffleXor(s2_0, 2u);
        s3_0 = s3_0 + subgroupShuffleXor(s3_0, 2u);
        s0_0 = s0_0 + subgroupShuffleXor(s0_0, 1u);
        s1_0 = s1_0 + subgroupShuffleXor(s1_0, 1u);
        s2_0 = s2_0 + subgroupShuffleXor(s2_0, 1u);
        s3_0 = s3_0 + subgroupShuffleXor(s3_0, 1u);
        // Scale, cap and mask; keys past the chunk or a row's end are excluded.
        var x0_0 = neg_inf();
        if (ok0 && key0 < end0) {
            x0_0 = capped(s0_0 * p.scale);
        }
        var x1_0 = neg_inf();
        if (ok1 && key1 < end0) {
            x1_0 = capped(s1_0 * p.scale);
        }
        var x2_0 = neg_inf();
        if (ok2 && key2 < end0) {
            x2_0 = capped(s2_0 * p.scale);
        }
        var x3_0 = neg_inf();
        if (ok3 && key3 < end0) {
            x3_0 = capped(s3_0 * p.scale);
        }
        // Online softmax per row over the step's keys, and P·V into the output columns.
        let vf0_0 = chunk_f32(vx0_0);
        let vf0_1 = chunk_f32(vx0_1);
        let vf1_0 = chunk_f32(vx1_0);
        let vf1_1 = chunk_f32(vx1_1);
        let vf2_0 = chunk_f32(vx2_0);
        let vf2_1 = chunk_f32(vx2_1);
        let vf3_0 = chunk_f32(vx3_0);
        let vf3_1 = chunk_f32(vx3_1);
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
                acc0[4] = fma(p0, vf0_1[0], fma(p1, vf1_1[0], fma(p2, vf2_1[0], fma(p3, vf3_1[0], acc0[4] * alpha))));
                acc0[5] = fma(p0, vf0_1[1], fma(p1, vf1_1[1], fma(p2, vf2_1[1], fma(p3, vf3_1[1], acc0[5] * alpha))));
                acc0[6] = fma(p0, vf0_1[2], fma(p1, vf1_1[2], fma(p2, vf2_1[2], fma(p3, vf3_1[2], acc0[6] * alpha))));
                acc0[7] = fma(p0, vf0_1[3], fma(p1, vf1_1[3], fma(p2, vf2_1[3], fma(p3, vf3_1[3], acc0[7] * alpha))));
                m0 = m_new;
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
            acc0[4] = acc0[4] * fa + subgroupShuffleXor(acc0[4], off) * fb;
            acc0[5] = acc0[5] * fa + subgroupShuffleXor(acc0[5], off) * fb;
            acc0[6] = acc0[6] * fa + subgroupShuffleXor(acc0[6], off) * fb;
            acc0[7] = acc0[7] * fa + subgroupShuffleXor(acc0[7], off) * fb;
            l0 = l0 * fa + lo * fb;
            m0 = mx;
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
        red[(sg * 1u + 0u) * D + 1u * L * E + li * E + 0u] = acc0[4];
        red[(sg * 1u + 0u) * D + 1u * L * E + li * E + 1u] = acc0[5];
        red[(sg * 1u + 0u) * D + 1u * L * E + li * E + 2u] = acc0[6];
        red[(sg * 1u + 0u) * D + 1u * L * E + li * E + 3u] = acc0[7];
    }
    workgroupBarrier();
    for (var i = tid; i < 1u * D; i = i + 128u) {
        let r = i / D;
        let col = i % D;
        let rg = blk * 1u + 0u + r;
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
    for (var r = sg; r < 1u; r = r + nsg) {
        let rg = blk * 1u + r;
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
    for (var i = tid; i < 32u; i = i + 128u) {
        let r = i / 32u;
        let col = (i % 32u) * 4u;
        let rg = blk * 1u + r;
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
