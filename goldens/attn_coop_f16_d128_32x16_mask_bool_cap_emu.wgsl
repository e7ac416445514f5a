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
@group(0) @binding(3) var<storage, read> m: array<u32>;
@group(0) @binding(4) var<storage, read_write> o: array<f16>;
@group(0) @binding(5) var<uniform> p: Params;

const BR: u32 = 32u;
const BC: u32 = 16u;
const D: u32 = 128u;
// f16 elements between staged rows of Q/K/V and of P; f32 words between rows of the score and
// output scratch.
const KS: u32 = 136u;
const PS: u32 = 24u;
const RW: u32 = 68u;
// Where V is staged, after K.
const V0: u32 = 2176u;
const LOG2E: f32 = 1.4426950408889634;
const LN2: f32 = 0.6931471805599453;
// How far (log2 units) a row's max may pass its reference before the output is rescaled.
const TAU: f32 = 8.0;

// K then V (16 rows each), in 8-half chunks; Q is staged here once at the start.
var<workgroup> kv: array<array<f16, 8>, 544>;
// Per subgroup 16 rows: the scores of a tile, then a chunk of P·V.
var<workgroup> sr: array<f32, 2176>;
// Per subgroup 16 rows of P (f16).
var<workgroup> pt: array<f16, 768>;
// Q, where the emulated fragments read it for the whole run.
var<workgroup> qe: array<f16, 4352>;

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

// Byte `i` of the boolean mask.
fn mask_byte(i: u32) -> u32 {
    return (m[i / 4u] >> (8u * (i % 4u))) & 0xffu;
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
        let c0 = i0 / 16u;
        let d0 = i0 % 16u;
        var kx0 = vec4<u32>();
        var vx0 = vec4<u32>();
        if (k0 + c0 < p.skv) {
            kx0 = k[(k_base + (k0 + c0) * p.k_stride.z) / 8u + d0];
            vx0 = v[(v_base + (k0 + c0) * p.v_stride.z) / 8u + d0];
        }
        let i1 = tid + 64u;
        let c1 = i1 / 16u;
        let d1 = i1 % 16u;
        var kx1 = vec4<u32>();
        var vx1 = vec4<u32>();
        if (k0 + c1 < p.skv) {
            kx1 = k[(k_base + (k0 + c1) * p.k_stride.z) / 8u + d1];
            vx1 = v[(v_base + (k0 + c1) * p.v_stride.z) / 8u + d1];
        }
        let i2 = tid + 128u;
        let c2 = i2 / 16u;
        let d2 = i2 % 16u;
        var kx2 = vec4<u32>();
        var vx2 = vec4<u32>();
        if (k0 + c2 < p.skv) {
            kx2 = k[(k_base + (k0 + c2) * p.k_stride.z) / 8u + d2];
            vx2 = v[(v_base + (k0 + c2) * p.v_stride.z) / 8u + d2];
        }
        let i3 = tid + 192u;
        let c3 = i3 / 16u;
        let d3 = i3 % 16u;
        var kx3 = vec4<u32>();
        var vx3 = vec4<u32>();
        if (k0 + c3 < p.skv) {
            kx3 = k[(k_base + (k0 + c3) * p.k_stride.z) / 8u + d3];
            vx3 = v[(v_base + (k0 + c3) * p.v_stride.z) / 8u + d3];
        }
        kv[c0 * 17u + d0] = f16x8(kx0);
        kv[272u + c0 * 17u + d0] = f16x8(vx0);
        kv[c1 * 17u + d1] = f16x8(kx1);
        kv[272u + c1 * 17u + d1] = f16x8(vx1);
        kv[c2 * 17u + d2] = f16x8(kx2);
        kv[272u + c2 * 17u + d2] = f16x8(vx2);
        kv[c3 * 17u + d3] = f16x8(kx3);
        kv[272u + c3 * 17u + d3] = f16x8(vx3);
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
}

// The next tile's K and V rows, eight f16 per vec4<u32>.
struct KvNext {
    k: array<vec4<u32>, 4>,
    v: array<vec4<u32>, 4>,
}

// Loads `BC` rows of K and of V from key k0 (rows past the end are zeros).
fn fetch_kv(k_base: u32, v_base: u32, k0: u32, tid: u32) -> KvNext {
    var r = KvNext();
    let i0 = tid + 0u;
    let c0 = i0 / 16u;
    let d0 = i0 % 16u;
    if (k0 + c0 < p.skv) {
        r.k[0] = k[(k_base + (k0 + c0) * p.k_stride.z) / 8u + d0];
        r.v[0] = v[(v_base + (k0 + c0) * p.v_stride.z) / 8u + d0];
    }
    let i1 = tid + 64u;
    let c1 = i1 / 16u;
    let d1 = i1 % 16u;
    if (k0 + c1 < p.skv) {
        r.k[1] = k[(k_base + (k0 + c1) * p.k_stride.z) / 8u + d1];
        r.v[1] = v[(v_base + (k0 + c1) * p.v_stride.z) / 8u + d1];
    }
    let i2 = tid + 128u;
    let c2 = i2 / 16u;
    let d2 = i2 % 16u;
    if (k0 + c2 < p.skv) {
        r.k[2] = k[(k_base + (k0 + c2) * p.k_stride.z) / 8u + d2];
        r.v[2] = v[(v_base + (k0 + c2) * p.v_stride.z) / 8u + d2];
    }
    let i3 = tid + 192u;
    let c3 = i3 / 16u;
    let d3 = i3 % 16u;
    if (k0 + c3 < p.skv) {
        r.k[3] = k[(k_base + (k0 + c3) * p.k_stride.z) / 8u + d3];
        r.v[3] = v[(v_base + (k0 + c3) * p.v_stride.z) / 8u + d3];
    }
    return r;
}

