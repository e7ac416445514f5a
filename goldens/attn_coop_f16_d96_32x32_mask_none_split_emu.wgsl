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
@group(0) @binding(3) var<storage, read_write> o: array<f32>;
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


// Stages `BC` rows of K and of V from key k0 (rows past the end are zeros). All loads are
// issued before the first store.
fn stage_kv(k_base: u32, v_base: u32, k0: u32, tid: u32) {
    if (p.vec_kv != 0u) {
        let i0 = tid + 0u;
        let c0 = i0 / 12u;
        let d0 = i0 % 12u;
        var kx0 = vec4<u32>();
        var vx0 = vec4<u32>();
        if (k0 + c0 < p.skv) {
            kx0 = k[(k_base + (k0 + c0) * p.k_stride.z) / 8u + d0];
            vx0 = v[(v_base + (k0 + c0) * p.v_stride.z) / 8u + d0];
        }
        let i1 = tid + 64u;
        let c1 = i1 / 12u;
        let d1 = i1 % 12u;
        var kx1 = vec4<u32>();
        var vx1 = vec4<u32>();
        if (k0 + c1 < p.skv) {
            kx1 = k[(k_base + (k0 + c1) * p.k_stride.z) / 8u + d1];
            vx1 = v[(v_base + (k0 + c1) * p.v_stride.z) / 8u + d1];
        }
        let i2 = tid + 128u;
        let c2 = i2 / 12u;
        let d2 = i2 % 12u;
        var kx2 = vec4<u32>();
        var vx2 = vec4<u32>();
        if (k0 + c2 < p.skv) {
            kx2 = k[(k_base + (k0 + c2) * p.k_stride.z) / 8u + d2];
            vx2 = v[(v_base + (k0 + c2) * p.v_stride.z) / 8u + d2];
        }
        let i3 = tid + 192u;
        let c3 = i3 / 12u;
        let d3 = i3 % 12u;
        var kx3 = vec4<u32>();
        var vx3 = vec4<u32>();
        if (k0 + c3 < p.skv) {
            kx3 = k[(k_base + (k0 + c3) * p.k_stride.z) / 8u + d3];
            vx3 = v[(v_base + (k0 + c3) * p.v_stride.z) / 8u + d3];
        }
        let i4 = tid + 256u;
        let c4 = i4 / 12u;
        let d4 = i4 % 12u;
        var kx4 = vec4<u32>();
        var vx4 = vec4<u32>();
        if (k0 + c4 < p.skv) {
            kx4 = k[(k_base + (k0 + c4) * p.k_stride.z) / 8u + d4];
            vx4 = v[(v_base + (k0 + c4) * p.v_stride.z) / 8u + d4];
        }
        let i5 = tid + 320u;
        let c5 = i5 / 12u;
        let d5 = i5 % 12u;
        var kx5 = vec4<u32>();
        var vx5 = vec4<u32>();
        if (k0 + c5 < p.skv) {
            kx5 = k[(k_base + (k0 + c5) * p.k_stride.z) / 8u + d5];
            vx5 = v[(v_base + (k0 + c5) * p.v_stride.z) / 8u + d5];
        }
        kv[c0 * 13u + d0] = f16x8(kx0);
        kv[416u + c0 * 13u + d0] = f16x8(vx0);
        kv[c1 * 13u + d1] = f16x8(kx1);
        kv[416u + c1 * 13u + d1] = f16x8(vx1);
        kv[c2 * 13u + d2] = f16x8(kx2);
        kv[416u + c2 * 13u + d2] = f16x8(vx2);
        kv[c3 * 13u + d3] = f16x8(kx3);
        kv[416u + c3 * 13u + d3] = f16x8(vx3);
        kv[c4 * 13u + d4] = f16x8(kx4);
        kv[416u + c4 * 13u + d4] = f16x8(vx4);
        kv[c5 * 13u + d5] = f16x8(kx5);
        kv[416u + c5 * 13u + d5] = f16x8(vx5);
        return;
    }
    let i0 = tid + 0u;
    let c0 = i0 / D;
    let d0 = i0 % D;
    let ok0 = k0 + c0 < p.skv;
    let kx0 = select(f16(0.0), k_at(k_base + (k0 + c0) * p.k_stride.z + d0 * p.k_stride.w), ok0);
    let vx0 = select(f16(0.0), v_at(v_base + (k0 + c0) * p.v_stride.z + d0 * p.v_stride.w), ok0);
    let i1 = tid + 64u;
    let c1 = i1 / D;
    let d1 = i1 % D;
    let ok1 = k0 + c1 < p.skv;
    let kx1 = select(f16(0.0), k_at(k_base + (k0 + c1) * p.k_stride.z + d1 * p.k_stride.w), ok1);
    let vx1 = select(f16(0.0), v_at(v_base + (k0 + c1) * p.v_stride.z + d1 * p.v_stride.w), ok1);
    let i2 = tid + 128u;
    let c2 = i2 / D;
    let d2 = i2 % D;
    let ok2 = k0 + c2 < p.skv;
    let kx2 = select(f16(0.0), k_at(k_base + (k0 + c2) * p.k_stride.z + d2 * p.k_stride.w), ok2);
    let vx2 = select(f16(0.0), v_at(v_base + (k0 + c2) * p.v_stride.z + d2 * p.v_stride.w), ok2);
    let i3 = tid + 192u;
    let c3 = i3 / D;
    let d3 = i3 % D;
    let ok3 = k0 + c3 < p.skv;
    let kx3 = select(f16(0.0), k_at(k_base + (k0 + c3) * p.k_stride.z + d3 * p.k_stride.w), ok3);
    let vx3 = select(f16(0.0), v_at(v_base + (k0 + c3) * p.v_stride.z + d3 * p.v_stride.w), ok3);
    let i4 = tid + 256u;
    let c4 = i4 / D;
    let d4 = i4 % D;
    let ok4 = k0 + c4 < p.skv;
    let kx4 = select(f16(0.0), k_at(k_base + (k0 + c4) * p.k_stride.z + d4 * p.k_stride.w), ok4);
    let vx4 = select(f16(0.0), v_at(v_base + (k0 + c4) * p.v_stride.z + d4 * p.v_stride.w), ok4);
    let i5 = tid + 320u;
    let c5 = i5 / D;
    let d5 = i5 % D;
    let ok5 = k0 + c5 < p.skv;
    let kx5 = select(f16(0.0), k_at(k_base + (k0 + c5) * p.k_stride.z + d5 * p.k_stride.w), ok5);
    let vx5 = select(f16(0.0), v_at(v_base + (k0 + c5) * p.v_stride.z + d5 * p.v_stride.w), ok5);
    let i6 = tid + 384u;
    let c6 = i6 / D;
    let d6 = i6 % D;
    let ok6 = k0 + c6 < p.skv;
    let kx6 = select(f16(0.0), k_at(k_base + (k0 + c6) * p.k_stride.z + d6 * p.k_stride.w), ok6);
    let vx6 = select(f16(0.0), v_at(v_base + (k0 + c6) * p.v_stride.z + d6 * p.v_stride.w), ok6);
    let i7 = tid + 448u;
    let c7 = i7 / D;
    let d7 = i7 % D;
    let ok7 = k0 + c7 < p.skv;
    let kx7 = select(f16(0.0), k_at(k_base + (k0 + c7) * p.k_stride.z + d7 * p.k_stride.w), ok7);
    let vx7 = select(f16(0.0), v_at(v_base + (k0 + c7) * p.v_stride.z + d7 * p.v_stride.w), ok7);
    let i8 = tid + 512u;
    let c8 = i8 / D;
    let d8 = i8 % D;
    let ok8 = k0 + c8 < p.skv;
    let kx8 = select(f16(0.0), k_at(k_base + (k0 + c8) * p.k_stride.z + d8 * p.k_stride.w), ok8);
    let vx8 = select(f16(0.0), v_at(v_base + (k0 + c8) * p.v_stride.z + d8 * p.v_stride.w), ok8);
    let i9 = tid + 576u;
    let c9 = i9 / D;
    let d9 = i9 % D;
    let ok9 = k0 + c9 < p.skv;
    let kx9 = select(f16(0.0), k_at(k_base + (k0 + c9) * p.k_stride.z + d9 * p.k_stride.w), ok9);
    let vx9 = select(f16(0.0), v_at(v_base + (k0 + c9) * p.v_stride.z + d9 * p.v_stride.w), ok9);
    let i10 = tid + 640u;
    let c10 = i10 / D;
    let d10 = i10 % D;
    let ok10 = k0 + c10 < p.skv;
    let kx10 = select(f16(0.0), k_at(k_base + (k0 + c10) * p.k_stride.z + d10 * p.k_stride.w), ok10);
    let vx10 = select(f16(0.0), v_at(v_base + (k0 + c10) * p.v_stride.z + d10 * p.v_stride.w), ok10);
    let i11 = tid + 704u;
    let c11 = i11 / D;
    let d11 = i11 % D;
    let ok11 = k0 + c11 < p.skv;
    let kx11 = select(f16(0.0), k_at(k_base + (k0 + c11) * p.k_stride.z + d11 * p.k_stride.w), ok11);
    let vx11 = select(f16(0.0), v_at(v_base + (k0 + c11) * p.v_stride.z + d11 * p.v_stride.w), ok11);
    let i12 = tid + 768u;
    let c12 = i12 / D;
    let d12 = i12 % D;
    let ok12 = k0 + c12 < p.skv;
    let kx12 = select(f16(0.0), k_at(k_base + (k0 + c12) * p.k_stride.z + d12 * p.k_stride.w), ok12);
    let vx12 = select(f16(0.0), v_at(v_base + (k0 + c12) * p.v_stride.z + d12 * p.v_stride.w), ok12);
    let i13 = tid + 832u;
    let c13 = i13 / D;
    let d13 = i13 % D;
    let ok13 = k0 + c13 < p.skv;
    let kx13 = select(f16(0.0), k_at(k_base + (k0 + c13) * p.k_stride.z + d13 * p.k_stride.w), ok13);
    let vx13 = select(f16(0.0), v_at(v_base + (k0 + c13) * p.v_stride.z + d13 * p.v_stride.w), ok13);
    let i14 = tid + 896u;
    let c14 = i14 / D;
    let d14 = i14 % D;
    let ok14 = k0 + c14 < p.skv;
    let kx14 = select(f16(0.0), k_at(k_base + (k0 + c14) * p.k_stride.z + d14 * p.k_stride.w), ok14);
    let vx14 = select(f16(0.0), v_at(v_base + (k0 + c14) * p.v_stride.z + d14 * p.v_stride.w), ok14);
    let i15 = tid + 960u;
    let c15 = i15 / D;
    let d15 = i15 % D;
    let ok15 = k0 + c15 < p.skv;
    let kx15 = select(f16(0.0), k_at(k_base + (k0 + c15) * p.k_stride.z + d15 * p.k_stride.w), ok15);
    let vx15 = select(f16(0.0), v_at(v_base + (k0 + c15) * p.v_stride.z + d15 * p.v_stride.w), ok15);
    let i16 = tid + 1024u;
    let c16 = i16 / D;
    let d16 = i16 % D;
    let ok16 = k0 + c16 < p.skv;
    let kx16 = select(f16(0.0), k_at(k_base + (k0 + c16) * p.k_stride.z + d16 * p.k_stride.w), ok16);
    let vx16 = select(f16(0.0), v_at(v_base + (k0 + c16) * p.v_stride.z + d16 * p.v_stride.w), ok16);
    let i17 = tid + 1088u;
    let c17 = i17 / D;
    let d17 = i17 % D;
    let ok17 = k0 + c17 < p.skv;
    let kx17 = select(f16(0.0), k_at(k_base + (k0 + c17) * p.k_stride.z + d17 * p.k_stride.w), ok17);
    let vx17 = select(f16(0.0), v_at(v_base + (k0 + c17) * p.v_stride.z + d17 * p.v_stride.w), ok17);
    let i18 = tid + 1152u;
    let c18 = i18 / D;
    let d18 = i18 % D;
    let ok18 = k0 + c18 < p.skv;
    let kx18 = select(f16(0.0), k_at(k_base + (k0 + c18) * p.k_stride.z + d18 * p.k_stride.w), ok18);
    let vx18 = select(f16(0.0), v_at(v_base + (k0 + c18) * p.v_stride.z + d18 * p.v_stride.w), ok18);
    let i19 = tid + 1216u;
    let c19 = i19 / D;
    let d19 = i19 % D;
    let ok19 = k0 + c19 < p.skv;
    let kx19 = select(f16(0.0), k_at(k_base + (k0 + c19) * p.k_stride.z + d19 * p.k_stride.w), ok19);
    let vx19 = select(f16(0.0), v_at(v_base + (k0 + c19) * p.v_stride.z + d19 * p.v_stride.w), ok19);
    let i20 = tid + 1280u;
    let c20 = i20 / D;
    let d20 = i20 % D;
    let ok20 = k0 + c20 < p.skv;
    let kx20 = select(f16(0.0), k_at(k_base + (k0 + c20) * p.k_stride.z + d20 * p.k_stride.w), ok20);
    let vx20 = select(f16(0.0), v_at(v_base + (k0 + c20) * p.v_stride.z + d20 * p.v_stride.w), ok20);
    let i21 = tid + 1344u;
    let c21 = i21 / D;
    let d21 = i21 % D;
    let ok21 = k0 + c21 < p.skv;
    let kx21 = select(f16(0.0), k_at(k_base + (k0 + c21) * p.k_stride.z + d21 * p.k_stride.w), ok21);
    let vx21 = select(f16(0.0), v_at(v_base + (k0 + c21) * p.v_stride.z + d21 * p.v_stride.w), ok21);
    let i22 = tid + 1408u;
    let c22 = i22 / D;
    let d22 = i22 % D;
    let ok22 = k0 + c22 < p.skv;
    let kx22 = select(f16(0.0), k_at(k_base + (k0 + c22) * p.k_stride.z + d22 * p.k_stride.w), ok22);
    let vx22 = select(f16(0.0), v_at(v_base + (k0 + c22) * p.v_stride.z + d22 * p.v_stride.w), ok22);
    let i23 = tid + 1472u;
    let c23 = i23 / D;
    let d23 = i23 % D;
    let ok23 = k0 + c23 < p.skv;
    let kx23 = select(f16(0.0), k_at(k_base + (k0 + c23) * p.k_stride.z + d23 * p.k_stride.w), ok23);
    let vx23 = select(f16(0.0), v_at(v_base + (k0 + c23) * p.v_stride.z + d23 * p.v_stride.w), ok23);
    let i24 = tid + 1536u;
    let c24 = i24 / D;
    let d24 = i24 % D;
    let ok24 = k0 + c24 < p.skv;
    let kx24 = select(f16(0.0), k_at(k_base + (k0 + c24) * p.k_stride.z + d24 * p.k_stride.w), ok24);
    let vx24 = select(f16(0.0), v_at(v_base + (k0 + c24) * p.v_stride.z + d24 * p.v_stride.w), ok24);
    let i25 = tid + 1600u;
    let c25 = i25 / D;
    let d25 = i25 % D;
    let ok25 = k0 + c25 < p.skv;
    let kx25 = select(f16(0.0), k_at(k_base + (k0 + c25) * p.k_stride.z + d25 * p.k_stride.w), ok25);
    let vx25 = select(f16(0.0), v_at(v_base + (k0 + c25) * p.v_stride.z + d25 * p.v_stride.w), ok25);
    let i26 = tid + 1664u;
    let c26 = i26 / D;
    let d26 = i26 % D;
    let ok26 = k0 + c26 < p.skv;
    let kx26 = select(f16(0.0), k_at(k_base + (k0 + c26) * p.k_stride.z + d26 * p.k_stride.w), ok26);
    let vx26 = select(f16(0.0), v_at(v_base + (k0 + c26) * p.v_stride.z + d26 * p.v_stride.w), ok26);
    let i27 = tid + 1728u;
    let c27 = i27 / D;
    let d27 = i27 % D;
    let ok27 = k0 + c27 < p.skv;
    let kx27 = select(f16(0.0), k_at(k_base + (k0 + c27) * p.k_stride.z + d27 * p.k_stride.w), ok27);
    let vx27 = select(f16(0.0), v_at(v_base + (k0 + c27) * p.v_stride.z + d27 * p.v_stride.w), ok27);
    let i28 = tid + 1792u;
    let c28 = i28 / D;
    let d28 = i28 % D;
    let ok28 = k0 + c28 < p.skv;
    let kx28 = select(f16(0.0), k_at(k_base + (k0 + c28) * p.k_stride.z + d28 * p.k_stride.w), ok28);
    let vx28 = select(f16(0.0), v_at(v_base + (k0 + c28) * p.v_stride.z + d28 * p.v_stride.w), ok28);
    let i29 = tid + 1856u;
    let c29 = i29 / D;
    let d29 = i29 % D;
    let ok29 = k0 + c29 < p.skv;
    let kx29 = select(f16(0.0), k_at(k_base + (k0 + c29) * p.k_stride.z + d29 * p.k_stride.w), ok29);
    let vx29 = select(f16(0.0), v_at(v_base + (k0 + c29) * p.v_stride.z + d29 * p.v_stride.w), ok29);
    let i30 = tid + 1920u;
    let c30 = i30 / D;
    let d30 = i30 % D;
    let ok30 = k0 + c30 < p.skv;
    let kx30 = select(f16(0.0), k_at(k_base + (k0 + c30) * p.k_stride.z + d30 * p.k_stride.w), ok30);
    let vx30 = select(f16(0.0), v_at(v_base + (k0 + c30) * p.v_stride.z + d30 * p.v_stride.w), ok30);
    let i31 = tid + 1984u;
    let c31 = i31 / D;
    let d31 = i31 % D;
    let ok31 = k0 + c31 < p.skv;
    let kx31 = select(f16(0.0), k_at(k_base + (k0 + c31) * p.k_stride.z + d31 * p.k_stride.w), ok31);
    let vx31 = select(f16(0.0), v_at(v_base + (k0 + c31) * p.v_stride.z + d31 * p.v_stride.w), ok31);
    let i32 = tid + 2048u;
    let c32 = i32 / D;
    let d32 = i32 % D;
    let ok32 = k0 + c32 < p.skv;
    let kx32 = select(f16(0.0), k_at(k_base + (k0 + c32) * p.k_stride.z + d32 * p.k_stride.w), ok32);
    let vx32 = select(f16(0.0), v_at(v_base + (k0 + c32) * p.v_stride.z + d32 * p.v_stride.w), ok32);
    let i33 = tid + 2112u;
    let c33 = i33 / D;
    let d33 = i33 % D;
    let ok33 = k0 + c33 < p.skv;
    let kx33 = select(f16(0.0), k_at(k_base + (k0 + c33) * p.k_stride.z + d33 * p.k_stride.w), ok33);
    let vx33 = select(f16(0.0), v_at(v_base + (k0 + c33) * p.v_stride.z + d33 * p.v_stride.w), ok33);
    let i34 = tid + 2176u;
    let c34 = i34 / D;
    let d34 = i34 % D;
    let ok34 = k0 + c34 < p.skv;
    let kx34 = select(f16(0.0), k_at(k_base + (k0 + c34) * p.k_stride.z + d34 * p.k_stride.w), ok34);
    let vx34 = select(f16(0.0), v_at(v_base + (k0 + c34) * p.v_stride.z + d34 * p.v_stride.w), ok34);
    let i35 = tid + 2240u;
    let c35 = i35 / D;
    let d35 = i35 % D;
    let ok35 = k0 + c35 < p.skv;
    let kx35 = select(f16(0.0), k_at(k_base + (k0 + c35) * p.k_stride.z + d35 * p.k_stride.w), ok35);
    let vx35 = select(f16(0.0), v_at(v_base + (k0 + c35) * p.v_stride.z + d35 * p.v_stride.w), ok35);
    let i36 = tid + 2304u;
    let c36 = i36 / D;
    let d36 = i36 % D;
    let ok36 = k0 + c36 < p.skv;
    let kx36 = select(f16(0.0), k_at(k_base + (k0 + c36) * p.k_stride.z + d36 * p.k_stride.w), ok36);
    let vx36 = select(f16(0.0), v_at(v_base + (k0 + c36) * p.v_stride.z + d36 * p.v_stride.w), ok36);
    let i37 = tid + 2368u;
    let c37 = i37 / D;
    let d37 = i37 % D;
    let ok37 = k0 + c37 < p.skv;
    let kx37 = select(f16(0.0), k_at(k_base + (k0 + c37) * p.k_stride.z + d37 * p.k_stride.w), ok37);
    let vx37 = select(f16(0.0), v_at(v_base + (k0 + c37) * p.v_stride.z + d37 * p.v_stride.w), ok37);
    let i38 = tid + 2432u;
    let c38 = i38 / D;
    let d38 = i38 % D;
    let ok38 = k0 + c38 < p.skv;
    let kx38 = select(f16(0.0), k_at(k_base + (k0 + c38) * p.k_stride.z + d38 * p.k_stride.w), ok38);
    let vx38 = select(f16(0.0), v_at(v_base + (k0 + c38) * p.v_stride.z + d38 * p.v_stride.w), ok38);
    let i39 = tid + 2496u;
    let c39 = i39 / D;
    let d39 = i39 % D;
    let ok39 = k0 + c39 < p.skv;
    let kx39 = select(f16(0.0), k_at(k_base + (k0 + c39) * p.k_stride.z + d39 * p.k_stride.w), ok39);
    let vx39 = select(f16(0.0), v_at(v_base + (k0 + c39) * p.v_stride.z + d39 * p.v_stride.w), ok39);
    let i40 = tid + 2560u;
    let c40 = i40 / D;
    let d40 = i40 % D;
    let ok40 = k0 + c40 < p.skv;
    let kx40 = select(f16(0.0), k_at(k_base + (k0 + c40) * p.k_stride.z + d40 * p.k_stride.w), ok40);
    let vx40 = select(f16(0.0), v_at(v_base + (k0 + c40) * p.v_stride.z + d40 * p.v_stride.w), ok40);
    let i41 = tid + 2624u;
    let c41 = i41 / D;
    let d41 = i41 % D;
    let ok41 = k0 + c41 < p.skv;
    let kx41 = select(f16(0.0), k_at(k_base + (k0 + c41) * p.k_stride.z + d41 * p.k_stride.w), ok41);
    let vx41 = select(f16(0.0), v_at(v_base + (k0 + c41) * p.v_stride.z + d41 * p.v_stride.w), ok41);
    let i42 = tid + 2688u;
    let c42 = i42 / D;
    let d42 = i42 % D;
    let ok42 = k0 + c42 < p.skv;
    let kx42 = select(f16(0.0), k_at(k_base + (k0 + c42) * p.k_stride.z + d42 * p.k_stride.w), ok42);
    let vx42 = select(f16(0.0), v_at(v_base + (k0 + c42) * p.v_stride.z + d42 * p.v_stride.w), ok42);
    let i43 = tid + 2752u;
    let c43 = i43 / D;
    let d43 = i43 % D;
    let ok43 = k0 + c43 < p.skv;
    let kx43 = select(f16(0.0), k_at(k_base + (k0 + c43) * p.k_stride.z + d43 * p.k_stride.w), ok43);
    let vx43 = select(f16(0.0), v_at(v_base + (k0 + c43) * p.v_stride.z + d43 * p.v_stride.w), ok43);
    let i44 = tid + 2816u;
    let c44 = i44 / D;
    let d44 = i44 % D;
    let ok44 = k0 + c44 < p.skv;
    let kx44 = select(f16(0.0), k_at(k_base + (k0 + c44) * p.k_stride.z + d44 * p.k_stride.w), ok44);
    let vx44 = select(f16(0.0), v_at(v_base + (k0 + c44) * p.v_stride.z + d44 * p.v_stride.w), ok44);
    let i45 = tid + 2880u;
    let c45 = i45 / D;
    let d45 = i45 % D;
    let ok45 = k0 + c45 < p.skv;
    let kx45 = select(f16(0.0), k_at(k_base + (k0 + c45) * p.k_stride.z + d45 * p.k_stride.w), ok45);
    let vx45 = select(f16(0.0), v_at(v_base + (k0 + c45) * p.v_stride.z + d45 * p.v_stride.w), ok45);
    let i46 = tid + 2944u;
    let c46 = i46 / D;
    let d46 = i46 % D;
    let ok46 = k0 + c46 < p.skv;
    let kx46 = select(f16(0.0), k_at(k_base + (k0 + c46) * p.k_stride.z + d46 * p.k_stride.w), ok46);
    let vx46 = select(f16(0.0), v_at(v_base + (k0 + c46) * p.v_stride.z + d46 * p.v_stride.w), ok46);
    let i47 = tid + 3008u;
    let c47 = i47 / D;
    let d47 = i47 % D;
    let ok47 = k0 + c47 < p.skv;
    let kx47 = select(f16(0.0), k_at(k_base + (k0 + c47) * p.k_stride.z + d47 * p.k_stride.w), ok47);
    let vx47 = select(f16(0.0), v_at(v_base + (k0 + c47) * p.v_stride.z + d47 * p.v_stride.w), ok47);
    kv[(c0 * KS + d0) / 8u][d0 % 8u] = kx0;
    kv[(V0 + c0 * KS + d0) / 8u][d0 % 8u] = vx0;
    kv[(c1 * KS + d1) / 8u][d1 % 8u] = kx1;
    kv[(V0 + c1 * KS + d1) / 8u][d1 % 8u] = vx1;
    kv[(c2 * KS + d2) / 8u][d2 % 8u] = kx2;
    kv[(V0 + c2 * KS + d2) / 8u][d2 % 8u] = vx2;
    kv[(c3 * KS + d3) / 8u][d3 % 8u] = kx3;
    kv[(V0 + c3 * KS + d3) / 8u][d3 % 8u] = vx3;
    kv[(c4 * KS + d4) / 8u][d4 % 8u] = kx4;
    kv[(V0 + c4 * KS + d4) / 8u][d4 % 8u] = vx4;
    kv[(c5 * KS + d5) / 8u][d5 % 8u] = kx5;
    kv[(V0 + c5 * KS + d5) / 8u][d5 % 8u] = vx5;
    kv[(c6 * KS + d6) / 8u][d6 % 8u] = kx6;
    kv[(V0 + c6 * KS + d6) / 8u][d6 % 8u] = vx6;
    kv[(c7 * KS + d7) / 8u][d7 % 8u] = kx7;
    kv[(V0 + c7 * KS + d7) / 8u][d7 % 8u] = vx7;
    kv[(c8 * KS + d8) / 8u][d8 % 8u] = kx8;
    kv[(V0 + c8 * KS + d8) / 8u][d8 % 8u] = vx8;
    kv[(c9 * KS + d9) / 8u][d9 % 8u] = kx9;
    kv[(V0 + c9 * KS + d9) / 8u][d9 % 8u] = vx9;
    kv[(c10 * KS + d10) / 8u][d10 % 8u] = kx10;
    kv[(V0 + c10 * KS + d10) / 8u][d10 % 8u] = vx10;
    kv[(c11 * KS + d11) / 8u][d11 % 8u] = kx11;
    kv[(V0 + c11 * KS + d11) / 8u][d11 % 8u] = vx11;
    kv[(c12 * KS + d12) / 8u][d12 % 8u] = kx12;
    kv[(V0 + c12 * KS + d12) / 8u][d12 % 8u] = vx12;
    kv[(c13 * KS + d13) / 8u][d13 % 8u] = kx13;
    kv[(V0 + c13 * KS + d13) / 8u][d13 % 8u] = vx13;
    kv[(c14 * KS + d14) / 8u][d14 % 8u] = kx14;
    kv[(V0 + c14 * KS + d14) / 8u][d14 % 8u] = vx14;
    kv[(c15 * KS + d15) / 8u][d15 % 8u] = kx15;
    kv[(V0 + c15 * KS + d15) / 8u][d15 % 8u] = vx15;
    kv[(c16 * KS + d16) / 8u][d16 % 8u] = kx16;
    kv[(V0 + c16 * KS + d16) / 8u][d16 % 8u] = vx16;
    kv[(c17 * KS + d17) / 8u][d17 % 8u] = kx17;
    kv[(V0 + c17 * KS + d17) / 8u][d17 % 8u] = vx17;
    kv[(c18 * KS + d18) / 8u][d18 % 8u] = kx18;
    kv[(V0 + c18 * KS + d18) / 8u][d18 % 8u] = vx18;
    kv[(c19 * KS + d19) / 8u][d19 % 8u] = kx19;
    kv[(V0 + c19 * KS + d19) / 8u][d19 % 8u] = vx19;
    kv[(c20 * KS + d20) / 8u][d20 % 8u] = kx20;
    kv[(V0 + c20 * KS + d20) / 8u][d20 % 8u] = vx20;
    kv[(c21 * KS + d21) / 8u][d21 % 8u] = kx21;
    kv[(V0 + c21 * KS + d21) / 8u][d21 % 8u] = vx21;
    kv[(c22 * KS + d22) / 8u][d22 % 8u] = kx22;
    kv[(V0 + c22 * KS + d22) / 8u][d22 % 8u] = vx22;
    kv[(c23 * KS + d23) / 8u][d23 % 8u] = kx23;
    kv[(V0 + c23 * KS + d23) / 8u][d23 % 8u] = vx23;
    kv[(c24 * KS + d24) / 8u][d24 % 8u] = kx24;
    kv[(V0 + c24 * KS + d24) / 8u][d24 % 8u] = vx24;
    kv[(c25 * KS + d25) / 8u][d25 % 8u] = kx25;
    kv[(V0 + c25 * KS + d25) / 8u][d25 % 8u] = vx25;
    kv[(c26 * KS + d26) / 8u][d26 % 8u] = kx26;
    kv[(V0 + c26 * KS + d26) / 8u][d26 % 8u] = vx26;
    kv[(c27 * KS + d27) / 8u][d27 % 8u] = kx27;
    kv[(V0 + c27 * KS + d27) / 8u][d27 % 8u] = vx27;
    kv[(c28 * KS + d28) / 8u][d28 % 8u] = kx28;
    kv[(V0 + c28 * KS + d28) / 8u][d28 % 8u] = vx28;
    kv[(c29 * KS + d29) / 8u][d29 % 8u] = kx29;
    kv[(V0 + c29 * KS + d29) / 8u][d29 % 8u] = vx29;
    kv[(c30 * KS + d30) / 8u][d30 % 8u] = kx30;
    kv[(V0 + c30 * KS + d30) / 8u][d30 % 8u] = vx30;
    kv[(c31 * KS + d31) / 8u][d31 % 8u] = kx31;
    kv[(V0 + c31 * KS + d31) / 8u][d31 % 8u] = vx31;
    kv[(c32 * KS + d32) / 8u][d32 % 8u] = kx32;
    kv[(V0 + c32 * KS + d32) / 8u][d32 % 8u] = vx32;
    kv[(c33 * KS + d33) / 8u][d33 % 8u] = kx33;
    kv[(V0 + c33 * KS + d33) / 8u][d33 % 8u] = vx33;
    kv[(c34 * KS + d34) / 8u][d34 % 8u] = kx34;
    kv[(V0 + c34 * KS + d34) / 8u][d34 % 8u] = vx34;
    kv[(c35 * KS + d35) / 8u][d35 % 8u] = kx35;
    kv[(V0 + c35 * KS + d35) / 8u][d35 % 8u] = vx35;
    kv[(c36 * KS + d36) / 8u][d36 % 8u] = kx36;
    kv[(V0 + c36 * KS + d36) / 8u][d36 % 8u] = vx36;
    kv[(c37 * KS + d37) / 8u][d37 % 8u] = kx37;
    kv[(V0 + c37 * KS + d37) / 8u][d37 % 8u] = vx37;
    kv[(c38 * KS + d38) / 8u][d38 % 8u] = kx38;
    kv[(V0 + c38 * KS + d38) / 8u][d38 % 8u] = vx38;
    kv[(c39 * KS + d39) / 8u][d39 % 8u] = kx39;
    kv[(V0 + c39 * KS + d39) / 8u][d39 % 8u] = vx39;
    kv[(c40 * KS + d40) / 8u][d40 % 8u] = kx40;
    kv[(V0 + c40 * KS + d40) / 8u][d40 % 8u] = vx40;
    kv[(c41 * KS + d41) / 8u][d41 % 8u] = kx41;
    kv[(V0 + c41 * KS + d41) / 8u][d41 % 8u] = vx41;
    kv[(c42 * KS + d42) / 8u][d42 % 8u] = kx42;
    kv[(V0 + c42 * KS + d42) / 8u][d42 % 8u] = vx42;
    kv[(c43 * KS + d43) / 8u][d43 % 8u] = kx43;
    kv[(V0 + c43 * KS + d43) / 8u][d43 % 8u] = vx43;
    kv[(c44 * KS + d44) / 8u][d44 % 8u] = kx44;
    kv[(V0 + c44 * KS + d44) / 8u][d44 % 8u] = vx44;
    kv[(c45 * KS + d45) / 8u][d45 % 8u] = kx45;
    kv[(V0 + c45 * KS + d45) / 8u][d45 % 8u] = vx45;
    kv[(c46 * KS + d46) / 8u][d46 % 8u] = kx46;
    kv[(V0 + c46 * KS + d46) / 8u][d46 % 8u] = vx46;
    kv[(c47 * KS + d47) / 8u][d47 % 8u] = kx47;
    kv[(V0 + c47 * KS + d47) / 8u][d47 % 8u] = vx47;
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
    if (p.causal != 0u) {
        // Causal tiles run longest first: the last query tiles (which see the most keys) of every
        // (batch, head), then the ones before them, so the workgroups that start last are short.
        let bhs = p.count / (p.q_tiles * p.splits);
        bh = tile % bhs;
        qt = p.q_tiles - 1u - tile / bhs;
    }
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
    if (p.causal != 0u) {
        k_end = u32(clamp(i32(min(q0 + BR, p.sq)) + p.causal_offset, 0, i32(p.skv)));
    }
    let k_begin = split * p.chunk;
    k_end = min(k_end, k_begin + p.chunk);
    // The first tile's K and V rows (contiguous rows only), then each next one during a step.
    var next = KvNext();
    if (p.vec_kv != 0u && k_begin < k_end) {
        next = fetch_kv(k_base, v_base, k_begin, tid);
    }
    for (var k0 = k_begin; k0 < k_end; k0 = k0 + BC) {
        workgroupBarrier();
        if (p.vec_kv != 0u) {
            put_kv(next, tid);
            if (k0 + BC < k_end) {
                next = fetch_kv(k_base, v_base, k0 + BC, tid);
            }
        } else {
            stage_kv(k_base, v_base, k0, tid);
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
        let edge = k0 + BC > p.skv || (p.causal != 0u && i32(k0 + BC - 1u) > i32(q0) + p.causal_offset);
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
            x0 = select(neg_inf(), x0, k0 + c0 < p.skv && (p.causal == 0u || i32(k0 + c0) <= i32(qi) + p.causal_offset));
            x1 = select(neg_inf(), x1, k0 + c1 < p.skv && (p.causal == 0u || i32(k0 + c1) <= i32(qi) + p.causal_offset));
            x2 = select(neg_inf(), x2, k0 + c2 < p.skv && (p.causal == 0u || i32(k0 + c2) <= i32(qi) + p.causal_offset));
            x3 = select(neg_inf(), x3, k0 + c3 < p.skv && (p.causal == 0u || i32(k0 + c3) <= i32(qi) + p.causal_offset));
            x4 = select(neg_inf(), x4, k0 + c4 < p.skv && (p.causal == 0u || i32(k0 + c4) <= i32(qi) + p.causal_offset));
            x5 = select(neg_inf(), x5, k0 + c5 < p.skv && (p.causal == 0u || i32(k0 + c5) <= i32(qi) + p.causal_offset));
            x6 = select(neg_inf(), x6, k0 + c6 < p.skv && (p.causal == 0u || i32(k0 + c6) <= i32(qi) + p.causal_offset));
            x7 = select(neg_inf(), x7, k0 + c7 < p.skv && (p.causal == 0u || i32(k0 + c7) <= i32(qi) + p.causal_offset));
            x8 = select(neg_inf(), x8, k0 + c8 < p.skv && (p.causal == 0u || i32(k0 + c8) <= i32(qi) + p.causal_offset));
            x9 = select(neg_inf(), x9, k0 + c9 < p.skv && (p.causal == 0u || i32(k0 + c9) <= i32(qi) + p.causal_offset));
            x10 = select(neg_inf(), x10, k0 + c10 < p.skv && (p.causal == 0u || i32(k0 + c10) <= i32(qi) + p.causal_offset));
            x11 = select(neg_inf(), x11, k0 + c11 < p.skv && (p.causal == 0u || i32(k0 + c11) <= i32(qi) + p.causal_offset));
            x12 = select(neg_inf(), x12, k0 + c12 < p.skv && (p.causal == 0u || i32(k0 + c12) <= i32(qi) + p.causal_offset));
            x13 = select(neg_inf(), x13, k0 + c13 < p.skv && (p.causal == 0u || i32(k0 + c13) <= i32(qi) + p.causal_offset));
            x14 = select(neg_inf(), x14, k0 + c14 < p.skv && (p.causal == 0u || i32(k0 + c14) <= i32(qi) + p.causal_offset));
            x15 = select(neg_inf(), x15, k0 + c15 < p.skv && (p.causal == 0u || i32(k0 + c15) <= i32(qi) + p.causal_offset));
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
        o[at + off0 + 0u] = sr[s_row + off0 + 0u];
        o[at + off1 + 0u] = sr[s_row + off1 + 0u];
        o[at + off0 + 4u] = sr[s_row + off0 + 4u];
        o[at + off1 + 4u] = sr[s_row + off1 + 4u];
        o[at + off0 + 8u] = sr[s_row + off0 + 8u];
        o[at + off1 + 8u] = sr[s_row + off1 + 8u];
        o[at + off0 + 12u] = sr[s_row + off0 + 12u];
        o[at + off1 + 12u] = sr[s_row + off1 + 12u];
        o[at + off0 + 16u] = sr[s_row + off0 + 16u];
        o[at + off1 + 16u] = sr[s_row + off1 + 16u];
        o[at + off0 + 20u] = sr[s_row + off0 + 20u];
        o[at + off1 + 20u] = sr[s_row + off1 + 20u];
        o[at + off0 + 24u] = sr[s_row + off0 + 24u];
        o[at + off1 + 24u] = sr[s_row + off1 + 24u];
        o[at + off0 + 28u] = sr[s_row + off0 + 28u];
        o[at + off1 + 28u] = sr[s_row + off1 + 28u];
        o[at + off0 + 32u] = sr[s_row + off0 + 32u];
        o[at + off1 + 32u] = sr[s_row + off1 + 32u];
        o[at + off0 + 36u] = sr[s_row + off0 + 36u];
        o[at + off1 + 36u] = sr[s_row + off1 + 36u];
        o[at + off0 + 40u] = sr[s_row + off0 + 40u];
        o[at + off1 + 40u] = sr[s_row + off1 + 40u];
        o[at + off0 + 44u] = sr[s_row + off0 + 44u];
        o[at + off1 + 44u] = sr[s_row + off1 + 44u];
        o[at + off0 + 48u] = sr[s_row + off0 + 48u];
        o[at + off1 + 48u] = sr[s_row + off1 + 48u];
        o[at + off0 + 52u] = sr[s_row + off0 + 52u];
        o[at + off1 + 52u] = sr[s_row + off1 + 52u];
        o[at + off0 + 56u] = sr[s_row + off0 + 56u];
        o[at + off1 + 56u] = sr[s_row + off1 + 56u];
        o[at + off0 + 60u] = sr[s_row + off0 + 60u];
        o[at + off1 + 60u] = sr[s_row + off1 + 60u];
    }
    workgroupBarrier();
    let ef4 = s_sg + 0u;
    emu_store(&oacc4, lane, ef4);
    let ef5 = s_sg + 16u;
    emu_store(&oacc5, lane, ef5);
    workgroupBarrier();
    if (live && qi < p.sq) {
        let at = ((bh * p.sq + qi) * p.splits + split) * (D + 2u) + 64u;
        o[at + off0 + 0u] = sr[s_row + off0 + 0u];
        o[at + off1 + 0u] = sr[s_row + off1 + 0u];
        o[at + off0 + 4u] = sr[s_row + off0 + 4u];
        o[at + off1 + 4u] = sr[s_row + off1 + 4u];
        o[at + off0 + 8u] = sr[s_row + off0 + 8u];
        o[at + off1 + 8u] = sr[s_row + off1 + 8u];
        o[at + off0 + 12u] = sr[s_row + off0 + 12u];
        o[at + off1 + 12u] = sr[s_row + off1 + 12u];
        o[at + off0 + 16u] = sr[s_row + off0 + 16u];
        o[at + off1 + 16u] = sr[s_row + off1 + 16u];
        o[at + off0 + 20u] = sr[s_row + off0 + 20u];
        o[at + off1 + 20u] = sr[s_row + off1 + 20u];
        o[at + off0 + 24u] = sr[s_row + off0 + 24u];
        o[at + off1 + 24u] = sr[s_row + off1 + 24u];
        o[at + off0 + 28u] = sr[s_row + off0 + 28u];
        o[at + off1 + 28u] = sr[s_row + off1 + 28u];
    }
    if (live && qi < p.sq && half == 0u) {
        // The max in natural-log units, as the reduction expects.
        let at = ((bh * p.sq + qi) * p.splits + split) * (D + 2u);
        o[at + D] = m_run * LN2;
        o[at + D + 1u] = l_row;
    }
}
