enable f16;

struct Params {
    sq: u32,
    skv: u32,
    heads: u32,
    // Query heads per K/V head.
    group: u32,
    q_stride: vec4<u32>,
    k_stride: vec4<u32>,
    v_stride: vec4<u32>,
    o_stride: vec4<u32>,
    // Mask strides over (batch, head, query, key); 0 where it broadcasts.
    m_stride: vec4<u32>,
    scale: f32,
    causal: u32,
    causal_offset: i32,
    // Scaled scores become softcap · tanh(s / softcap) where this is positive.
    softcap: f32,
    q_tiles: u32,
    // Workgroups with work: (batch · heads) · q_tiles · splits.
    count: u32,
    grid_x: u32,
    grid_y: u32,
    // Key chunks per query tile and keys per chunk (a multiple of BC).
    splits: u32,
    chunk: u32,
    // K and V rows are contiguous and every row starts on an 8-half boundary.
    vec_kv: u32,
    pad1: u32,
}

@group(0) @binding(0) var<storage, read> q: array<f16>;
// K and V as 8-half chunks (one 16-byte vec4<u32> each, f16x8.wgsl.j2): whole chunks when their
// rows are contiguous and 8-aligned (`vec_kv`), else element by element.
@group(0) @binding(1) var<storage, read> k: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> v: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> o: array<f16>;
@group(0) @binding(4) var<uniform> p: Params;

const BR: u32 = 32u;
const BC: u32 = 32u;
const D: u32 = 96u;
// f16 elements between staged rows of Q/K/V and of P; f32 words between rows of the score and
// output scratch.
const KS: u32 = 104u;
const PS: u32 = 40u;
const RW: u32 = 68u;
// Where V is staged, after K.
const V0: u32 = 3328u;
const LOG2E: f32 = 1.4426950408889634;
const LN2: f32 = 0.6931471805599453;
// How far (log2 units) a row's max may pass its reference before the output is rescaled.
const TAU: f32 = 8.0;

// K then V (32 rows each), in 8-half chunks; Q is staged here once at the start.
var<workgroup> kv: array<array<f16, 8>, 832>;
// Per subgroup 16 rows: the scores of a tile, then a chunk of P·V.
var<workgroup> sr: array<f32, 2176>;
// Per subgroup 16 rows of P (f16).
var<workgroup> pt: array<f16, 1280>;
// Q, where the emulated fragments read it for the whole run.
var<workgroup> qe: array<f16, 3328>;

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


// Eight f16 loaded as one vec4<u32> (a single 16-byte load: as mat2x4<f16>, the NVIDIA driver
// split each into two 8-byte loads and repacked them, and COOP_WIDE ran 20% slower). naga 30 types
// bitcast<vec2<f16>>(u32) as f32, so the halves go through unpack2x16float, exact for every f16
// (NaN stays NaN), which the driver folds into a plain register move.
fn f16x8(r: vec4<u32>) -> array<f16, 8> {
    let h0 = vec2<f16>(unpack2x16float(r.x));
    let h1 = vec2<f16>(unpack2x16float(r.y));
    let h2 = vec2<f16>(unpack2x16float(r.z));
    let h3 = vec2<f16>(unpack2x16float(r.w));
    return array<f16, 8>(h0.x, h0.y, h1.x, h1.y, h2.x, h2.y, h3.x, h3.y);
}

// Element j of eight f16 held as a vec4<u32>.
fn f16_of(r: vec4<u32>, j: u32) -> f16 {
    return f16(unpack2x16float(r[j / 2u])[j % 2u]);
}


fn k_at(e: u32) -> f16 {
    return f16_of(k[e / 8u], e % 8u);
}

fn v_at(e: u32) -> f16 {
    return f16_of(v[e / 8u], e % 8u);
}

fn kv_at(e: u32) -> f16 {
    return kv[e / 8u][e % 8u];
}

// Emulated fragments: an A or B operand is the staged index it would be loaded from; an
// accumulator is the 8 elements (row-major, from 8·lane) this invocation owns, as on the hardware.
// acc += Q·Kᵀ: A row-major in qe, B column-major in kv (element (k, n) at eb + n·KS + k).
fn emu_mma_qk(acc: ptr<function, array<f32, 8>>, lane: u32, ea: u32, eb: u32) {
    for (var e = 0u; e < 8u; e = e + 1u) {
        let r = (lane * 8u + e) / 16u;
        let c = (lane * 8u + e) % 16u;
        var s = (*acc)[e];
        for (var i = 0u; i < 16u; i = i + 1u) {
            s = fma(f32(qe[ea + r * KS + i]), f32(kv_at(eb + c * KS + i)), s);
        }
        (*acc)[e] = s;
    }
}