// Stores what fetch_kv loaded.
fn put_kv(r: KvNext, tid: u32) {
    let i0 = tid + 0u;
    let c0 = i0 / 16u;
    let d0 = i0 % 16u;
    kv[c0 * 17u + d0] = f16x8(r.k[0]);
    kv[272u + c0 * 17u + d0] = f16x8(r.v[0]);
    let i1 = tid + 64u;
    let c1 = i1 / 16u;
    let d1 = i1 % 16u;
    kv[c1 * 17u + d1] = f16x8(r.k[1]);
    kv[272u + c1 * 17u + d1] = f16x8(r.v[1]);
    let i2 = tid + 128u;
    let c2 = i2 / 16u;
    let d2 = i2 % 16u;
    kv[c2 * 17u + d2] = f16x8(r.k[2]);
    kv[272u + c2 * 17u + d2] = f16x8(r.v[2]);
    let i3 = tid + 192u;
    let c3 = i3 / 16u;
    let d3 = i3 % 16u;
    kv[c3 * 17u + d3] = f16x8(r.k[3]);
    kv[272u + c3 * 17u + d3] = f16x8(r.v[3]);
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
    let eq6 = q_sg + 96u;
    let qf6 = eq6;
    let eq7 = q_sg + 112u;
    let qf7 = eq7;

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
    var oacc6 = array<f32, 8>();
    var oacc7 = array<f32, 8>();
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
        let ek0_6 = 0u * KS + 96u;
        let kf0_6 = ek0_6;
        emu_mma_qk(&sacc0, lane, qf6, kf0_6);
        let ek0_7 = 0u * KS + 112u;
        let kf0_7 = ek0_7;
        emu_mma_qk(&sacc0, lane, qf7, kf0_7);
        let es0 = s_sg + 0u;
        emu_store(&sacc0, lane, es0);
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
        if (p.softcap > 0.0) {
            x0 = capped(sr[s_row + c0] * p.scale) * LOG2E;
            x1 = capped(sr[s_row + c1] * p.scale) * LOG2E;
            x2 = capped(sr[s_row + c2] * p.scale) * LOG2E;
            x3 = capped(sr[s_row + c3] * p.scale) * LOG2E;
            x4 = capped(sr[s_row + c4] * p.scale) * LOG2E;
            x5 = capped(sr[s_row + c5] * p.scale) * LOG2E;
            x6 = capped(sr[s_row + c6] * p.scale) * LOG2E;
            x7 = capped(sr[s_row + c7] * p.scale) * LOG2E;
        }
        x0 = select(neg_inf(), x0, mask_byte(m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c0, p.skv - 1u) * p.m_stride.w) != 0u);
        x1 = select(neg_inf(), x1, mask_byte(m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c1, p.skv - 1u) * p.m_stride.w) != 0u);
        x2 = select(neg_inf(), x2, mask_byte(m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c2, p.skv - 1u) * p.m_stride.w) != 0u);
        x3 = select(neg_inf(), x3, mask_byte(m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c3, p.skv - 1u) * p.m_stride.w) != 0u);
        x4 = select(neg_inf(), x4, mask_byte(m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c4, p.skv - 1u) * p.m_stride.w) != 0u);
        x5 = select(neg_inf(), x5, mask_byte(m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c5, p.skv - 1u) * p.m_stride.w) != 0u);
        x6 = select(neg_inf(), x6, mask_byte(m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c6, p.skv - 1u) * p.m_stride.w) != 0u);
        x7 = select(neg_inf(), x7, mask_byte(m_base + min(qi, p.sq - 1u) * p.m_stride.z + min(k0 + c7, p.skv - 1u) * p.m_stride.w) != 0u);
        if (edge) {
            x0 = select(neg_inf(), x0, k0 + c0 < p.skv && (p.causal == 0u || i32(k0 + c0) <= i32(qi) + p.causal_offset));
            x1 = select(neg_inf(), x1, k0 + c1 < p.skv && (p.causal == 0u || i32(k0 + c1) <= i32(qi) + p.causal_offset));
            x2 = select(neg_inf(), x2, k0 + c2 < p.skv && (p.causal == 0u || i32(k0 + c2) <= i32(qi) + p.causal_offset));
            x3 = select(neg_inf(), x3, k0 + c3 < p.skv && (p.causal == 0u || i32(k0 + c3) <= i32(qi) + p.causal_offset));
            x4 = select(neg_inf(), x4, k0 + c4 < p.skv && (p.causal == 0u || i32(k0 + c4) <= i32(qi) + p.causal_offset));
            x5 = select(neg_inf(), x5, k0 + c5 < p.skv && (p.causal == 0u || i32(k0 + c5) <= i32(qi) + p.causal_offset));
            x6 = select(neg_inf(), x6, k0 + c6 < p.skv && (p.causal == 0u || i32(k0 + c6) <= i32(qi) + p.causal_offset));
            x7 = select(neg_inf(), x7, k0 + c7 < p.skv && (p.causal == 0u || i32(k0 + c7) <= i32(qi) + p.causal_offset));
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
            let er6 = s_sg + 32u;
            emu_store(&oacc6, lane, er6);
            let er7 = s_sg + 48u;
            emu_store(&oacc7, lane, er7);
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
            emu_load(&oacc4, lane, er4);
            emu_load(&oacc5, lane, er5);
            emu_load(&oacc6, lane, er6);
            emu_load(&oacc7, lane, er7);
        workgroupBarrier();
        // P·V into the output fragments.
        let ep0 = p_sg + 0u;
        let pf0 = ep0;
        let ev0_0 = V0 + 0u * KS + 0u;
        let vf0_0 = ev0_0;
        emu_mma_pv(&oacc0, lane, pf0, vf0_0);
        let ev1_0 = V0 + 0u * KS + 16u;
        let vf1_0 = ev1_0;
        emu_mma_pv(&oacc1, lane, pf0, vf1_0);
        let ev2_0 = V0 + 0u * KS + 32u;
        let vf2_0 = ev2_0;
        emu_mma_pv(&oacc2, lane, pf0, vf2_0);
        let ev3_0 = V0 + 0u * KS + 48u;
        let vf3_0 = ev3_0;
        emu_mma_pv(&oacc3, lane, pf0, vf3_0);
        let ev4_0 = V0 + 0u * KS + 64u;
        let vf4_0 = ev4_0;
        emu_mma_pv(&oacc4, lane, pf0, vf4_0);
        let ev5_0 = V0 + 0u * KS + 80u;
        let vf5_0 = ev5_0;
        emu_mma_pv(&oacc5, lane, pf0, vf5_0);
        let ev6_0 = V0 + 0u * KS + 96u;
        let vf6_0 = ev6_0;
        emu_mma_pv(&oacc6, lane, pf0, vf6_0);
        let ev7_0 = V0 + 0u * KS + 112u;
        let vf7_0 = ev7_0;
        emu_mma_pv(&oacc7, lane, pf0, vf7_0);
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
    let ef6 = s_sg + 32u;
    emu_store(&oacc6, lane, ef6);
    let ef7 = s_sg + 48u;
    emu_store(&oacc7, lane, ef7);
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
        o[at + (64u + off0 + 32u) * p.o_stride.w] = f16(sr[s_row + off0 + 32u] * inv);
        o[at + (64u + off1 + 32u) * p.o_stride.w] = f16(sr[s_row + off1 + 32u] * inv);
        o[at + (64u + off0 + 36u) * p.o_stride.w] = f16(sr[s_row + off0 + 36u] * inv);
        o[at + (64u + off1 + 36u) * p.o_stride.w] = f16(sr[s_row + off1 + 36u] * inv);
        o[at + (64u + off0 + 40u) * p.o_stride.w] = f16(sr[s_row + off0 + 40u] * inv);
        o[at + (64u + off1 + 40u) * p.o_stride.w] = f16(sr[s_row + off1 + 40u] * inv);
        o[at + (64u + off0 + 44u) * p.o_stride.w] = f16(sr[s_row + off0 + 44u] * inv);
        o[at + (64u + off1 + 44u) * p.o_stride.w] = f16(sr[s_row + off1 + 44u] * inv);
        o[at + (64u + off0 + 48u) * p.o_stride.w] = f16(sr[s_row + off0 + 48u] * inv);
        o[at + (64u + off1 + 48u) * p.o_stride.w] = f16(sr[s_row + off1 + 48u] * inv);
        o[at + (64u + off0 + 52u) * p.o_stride.w] = f16(sr[s_row + off0 + 52u] * inv);
        o[at + (64u + off1 + 52u) * p.o_stride.w] = f16(sr[s_row + off1 + 52u] * inv);
        o[at + (64u + off0 + 56u) * p.o_stride.w] = f16(sr[s_row + off0 + 56u] * inv);
        o[at + (64u + off1 + 56u) * p.o_stride.w] = f16(sr[s_row + off1 + 56u] * inv);
        o[at + (64u + off0 + 60u) * p.o_stride.w] = f16(sr[s_row + off0 + 60u] * inv);
        o[at + (64u + off1 + 60u) * p.o_stride.w] = f16(sr[s_row + off1 + 60u] * inv);
    }
}
