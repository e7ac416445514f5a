enable f16;
enable wgpu_cooperative_matrix;
// The output fragments are rescaled under a subgroup-uniform condition (`subgroupAny`), which
// cooperative operations allow; naga's analysis asks for workgroup uniformity.
diagnostic(off, derivative_uniformity);

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
@group(0) @binding(3) var<storage, read> m: array<u32>;
// The K/V maxima pass's entries (attn_kv_absmax.wgsl.j2): f32 bits of the largest |K| and |V|.
@group(0) @binding(4) var<storage, read> mx: array<vec2<u32>>;
@group(0) @binding(5) var<storage, read_write> o: array<f32>;
@group(0) @binding(6) var<uniform> p: Params;

const BR: u32 = 64u;
const BC: u32 = 32u;
const D: u32 = 64u;
// f16 elements between staged rows of Q/K/V and of P; f32 words between rows of the score and
// output scratch.
const KS: u32 = 72u;
const PS: u32 = 40u;
const RW: u32 = 68u;
// Where V is staged, after K.
const V0: u32 = 2304u;
// Where the lo parts of K and V, of P and of Q (staged once at the start) begin.
const L0: u32 = 4608u;
const PL: u32 = 2560u;
const QL: u32 = 4608u;
// P (≤ 2^TAU) is split scaled by 2^7: below 2^15, and its lo part stays clear of f16's subnormals
// (which the NVIDIA driver flushes to zero) for every P above 2^-9.
const P_SCALE: f32 = 128.0;
const P_EXP: i32 = 7;
const LOG2E: f32 = 1.4426950408889634;
const LN2: f32 = 0.6931471805599453;
// How far (log2 units) a row's max may pass its reference before the output is rescaled.
const TAU: f32 = 8.0;

// K then V (32 rows each), hi parts then lo parts, in 8-half chunks; Q is staged here once at the start.
var<workgroup> kv: array<array<f16, 8>, 1152>;
// Per subgroup 16 rows: the scores of a tile, then a chunk of P·V.
var<workgroup> sr: array<f32, 4352>;
// Per subgroup 16 rows of P (f16).
var<workgroup> pt: array<f16, 5120>;
// Per subgroup (of at least 4 invocations), the largest magnitudes (f32 bits) of its share of
// Q and of the K/V maxima. (No atomics: with them the NVIDIA driver's tensor-core form of this
// kernel computed garbage; plain stores and a read of every subgroup's entry do not.)
var<workgroup> red: array<vec4<u32>, 32>;

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

// Byte `i` of the boolean mask.
fn mask_byte(i: u32) -> u32 {
    return (m[i / 4u] >> (8u * (i % 4u))) & 0xffu;
}


