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
    // Entries of `mx`: the K/V maxima pass's workgroups.
    kv_groups: u32,
}

@group(0) @binding(0) var<storage, read> q: array<f32>;
// K and V as 4-float chunks (16 bytes): whole chunks when their rows are contiguous and
// 4-aligned (`vec_kv`), else element by element.
@group(0) @binding(1) var<storage, read> k: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> v: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> m: array<f32>;
// The K/V maxima pass's entries (attn_kv_absmax.wgsl.j2): f32 bits of the largest |K| and |V|.
@group(0) @binding(4) var<storage, read> mx: array<vec2<u32>>;
@group(0) @binding(5) var<storage, read_write> o: array<f32>;
@group(0) @binding(6) var<uniform> p: Params;

const BR: u32 = 32u;
const BC: u32 = 16u;
const D: u32 = 64u;
// f16 elements between staged rows of Q/K/V and of P; f32 words between rows of the score and
// output scratch.
const KS: u32 = 72u;
const PS: u32 = 24u;
const RW: u32 = 68u;
// Where V is staged, after K.
const V0: u32 = 1152u;
// Where the lo parts of K and V, of P and of Q (staged once at the start) begin.
const L0: u32 = 2304u;
const PL: u32 = 768u;
const QL: u32 = 2304u;
// P (≤ 2^TAU) is split scaled by 2^7: below 2^15, and its lo part stays clear of f16's subnormals
// (which the NVIDIA driver flushes to zero) for every P above 2^-9.
const P_SCALE: f32 = 128.0;
const P_EXP: i32 = 7;
const LOG2E: f32 = 1.4426950408889634;
const LN2: f32 = 0.6931471805599453;
// How far (log2 units) a row's max may pass its reference before the output is rescaled.
const TAU: f32 = 8.0;

// K then V (16 rows each), hi parts then lo parts, in 8-half chunks; Q is staged here once at the start.
var<workgroup> kv: array<array<f16, 8>, 576>;
// Per subgroup 16 rows: the scores of a tile, then a chunk of P·V.
var<workgroup> sr: array<f32, 2176>;
// Per subgroup 16 rows of P (f16).
var<workgroup> pt: array<f16, 1536>;
// Q, where the emulated fragments read it for the whole run.
var<workgroup> qe: array<f16, 4608>;
// Per subgroup (of at least 4 invocations), the largest magnitudes (f32 bits) of its share of
// Q and of the K/V maxima. (No atomics: with them the NVIDIA driver's tensor-core form of this
// kernel computed garbage; plain stores and a read of every subgroup's entry do not.)
var<workgroup> red: array<vec4<u32>, 16>;

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


// f32 attention at about fp32's accuracy on f16 fragments (x3): Q, K and V are scaled by powers
// of two that bring their largest magnitudes into [2^14, 2^15), then split into f16
// parts hi (rounded to 11 bits) and lo (the rest, within 2^-12 of it); each product takes
// hi·lo + lo·hi + hi·hi, leaving out lo·lo (2^-24 relative).

// 2^e, exact, for e in [-126, 127].
fn pow2(e: i32) -> f32 {
    return bitcast<f32>(u32(clamp(e, -126, 127) + 127) << 23u);
}

// The largest finite magnitude of four values as f32 bits (infinities and NaNs count as 0: they
// pass through the products and do not decide a scale).
fn mag4(x: vec4<f32>) -> u32 {
    let b = bitcast<vec4<u32>>(x) & vec4<u32>(0x7fffffffu);
    let f = select(b, vec4<u32>(), b >= vec4<u32>(0x7f800000u));
    return max(max(f.x, f.y), max(f.z, f.w));
}

// The exponent of the scale that brings a largest magnitude (f32 bits) into [2^14, 2^15); 0 for
// zeros.
fn scale_exp(bits: u32) -> i32 {
    if (bits == 0u) {
        return 0;
    }
    return 14 - max(i32(bits >> 23u) - 127, -112);
}

// A scaled value rounded to its leading 11 significant bits, as f32 (f16 holds it exactly below
// 2^15). The parts are cut with bit operations: the NVIDIA driver folds x − f32(f16(x)) to 0.
fn hi32(x: f32) -> f32 {
    return bitcast<f32>((bitcast<u32>(x) + 0x1000u) & 0xffffe000u);
}