// acc += P·V: A row-major in pt, B row-major in kv.
fn emu_mma_pv(acc: ptr<function, array<f32, 8>>, lane: u32, ea: u32, eb: u32) {
    for (var e = 0u; e < 8u; e = e + 1u) {
        let r = (lane * 8u + e) / 16u;
        let c = (lane * 8u + e) % 16u;
        var s = (*acc)[e];
        for (var i = 0u; i < 16u; i = i + 1u) {
            s = fma(f32(pt[ea + r * PS + i]), f32(kv_at(eb + i * KS + c)), s);
        }
        (*acc)[e] = s;
    }
}

// coopStoreT(acc, &sr[e0], RW).
fn emu_store(acc: ptr<function, array<f32, 8>>, lane: u32, e0: u32) {
    for (var e = 0u; e < 8u; e = e + 1u) {
        sr[e0 + ((lane * 8u + e) / 16u) * RW + (lane * 8u + e) % 16u] = (*acc)[e];
    }
}

// acc = coopLoadT(&sr[e0], RW).
fn emu_load(acc: ptr<function, array<f32, 8>>, lane: u32, e0: u32) {
    for (var e = 0u; e < 8u; e = e + 1u) {
        (*acc)[e] = sr[e0 + ((lane * 8u + e) / 16u) * RW + (lane * 8u + e) % 16u];
    }
}



// The next tile's K and V rows, eight f16 per vec4<u32>.
struct KvNext {
    k: array<vec4<u32>, 6>,
    v: array<vec4<u32>, 6>,
}

// Loads `BC` rows of K and of V from key k0 (rows past the end are zeros).
fn fetch_kv(k_base: u32, v_base: u32, k0: u32, tid: u32) -> KvNext {
    var r = KvNext();
    let i0 = tid + 0u;
    let c0 = i0 / 12u;
    let d0 = i0 % 12u;
    if (k0 + c0 < p.skv) {
        r.k[0] = k[(k_base + (k0 + c0) * p.k_stride.z) / 8u + d0];
        r.v[0] = v[(v_base + (k0 + c0) * p.v_stride.z) / 8u + d0];
    }
    let i1 = tid + 64u;
    let c1 = i1 / 12u;
    let d1 = i1 % 12u;
    if (k0 + c1 < p.skv) {
        r.k[1] = k[(k_base + (k0 + c1) * p.k_stride.z) / 8u + d1];
        r.v[1] = v[(v_base + (k0 + c1) * p.v_stride.z) / 8u + d1];
    }
    let i2 = tid + 128u;
    let c2 = i2 / 12u;
    let d2 = i2 % 12u;
    if (k0 + c2 < p.skv) {
        r.k[2] = k[(k_base + (k0 + c2) * p.k_stride.z) / 8u + d2];
        r.v[2] = v[(v_base + (k0 + c2) * p.v_stride.z) / 8u + d2];
    }
    let i3 = tid + 192u;
    let c3 = i3 / 12u;
    let d3 = i3 % 12u;
    if (k0 + c3 < p.skv) {
        r.k[3] = k[(k_base + (k0 + c3) * p.k_stride.z) / 8u + d3];
        r.v[3] = v[(v_base + (k0 + c3) * p.v_stride.z) / 8u + d3];
    }
    let i4 = tid + 256u;
    let c4 = i4 / 12u;
    let d4 = i4 % 12u;
    if (k0 + c4 < p.skv) {
        r.k[4] = k[(k_base + (k0 + c4) * p.k_stride.z) / 8u + d4];
        r.v[4] = v[(v_base + (k0 + c4) * p.v_stride.z) / 8u + d4];
    }
    let i5 = tid + 320u;
    let c5 = i5 / 12u;
    let d5 = i5 % 12u;
    if (k0 + c5 < p.skv) {
        r.k[5] = k[(k_base + (k0 + c5) * p.k_stride.z) / 8u + d5];
        r.v[5] = v[(v_base + (k0 + c5) * p.v_stride.z) / 8u + d5];
    }
    return r;
}