// The workgroup's largest magnitudes of `m` (each invocation's own), through `red`.
fn workgroup_max(m: vec4<u32>, tid: u32, sgl: u32, sgs: u32) -> vec4<u32> {
    let s = subgroupMax(m);
    if (sgl == 0u) {
        red[tid / sgs] = s;
    }
    workgroupBarrier();
    var out = vec4<u32>();
    for (var i = 0u; i < 128u / sgs; i = i + 1u) {
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
    let i1 = tid + 128u;
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
    kv[288u + c0 * 9u + d0] = vp0.hi;
    kv[576u + c0 * 9u + d0] = kp0.lo;
    kv[864u + c0 * 9u + d0] = vp0.lo;
    let kp1 = split8(ka1, kb1, sk);
    let vp1 = split8(va1, vb1, sv);
    kv[c1 * 9u + d1] = kp1.hi;
    kv[288u + c1 * 9u + d1] = vp1.hi;
    kv[576u + c1 * 9u + d1] = kp1.lo;
    kv[864u + c1 * 9u + d1] = vp1.lo;
}

@compute @workgroup_size(128, 1, 1)
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
    for (var i = tid; i < BR * D; i = i + 128u) {
        let row = i / D;
        if (q0 + row < p.sq) {
            qm = max(qm, mag4(vec4<f32>(q[q_base + (q0 + row) * p.q_stride.z + (i % D) * p.q_stride.w], 0.0, 0.0, 0.0)));
        }
    }
    var kvm = vec2<u32>();
    for (var i = tid; i < p.kv_groups; i = i + 128u) {
        kvm = max(kvm, mx[i]);
    }
    let mq = workgroup_max(vec4<u32>(qm, kvm, 0u), tid, sgl, sgs);
    let eq = scale_exp(mq.x);
    let ek = scale_exp(mq.y);
    let ev = scale_exp(mq.z);
    let sq = pow2(eq);
    let sk = pow2(ek);
    let sv = pow2(ev);
    for (var i = tid; i < BR * D; i = i + 128u) {
        let row = i / D;
        let dd = i % D;
        var x = 0.0;
        if (q0 + row < p.sq) {
            x = q[q_base + (q0 + row) * p.q_stride.z + dd * p.q_stride.w] * sq;
        }
        kv[(row * KS + dd) / 8u][dd % 8u] = hi_of(x);
        kv[(QL + row * KS + dd) / 8u][dd % 8u] = lo_of(x);

    }
    workgroupBarrier();
    let q_sg = sg * 16u * KS;
    let eq0 = q_sg + 0u;
    let eq0c = eq0 / 8u;
    let qf0 = coopLoadT<coop_mat16x16<f16, A>>(&kv[eq0c][0], KS);
    let el0 = QL + eq0;
    let el0c = el0 / 8u;
    let ql0 = coopLoadT<coop_mat16x16<f16, A>>(&kv[el0c][0], KS);
    let eq1 = q_sg + 16u;
    let eq1c = eq1 / 8u;
    let qf1 = coopLoadT<coop_mat16x16<f16, A>>(&kv[eq1c][0], KS);
    let el1 = QL + eq1;
    let el1c = el1 / 8u;
    let ql1 = coopLoadT<coop_mat16x16<f16, A>>(&kv[el1c][0], KS);
    let eq2 = q_sg + 32u;
    let eq2c = eq2 / 8u;
    let qf2 = coopLoadT<coop_mat16x16<f16, A>>(&kv[eq2c][0], KS);
    let el2 = QL + eq2;
    let el2c = el2 / 8u;
    let ql2 = coopLoadT<coop_mat16x16<f16, A>>(&kv[el2c][0], KS);
    let eq3 = q_sg + 48u;
    let eq3c = eq3 / 8u;
    let qf3 = coopLoadT<coop_mat16x16<f16, A>>(&kv[eq3c][0], KS);
    let el3 = QL + eq3;
    let el3c = el3 / 8u;
    let ql3 = coopLoadT<coop_mat16x16<f16, A>>(&kv[el3c][0], KS);

    // The row's reference max (log2 units: P is exp2 of the scores less it), this invocation's
    // share of its sum, and the output rows as f32 fragments.
    let scale2 = p.scale * LOG2E;
    var m_run = neg_inf();
    var l_run = 0.0;
    // The scores' scale back (the products hold Q·2^eq by K·2^ek).
    let fs = scale2 * pow2(-eq) * pow2(-ek);
    var oacc0 = coop_mat16x16<f32, C>();
    var oacc1 = coop_mat16x16<f32, C>();
    var oacc2 = coop_mat16x16<f32, C>();
    var oacc3 = coop_mat16x16<f32, C>();
    // Keys past the last one a causal tile can see are never loaded.
    var k_end = p.skv;
    let k_begin = split * p.chunk;
    k_end = min(k_end, k_begin + p.chunk);
    for (var k0 = k_begin; k0 < k_end; k0 = k0 + BC) {
        workgroupBarrier();
        stage_kv(k_base, v_base, k0, tid, sk, sv);
        workgroupBarrier();
        // Scores: 16 rows × BC keys per subgroup.
        var sacc0 = coop_mat16x16<f32, C>();
        let ek0_0 = 0u * KS + 0u;
        let kf0_0c = ek0_0 / 8u;
        let kf0_0 = coopLoad<coop_mat16x16<f16, B>>(&kv[kf0_0c][0], KS);
        let ekl0_0 = L0 + ek0_0;
        let kl0_0c = ekl0_0 / 8u;
        let kl0_0 = coopLoad<coop_mat16x16<f16, B>>(&kv[kl0_0c][0], KS);
        sacc0 = coopMultiplyAdd(qf0, kl0_0, sacc0);
        sacc0 = coopMultiplyAdd(ql0, kf0_0, sacc0);
        sacc0 = coopMultiplyAdd(qf0, kf0_0, sacc0);
        let ek0_1 = 0u * KS + 16u;
        let kf0_1c = ek0_1 / 8u;
        let kf0_1 = coopLoad<coop_mat16x16<f16, B>>(&kv[kf0_1c][0], KS);
        let ekl0_1 = L0 + ek0_1;
        let kl0_1c = ekl0_1 / 8u;
        let kl0_1 = coopLoad<coop_mat16x16<f16, B>>(&kv[kl0_1c][0], KS);
        sacc0 = coopMultiplyAdd(qf1, kl0_1, sacc0);
        sacc0 = coopMultiplyAdd(ql1, kf0_1, sacc0);
        sacc0 = coopMultiplyAdd(qf1, kf0_1, sacc0);
        let ek0_2 = 0u * KS + 32u;
        let kf0_2c = ek0_2 / 8u;
        let kf0_2 = coopLoad<coop_mat16x16<f16, B>>(&kv[kf0_2c][0], KS);
        let ekl0_2 = L0 + ek0_2;
        let kl0_2c = ekl0_2 / 8u;
        let kl0_2 = coopLoad<coop_mat16x16<f16, B>>(&kv[kl0_2c][0], KS);
        sacc0 = coopMultiplyAdd(qf2, kl0_2, sacc0);
        sacc0 = coopMultiplyAdd(ql2, kf0_2, sacc0);
        sacc0 = coopMultiplyAdd(qf2, kf0_2, sacc0);
        let ek0_3 = 0u * KS + 48u;
        let kf0_3c = ek0_3 / 8u;
        let kf0_3 = coopLoad<coop_mat16x16<f16, B>>(&kv[kf0_3c][0], KS);
        let ekl0_3 = L0 + ek0_3;
        let kl0_3c = ekl0_3 / 8u;
        let kl0_3 = coopLoad<coop_mat16x16<f16, B>>(&kv[kl0_3c][0], KS);
        sacc0 = coopMultiplyAdd(qf3, kl0_3, sacc0);
        sacc0 = coopMultiplyAdd(ql3, kf0_3, sacc0);
        sacc0 = coopMultiplyAdd(qf3, kf0_3, sacc0);
        let es0 = s_sg + 0u;
        coopStoreT(sacc0, &sr[es0], RW);
        var sacc1 = coop_mat16x16<f32, C>();
        let ek1_0 = 16u * KS + 0u;
        let kf1_0c = ek1_0 / 8u;
        let kf1_0 = coopLoad<coop_mat16x16<f16, B>>(&kv[kf1_0c][0], KS);
        let ekl1_0 = L0 + ek1_0;
        let kl1_0c = ekl1_0 / 8u;
        let kl1_0 = coopLoad<coop_mat16x16<f16, B>>(&kv[kl1_0c][0], KS);
        sacc1 = coopMultiplyAdd(qf0, kl1_0, sacc1);
        sacc1 = coopMultiplyAdd(ql0, kf1_0, sacc1);
        sacc1 = coopMultiplyAdd(qf0, kf1_0, sacc1);
        let ek1_1 = 16u * KS + 16u;
        let kf1_1c = ek1_1 / 8u;
        let kf1_1 = coopLoad<coop_mat16x16<f16, B>>(&kv[kf1_1c][0], KS);
        let ekl1_1 = L0 + ek1_1;
        let kl1_1c = ekl1_1 / 8u;
        let kl1_1 = coopLoad<coop_mat16x16<f16, B>>(&kv[kl1_1c][0], KS);
        sacc1 = coopMultiplyAdd(qf1, kl1_1, sacc1);
        sacc1 = coopMultiplyAdd(ql1, kf1_1, sacc1);
        sacc1 = coopMultiplyAdd(qf1, kf1_1, sacc1);
        let ek1_2 = 16u * KS + 32u;
        let kf1_2c = ek1_2 / 8u;
        let kf1_2 = coopLoad<coop_mat16x16<f16, B>>(&kv[kf1_2c][0], KS);
        let ekl1_2 = L0 + ek1_2;
        let kl1_2c = ekl1_2 / 8u;
        let kl1_2 = coopLoad<coop_mat16x16<f16, B>>(&kv[kl1_2c][0], KS);
        sacc1 = coopMultiplyAdd(qf2, kl1_2, sacc1);
        sacc1 = coopMultiplyAdd(ql2, kf1_2, sacc1);
        sacc1 = coopMultiplyAdd(qf2, kf1_2, sacc1);
        let ek1_3 = 16u * KS + 48u;
        let kf1_3c = ek1_3 / 8u;
        let kf1_3 = coopLoad<coop_mat16x16<f16, B>>(&kv[kf1_3c][0], KS);
        let ekl1_3 = L0 + ek1_3;
        let kl1_3c = ekl1_3 / 8u;
        let kl1_3 = coopLoad<coop_mat16x16<f16, B>>(&kv[kl1_3c][0], KS);
        sacc1 = coopMultiplyAdd(qf3, kl1_3, sacc1);
        sacc1 = coopMultiplyAdd(ql3, kf1_3, sacc1);
        sacc1 = coopMultiplyAdd(qf3, kf1_3, sacc1);
        let es1 = s_sg + 16u;
        coopStoreT(sacc1, &sr[es1], RW);
        subgroupBarrier();
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
        let c8 = off0 + 16u;
        var x8 = sr[s_row + c8] * fs;
        let c9 = off1 + 16u;
        var x9 = sr[s_row + c9] * fs;
        let c10 = off0 + 20u;
        var x10 = sr[s_row + c10] * fs;
        let c11 = off1 + 20u;
        var x11 = sr[s_row + c11] * fs;
        let c12 = off0 + 24u;
        var x12 = sr[s_row + c12] * fs;
        let c13 = off1 + 24u;
        var x13 = sr[s_row + c13] * fs;
        let c14 = off0 + 28u;
        var x14 = sr[s_row + c14] * fs;
        let c15 = off1 + 28u;
        var x15 = sr[s_row + c15] * fs;
        x0 = select(neg_inf(), x0, mask_byte(m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c0, p.skv - 1u) * p.m_stride.w) != 0u);
        x1 = select(neg_inf(), x1, mask_byte(m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c1, p.skv - 1u) * p.m_stride.w) != 0u);
        x2 = select(neg_inf(), x2, mask_byte(m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c2, p.skv - 1u) * p.m_stride.w) != 0u);
        x3 = select(neg_inf(), x3, mask_byte(m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c3, p.skv - 1u) * p.m_stride.w) != 0u);
        x4 = select(neg_inf(), x4, mask_byte(m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c4, p.skv - 1u) * p.m_stride.w) != 0u);
        x5 = select(neg_inf(), x5, mask_byte(m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c5, p.skv - 1u) * p.m_stride.w) != 0u);
        x6 = select(neg_inf(), x6, mask_byte(m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c6, p.skv - 1u) * p.m_stride.w) != 0u);
        x7 = select(neg_inf(), x7, mask_byte(m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c7, p.skv - 1u) * p.m_stride.w) != 0u);
        x8 = select(neg_inf(), x8, mask_byte(m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c8, p.skv - 1u) * p.m_stride.w) != 0u);
        x9 = select(neg_inf(), x9, mask_byte(m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c9, p.skv - 1u) * p.m_stride.w) != 0u);
        x10 = select(neg_inf(), x10, mask_byte(m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c10, p.skv - 1u) * p.m_stride.w) != 0u);
        x11 = select(neg_inf(), x11, mask_byte(m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c11, p.skv - 1u) * p.m_stride.w) != 0u);
        x12 = select(neg_inf(), x12, mask_byte(m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c12, p.skv - 1u) * p.m_stride.w) != 0u);
        x13 = select(neg_inf(), x13, mask_byte(m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c13, p.skv - 1u) * p.m_stride.w) != 0u);
        x14 = select(neg_inf(), x14, mask_byte(m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c14, p.skv - 1u) * p.m_stride.w) != 0u);
        x15 = select(neg_inf(), x15, mask_byte(m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c15, p.skv - 1u) * p.m_stride.w) != 0u);
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
        let e8 = exp2(x8 - m_safe);
        t_sum = t_sum + e8;
        let ps8 = e8 * P_SCALE;
        pt[p_row + c8] = hi_of(ps8);
        pt[PL + p_row + c8] = lo_of(ps8);
        let e9 = exp2(x9 - m_safe);
        t_sum = t_sum + e9;
        let ps9 = e9 * P_SCALE;
        pt[p_row + c9] = hi_of(ps9);
        pt[PL + p_row + c9] = lo_of(ps9);
        let e10 = exp2(x10 - m_safe);
        t_sum = t_sum + e10;
        let ps10 = e10 * P_SCALE;
        pt[p_row + c10] = hi_of(ps10);
        pt[PL + p_row + c10] = lo_of(ps10);
        let e11 = exp2(x11 - m_safe);
        t_sum = t_sum + e11;
        let ps11 = e11 * P_SCALE;
        pt[p_row + c11] = hi_of(ps11);
        pt[PL + p_row + c11] = lo_of(ps11);
        let e12 = exp2(x12 - m_safe);
        t_sum = t_sum + e12;
        let ps12 = e12 * P_SCALE;
        pt[p_row + c12] = hi_of(ps12);
        pt[PL + p_row + c12] = lo_of(ps12);
        let e13 = exp2(x13 - m_safe);
        t_sum = t_sum + e13;
        let ps13 = e13 * P_SCALE;
        pt[p_row + c13] = hi_of(ps13);
        pt[PL + p_row + c13] = lo_of(ps13);
        let e14 = exp2(x14 - m_safe);
        t_sum = t_sum + e14;
        let ps14 = e14 * P_SCALE;
        pt[p_row + c14] = hi_of(ps14);
        pt[PL + p_row + c14] = lo_of(ps14);
        let e15 = exp2(x15 - m_safe);
        t_sum = t_sum + e15;
        let ps15 = e15 * P_SCALE;
        pt[p_row + c15] = hi_of(ps15);
        pt[PL + p_row + c15] = lo_of(ps15);
        l_run = l_run * alpha + t_sum;
        // Rescaling goes through the scratch: the fragments are stored, each pair scales its row,
        // and they are loaded back. The subgroup skips it when none of its rows moved.
        subgroupBarrier();
        if (subgroupAny(rescale)) {
            let er0 = s_sg + 0u;
            coopStoreT(oacc0, &sr[er0], RW);
            let er1 = s_sg + 16u;
            coopStoreT(oacc1, &sr[er1], RW);
            let er2 = s_sg + 32u;
            coopStoreT(oacc2, &sr[er2], RW);
            let er3 = s_sg + 48u;
            coopStoreT(oacc3, &sr[er3], RW);
            subgroupBarrier();
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
            subgroupBarrier();
            oacc0 = coopLoadT<coop_mat16x16<f32, C>>(&sr[er0], RW);
            oacc1 = coopLoadT<coop_mat16x16<f32, C>>(&sr[er1], RW);
            oacc2 = coopLoadT<coop_mat16x16<f32, C>>(&sr[er2], RW);
            oacc3 = coopLoadT<coop_mat16x16<f32, C>>(&sr[er3], RW);
        }
        subgroupBarrier();
        // P·V into the output fragments.
        let ep0 = p_sg + 0u;
        let pf0 = coopLoadT<coop_mat16x16<f16, A>>(&pt[ep0], PS);
        let epl0 = PL + ep0;
        let pl0 = coopLoadT<coop_mat16x16<f16, A>>(&pt[epl0], PS);
        let ep1 = p_sg + 16u;
        let pf1 = coopLoadT<coop_mat16x16<f16, A>>(&pt[ep1], PS);
        let epl1 = PL + ep1;
        let pl1 = coopLoadT<coop_mat16x16<f16, A>>(&pt[epl1], PS);
        let ev0_0 = V0 + 0u * KS + 0u;
        let vf0_0c = ev0_0 / 8u;
        let vf0_0 = coopLoadT<coop_mat16x16<f16, B>>(&kv[vf0_0c][0], KS);
        let evl0_0 = L0 + ev0_0;
        let vl0_0c = evl0_0 / 8u;
        let vl0_0 = coopLoadT<coop_mat16x16<f16, B>>(&kv[vl0_0c][0], KS);
        oacc0 = coopMultiplyAdd(pf0, vl0_0, oacc0);
        oacc0 = coopMultiplyAdd(pl0, vf0_0, oacc0);
        oacc0 = coopMultiplyAdd(pf0, vf0_0, oacc0);
        let ev0_1 = V0 + 16u * KS + 0u;
        let vf0_1c = ev0_1 / 8u;
        let vf0_1 = coopLoadT<coop_mat16x16<f16, B>>(&kv[vf0_1c][0], KS);
        let evl0_1 = L0 + ev0_1;
        let vl0_1c = evl0_1 / 8u;
        let vl0_1 = coopLoadT<coop_mat16x16<f16, B>>(&kv[vl0_1c][0], KS);
        oacc0 = coopMultiplyAdd(pf1, vl0_1, oacc0);
        oacc0 = coopMultiplyAdd(pl1, vf0_1, oacc0);
        oacc0 = coopMultiplyAdd(pf1, vf0_1, oacc0);
        let ev1_0 = V0 + 0u * KS + 16u;
        let vf1_0c = ev1_0 / 8u;
        let vf1_0 = coopLoadT<coop_mat16x16<f16, B>>(&kv[vf1_0c][0], KS);
        let evl1_0 = L0 + ev1_0;
        let vl1_0c = evl1_0 / 8u;
        let vl1_0 = coopLoadT<coop_mat16x16<f16, B>>(&kv[vl1_0c][0], KS);
        oacc1 = coopMultiplyAdd(pf0, vl1_0, oacc1);
        oacc1 = coopMultiplyAdd(pl0, vf1_0, oacc1);
        oacc1 = coopMultiplyAdd(pf0, vf1_0, oacc1);
        let ev1_1 = V0 + 16u * KS + 16u;
        let vf1_1c = ev1_1 / 8u;
        let vf1_1 = coopLoadT<coop_mat16x16<f16, B>>(&kv[vf1_1c][0], KS);
        let evl1_1 = L0 + ev1_1;
        let vl1_1c = evl1_1 / 8u;
        let vl1_1 = coopLoadT<coop_mat16x16<f16, B>>(&kv[vl1_1c][0], KS);
        oacc1 = coopMultiplyAdd(pf1, vl1_1, oacc1);
        oacc1 = coopMultiplyAdd(pl1, vf1_1, oacc1);
        oacc1 = coopMultiplyAdd(pf1, vf1_1, oacc1);
        let ev2_0 = V0 + 0u * KS + 32u;
        let vf2_0c = ev2_0 / 8u;
        let vf2_0 = coopLoadT<coop_mat16x16<f16, B>>(&kv[vf2_0c][0], KS);
        let evl2_0 = L0 + ev2_0;
        let vl2_0c = evl2_0 / 8u;
        let vl2_0 = coopLoadT<coop_mat16x16<f16, B>>(&kv[vl2_0c][0], KS);
        oacc2 = coopMultiplyAdd(pf0, vl2_0, oacc2);
        oacc2 = coopMultiplyAdd(pl0, vf2_0, oacc2);
        oacc2 = coopMultiplyAdd(pf0, vf2_0, oacc2);
        let ev2_1 = V0 + 16u * KS + 32u;
        let vf2_1c = ev2_1 / 8u;
        let vf2_1 = coopLoadT<coop_mat16x16<f16, B>>(&kv[vf2_1c][0], KS);
        let evl2_1 = L0 + ev2_1;
        let vl2_1c = evl2_1 / 8u;
        let vl2_1 = coopLoadT<coop_mat16x16<f16, B>>(&kv[vl2_1c][0], KS);
        oacc2 = coopMultiplyAdd(pf1, vl2_1, oacc2);
        oacc2 = coopMultiplyAdd(pl1, vf2_1, oacc2);
        oacc2 = coopMultiplyAdd(pf1, vf2_1, oacc2);
        let ev3_0 = V0 + 0u * KS + 48u;
        let vf3_0c = ev3_0 / 8u;
        let vf3_0 = coopLoadT<coop_mat16x16<f16, B>>(&kv[vf3_0c][0], KS);
        let evl3_0 = L0 + ev3_0;
        let vl3_0c = evl3_0 / 8u;
        let vl3_0 = coopLoadT<coop_mat16x16<f16, B>>(&kv[vl3_0c][0], KS);
        oacc3 = coopMultiplyAdd(pf0, vl3_0, oacc3);
        oacc3 = coopMultiplyAdd(pl0, vf3_0, oacc3);
        oacc3 = coopMultiplyAdd(pf0, vf3_0, oacc3);
        let ev3_1 = V0 + 16u * KS + 48u;
        let vf3_1c = ev3_1 / 8u;
        let vf3_1 = coopLoadT<coop_mat16x16<f16, B>>(&kv[vf3_1c][0], KS);
        let evl3_1 = L0 + ev3_1;
        let vl3_1c = evl3_1 / 8u;
        let vl3_1 = coopLoadT<coop_mat16x16<f16, B>>(&kv[vl3_1c][0], KS);
        oacc3 = coopMultiplyAdd(pf1, vl3_1, oacc3);
        oacc3 = coopMultiplyAdd(pl1, vf3_1, oacc3);
        oacc3 = coopMultiplyAdd(pf1, vf3_1, oacc3);
    }
    // Both halves' sums.
    let l_row = l_run + subgroupShuffleXor(l_run, 1u);
    // A row that sees no key is softmax over nothing: NaN, as Softmax of -inf scores.
    let inv = pow2(-ev - P_EXP) / l_row;
    // The output fragments leave through the scratch, 64 columns at a time.
    subgroupBarrier();
    let ef0 = s_sg + 0u;
    coopStoreT(oacc0, &sr[ef0], RW);
    let ef1 = s_sg + 16u;
    coopStoreT(oacc1, &sr[ef1], RW);
    let ef2 = s_sg + 32u;
    coopStoreT(oacc2, &sr[ef2], RW);
    let ef3 = s_sg + 48u;
    coopStoreT(oacc3, &sr[ef3], RW);
    subgroupBarrier();
    if (live && qi < p.sq) {
        let at = o_base + qi * p.o_stride.z;
        o[at + (0u + off0 + 0u) * p.o_stride.w] = f32(sr[s_row + off0 + 0u] * inv);
        o[at + (0u + off1 + 0u) * p.o_stride.w] = f32(sr[s_row + off1 + 0u] * inv);
        o[at + (0u + off0 + 4u) * p.o_stride.w] = f32(sr[s_row + off0 + 4u] * inv);
        o[at + (0u + off1 + 4u) * p.o_stride.w] = f32(sr[s_row + off1 + 4u] * inv);
        o[at + (0u + off0 + 8u) * p.o_stride.w] = f32(sr[s_row + off0 + 8u] * inv);
        o[at + (0u + off1 + 8u) * p.o_stride.w] = f32(sr[s_row + off1 + 8u] * inv);
        o[at + (0u + off0 + 12u) * p.o_stride.w] = f32(sr[s_row + off0 + 12u] * inv);
        o[at + (0u + off1 + 12u) * p.o_stride.w] = f32(sr[s_row + off1 + 12u] * inv);
        o[at + (0u + off0 + 16u) * p.o_stride.w] = f32(sr[s_row + off0 + 16u] * inv);
        o[at + (0u + off1 + 16u) * p.o_stride.w] = f32(sr[s_row + off1 + 16u] * inv);
        o[at + (0u + off0 + 20u) * p.o_stride.w] = f32(sr[s_row + off0 + 20u] * inv);
        o[at + (0u + off1 + 20u) * p.o_stride.w] = f32(sr[s_row + off1 + 20u] * inv);
        o[at + (0u + off0 + 24u) * p.o_stride.w] = f32(sr[s_row + off0 + 24u] * inv);
        o[at + (0u + off1 + 24u) * p.o_stride.w] = f32(sr[s_row + off1 + 24u] * inv);
        o[at + (0u + off0 + 28u) * p.o_stride.w] = f32(sr[s_row + off0 + 28u] * inv);
        o[at + (0u + off1 + 28u) * p.o_stride.w] = f32(sr[s_row + off1 + 28u] * inv);
        o[at + (0u + off0 + 32u) * p.o_stride.w] = f32(sr[s_row + off0 + 32u] * inv);
        o[at + (0u + off1 + 32u) * p.o_stride.w] = f32(sr[s_row + off1 + 32u] * inv);
        o[at + (0u + off0 + 36u) * p.o_stride.w] = f32(sr[s_row + off0 + 36u] * inv);
        o[at + (0u + off1 + 36u) * p.o_stride.w] = f32(sr[s_row + off1 + 36u] * inv);
        o[at + (0u + off0 + 40u) * p.o_stride.w] = f32(sr[s_row + off0 + 40u] * inv);
        o[at + (0u + off1 + 40u) * p.o_stride.w] = f32(sr[s_row + off1 + 40u] * inv);
        o[at + (0u + off0 + 44u) * p.o_stride.w] = f32(sr[s_row + off0 + 44u] * inv);
        o[at + (0u + off1 + 44u) * p.o_stride.w] = f32(sr[s_row + off1 + 44u] * inv);
        o[at + (0u + off0 + 48u) * p.o_stride.w] = f32(sr[s_row + off0 + 48u] * inv);
        o[at + (0u + off1 + 48u) * p.o_stride.w] = f32(sr[s_row + off1 + 48u] * inv);
        o[at + (0u + off0 + 52u) * p.o_stride.w] = f32(sr[s_row + off0 + 52u] * inv);
        o[at + (0u + off1 + 52u) * p.o_stride.w] = f32(sr[s_row + off1 + 52u] * inv);
        o[at + (0u + off0 + 56u) * p.o_stride.w] = f32(sr[s_row + off0 + 56u] * inv);
        o[at + (0u + off1 + 56u) * p.o_stride.w] = f32(sr[s_row + off1 + 56u] * inv);
        o[at + (0u + off0 + 60u) * p.o_stride.w] = f32(sr[s_row + off0 + 60u] * inv);
        o[at + (0u + off1 + 60u) * p.o_stride.w] = f32(sr[s_row + off1 + 60u] * inv);
    }
}