fn hi_of(x: f32) -> f16 {
    return f16(hi32(x));
}

// The rest of x after its hi part (0 where x is not finite: its hi part carries it).
fn lo_of(x: f32) -> f16 {
    let r = x - hi32(x);
    return f16(select(0.0, r, r == r));
}

struct Parts {
    hi: array<f16, 8>,
    lo: array<f16, 8>,
}

// The hi and lo parts of K's and V's values. K and V are each product's right operand (hi·lo +
// lo·hi + hi·hi). An infinity's hi part is f16's largest finite value of its sign and its lo part
// the infinity: the infinity meets only the hi part of Q's or P's value, nonzero and of its sign,
// and gives ±inf as in f32, never 0·inf or inf − inf (the NaN a lo part of 0 or of the other sign
// would make); the hi parts' products stay finite. Finite values scale below 2^15, which the clamp
// leaves alone (as a test of the value's bits it cost 5% of Whisper's f32 attention on an H100).
// A NaN stays NaN in the lo part.
fn kv_parts(x: f32) -> vec2<f32> {
    let h = clamp(hi32(x), -65504.0, 65504.0);
    return vec2<f32>(h, x - h);
}

// Eight values times s as hi and lo parts.
fn split8(a: vec4<f32>, b: vec4<f32>, s: f32) -> Parts {
    let x = array<vec2<f32>, 8>(kv_parts(a.x * s), kv_parts(a.y * s), kv_parts(a.z * s), kv_parts(a.w * s),
        kv_parts(b.x * s), kv_parts(b.y * s), kv_parts(b.z * s), kv_parts(b.w * s));
    let h = array<f16, 8>(f16(x[0].x), f16(x[1].x), f16(x[2].x), f16(x[3].x), f16(x[4].x), f16(x[5].x),
        f16(x[6].x), f16(x[7].x));
    let l = array<f16, 8>(f16(x[0].y), f16(x[1].y), f16(x[2].y), f16(x[3].y), f16(x[4].y), f16(x[5].y),
        f16(x[6].y), f16(x[7].y));
    return Parts(h, l);
}

fn k_at(e: u32) -> f32 {
    return k[e / 4u][e % 4u];
}

fn v_at(e: u32) -> f32 {
    return v[e / 4u][e % 4u];
}

// Four values of K from element `at` (d stride w): one 16-byte load where rows are whole chunks.
fn k4(at: u32, w: u32) -> vec4<f32> {
    return k[at / 4u];
}