// Stores what fetch_kv loaded.
fn put_kv(r: KvNext, tid: u32) {
    let i0 = tid + 0u;
    let c0 = i0 / 12u;
    let d0 = i0 % 12u;
    kv[c0 * 13u + d0] = f16x8(r.k[0]);
    kv[416u + c0 * 13u + d0] = f16x8(r.v[0]);
    let i1 = tid + 64u;
    let c1 = i1 / 12u;
    let d1 = i1 % 12u;
    kv[c1 * 13u + d1] = f16x8(r.k[1]);
    kv[416u + c1 * 13u + d1] = f16x8(r.v[1]);
    let i2 = tid + 128u;
    let c2 = i2 / 12u;
    let d2 = i2 % 12u;
    kv[c2 * 13u + d2] = f16x8(r.k[2]);
    kv[416u + c2 * 13u + d2] = f16x8(r.v[2]);
    let i3 = tid + 192u;
    let c3 = i3 / 12u;
    let d3 = i3 % 12u;
    kv[c3 * 13u + d3] = f16x8(r.k[3]);
    kv[416u + c3 * 13u + d3] = f16x8(r.v[3]);
    let i4 = tid + 256u;
    let c4 = i4 / 12u;
    let d4 = i4 % 12u;
    kv[c4 * 13u + d4] = f16x8(r.k[4]);
    kv[416u + c4 * 13u + d4] = f16x8(r.v[4]);
    let i5 = tid + 320u;
    let c5 = i5 / 12u;
    let d5 = i5 % 12u;
    kv[c5 * 13u + d5] = f16x8(r.k[5]);
    kv[416u + c5 * 13u + d5] = f16x8(r.v[5]);
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    // Grid padding past the last tile recomputes tile 0 and writes nothing: an early return
    // would leave the cooperative operations in non-uniform control flow.
    let linear = wid.x + p.grid_x * (wid.y + p.grid_y * wid.z);
    let live = linear < p.count;
    let lin = select(0u, linear, live);
    let split = lin % p.splits;
    let tile = lin / p.splits;
    var bh = tile / p.q_tiles;
    var qt = tile % p.q_tiles;
    let q0 = qt * BR;
    let b = bh / p.heads;
    let h = bh % p.heads;
    let kvh = h / p.group;
    let q_base = b * p.q_stride.x + h * p.q_stride.y;
    let k_base = b * p.k_stride.x + kvh * p.k_stride.y;
    let v_base = b * p.v_stride.x + kvh * p.v_stride.y;
    let o_base = b * p.o_stride.x + h * p.o_stride.y;
    let sg = tid / 32u;
    let lane = tid % 32u;
    // This invocation's row of the subgroup's 16, its half of the row, and where its columns start.
    let r = lane / 2u;
    let half = lane % 2u;
    let off0 = (r / 8u) + 2u * half;
    let off1 = (1u - r / 8u) + 2u * half;
    let qi = q0 + sg * 16u + r;
    let s_row = sg * 16u * RW + r * RW;
    let p_row = sg * 16u * PS + r * PS;
    let s_sg = sg * 16u * RW;
    let p_sg = sg * 16u * PS;

    // Q rows (zeros past the end) staged once, then held as fragments.
    for (var i = tid; i < BR * D; i = i + 64u) {
        let row = i / D;
        let dd = i % D;
        var x = f16(0.0);
        if (q0 + row < p.sq) {
            x = q[q_base + (q0 + row) * p.q_stride.z + dd * p.q_stride.w];
        }
        qe[row * KS + dd] = x;

    }
    workgroupBarrier();
    let q_sg = sg * 16u * KS;
    let eq0 = q_sg + 0u;
    let qf0 = eq0;
    let eq1 = q_sg + 16u;
    let qf1 = eq1;
    let eq2 = q_sg + 32u;
    let qf2 = eq2;
    let eq3 = q_sg + 48u;
    let qf3 = eq3;
    let eq4 = q_sg + 64u;
    let qf4 = eq4;
    let eq5 = q_sg + 80u;
    let qf5 = eq5;

    // The row's reference max (log2 units: P is exp2 of the scores less it), this invocation's
    // share of its sum, and the output rows as f32 fragments.
    let scale2 = p.scale * LOG2E;
    var m_run = neg_inf();
    var l_run = 0.0;
    var oacc0 = array<f32, 8>();
    var oacc1 = array<f32, 8>();
    var oacc2 = array<f32, 8>();
    var oacc3 = array<f32, 8>();
    var oacc4 = array<f32, 8>();
    var oacc5 = array<f32, 8>();
    // Keys past the last one a causal tile can see are never loaded.
    var k_end = p.skv;
    let k_begin = split * p.chunk;
    k_end = min(k_end, k_begin + p.chunk);
    // The first tile's K and V rows (contiguous rows only), then each next one during a step.
    var next = KvNext();
    if (k_begin < k_end) {
        next = fetch_kv(k_base, v_base, k_begin, tid);
    }
    for (var k0 = k_begin; k0 < k_end; k0 = k0 + BC) {
        workgroupBarrier();
        put_kv(next, tid);
        if (k0 + BC < k_end) {
            next = fetch_kv(k_base, v_base, k0 + BC, tid);
        }
        workgroupBarrier();
        // Scores: 16 rows × BC keys per subgroup.
        var sacc0 = array<f32, 8>();
        let ek0_0 = 0u * KS + 0u;
        let kf0_0 = ek0_0;
        emu_mma_qk(&sacc0, lane, qf0, kf0_0);
        let ek0_1 = 0u * KS + 16u;
        let kf0_1 = ek0_1;
        emu_mma_qk(&sacc0, lane, qf1, kf0_1);
        let ek0_2 = 0u * KS + 32u;
        let kf0_2 = ek0_2;
        emu_mma_qk(&sacc0, lane, qf2, kf0_2);
        let ek0_3 = 0u * KS + 48u;
        let kf0_3 = ek0_3;
        emu_mma_qk(&sacc0, lane, qf3, kf0_3);
        let ek0_4 = 0u * KS + 64u;
        let kf0_4 = ek0_4;
        emu_mma_qk(&sacc0, lane, qf4, kf0_4);
        let ek0_5 = 0u * KS + 80u;
        let kf0_5 = ek0_5;
        emu_mma_qk(&sacc0, lane, qf5, kf0_5);
        let es0 = s_sg + 0u;
        emu_store(&sacc0, lane, es0);
        var sacc1 = array<f32, 8>();
        let ek1_0 = 16u * KS + 0u;
        let kf1_0 = ek1_0;
        emu_mma_qk(&sacc1, lane, qf0, kf1_0);
        let ek1_1 = 16u * KS + 16u;
        let kf1_1 = ek1_1;
        emu_mma_qk(&sacc1, lane, qf1, kf1_1);
        let ek1_2 = 16u * KS + 32u;
        let kf1_2 = ek1_2;
        emu_mma_qk(&sacc1, lane, qf2, kf1_2);
        let ek1_3 = 16u * KS + 48u;
        let kf1_3 = ek1_3;
        emu_mma_qk(&sacc1, lane, qf3, kf1_3);
        let ek1_4 = 16u * KS + 64u;
        let kf1_4 = ek1_4;
        emu_mma_qk(&sacc1, lane, qf4, kf1_4);
        let ek1_5 = 16u * KS + 80u;
        let kf1_5 = ek1_5;
        emu_mma_qk(&sacc1, lane, qf5, kf1_5);
        let es1 = s_sg + 16u;
        emu_store(&sacc1, lane, es1);
        workgroupBarrier();
        // Scale (in log2 units: exp2 below), softcap, mask, the tile's max over the row (both halves), then P.
        // Keys past the end and causal masking need checks only on edge tiles (a uniform test).
        let edge = k0 + BC > p.skv;
        let c0 = off0 + 0u;
        var x0 = sr[s_row + c0] * scale2;
        let c1 = off1 + 0u;
        var x1 = sr[s_row + c1] * scale2;
        let c2 = off0 + 4u;
        var x2 = sr[s_row + c2] * scale2;
        let c3 = off1 + 4u;
        var x3 = sr[s_row + c3] * scale2;
        let c4 = off0 + 8u;
        var x4 = sr[s_row + c4] * scale2;
        let c5 = off1 + 8u;
        var x5 = sr[s_row + c5] * scale2;
        let c6 = off0 + 12u;
        var x6 = sr[s_row + c6] * scale2;
        let c7 = off1 + 12u;
        var x7 = sr[s_row + c7] * scale2;
        let c8 = off0 + 16u;
        var x8 = sr[s_row + c8] * scale2;
        let c9 = off1 + 16u;
        var x9 = sr[s_row + c9] * scale2;
        let c10 = off0 + 20u;
        var x10 = sr[s_row + c10] * scale2;
        let c11 = off1 + 20u;
        var x11 = sr[s_row + c11] * scale2;
        let c12 = off0 + 24u;
        var x12 = sr[s_row + c12] * scale2;
        let c13 = off1 + 24u;
        var x13 = sr[s_row + c13] * scale2;
        let c14 = off0 + 28u;
        var x14 = sr[s_row + c14] * scale2;
        let c15 = off1 + 28u;
        var x15 = sr[s_row + c15] * scale2;
        if (edge) {
            x0 = select(neg_inf(), x0, k0 + c0 < p.skv);
            x1 = select(neg_inf(), x1, k0 + c1 < p.skv);
            x2 = select(neg_inf(), x2, k0 + c2 < p.skv);
            x3 = select(neg_inf(), x3, k0 + c3 < p.skv);
            x4 = select(neg_inf(), x4, k0 + c4 < p.skv);
            x5 = select(neg_inf(), x5, k0 + c5 < p.skv);
            x6 = select(neg_inf(), x6, k0 + c6 < p.skv);
            x7 = select(neg_inf(), x7, k0 + c7 < p.skv);
            x8 = select(neg_inf(), x8, k0 + c8 < p.skv);
            x9 = select(neg_inf(), x9, k0 + c9 < p.skv);
            x10 = select(neg_inf(), x10, k0 + c10 < p.skv);
            x11 = select(neg_inf(), x11, k0 + c11 < p.skv);
            x12 = select(neg_inf(), x12, k0 + c12 < p.skv);
            x13 = select(neg_inf(), x13, k0 + c13 < p.skv);
            x14 = select(neg_inf(), x14, k0 + c14 < p.skv);
            x15 = select(neg_inf(), x15, k0 + c15 < p.skv);
        }
        var t_max = x0;
        t_max = max(t_max, x1);
        t_max = max(t_max, x2);
        t_max = max(t_max, x3);
        t_max = max(t_max, x4);
        t_max = max(t_max, x5);
        t_max = max(t_max, x6);
        t_max = max(t_max, x7);
        t_max = max(t_max, x8);
        t_max = max(t_max, x9);
        t_max = max(t_max, x10);
        t_max = max(t_max, x11);
        t_max = max(t_max, x12);
        t_max = max(t_max, x13);
        t_max = max(t_max, x14);
        t_max = max(t_max, x15);
        t_max = max(t_max, subgroupShuffleXor(t_max, 1u));
        // The reference moves only when the tile's max passes it by more than TAU (or on the first
        // keys a row sees), so P stays below 2^TAU and the output fragments are rarely rescaled.
        var m_ref = m_run;
        if (t_max > m_run + TAU) {
            m_ref = t_max;
        }
        // A row that has seen no key yet keeps zeros (never exp(-inf - -inf)).
        let m_safe = select(m_ref, 0.0, m_ref == neg_inf());
        let alpha = exp2(m_run - m_safe);
        // Rows whose fragments hold something to rescale (alpha is 0 where they hold nothing yet).
        let rescale = alpha != 1.0 && m_run != neg_inf();
        m_run = m_ref;
        var t_sum = 0.0;
        let e0 = exp2(x0 - m_safe);
        t_sum = t_sum + e0;
        pt[p_row + c0] = f16(e0);
        let e1 = exp2(x1 - m_safe);
        t_sum = t_sum + e1;
        pt[p_row + c1] = f16(e1);
        let e2 = exp2(x2 - m_safe);
        t_sum = t_sum + e2;
        pt[p_row + c2] = f16(e2);
        let e3 = exp2(x3 - m_safe);
        t_sum = t_sum + e3;
        pt[p_row + c3] = f16(e3);
        let e4 = exp2(x4 - m_safe);
        t_sum = t_sum + e4;
        pt[p_row + c4] = f16(e4);
        let e5 = exp2(x5 - m_safe);
        t_sum = t_sum + e5;
        pt[p_row + c5] = f16(e5);
        let e6 = exp2(x6 - m_safe);
        t_sum = t_sum + e6;
        pt[p_row + c6] = f16(e6);
        let e7 = exp2(x7 - m_safe);
        t_sum = t_sum + e7;
        pt[p_row + c7] = f16(e7);
        let e8 = exp2(x8 - m_safe);
        t_sum = t_sum + e8;
        pt[p_row + c8] = f16(e8);
        let e9 = exp2(x9 - m_safe);
        t_sum = t_sum + e9;
        pt[p_row + c9] = f16(e9);
        let e10 = exp2(x10 - m_safe);
        t_sum = t_sum + e10;
        pt[p_row + c10] = f16(e10);
        let e11 = exp2(x11 - m_safe);
        t_sum = t_sum + e11;
        pt[p_row + c11] = f16(e11);
        let e12 = exp2(x12 - m_safe);
        t_sum = t_sum + e12;
        pt[p_row + c12] = f16(e12);
        let e13 = exp2(x13 - m_safe);
        t_sum = t_sum + e13;
        pt[p_row + c13] = f16(e13);
        let e14 = exp2(x14 - m_safe);
        t_sum = t_sum + e14;
        pt[p_row + c14] = f16(e14);
        let e15 = exp2(x15 - m_safe);
        t_sum = t_sum + e15;
        pt[p_row + c15] = f16(e15);
        l_run = l_run * alpha + t_sum;
        // Rescaling goes through the scratch: the fragments are stored, each pair scales its row,
        // and they are loaded back. The subgroup skips it when none of its rows moved.
        workgroupBarrier();
            let er0 = s_sg + 0u;
            emu_store(&oacc0, lane, er0);
            let er1 = s_sg + 16u;
            emu_store(&oacc1, lane, er1);
            let er2 = s_sg + 32u;
            emu_store(&oacc2, lane, er2);
            let er3 = s_sg + 48u;
            emu_store(&oacc3, lane, er3);
            workgroupBarrier();
            sr[s_row + off0 + 0u] *= alpha;
            sr[s_row + off1 + 0u] *= alpha;
            sr[s_row + off0 + 4u] *= alpha;
            sr[s_row + off1 + 4u] *= alpha;
            sr[s_row + off0 + 8u] *= alpha;
            sr[s_row + off1 + 8u] *= alpha;
            sr[s_row + off0 + 12u] *= alpha;
            sr[s_row + off1 + 12u] *= alpha;
            sr[s_row + off0 + 16u] *= alpha;
            sr[s_row + off1 + 16u] *= alpha;
            sr[s_row + off0 + 20u] *= alpha;
            sr[s_row + off1 + 20u] *= alpha;
            sr[s_row + off0 + 24u] *= alpha;
            sr[s_row + off1 + 24u] *= alpha;
            sr[s_row + off0 + 28u] *= alpha;
            sr[s_row + off1 + 28u] *= alpha;
            sr[s_row + off0 + 32u] *= alpha;
            sr[s_row + off1 + 32u] *= alpha;
            sr[s_row + off0 + 36u] *= alpha;
            sr[s_row + off1 + 36u] *= alpha;
            sr[s_row + off0 + 40u] *= alpha;
            sr[s_row + off1 + 40u] *= alpha;
            sr[s_row + off0 + 44u] *= alpha;
            sr[s_row + off1 + 44u] *= alpha;
            sr[s_row + off0 + 48u] *= alpha;
            sr[s_row + off1 + 48u] *= alpha;
            sr[s_row + off0 + 52u] *= alpha;
            sr[s_row + off1 + 52u] *= alpha;
            sr[s_row + off0 + 56u] *= alpha;
            sr[s_row + off1 + 56u] *= alpha;
            sr[s_row + off0 + 60u] *= alpha;
            sr[s_row + off1 + 60u] *= alpha;
            workgroupBarrier();
            emu_load(&oacc0, lane, er0);
            emu_load(&oacc1, lane, er1);
            emu_load(&oacc2, lane, er2);
            emu_load(&oacc3, lane, er3);
            workgroupBarrier();
            let er4 = s_sg + 0u;
            emu_store(&oacc4, lane, er4);
            let er5 = s_sg + 16u;
            emu_store(&oacc5, lane, er5);
            workgroupBarrier();
            sr[s_row + off0 + 0u] *= alpha;
            sr[s_row + off1 + 0u] *= alpha;
            sr[s_row + off0 + 4u] *= alpha;
            sr[s_row + off1 + 4u] *= alpha;
            sr[s_row + off0 + 8u] *= alpha;
            sr[s_row + off1 + 8u] *= alpha;
            sr[s_row + off0 + 12u] *= alpha;
            sr[s_row + off1 + 12u] *= alpha;
            sr[s_row + off0 + 16u] *= alpha;
            sr[s_row + off1 + 16u] *= alpha;
            sr[s_row + off0 + 20u] *= alpha;
            sr[s_row + off1 + 20u] *= alpha;
            sr[s_row + off0 + 24u] *= alpha;
            sr[s_row + off1 + 24u] *= alpha;
            sr[s_row + off0 + 28u] *= alpha;
            sr[s_row + off1 + 28u] *= alpha;
            workgroupBarrier();
            emu_load(&oacc4, lane, er4);
            emu_load(&oacc5, lane, er5);
        workgroupBarrier();
        // P·V into the output fragments.
        let ep0 = p_sg + 0u;
        let pf0 = ep0;
        let ep1 = p_sg + 16u;
        let pf1 = ep1;
        let ev0_0 = V0 + 0u * KS + 0u;
        let vf0_0 = ev0_0;
        emu_mma_pv(&oacc0, lane, pf0, vf0_0);
        let ev0_1 = V0 + 16u * KS + 0u;
        let vf0_1 = ev0_1;
        emu_mma_pv(&oacc0, lane, pf1, vf0_1);
        let ev1_0 = V0 + 0u * KS + 16u;
        let vf1_0 = ev1_0;
        emu_mma_pv(&oacc1, lane, pf0, vf1_0);
        let ev1_1 = V0 + 16u * KS + 16u;
        let vf1_1 = ev1_1;
        emu_mma_pv(&oacc1, lane, pf1, vf1_1);
        let ev2_0 = V0 + 0u * KS + 32u;
        let vf2_0 = ev2_0;
        emu_mma_pv(&oacc2, lane, pf0, vf2_0);
        let ev2_1 = V0 + 16u * KS + 32u;
        let vf2_1 = ev2_1;
        emu_mma_pv(&oacc2, lane, pf1, vf2_1);
        let ev3_0 = V0 + 0u * KS + 48u;
        let vf3_0 = ev3_0;
        emu_mma_pv(&oacc3, lane, pf0, vf3_0);
        let ev3_1 = V0 + 16u * KS + 48u;
        let vf3_1 = ev3_1;
        emu_mma_pv(&oacc3, lane, pf1, vf3_1);
        let ev4_0 = V0 + 0u * KS + 64u;
        let vf4_0 = ev4_0;
        emu_mma_pv(&oacc4, lane, pf0, vf4_0);
        let ev4_1 = V0 + 16u * KS + 64u;
        let vf4_1 = ev4_1;
        emu_mma_pv(&oacc4, lane, pf1, vf4_1);
        let ev5_0 = V0 + 0u * KS + 80u;
        let vf5_0 = ev5_0;
        emu_mma_pv(&oacc5, lane, pf0, vf5_0);
        let ev5_1 = V0 + 16u * KS + 80u;
        let vf5_1 = ev5_1;
        emu_mma_pv(&oacc5, lane, pf1, vf5_1);
    }
    // Both halves' sums.
    let l_row = l_run + subgroupShuffleXor(l_run, 1u);
    // A row that sees no key is softmax over nothing: NaN, as Softmax of -inf scores.
    let inv = 1.0 / l_row;
    // The output fragments leave through the scratch, 64 columns at a time.
    workgroupBarrier();
    let ef0 = s_sg + 0u;
    emu_store(&oacc0, lane, ef0);
    let ef1 = s_sg + 16u;
    emu_store(&oacc1, lane, ef1);
    let ef2 = s_sg + 32u;
    emu_store(&oacc2, lane, ef2);
    let ef3 = s_sg + 48u;
    emu_store(&oacc3, lane, ef3);
    workgroupBarrier();
    if (live && qi < p.sq) {
        let at = o_base + qi * p.o_stride.z;
        o[at + (0u + off0 + 0u) * p.o_stride.w] = f16(sr[s_row + off0 + 0u] * inv);
        o[at + (0u + off1 + 0u) * p.o_stride.w] = f16(sr[s_row + off1 + 0u] * inv);
        o[at + (0u + off0 + 4u) * p.o_stride.w] = f16(sr[s_row + off0 + 4u] * inv);
        o[at + (0u + off1 + 4u) * p.o_stride.w] = f16(sr[s_row + off1 + 4u] * inv);
        o[at + (0u + off0 + 8u) * p.o_stride.w] = f16(sr[s_row + off0 + 8u] * inv);
        o[at + (0u + off1 + 8u) * p.o_stride.w] = f16(sr[s_row + off1 + 8u] * inv);
        o[at + (0u + off0 + 12u) * p.o_stride.w] = f16(sr[s_row + off0 + 12u] * inv);
        o[at + (0u + off1 + 12u) * p.o_stride.w] = f16(sr[s_row + off1 + 12u] * inv);
        o[at + (0u + off0 + 16u) * p.o_stride.w] = f16(sr[s_row + off0 + 16u] * inv);
        o[at + (0u + off1 + 16u) * p.o_stride.w] = f16(sr[s_row + off1 + 16u] * inv);
        o[at + (0u + off0 + 20u) * p.o_stride.w] = f16(sr[s_row + off0 + 20u] * inv);
        o[at + (0u + off1 + 20u) * p.o_stride.w] = f16(sr[s_row + off1 + 20u] * inv);
        o[at + (0u + off0 + 24u) * p.o_stride.w] = f16(sr[s_row + off0 + 24u] * inv);
        o[at + (0u + off1 + 24u) * p.o_stride.w] = f16(sr[s_row + off1 + 24u] * inv);
        o[at + (0u + off0 + 28u) * p.o_stride.w] = f16(sr[s_row + off0 + 28u] * inv);
        o[at + (0u + off1 + 28u) * p.o_stride.w] = f16(sr[s_row + off1 + 28u] * inv);
        o[at + (0u + off0 + 32u) * p.o_stride.w] = f16(sr[s_row + off0 + 32u] * inv);
        o[at + (0u + off1 + 32u) * p.o_stride.w] = f16(sr[s_row + off1 + 32u] * inv);
        o[at + (0u + off0 + 36u) * p.o_stride.w] = f16(sr[s_row + off0 + 36u] * inv);
        o[at + (0u + off1 + 36u) * p.o_stride.w] = f16(sr[s_row + off1 + 36u] * inv);
        o[at + (0u + off0 + 40u) * p.o_stride.w] = f16(sr[s_row + off0 + 40u] * inv);
        o[at + (0u + off1 + 40u) * p.o_stride.w] = f16(sr[s_row + off1 + 40u] * inv);
        o[at + (0u + off0 + 44u) * p.o_stride.w] = f16(sr[s_row + off0 + 44u] * inv);
        o[at + (0u + off1 + 44u) * p.o_stride.w] = f16(sr[s_row + off1 + 44u] * inv);
        o[at + (0u + off0 + 48u) * p.o_stride.w] = f16(sr[s_row + off0 + 48u] * inv);
        o[at + (0u + off1 + 48u) * p.o_stride.w] = f16(sr[s_row + off1 + 48u] * inv);
        o[at + (0u + off0 + 52u) * p.o_stride.w] = f16(sr[s_row + off0 + 52u] * inv);
        o[at + (0u + off1 + 52u) * p.o_stride.w] = f16(sr[s_row + off1 + 52u] * inv);
        o[at + (0u + off0 + 56u) * p.o_stride.w] = f16(sr[s_row + off0 + 56u] * inv);
        o[at + (0u + off1 + 56u) * p.o_stride.w] = f16(sr[s_row + off1 + 56u] * inv);
        o[at + (0u + off0 + 60u) * p.o_stride.w] = f16(sr[s_row + off0 + 60u] * inv);
        o[at + (0u + off1 + 60u) * p.o_stride.w] = f16(sr[s_row + off1 + 60u] * inv);
    }
    workgroupBarrier();
    let ef4 = s_sg + 0u;
    emu_store(&oacc4, lane, ef4);
    let ef5 = s_sg + 16u;
    emu_store(&oacc5, lane, ef5);
    workgroupBarrier();
    if (live && qi < p.sq) {
        let at = o_base + qi * p.o_stride.z;
        o[at + (64u + off0 + 0u) * p.o_stride.w] = f16(sr[s_row + off0 + 0u] * inv);
        o[at + (64u + off1 + 0u) * p.o_stride.w] = f16(sr[s_row + off1 + 0u] * inv);
        o[at + (64u + off0 + 4u) * p.o_stride.w] = f16(sr[s_row + off0 + 4u] * inv);
        o[at + (64u + off1 + 4u) * p.o_stride.w] = f16(sr[s_row + off1 + 4u] * inv);
        o[at + (64u + off0 + 8u) * p.o_stride.w] = f16(sr[s_row + off0 + 8u] * inv);
        o[at + (64u + off1 + 8u) * p.o_stride.w] = f16(sr[s_row + off1 + 8u] * inv);
        o[at + (64u + off0 + 12u) * p.o_stride.w] = f16(sr[s_row + off0 + 12u] * inv);
        o[at + (64u + off1 + 12u) * p.o_stride.w] = f16(sr[s_row + off1 + 12u] * inv);
        o[at + (64u + off0 + 16u) * p.o_stride.w] = f16(sr[s_row + off0 + 16u] * inv);
        o[at + (64u + off1 + 16u) * p.o_stride.w] = f16(sr[s_row + off1 + 16u] * inv);
        o[at + (64u + off0 + 20u) * p.o_stride.w] = f16(sr[s_row + off0 + 20u] * inv);
        o[at + (64u + off1 + 20u) * p.o_stride.w] = f16(sr[s_row + off1 + 20u] * inv);
        o[at + (64u + off0 + 24u) * p.o_stride.w] = f16(sr[s_row + off0 + 24u] * inv);
        o[at + (64u + off1 + 24u) * p.o_stride.w] = f16(sr[s_row + off1 + 24u] * inv);
        o[at + (64u + off0 + 28u) * p.o_stride.w] = f16(sr[s_row + off0 + 28u] * inv);
        o[at + (64u + off1 + 28u) * p.o_stride.w] = f16(sr[s_row + off1 + 28u] * inv);
    }
}