fn v4(at: u32, w: u32) -> vec4<f32> {
    return v[at / 4u];
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


// The workgroup's largest magnitudes of `m` (each invocation's own), through `red`.
fn workgroup_max(m: vec4<u32>, tid: u32, sgl: u32, sgs: u32) -> vec4<u32> {
    let s = subgroupMax(m);
    if (sgl == 0u) {
        red[tid / sgs] = s;
    }
    workgroupBarrier();
    var out = vec4<u32>();
    for (var i = 0u; i < 64u / sgs; i = i + 1u) {
        out = max(out, red[i]);
    }
    return out;
}

// Stages `BC` rows of K and of V from key k0 (rows past the end are zeros) as hi and lo parts of
// their values times sk and sv. All loads are issued before the first store.
fn stage_kv(k_base: u32, v_base: u32, k0: u32, tid: u32, sk: f32, sv: f32) {
    let i0 = tid + 0u;
    let c0 = i0 / 8u;
    let d0 = i0 % 8u;
    var ka0 = vec4<f32>();
    var kb0 = vec4<f32>();
    var va0 = vec4<f32>();
    var vb0 = vec4<f32>();
    if (k0 + c0 < p.skv) {
        let ke0 = k_base + (k0 + c0) * p.k_stride.z + 8u * d0 * p.k_stride.w;
        let ve0 = v_base + (k0 + c0) * p.v_stride.z + 8u * d0 * p.v_stride.w;
        ka0 = k4(ke0, p.k_stride.w);
        kb0 = k4(ke0 + 4u * p.k_stride.w, p.k_stride.w);
        va0 = v4(ve0, p.v_stride.w);
        vb0 = v4(ve0 + 4u * p.v_stride.w, p.v_stride.w);
    }
    let i1 = tid + 64u;
    let c1 = i1 / 8u;
    let d1 = i1 % 8u;
    var ka1 = vec4<f32>();
    var kb1 = vec4<f32>();
    var va1 = vec4<f32>();
    var vb1 = vec4<f32>();
    if (k0 + c1 < p.skv) {
        let ke1 = k_base + (k0 + c1) * p.k_stride.z + 8u * d1 * p.k_stride.w;
        let ve1 = v_base + (k0 + c1) * p.v_stride.z + 8u * d1 * p.v_stride.w;
        ka1 = k4(ke1, p.k_stride.w);
        kb1 = k4(ke1 + 4u * p.k_stride.w, p.k_stride.w);
        va1 = v4(ve1, p.v_stride.w);
        vb1 = v4(ve1 + 4u * p.v_stride.w, p.v_stride.w);
    }
    let kp0 = split8(ka0, kb0, sk);
    let vp0 = split8(va0, vb0, sv);
    kv[c0 * 9u + d0] = kp0.hi;
    kv[144u + c0 * 9u + d0] = vp0.hi;
    kv[288u + c0 * 9u + d0] = kp0.lo;
    kv[432u + c0 * 9u + d0] = vp0.lo;
    let kp1 = split8(ka1, kb1, sk);
    let vp1 = split8(va1, vb1, sv);
    kv[c1 * 9u + d1] = kp1.hi;
    kv[144u + c1 * 9u + d1] = vp1.hi;
    kv[288u + c1 * 9u + d1] = kp1.lo;
    kv[432u + c1 * 9u + d1] = vp1.lo;
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32, @builtin(subgroup_invocation_id) sgl: u32,
    @builtin(subgroup_size) sgs: u32) {
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
    let m_base = b * p.m_stride.x + h * p.m_stride.y;
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

    // Q rows (zeros past the end) staged once as hi and lo parts, then held as fragments; they are
    // read twice, first for their largest magnitude, which meets K's and V's from the maxima pass.
    var qm = 0u;
    for (var i = tid; i < BR * D; i = i + 64u) {
        let row = i / D;
        if (q0 + row < p.sq) {
            qm = max(qm, mag4(vec4<f32>(q[q_base + (q0 + row) * p.q_stride.z + (i % D) * p.q_stride.w], 0.0, 0.0, 0.0)));
        }
    }
    var kvm = vec2<u32>();
    for (var i = tid; i < p.kv_groups; i = i + 64u) {
        kvm = max(kvm, mx[i]);
    }
    let mq = workgroup_max(vec4<u32>(qm, kvm, 0u), tid, sgl, sgs);
    let eq = scale_exp(mq.x);
    let ek = scale_exp(mq.y);
    let ev = scale_exp(mq.z);
    let sq = pow2(eq);
    let sk = pow2(ek);
    let sv = pow2(ev);
    for (var i = tid; i < BR * D; i = i + 64u) {
        let row = i / D;
        let dd = i % D;
        var x = 0.0;
        if (q0 + row < p.sq) {
            x = q[q_base + (q0 + row) * p.q_stride.z + dd * p.q_stride.w] * sq;
        }
        qe[row * KS + dd] = hi_of(x);
        qe[QL + row * KS + dd] = lo_of(x);

    }
    workgroupBarrier();
    let q_sg = sg * 16u * KS;
    let eq0 = q_sg + 0u;
    let qf0 = eq0;
    let el0 = QL + eq0;
    let ql0 = el0;
    let eq1 = q_sg + 16u;
    let qf1 = eq1;
    let el1 = QL + eq1;
    let ql1 = el1;
    let eq2 = q_sg + 32u;
    let qf2 = eq2;
    let el2 = QL + eq2;
    let ql2 = el2;
    let eq3 = q_sg + 48u;
    let qf3 = eq3;
    let el3 = QL + eq3;
    let ql3 = el3;

    // The row's reference max (log2 units: P is exp2 of the scores less it), this invocation's
    // share of its sum, and the output rows as f32 fragments.
    let scale2 = p.scale * LOG2E;
    var m_run = neg_inf();
    var l_run = 0.0;
    // The scores' scale back (the products hold Q·2^eq by K·2^ek).
    let fs = scale2 * pow2(-eq) * pow2(-ek);
    var oacc0 = array<f32, 8>();
    var oacc1 = array<f32, 8>();
    var oacc2 = array<f32, 8>();
    var oacc3 = array<f32, 8>();
    // Keys past the last one a causal tile can see are never loaded.
    var k_end = p.skv;
    let k_begin = split * p.chunk;
    k_end = min(k_end, k_begin + p.chunk);
    for (var k0 = k_begin; k0 < k_end; k0 = k0 + BC) {
        workgroupBarrier();
        stage_kv(k_base, v_base, k0, tid, sk, sv);
        workgroupBarrier();
        // Scores: 16 rows × BC keys per subgroup.
        var sacc0 = array<f32, 8>();
        let ek0_0 = 0u * KS + 0u;
        let kf0_0 = ek0_0;
        let ekl0_0 = L0 + ek0_0;
        let kl0_0 = ekl0_0;
        emu_mma_qk(&sacc0, lane, qf0, kl0_0);
        emu_mma_qk(&sacc0, lane, ql0, kf0_0);
        emu_mma_qk(&sacc0, lane, qf0, kf0_0);
        let ek0_1 = 0u * KS + 16u;
        let kf0_1 = ek0_1;
        let ekl0_1 = L0 + ek0_1;
        let kl0_1 = ekl0_1;
        emu_mma_qk(&sacc0, lane, qf1, kl0_1);
        emu_mma_qk(&sacc0, lane, ql1, kf0_1);
        emu_mma_qk(&sacc0, lane, qf1, kf0_1);
        let ek0_2 = 0u * KS + 32u;
        let kf0_2 = ek0_2;
        let ekl0_2 = L0 + ek0_2;
        let kl0_2 = ekl0_2;
        emu_mma_qk(&sacc0, lane, qf2, kl0_2);
        emu_mma_qk(&sacc0, lane, ql2, kf0_2);
        emu_mma_qk(&sacc0, lane, qf2, kf0_2);
        let ek0_3 = 0u * KS + 48u;
        let kf0_3 = ek0_3;
        let ekl0_3 = L0 + ek0_3;
        let kl0_3 = ekl0_3;
        emu_mma_qk(&sacc0, lane, qf3, kl0_3);
        emu_mma_qk(&sacc0, lane, ql3, kf0_3);
        emu_mma_qk(&sacc0, lane, qf3, kf0_3);
        let es0 = s_sg + 0u;
        emu_store(&sacc0, lane, es0);
        workgroupBarrier();
        // Scale (in log2 units: exp2 below), softcap, mask, the tile's max over the row (both halves), then P.
        // Keys past the end and causal masking need checks only on edge tiles (a uniform test).
        let edge = k0 + BC > p.skv;
        let c0 = off0 + 0u;
        var x0 = sr[s_row + c0] * fs;
        let c1 = off1 + 0u;
        var x1 = sr[s_row + c1] * fs;
        let c2 = off0 + 4u;
        var x2 = sr[s_row + c2] * fs;
        let c3 = off1 + 4u;
        var x3 = sr[s_row + c3] * fs;
        let c4 = off0 + 8u;
        var x4 = sr[s_row + c4] * fs;
        let c5 = off1 + 8u;
        var x5 = sr[s_row + c5] * fs;
        let c6 = off0 + 12u;
        var x6 = sr[s_row + c6] * fs;
        let c7 = off1 + 12u;
        var x7 = sr[s_row + c7] * fs;
        x0 = fma(f32(m[m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c0, p.skv - 1u) * p.m_stride.w]), LOG2E, x0);
        x1 = fma(f32(m[m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c1, p.skv - 1u) * p.m_stride.w]), LOG2E, x1);
        x2 = fma(f32(m[m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c2, p.skv - 1u) * p.m_stride.w]), LOG2E, x2);
        x3 = fma(f32(m[m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c3, p.skv - 1u) * p.m_stride.w]), LOG2E, x3);
        x4 = fma(f32(m[m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c4, p.skv - 1u) * p.m_stride.w]), LOG2E, x4);
        x5 = fma(f32(m[m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c5, p.skv - 1u) * p.m_stride.w]), LOG2E, x5);
        x6 = fma(f32(m[m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c6, p.skv - 1u) * p.m_stride.w]), LOG2E, x6);
        x7 = fma(f32(m[m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c7, p.skv - 1u) * p.m_stride.w]), LOG2E, x7);
        if (edge) {
            x0 = select(neg_inf(), x0, k0 + c0 < p.skv);
            x1 = select(neg_inf(), x1, k0 + c1 < p.skv);
            x2 = select(neg_inf(), x2, k0 + c2 < p.skv);
            x3 = select(neg_inf(), x3, k0 + c3 < p.skv);
            x4 = select(neg_inf(), x4, k0 + c4 < p.skv);
            x5 = select(neg_inf(), x5, k0 + c5 < p.skv);
            x6 = select(neg_inf(), x6, k0 + c6 < p.skv);
            x7 = select(neg_inf(), x7, k0 + c7 < p.skv);
        }
        var t_max = x0;
        t_max = max(t_max, x1);
        t_max = max(t_max, x2);
        t_max = max(t_max, x3);
        t_max = max(t_max, x4);
        t_max = max(t_max, x5);
        t_max = max(t_max, x6);
        t_max = max(t_max, x7);
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
        let ps0 = e0 * P_SCALE;
        pt[p_row + c0] = hi_of(ps0);
        pt[PL + p_row + c0] = lo_of(ps0);
        let e1 = exp2(x1 - m_safe);
        t_sum = t_sum + e1;
        let ps1 = e1 * P_SCALE;
        pt[p_row + c1] = hi_of(ps1);
        pt[PL + p_row + c1] = lo_of(ps1);
        let e2 = exp2(x2 - m_safe);
        t_sum = t_sum + e2;
        let ps2 = e2 * P_SCALE;
        pt[p_row + c2] = hi_of(ps2);
        pt[PL + p_row + c2] = lo_of(ps2);
        let e3 = exp2(x3 - m_safe);
        t_sum = t_sum + e3;
        let ps3 = e3 * P_SCALE;
        pt[p_row + c3] = hi_of(ps3);
        pt[PL + p_row + c3] = lo_of(ps3);
        let e4 = exp2(x4 - m_safe);
        t_sum = t_sum + e4;
        let ps4 = e4 * P_SCALE;
        pt[p_row + c4] = hi_of(ps4);
        pt[PL + p_row + c4] = lo_of(ps4);
        let e5 = exp2(x5 - m_safe);
        t_sum = t_sum + e5;
        let ps5 = e5 * P_SCALE;
        pt[p_row + c5] = hi_of(ps5);
        pt[PL + p_row + c5] = lo_of(ps5);
        let e6 = exp2(x6 - m_safe);
        t_sum = t_sum + e6;
        let ps6 = e6 * P_SCALE;
        pt[p_row + c6] = hi_of(ps6);
        pt[PL + p_row + c6] = lo_of(ps6);
        let e7 = exp2(x7 - m_safe);
        t_sum = t_sum + e7;
        let ps7 = e7 * P_SCALE;
        pt[p_row + c7] = hi_of(ps7);
        pt[PL + p_row + c7] = lo_of(ps7);
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
        // P·V into the output fragments.
        let ep0 = p_sg + 0u;
        let pf0 = ep0;
        let epl0 = PL + ep0;
        let pl0 = epl0;
        let ev0_0 = V0 + 0u * KS + 0u;
        let vf0_0 = ev0_0;
        let evl0_0 = L0 + ev0_0;
        let vl0_0 = evl0_0;
        emu_mma_pv(&oacc0, lane, pf0, vl0_0);
        emu_mma_pv(&oacc0, lane, pl0, vf0_0);
        emu_mma_pv(&oacc0, lane, pf0, vf0_0);
        let ev1_0 = V0 + 0u * KS + 16u;
        let vf1_0 = ev1_0;
        let evl1_0 = L0 + ev1_0;
        let vl1_0 = evl1_0;
        emu_mma_pv(&oacc1, lane, pf0, vl1_0);
        emu_mma_pv(&oacc1, lane, pl0, vf1_0);
        emu_mma_pv(&oacc1, lane, pf0, vf1_0);
        let ev2_0 = V0 + 0u * KS + 32u;
        let vf2_0 = ev2_0;
        let evl2_0 = L0 + ev2_0;
        let vl2_0 = evl2_0;
        emu_mma_pv(&oacc2, lane, pf0, vl2_0);
        emu_mma_pv(&oacc2, lane, pl0, vf2_0);
        emu_mma_pv(&oacc2, lane, pf0, vf2_0);
        let ev3_0 = V0 + 0u * KS + 48u;
        let vf3_0 = ev3_0;
        let evl3_0 = L0 + ev3_0;
        let vl3_0 = evl3_0;
        emu_mma_pv(&oacc3, lane, pf0, vl3_0);
        emu_mma_pv(&oacc3, lane, pl0, vf3_0);
        emu_mma_pv(&oacc3, lane, pf0, vf3_0);
    }
    // Both halves' sums.
    let l_row = l_run + subgroupShuffleXor(l_run, 1u);
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
        let at = ((bh * p.sq + qi) * p.splits + split) * (D + 2u) + 0u;
        o[at + off0 + 0u] = sr[s_row + off0 + 0u] * pow2(-ev - P_EXP);
        o[at + off1 + 0u] = sr[s_row + off1 + 0u] * pow2(-ev - P_EXP);
        o[at + off0 + 4u] = sr[s_row + off0 + 4u] * pow2(-ev - P_EXP);
        o[at + off1 + 4u] = sr[s_row + off1 + 4u] * pow2(-ev - P_EXP);
        o[at + off0 + 8u] = sr[s_row + off0 + 8u] * pow2(-ev - P_EXP);
        o[at + off1 + 8u] = sr[s_row + off1 + 8u] * pow2(-ev - P_EXP);
        o[at + off0 + 12u] = sr[s_row + off0 + 12u] * pow2(-ev - P_EXP);
        o[at + off1 + 12u] = sr[s_row + off1 + 12u] * pow2(-ev - P_EXP);
        o[at + off0 + 16u] = sr[s_row + off0 + 16u] * pow2(-ev - P_EXP);
        o[at + off1 + 16u] = sr[s_row + off1 + 16u] * pow2(-ev - P_EXP);
        o[at + off0 + 20u] = sr[s_row + off0 + 20u] * pow2(-ev - P_EXP);
        o[at + off1 + 20u] = sr[s_row + off1 + 20u] * pow2(-ev - P_EXP);
        o[at + off0 + 24u] = sr[s_row + off0 + 24u] * pow2(-ev - P_EXP);
        o[at + off1 + 24u] = sr[s_row + off1 + 24u] * pow2(-ev - P_EXP);
        o[at + off0 + 28u] = sr[s_row + off0 + 28u] * pow2(-ev - P_EXP);
        o[at + off1 + 28u] = sr[s_row + off1 + 28u] * pow2(-ev - P_EXP);
        o[at + off0 + 32u] = sr[s_row + off0 + 32u] * pow2(-ev - P_EXP);
        o[at + off1 + 32u] = sr[s_row + off1 + 32u] * pow2(-ev - P_EXP);
        o[at + off0 + 36u] = sr[s_row + off0 + 36u] * pow2(-ev - P_EXP);
        o[at + off1 + 36u] = sr[s_row + off1 + 36u] * pow2(-ev - P_EXP);
        o[at + off0 + 40u] = sr[s_row + off0 + 40u] * pow2(-ev - P_EXP);
        o[at + off1 + 40u] = sr[s_row + off1 + 40u] * pow2(-ev - P_EXP);
        o[at + off0 + 44u] = sr[s_row + off0 + 44u] * pow2(-ev - P_EXP);
        o[at + off1 + 44u] = sr[s_row + off1 + 44u] * pow2(-ev - P_EXP);
        o[at + off0 + 48u] = sr[s_row + off0 + 48u] * pow2(-ev - P_EXP);
        o[at + off1 + 48u] = sr[s_row + off1 + 48u] * pow2(-ev - P_EXP);
        o[at + off0 + 52u] = sr[s_row + off0 + 52u] * pow2(-ev - P_EXP);
        o[at + off1 + 52u] = sr[s_row + off1 + 52u] * pow2(-ev - P_EXP);
        o[at + off0 + 56u] = sr[s_row + off0 + 56u] * pow2(-ev - P_EXP);
        o[at + off1 + 56u] = sr[s_row + off1 + 56u] * pow2(-ev - P_EXP);
        o[at + off0 + 60u] = sr[s_row + off0 + 60u] * pow2(-ev - P_EXP);
        o[at + off1 + 60u] = sr[s_row + off1 + 60u] * pow2(-ev - P_EXP);
    }
    if (live && qi < p.sq && half == 0u) {
        // The max in natural-log units, as the reduction expects.
        let at = ((bh * p.sq + qi) * p.splits + split) * (D + 2u);
        o[at + D] = m_run * LN2;
        o[at + D + 1u] = l_row;
    }
}
