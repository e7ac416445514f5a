enable f16;
enable wgpu_cooperative_matrix;

@group(0) @binding(0) var<storage, read> a: array<f16>;
@group(0) @binding(1) var<storage, read> b: array<f16>;
@group(0) @binding(2) var<storage, read> bias: array<f16>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

struct Params {
    m: u32,
    n: u32,
    k: u32,
    k_chunk: u32,
    a_rs: u32,
    a_cs: u32,
    b_rs: u32,
    b_cs: u32,
    c_rs: u32,
    c_cs: u32,
    bias_rs: u32,
    bias_cs: u32,
    tiles_n: u32,
    tiles_m: u32,
    splits: u32,
    batch_count: u32,
    grid_x: u32,
    grid_y: u32,
    total_workgroups: u32,
    flags: u32,
    alpha: f32,
    beta: f32,
    clip_min: f32,
    clip_max: f32,
    batch_shape: vec4<u32>,
    a_bs: vec4<u32>,
    b_bs: vec4<u32>,
    c_bs: vec4<u32>,
    bias_bs: vec4<u32>,
}

// Element offset of batch `b` (row-major over batch_shape) for an operand's batch strides.
fn batch_offset(b: u32, strides: vec4<u32>) -> u32 {
    var rest = b;
    let c3 = rest % p.batch_shape.w;
    rest = rest / p.batch_shape.w;
    let c2 = rest % p.batch_shape.z;
    rest = rest / p.batch_shape.z;
    let c1 = rest % p.batch_shape.y;
    rest = rest / p.batch_shape.y;
    return rest * strides.x + c1 * strides.y + c2 * strides.z + c3 * strides.w;
}

// Linear workgroup index of a (possibly folded) 3-D grid.
fn linear_workgroup(wid: vec3<u32>) -> u32 {
    return wid.x + p.grid_x * (wid.y + p.grid_y * wid.z);
}

fn act_keep_nan(v: f32, x: f32) -> f32 {
    return select(v, x, (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u);
}


fn ew_nan(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}

fn ew_inf(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u;
}

// Infinity with the sign of s (built at run time: a non-finite constant is invalid WGSL).
fn ew_infinity(s: f32) -> f32 {
    return bitcast<f32>(select(0x7f800000u, 0xff800000u, s < 0.0));
}

// A quiet NaN (built from x so it is not a constant).
fn ew_nan_of(x: f32) -> f32 {
    return bitcast<f32>(bitcast<u32>(x) | 0x7fc00000u);
}

// erf with about 1 ulp of error (N. Juffa's erff): a polynomial in x below 0.9277, else
// 1 - exp(polynomial).
fn ew_erf(a: f32) -> f32 {
    let t = min(abs(a), 4.0);
    let s = t * t;
    var r: f32;
    if (t > 0.927734375) {
        r = -1.72853470e-5 * t + 3.83197126e-4;
        let u = -3.88396438e-3 * t + 2.42546219e-2;
        r = r * s + u;
        r = r * t - 1.06777877e-1;
        r = r * t - 6.34846687e-1;
        r = r * t - 1.28717512e-1;
        r = r * t - t;
        r = 1.0 - exp(r);
    } else {
        r = -5.96761703e-4;
        r = r * s + 4.99119423e-3;
        r = r * s - 2.67681349e-2;
        r = r * s + 1.12819925e-1;
        r = r * s - 3.76125336e-1;
        r = r * s + 1.28379166e-1;
        r = r * t + t;
    }
    return select(select(r, -r, a < 0.0), a, ew_nan(a));
}


fn extended_activation(x: f32) -> f32 {
    let kind = (p.flags >> 4u) & 15u;
    if (kind == 1u || kind == 2u) {
        var h = p.clip_min * x + p.clip_max;
        h = select(h, 0.0, h < 0.0);
        h = select(h, 1.0, h > 1.0);
        return act_keep_nan(select(h, x * h, kind == 2u), x);
    } else if (kind == 3u) {
        return x / (1.0 + exp(-x));
    } else if (kind == 4u) {
        return select(x, p.clip_min * x, x < 0.0);
    } else if (kind == 5u) {
        return 0.5 * x * (1.0 + ew_erf(x * 0.70710678118654752));
    }
    return x;
}


fn activation(x: f32) -> f32 {
    var v = x;
    let act = (p.flags >> 1u) & 3u;
    if (act == 1u) {
        v = act_keep_nan(select(v, 0.0, v < 0.0), v);
    } else if (act == 2u) {
        v = select(v, p.clip_min, v < p.clip_min);
        v = act_keep_nan(select(v, p.clip_max, v > p.clip_max), x);
    }
    v = extended_activation(v);
    return v;
}


// alpha · acc + beta · bias, then the activation. NaN passes through like ONNX Runtime's CPU EP.
fn epilogue(acc: f32, bias_index: u32) -> f32 {
    var v = p.alpha * acc;
    if ((p.flags & 1u) != 0u) {
        v = v + p.beta * f32(bias[bias_index]);
    }
    return activation(v);
}

const BK: u32 = 32u;
const VW: u32 = 1u;
// f16 elements between consecutive staged rows, and per stage, of A and B.
const SA: u32 = 72u;
const SB: u32 = 72u;
const A_STAGE: u32 = 2304u;
const B_STAGE: u32 = 2304u;

var<workgroup> a_tile: array<f16, 4608>;
var<workgroup> b_tile: array<f16, 4608>;
var<workgroup> c_tile: array<f32, 1024>;


// Writes the fragment a subgroup left in its scratch (row-major 16×16 at c0) to rows row.. and
// columns col.. of the output; each invocation writes 8 of its elements.
fn write_frag(c0: u32, lane: u32, row: u32, col: u32, c_base: u32, bias_base: u32) {
    for (var q = 0u; q < 8u; q = q + 1u) {
        let e = lane + q * 32u;
        let r = row + e / 16u;
        let c = col + e % 16u;
        if (r < p.m && c < p.n) {
            let v = c_tile[c0 + e];
            out[c_base + r * p.n + c] = v;
        }
    }
}

@compute @workgroup_size(128, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    // Grid padding past the last tile recomputes tile 0 and writes nothing: an early return
    // would leave the cooperative operations in what naga deems non-uniform control flow.
    let live = linear_workgroup(wid) < p.total_workgroups;
    let lin = select(0u, linear_workgroup(wid), live);
    let tile_n = lin % p.tiles_n;
    let tile_m = (lin / p.tiles_n) % p.tiles_m;
    let batch_split = lin / (p.tiles_n * p.tiles_m);
    let split = batch_split % p.splits;
    let batch = batch_split / p.splits;
    let row0 = tile_m * 64u;
    let col0 = tile_n * 64u;
    let a_base = batch_offset(batch, p.a_bs);
    let b_base = batch_offset(batch, p.b_bs);
    let k_begin = split * p.k_chunk;
    let k_end = min(p.k, k_begin + p.k_chunk);
    let sg = tid / 32u;
    let lane = tid % 32u;
    let wm0 = (sg / 2u) * 32u;
    let wn0 = (sg % 2u) * 32u;
    let a_sg = wm0;
    let b_sg = wn0;

    // The chunks this invocation loads, independent of K: validity along M/N, the global
    // offset at k = 0, the K coordinate within the slice, and the staged position.
    let ae0 = tid + 0u;
    let ao0 = ae0 / 64u;
    let ai0 = (ae0 % 64u) * VW;
    let a_ok0 = row0 + ai0 < p.m;
    let a_k0 = ao0;
    let a_off0 = a_base + (row0 + ai0) * p.a_rs + ao0 * p.a_cs;
    let a_st0 = ao0 * SA + ai0;
    var ra0: f16;
    var rax0: f16;
    let ae1 = tid + 128u;
    let ao1 = ae1 / 64u;
    let ai1 = (ae1 % 64u) * VW;
    let a_ok1 = row0 + ai1 < p.m;
    let a_k1 = ao1;
    let a_off1 = a_base + (row0 + ai1) * p.a_rs + ao1 * p.a_cs;
    let a_st1 = ao1 * SA + ai1;
    var ra1: f16;
    var rax1: f16;
    let ae2 = tid + 256u;
    let ao2 = ae2 / 64u;
    let ai2 = (ae2 % 64u) * VW;
    let a_ok2 = row0 + ai2 < p.m;
    let a_k2 = ao2;
    let a_off2 = a_base + (row0 + ai2) * p.a_rs + ao2 * p.a_cs;
    let a_st2 = ao2 * SA + ai2;
    var ra2: f16;
    var rax2: f16;
    let ae3 = tid + 384u;
    let ao3 = ae3 / 64u;
    let ai3 = (ae3 % 64u) * VW;
    let a_ok3 = row0 + ai3 < p.m;
    let a_k3 = ao3;
    let a_off3 = a_base + (row0 + ai3) * p.a_rs + ao3 * p.a_cs;
    let a_st3 = ao3 * SA + ai3;
    var ra3: f16;
    var rax3: f16;
    let ae4 = tid + 512u;
    let ao4 = ae4 / 64u;
    let ai4 = (ae4 % 64u) * VW;
    let a_ok4 = row0 + ai4 < p.m;
    let a_k4 = ao4;
    let a_off4 = a_base + (row0 + ai4) * p.a_rs + ao4 * p.a_cs;
    let a_st4 = ao4 * SA + ai4;
    var ra4: f16;
    var rax4: f16;
    let ae5 = tid + 640u;
    let ao5 = ae5 / 64u;
    let ai5 = (ae5 % 64u) * VW;
    let a_ok5 = row0 + ai5 < p.m;
    let a_k5 = ao5;
    let a_off5 = a_base + (row0 + ai5) * p.a_rs + ao5 * p.a_cs;
    let a_st5 = ao5 * SA + ai5;
    var ra5: f16;
    var rax5: f16;
    let ae6 = tid + 768u;
    let ao6 = ae6 / 64u;
    let ai6 = (ae6 % 64u) * VW;
    let a_ok6 = row0 + ai6 < p.m;
    let a_k6 = ao6;
    let a_off6 = a_base + (row0 + ai6) * p.a_rs + ao6 * p.a_cs;
    let a_st6 = ao6 * SA + ai6;
    var ra6: f16;
    var rax6: f16;
    let ae7 = tid + 896u;
    let ao7 = ae7 / 64u;
    let ai7 = (ae7 % 64u) * VW;
    let a_ok7 = row0 + ai7 < p.m;
    let a_k7 = ao7;
    let a_off7 = a_base + (row0 + ai7) * p.a_rs + ao7 * p.a_cs;
    let a_st7 = ao7 * SA + ai7;
    var ra7: f16;
    var rax7: f16;
    let ae8 = tid + 1024u;
    let ao8 = ae8 / 64u;
    let ai8 = (ae8 % 64u) * VW;
    let a_ok8 = row0 + ai8 < p.m;
    let a_k8 = ao8;
    let a_off8 = a_base + (row0 + ai8) * p.a_rs + ao8 * p.a_cs;
    let a_st8 = ao8 * SA + ai8;
    var ra8: f16;
    var rax8: f16;
    let ae9 = tid + 1152u;
    let ao9 = ae9 / 64u;
    let ai9 = (ae9 % 64u) * VW;
    let a_ok9 = row0 + ai9 < p.m;
    let a_k9 = ao9;
    let a_off9 = a_base + (row0 + ai9) * p.a_rs + ao9 * p.a_cs;
    let a_st9 = ao9 * SA + ai9;
    var ra9: f16;
    var rax9: f16;
    let ae10 = tid + 1280u;
    let ao10 = ae10 / 64u;
    let ai10 = (ae10 % 64u) * VW;
    let a_ok10 = row0 + ai10 < p.m;
    let a_k10 = ao10;
    let a_off10 = a_base + (row0 + ai10) * p.a_rs + ao10 * p.a_cs;
    let a_st10 = ao10 * SA + ai10;
    var ra10: f16;
    var rax10: f16;
    let ae11 = tid + 1408u;
    let ao11 = ae11 / 64u;
    let ai11 = (ae11 % 64u) * VW;
    let a_ok11 = row0 + ai11 < p.m;
    let a_k11 = ao11;
    let a_off11 = a_base + (row0 + ai11) * p.a_rs + ao11 * p.a_cs;
    let a_st11 = ao11 * SA + ai11;
    var ra11: f16;
    var rax11: f16;
    let ae12 = tid + 1536u;
    let ao12 = ae12 / 64u;
    let ai12 = (ae12 % 64u) * VW;
    let a_ok12 = row0 + ai12 < p.m;
    let a_k12 = ao12;
    let a_off12 = a_base + (row0 + ai12) * p.a_rs + ao12 * p.a_cs;
    let a_st12 = ao12 * SA + ai12;
    var ra12: f16;
    var rax12: f16;
    let ae13 = tid + 1664u;
    let ao13 = ae13 / 64u;
    let ai13 = (ae13 % 64u) * VW;
    let a_ok13 = row0 + ai13 < p.m;
    let a_k13 = ao13;
    let a_off13 = a_base + (row0 + ai13) * p.a_rs + ao13 * p.a_cs;
    let a_st13 = ao13 * SA + ai13;
    var ra13: f16;
    var rax13: f16;
    let ae14 = tid + 1792u;
    let ao14 = ae14 / 64u;
    let ai14 = (ae14 % 64u) * VW;
    let a_ok14 = row0 + ai14 < p.m;
    let a_k14 = ao14;
    let a_off14 = a_base + (row0 + ai14) * p.a_rs + ao14 * p.a_cs;
    let a_st14 = ao14 * SA + ai14;
    var ra14: f16;
    var rax14: f16;
    let ae15 = tid + 1920u;
    let ao15 = ae15 / 64u;
    let ai15 = (ae15 % 64u) * VW;
    let a_ok15 = row0 + ai15 < p.m;
    let a_k15 = ao15;
    let a_off15 = a_base + (row0 + ai15) * p.a_rs + ao15 * p.a_cs;
    let a_st15 = ao15 * SA + ai15;
    var ra15: f16;
    var rax15: f16;
    let be0 = tid + 0u;
    let bo0 = be0 / 64u;
    let bi0 = (be0 % 64u) * VW;
    let b_ok0 = col0 + bi0 < p.n;
    let b_k0 = bo0;
    let b_off0 = b_base + bo0 * p.b_rs + (col0 + bi0) * p.b_cs;
    let b_st0 = bo0 * SB + bi0;
    var rb0: f16;
    var rbx0: f16;
    let be1 = tid + 128u;
    let bo1 = be1 / 64u;
    let bi1 = (be1 % 64u) * VW;
    let b_ok1 = col0 + bi1 < p.n;
    let b_k1 = bo1;
    let b_off1 = b_base + bo1 * p.b_rs + (col0 + bi1) * p.b_cs;
    let b_st1 = bo1 * SB + bi1;
    var rb1: f16;
    var rbx1: f16;
    let be2 = tid + 256u;
    let bo2 = be2 / 64u;
    let bi2 = (be2 % 64u) * VW;
    let b_ok2 = col0 + bi2 < p.n;
    let b_k2 = bo2;
    let b_off2 = b_base + bo2 * p.b_rs + (col0 + bi2) * p.b_cs;
    let b_st2 = bo2 * SB + bi2;
    var rb2: f16;
    var rbx2: f16;
    let be3 = tid + 384u;
    let bo3 = be3 / 64u;
    let bi3 = (be3 % 64u) * VW;
    let b_ok3 = col0 + bi3 < p.n;
    let b_k3 = bo3;
    let b_off3 = b_base + bo3 * p.b_rs + (col0 + bi3) * p.b_cs;
    let b_st3 = bo3 * SB + bi3;
    var rb3: f16;
    var rbx3: f16;
    let be4 = tid + 512u;
    let bo4 = be4 / 64u;
    let bi4 = (be4 % 64u) * VW;
    let b_ok4 = col0 + bi4 < p.n;
    let b_k4 = bo4;
    let b_off4 = b_base + bo4 * p.b_rs + (col0 + bi4) * p.b_cs;
    let b_st4 = bo4 * SB + bi4;
    var rb4: f16;
    var rbx4: f16;
    let be5 = tid + 640u;
    let bo5 = be5 / 64u;
    let bi5 = (be5 % 64u) * VW;
    let b_ok5 = col0 + bi5 < p.n;
    let b_k5 = bo5;
    let b_off5 = b_base + bo5 * p.b_rs + (col0 + bi5) * p.b_cs;
    let b_st5 = bo5 * SB + bi5;
    var rb5: f16;
    var rbx5: f16;
    let be6 = tid + 768u;
    let bo6 = be6 / 64u;
    let bi6 = (be6 % 64u) * VW;
    let b_ok6 = col0 + bi6 < p.n;
    let b_k6 = bo6;
    let b_off6 = b_base + bo6 * p.b_rs + (col0 + bi6) * p.b_cs;
    let b_st6 = bo6 * SB + bi6;
    var rb6: f16;
    var rbx6: f16;
    let be7 = tid + 896u;
    let bo7 = be7 / 64u;
    let bi7 = (be7 % 64u) * VW;
    let b_ok7 = col0 + bi7 < p.n;
    let b_k7 = bo7;
    let b_off7 = b_base + bo7 * p.b_rs + (col0 + bi7) * p.b_cs;
    let b_st7 = bo7 * SB + bi7;
    var rb7: f16;
    var rbx7: f16;
    let be8 = tid + 1024u;
    let bo8 = be8 / 64u;
    let bi8 = (be8 % 64u) * VW;
    let b_ok8 = col0 + bi8 < p.n;
    let b_k8 = bo8;
    let b_off8 = b_base + bo8 * p.b_rs + (col0 + bi8) * p.b_cs;
    let b_st8 = bo8 * SB + bi8;
    var rb8: f16;
    var rbx8: f16;
    let be9 = tid + 1152u;
    let bo9 = be9 / 64u;
    let bi9 = (be9 % 64u) * VW;
    let b_ok9 = col0 + bi9 < p.n;
    let b_k9 = bo9;
    let b_off9 = b_base + bo9 * p.b_rs + (col0 + bi9) * p.b_cs;
    let b_st9 = bo9 * SB + bi9;
    var rb9: f16;
    var rbx9: f16;
    let be10 = tid + 1280u;
    let bo10 = be10 / 64u;
    let bi10 = (be10 % 64u) * VW;
    let b_ok10 = col0 + bi10 < p.n;
    let b_k10 = bo10;
    let b_off10 = b_base + bo10 * p.b_rs + (col0 + bi10) * p.b_cs;
    let b_st10 = bo10 * SB + bi10;
    var rb10: f16;
    var rbx10: f16;
    let be11 = tid + 1408u;
    let bo11 = be11 / 64u;
    let bi11 = (be11 % 64u) * VW;
    let b_ok11 = col0 + bi11 < p.n;
    let b_k11 = bo11;
    let b_off11 = b_base + bo11 * p.b_rs + (col0 + bi11) * p.b_cs;
    let b_st11 = bo11 * SB + bi11;
    var rb11: f16;
    var rbx11: f16;
    let be12 = tid + 1536u;
    let bo12 = be12 / 64u;
    let bi12 = (be12 % 64u) * VW;
    let b_ok12 = col0 + bi12 < p.n;
    let b_k12 = bo12;
    let b_off12 = b_base + bo12 * p.b_rs + (col0 + bi12) * p.b_cs;
    let b_st12 = bo12 * SB + bi12;
    var rb12: f16;
    var rbx12: f16;
    let be13 = tid + 1664u;
    let bo13 = be13 / 64u;
    let bi13 = (be13 % 64u) * VW;
    let b_ok13 = col0 + bi13 < p.n;
    let b_k13 = bo13;
    let b_off13 = b_base + bo13 * p.b_rs + (col0 + bi13) * p.b_cs;
    let b_st13 = bo13 * SB + bi13;
    var rb13: f16;
    var rbx13: f16;
    let be14 = tid + 1792u;
    let bo14 = be14 / 64u;
    let bi14 = (be14 % 64u) * VW;
    let b_ok14 = col0 + bi14 < p.n;
    let b_k14 = bo14;
    let b_off14 = b_base + bo14 * p.b_rs + (col0 + bi14) * p.b_cs;
    let b_st14 = bo14 * SB + bi14;
    var rb14: f16;
    var rbx14: f16;
    let be15 = tid + 1920u;
    let bo15 = be15 / 64u;
    let bi15 = (be15 % 64u) * VW;
    let b_ok15 = col0 + bi15 < p.n;
    let b_k15 = bo15;
    let b_off15 = b_base + bo15 * p.b_rs + (col0 + bi15) * p.b_cs;
    let b_st15 = bo15 * SB + bi15;
    var rb15: f16;
    var rbx15: f16;

    var acc0_0 = coop_mat16x16<f32, C>();
    var acc0_1 = coop_mat16x16<f32, C>();
    var acc1_0 = coop_mat16x16<f32, C>();
    var acc1_1 = coop_mat16x16<f32, C>();

    let n_slices = select(0u, (k_end - k_begin + BK - 1u) / BK, k_end > k_begin);
    // Two register sets: a slice is fetched two slices before it is staged. Slices past the
    // end load as zeros, so the loop always runs whole pairs (an odd count adds one zero slice).
        ra0 = f16(0.0);
        if (a_ok0 && k_begin + a_k0 < k_end) {
            ra0 = a[(a_off0 + k_begin * p.a_cs)];
        }
        ra1 = f16(0.0);
        if (a_ok1 && k_begin + a_k1 < k_end) {
            ra1 = a[(a_off1 + k_begin * p.a_cs)];
        }
        ra2 = f16(0.0);
        if (a_ok2 && k_begin + a_k2 < k_end) {
            ra2 = a[(a_off2 + k_begin * p.a_cs)];
        }
        ra3 = f16(0.0);
        if (a_ok3 && k_begin + a_k3 < k_end) {
            ra3 = a[(a_off3 + k_begin * p.a_cs)];
        }
        ra4 = f16(0.0);
        if (a_ok4 && k_begin + a_k4 < k_end) {
            ra4 = a[(a_off4 + k_begin * p.a_cs)];
        }
        ra5 = f16(0.0);
        if (a_ok5 && k_begin + a_k5 < k_end) {
            ra5 = a[(a_off5 + k_begin * p.a_cs)];
        }
        ra6 = f16(0.0);
        if (a_ok6 && k_begin + a_k6 < k_end) {
            ra6 = a[(a_off6 + k_begin * p.a_cs)];
        }
        ra7 = f16(0.0);
        if (a_ok7 && k_begin + a_k7 < k_end) {
            ra7 = a[(a_off7 + k_begin * p.a_cs)];
        }
        ra8 = f16(0.0);
        if (a_ok8 && k_begin + a_k8 < k_end) {
            ra8 = a[(a_off8 + k_begin * p.a_cs)];
        }
        ra9 = f16(0.0);
        if (a_ok9 && k_begin + a_k9 < k_end) {
            ra9 = a[(a_off9 + k_begin * p.a_cs)];
        }
        ra10 = f16(0.0);
        if (a_ok10 && k_begin + a_k10 < k_end) {
            ra10 = a[(a_off10 + k_begin * p.a_cs)];
        }
        ra11 = f16(0.0);
        if (a_ok11 && k_begin + a_k11 < k_end) {
            ra11 = a[(a_off11 + k_begin * p.a_cs)];
        }
        ra12 = f16(0.0);
        if (a_ok12 && k_begin + a_k12 < k_end) {
            ra12 = a[(a_off12 + k_begin * p.a_cs)];
        }
        ra13 = f16(0.0);
        if (a_ok13 && k_begin + a_k13 < k_end) {
            ra13 = a[(a_off13 + k_begin * p.a_cs)];
        }
        ra14 = f16(0.0);
        if (a_ok14 && k_begin + a_k14 < k_end) {
            ra14 = a[(a_off14 + k_begin * p.a_cs)];
        }
        ra15 = f16(0.0);
        if (a_ok15 && k_begin + a_k15 < k_end) {
            ra15 = a[(a_off15 + k_begin * p.a_cs)];
        }
        rb0 = f16(0.0);
        if (b_ok0 && k_begin + b_k0 < k_end) {
            rb0 = b[(b_off0 + k_begin * p.b_rs)];
        }
        rb1 = f16(0.0);
        if (b_ok1 && k_begin + b_k1 < k_end) {
            rb1 = b[(b_off1 + k_begin * p.b_rs)];
        }
        rb2 = f16(0.0);
        if (b_ok2 && k_begin + b_k2 < k_end) {
            rb2 = b[(b_off2 + k_begin * p.b_rs)];
        }
        rb3 = f16(0.0);
        if (b_ok3 && k_begin + b_k3 < k_end) {
            rb3 = b[(b_off3 + k_begin * p.b_rs)];
        }
        rb4 = f16(0.0);
        if (b_ok4 && k_begin + b_k4 < k_end) {
            rb4 = b[(b_off4 + k_begin * p.b_rs)];
        }
        rb5 = f16(0.0);
        if (b_ok5 && k_begin + b_k5 < k_end) {
            rb5 = b[(b_off5 + k_begin * p.b_rs)];
        }
        rb6 = f16(0.0);
        if (b_ok6 && k_begin + b_k6 < k_end) {
            rb6 = b[(b_off6 + k_begin * p.b_rs)];
        }
        rb7 = f16(0.0);
        if (b_ok7 && k_begin + b_k7 < k_end) {
            rb7 = b[(b_off7 + k_begin * p.b_rs)];
        }
        rb8 = f16(0.0);
        if (b_ok8 && k_begin + b_k8 < k_end) {
            rb8 = b[(b_off8 + k_begin * p.b_rs)];
        }
        rb9 = f16(0.0);
        if (b_ok9 && k_begin + b_k9 < k_end) {
            rb9 = b[(b_off9 + k_begin * p.b_rs)];
        }
        rb10 = f16(0.0);
        if (b_ok10 && k_begin + b_k10 < k_end) {
            rb10 = b[(b_off10 + k_begin * p.b_rs)];
        }
        rb11 = f16(0.0);
        if (b_ok11 && k_begin + b_k11 < k_end) {
            rb11 = b[(b_off11 + k_begin * p.b_rs)];
        }
        rb12 = f16(0.0);
        if (b_ok12 && k_begin + b_k12 < k_end) {
            rb12 = b[(b_off12 + k_begin * p.b_rs)];
        }
        rb13 = f16(0.0);
        if (b_ok13 && k_begin + b_k13 < k_end) {
            rb13 = b[(b_off13 + k_begin * p.b_rs)];
        }
        rb14 = f16(0.0);
        if (b_ok14 && k_begin + b_k14 < k_end) {
            rb14 = b[(b_off14 + k_begin * p.b_rs)];
        }
        rb15 = f16(0.0);
        if (b_ok15 && k_begin + b_k15 < k_end) {
            rb15 = b[(b_off15 + k_begin * p.b_rs)];
        }
    let k_second = k_begin + BK;
        rax0 = f16(0.0);
        if (a_ok0 && k_second + a_k0 < k_end) {
            rax0 = a[(a_off0 + k_second * p.a_cs)];
        }
        rax1 = f16(0.0);
        if (a_ok1 && k_second + a_k1 < k_end) {
            rax1 = a[(a_off1 + k_second * p.a_cs)];
        }
        rax2 = f16(0.0);
        if (a_ok2 && k_second + a_k2 < k_end) {
            rax2 = a[(a_off2 + k_second * p.a_cs)];
        }
        rax3 = f16(0.0);
        if (a_ok3 && k_second + a_k3 < k_end) {
            rax3 = a[(a_off3 + k_second * p.a_cs)];
        }
        rax4 = f16(0.0);
        if (a_ok4 && k_second + a_k4 < k_end) {
            rax4 = a[(a_off4 + k_second * p.a_cs)];
        }
        rax5 = f16(0.0);
        if (a_ok5 && k_second + a_k5 < k_end) {
            rax5 = a[(a_off5 + k_second * p.a_cs)];
        }
        rax6 = f16(0.0);
        if (a_ok6 && k_second + a_k6 < k_end) {
            rax6 = a[(a_off6 + k_second * p.a_cs)];
        }
        rax7 = f16(0.0);
        if (a_ok7 && k_second + a_k7 < k_end) {
            rax7 = a[(a_off7 + k_second * p.a_cs)];
        }
        rax8 = f16(0.0);
        if (a_ok8 && k_second + a_k8 < k_end) {
            rax8 = a[(a_off8 + k_second * p.a_cs)];
        }
        rax9 = f16(0.0);
        if (a_ok9 && k_second + a_k9 < k_end) {
            rax9 = a[(a_off9 + k_second * p.a_cs)];
        }
        rax10 = f16(0.0);
        if (a_ok10 && k_second + a_k10 < k_end) {
            rax10 = a[(a_off10 + k_second * p.a_cs)];
        }
        rax11 = f16(0.0);
        if (a_ok11 && k_second + a_k11 < k_end) {
            rax11 = a[(a_off11 + k_second * p.a_cs)];
        }
        rax12 = f16(0.0);
        if (a_ok12 && k_second + a_k12 < k_end) {
            rax12 = a[(a_off12 + k_second * p.a_cs)];
        }
        rax13 = f16(0.0);
        if (a_ok13 && k_second + a_k13 < k_end) {
            rax13 = a[(a_off13 + k_second * p.a_cs)];
        }
        rax14 = f16(0.0);
        if (a_ok14 && k_second + a_k14 < k_end) {
            rax14 = a[(a_off14 + k_second * p.a_cs)];
        }
        rax15 = f16(0.0);
        if (a_ok15 && k_second + a_k15 < k_end) {
            rax15 = a[(a_off15 + k_second * p.a_cs)];
        }
        rbx0 = f16(0.0);
        if (b_ok0 && k_second + b_k0 < k_end) {
            rbx0 = b[(b_off0 + k_second * p.b_rs)];
        }
        rbx1 = f16(0.0);
        if (b_ok1 && k_second + b_k1 < k_end) {
            rbx1 = b[(b_off1 + k_second * p.b_rs)];
        }
        rbx2 = f16(0.0);
        if (b_ok2 && k_second + b_k2 < k_end) {
            rbx2 = b[(b_off2 + k_second * p.b_rs)];
        }
        rbx3 = f16(0.0);
        if (b_ok3 && k_second + b_k3 < k_end) {
            rbx3 = b[(b_off3 + k_second * p.b_rs)];
        }
        rbx4 = f16(0.0);
        if (b_ok4 && k_second + b_k4 < k_end) {
            rbx4 = b[(b_off4 + k_second * p.b_rs)];
        }
        rbx5 = f16(0.0);
        if (b_ok5 && k_second + b_k5 < k_end) {
            rbx5 = b[(b_off5 + k_second * p.b_rs)];
        }
        rbx6 = f16(0.0);
        if (b_ok6 && k_second + b_k6 < k_end) {
            rbx6 = b[(b_off6 + k_second * p.b_rs)];
        }
        rbx7 = f16(0.0);
        if (b_ok7 && k_second + b_k7 < k_end) {
            rbx7 = b[(b_off7 + k_second * p.b_rs)];
        }
        rbx8 = f16(0.0);
        if (b_ok8 && k_second + b_k8 < k_end) {
            rbx8 = b[(b_off8 + k_second * p.b_rs)];
        }
        rbx9 = f16(0.0);
        if (b_ok9 && k_second + b_k9 < k_end) {
            rbx9 = b[(b_off9 + k_second * p.b_rs)];
        }
        rbx10 = f16(0.0);
        if (b_ok10 && k_second + b_k10 < k_end) {
            rbx10 = b[(b_off10 + k_second * p.b_rs)];
        }
        rbx11 = f16(0.0);
        if (b_ok11 && k_second + b_k11 < k_end) {
            rbx11 = b[(b_off11 + k_second * p.b_rs)];
        }
        rbx12 = f16(0.0);
        if (b_ok12 && k_second + b_k12 < k_end) {
            rbx12 = b[(b_off12 + k_second * p.b_rs)];
        }
        rbx13 = f16(0.0);
        if (b_ok13 && k_second + b_k13 < k_end) {
            rbx13 = b[(b_off13 + k_second * p.b_rs)];
        }
        rbx14 = f16(0.0);
        if (b_ok14 && k_second + b_k14 < k_end) {
            rbx14 = b[(b_off14 + k_second * p.b_rs)];
        }
        rbx15 = f16(0.0);
        if (b_ok15 && k_second + b_k15 < k_end) {
            rbx15 = b[(b_off15 + k_second * p.b_rs)];
        }
        a_tile[(0u * A_STAGE + a_st0)] = f16(ra0);
        a_tile[(0u * A_STAGE + a_st1)] = f16(ra1);
        a_tile[(0u * A_STAGE + a_st2)] = f16(ra2);
        a_tile[(0u * A_STAGE + a_st3)] = f16(ra3);
        a_tile[(0u * A_STAGE + a_st4)] = f16(ra4);
        a_tile[(0u * A_STAGE + a_st5)] = f16(ra5);
        a_tile[(0u * A_STAGE + a_st6)] = f16(ra6);
        a_tile[(0u * A_STAGE + a_st7)] = f16(ra7);
        a_tile[(0u * A_STAGE + a_st8)] = f16(ra8);
        a_tile[(0u * A_STAGE + a_st9)] = f16(ra9);
        a_tile[(0u * A_STAGE + a_st10)] = f16(ra10);
        a_tile[(0u * A_STAGE + a_st11)] = f16(ra11);
        a_tile[(0u * A_STAGE + a_st12)] = f16(ra12);
        a_tile[(0u * A_STAGE + a_st13)] = f16(ra13);
        a_tile[(0u * A_STAGE + a_st14)] = f16(ra14);
        a_tile[(0u * A_STAGE + a_st15)] = f16(ra15);
        b_tile[(0u * B_STAGE + b_st0)] = f16(rb0);
        b_tile[(0u * B_STAGE + b_st1)] = f16(rb1);
        b_tile[(0u * B_STAGE + b_st2)] = f16(rb2);
        b_tile[(0u * B_STAGE + b_st3)] = f16(rb3);
        b_tile[(0u * B_STAGE + b_st4)] = f16(rb4);
        b_tile[(0u * B_STAGE + b_st5)] = f16(rb5);
        b_tile[(0u * B_STAGE + b_st6)] = f16(rb6);
        b_tile[(0u * B_STAGE + b_st7)] = f16(rb7);
        b_tile[(0u * B_STAGE + b_st8)] = f16(rb8);
        b_tile[(0u * B_STAGE + b_st9)] = f16(rb9);
        b_tile[(0u * B_STAGE + b_st10)] = f16(rb10);
        b_tile[(0u * B_STAGE + b_st11)] = f16(rb11);
        b_tile[(0u * B_STAGE + b_st12)] = f16(rb12);
        b_tile[(0u * B_STAGE + b_st13)] = f16(rb13);
        b_tile[(0u * B_STAGE + b_st14)] = f16(rb14);
        b_tile[(0u * B_STAGE + b_st15)] = f16(rb15);
    workgroupBarrier();
    for (var s = 0u; s < n_slices; s = s + 2u) {
        let k_even = k_begin + (s + 2u) * BK;
        ra0 = f16(0.0);
        if (a_ok0 && k_even + a_k0 < k_end) {
            ra0 = a[(a_off0 + k_even * p.a_cs)];
        }
        ra1 = f16(0.0);
        if (a_ok1 && k_even + a_k1 < k_end) {
            ra1 = a[(a_off1 + k_even * p.a_cs)];
        }
        ra2 = f16(0.0);
        if (a_ok2 && k_even + a_k2 < k_end) {
            ra2 = a[(a_off2 + k_even * p.a_cs)];
        }
        ra3 = f16(0.0);
        if (a_ok3 && k_even + a_k3 < k_end) {
            ra3 = a[(a_off3 + k_even * p.a_cs)];
        }
        ra4 = f16(0.0);
        if (a_ok4 && k_even + a_k4 < k_end) {
            ra4 = a[(a_off4 + k_even * p.a_cs)];
        }
        ra5 = f16(0.0);
        if (a_ok5 && k_even + a_k5 < k_end) {
            ra5 = a[(a_off5 + k_even * p.a_cs)];
        }
        ra6 = f16(0.0);
        if (a_ok6 && k_even + a_k6 < k_end) {
            ra6 = a[(a_off6 + k_even * p.a_cs)];
        }
        ra7 = f16(0.0);
        if (a_ok7 && k_even + a_k7 < k_end) {
            ra7 = a[(a_off7 + k_even * p.a_cs)];
        }
        ra8 = f16(0.0);
        if (a_ok8 && k_even + a_k8 < k_end) {
            ra8 = a[(a_off8 + k_even * p.a_cs)];
        }
        ra9 = f16(0.0);
        if (a_ok9 && k_even + a_k9 < k_end) {
            ra9 = a[(a_off9 + k_even * p.a_cs)];
        }
        ra10 = f16(0.0);
        if (a_ok10 && k_even + a_k10 < k_end) {
            ra10 = a[(a_off10 + k_even * p.a_cs)];
        }
        ra11 = f16(0.0);
        if (a_ok11 && k_even + a_k11 < k_end) {
            ra11 = a[(a_off11 + k_even * p.a_cs)];
        }
        ra12 = f16(0.0);
        if (a_ok12 && k_even + a_k12 < k_end) {
            ra12 = a[(a_off12 + k_even * p.a_cs)];
        }
        ra13 = f16(0.0);
        if (a_ok13 && k_even + a_k13 < k_end) {
            ra13 = a[(a_off13 + k_even * p.a_cs)];
        }
        ra14 = f16(0.0);
        if (a_ok14 && k_even + a_k14 < k_end) {
            ra14 = a[(a_off14 + k_even * p.a_cs)];
        }
        ra15 = f16(0.0);
        if (a_ok15 && k_even + a_k15 < k_end) {
            ra15 = a[(a_off15 + k_even * p.a_cs)];
        }
        rb0 = f16(0.0);
        if (b_ok0 && k_even + b_k0 < k_end) {
            rb0 = b[(b_off0 + k_even * p.b_rs)];
        }
        rb1 = f16(0.0);
        if (b_ok1 && k_even + b_k1 < k_end) {
            rb1 = b[(b_off1 + k_even * p.b_rs)];
        }
        rb2 = f16(0.0);
        if (b_ok2 && k_even + b_k2 < k_end) {
            rb2 = b[(b_off2 + k_even * p.b_rs)];
        }
        rb3 = f16(0.0);
        if (b_ok3 && k_even + b_k3 < k_end) {
            rb3 = b[(b_off3 + k_even * p.b_rs)];
        }
        rb4 = f16(0.0);
        if (b_ok4 && k_even + b_k4 < k_end) {
            rb4 = b[(b_off4 + k_even * p.b_rs)];
        }
        rb5 = f16(0.0);
        if (b_ok5 && k_even + b_k5 < k_end) {
            rb5 = b[(b_off5 + k_even * p.b_rs)];
        }
        rb6 = f16(0.0);
        if (b_ok6 && k_even + b_k6 < k_end) {
            rb6 = b[(b_off6 + k_even * p.b_rs)];
        }
        rb7 = f16(0.0);
        if (b_ok7 && k_even + b_k7 < k_end) {
            rb7 = b[(b_off7 + k_even * p.b_rs)];
        }
        rb8 = f16(0.0);
        if (b_ok8 && k_even + b_k8 < k_end) {
            rb8 = b[(b_off8 + k_even * p.b_rs)];
        }
        rb9 = f16(0.0);
        if (b_ok9 && k_even + b_k9 < k_end) {
            rb9 = b[(b_off9 + k_even * p.b_rs)];
        }
        rb10 = f16(0.0);
        if (b_ok10 && k_even + b_k10 < k_end) {
            rb10 = b[(b_off10 + k_even * p.b_rs)];
        }
        rb11 = f16(0.0);
        if (b_ok11 && k_even + b_k11 < k_end) {
            rb11 = b[(b_off11 + k_even * p.b_rs)];
        }
        rb12 = f16(0.0);
        if (b_ok12 && k_even + b_k12 < k_end) {
            rb12 = b[(b_off12 + k_even * p.b_rs)];
        }
        rb13 = f16(0.0);
        if (b_ok13 && k_even + b_k13 < k_end) {
            rb13 = b[(b_off13 + k_even * p.b_rs)];
        }
        rb14 = f16(0.0);
        if (b_ok14 && k_even + b_k14 < k_end) {
            rb14 = b[(b_off14 + k_even * p.b_rs)];
        }
        rb15 = f16(0.0);
        if (b_ok15 && k_even + b_k15 < k_end) {
            rb15 = b[(b_off15 + k_even * p.b_rs)];
        }
        let a_cur = 0u * A_STAGE + a_sg;
        let b_cur = 0u * B_STAGE + b_sg;
        let ea0_0 = a_cur + 0u;
        let fa0_0 = coopLoad<coop_mat16x16<f16, A>>(&a_tile[ea0_0], SA);
        let ea0_1 = a_cur + 16u;
        let fa0_1 = coopLoad<coop_mat16x16<f16, A>>(&a_tile[ea0_1], SA);
        let eb0_0 = b_cur + 0u;
        let fb0_0 = coopLoadT<coop_mat16x16<f16, B>>(&b_tile[eb0_0], SB);
        let eb0_1 = b_cur + 16u;
        let fb0_1 = coopLoadT<coop_mat16x16<f16, B>>(&b_tile[eb0_1], SB);
        acc0_0 = coopMultiplyAdd(fa0_0, fb0_0, acc0_0);
        acc0_1 = coopMultiplyAdd(fa0_0, fb0_1, acc0_1);
        acc1_0 = coopMultiplyAdd(fa0_1, fb0_0, acc1_0);
        acc1_1 = coopMultiplyAdd(fa0_1, fb0_1, acc1_1);
        let ea1_0 = a_cur + 1152u;
        let fa1_0 = coopLoad<coop_mat16x16<f16, A>>(&a_tile[ea1_0], SA);
        let ea1_1 = a_cur + 1168u;
        let fa1_1 = coopLoad<coop_mat16x16<f16, A>>(&a_tile[ea1_1], SA);
        let eb1_0 = b_cur + 1152u;
        let fb1_0 = coopLoadT<coop_mat16x16<f16, B>>(&b_tile[eb1_0], SB);
        let eb1_1 = b_cur + 1168u;
        let fb1_1 = coopLoadT<coop_mat16x16<f16, B>>(&b_tile[eb1_1], SB);
        acc0_0 = coopMultiplyAdd(fa1_0, fb1_0, acc0_0);
        acc0_1 = coopMultiplyAdd(fa1_0, fb1_1, acc0_1);
        acc1_0 = coopMultiplyAdd(fa1_1, fb1_0, acc1_0);
        acc1_1 = coopMultiplyAdd(fa1_1, fb1_1, acc1_1);
        a_tile[(1u * A_STAGE + a_st0)] = f16(rax0);
        a_tile[(1u * A_STAGE + a_st1)] = f16(rax1);
        a_tile[(1u * A_STAGE + a_st2)] = f16(rax2);
        a_tile[(1u * A_STAGE + a_st3)] = f16(rax3);
        a_tile[(1u * A_STAGE + a_st4)] = f16(rax4);
        a_tile[(1u * A_STAGE + a_st5)] = f16(rax5);
        a_tile[(1u * A_STAGE + a_st6)] = f16(rax6);
        a_tile[(1u * A_STAGE + a_st7)] = f16(rax7);
        a_tile[(1u * A_STAGE + a_st8)] = f16(rax8);
        a_tile[(1u * A_STAGE + a_st9)] = f16(rax9);
        a_tile[(1u * A_STAGE + a_st10)] = f16(rax10);
        a_tile[(1u * A_STAGE + a_st11)] = f16(rax11);
        a_tile[(1u * A_STAGE + a_st12)] = f16(rax12);
        a_tile[(1u * A_STAGE + a_st13)] = f16(rax13);
        a_tile[(1u * A_STAGE + a_st14)] = f16(rax14);
        a_tile[(1u * A_STAGE + a_st15)] = f16(rax15);
        b_tile[(1u * B_STAGE + b_st0)] = f16(rbx0);
        b_tile[(1u * B_STAGE + b_st1)] = f16(rbx1);
        b_tile[(1u * B_STAGE + b_st2)] = f16(rbx2);
        b_tile[(1u * B_STAGE + b_st3)] = f16(rbx3);
        b_tile[(1u * B_STAGE + b_st4)] = f16(rbx4);
        b_tile[(1u * B_STAGE + b_st5)] = f16(rbx5);
        b_tile[(1u * B_STAGE + b_st6)] = f16(rbx6);
        b_tile[(1u * B_STAGE + b_st7)] = f16(rbx7);
        b_tile[(1u * B_STAGE + b_st8)] = f16(rbx8);
        b_tile[(1u * B_STAGE + b_st9)] = f16(rbx9);
        b_tile[(1u * B_STAGE + b_st10)] = f16(rbx10);
        b_tile[(1u * B_STAGE + b_st11)] = f16(rbx11);
        b_tile[(1u * B_STAGE + b_st12)] = f16(rbx12);
        b_tile[(1u * B_STAGE + b_st13)] = f16(rbx13);
        b_tile[(1u * B_STAGE + b_st14)] = f16(rbx14);
        b_tile[(1u * B_STAGE + b_st15)] = f16(rbx15);
        workgroupBarrier();
        let k_odd = k_begin + (s + 3u) * BK;
        rax0 = f16(0.0);
        if (a_ok0 && k_odd + a_k0 < k_end) {
            rax0 = a[(a_off0 + k_odd * p.a_cs)];
        }
        rax1 = f16(0.0);
        if (a_ok1 && k_odd + a_k1 < k_end) {
            rax1 = a[(a_off1 + k_odd * p.a_cs)];
        }
        rax2 = f16(0.0);
        if (a_ok2 && k_odd + a_k2 < k_end) {
            rax2 = a[(a_off2 + k_odd * p.a_cs)];
        }
        rax3 = f16(0.0);
        if (a_ok3 && k_odd + a_k3 < k_end) {
            rax3 = a[(a_off3 + k_odd * p.a_cs)];
        }
        rax4 = f16(0.0);
        if (a_ok4 && k_odd + a_k4 < k_end) {
            rax4 = a[(a_off4 + k_odd * p.a_cs)];
        }
        rax5 = f16(0.0);
        if (a_ok5 && k_odd + a_k5 < k_end) {
            rax5 = a[(a_off5 + k_odd * p.a_cs)];
        }
        rax6 = f16(0.0);
        if (a_ok6 && k_odd + a_k6 < k_end) {
            rax6 = a[(a_off6 + k_odd * p.a_cs)];
        }
        rax7 = f16(0.0);
        if (a_ok7 && k_odd + a_k7 < k_end) {
            rax7 = a[(a_off7 + k_odd * p.a_cs)];
        }
        rax8 = f16(0.0);
        if (a_ok8 && k_odd + a_k8 < k_end) {
            rax8 = a[(a_off8 + k_odd * p.a_cs)];
        }
        rax9 = f16(0.0);
        if (a_ok9 && k_odd + a_k9 < k_end) {
            rax9 = a[(a_off9 + k_odd * p.a_cs)];
        }
        rax10 = f16(0.0);
        if (a_ok10 && k_odd + a_k10 < k_end) {
            rax10 = a[(a_off10 + k_odd * p.a_cs)];
        }
        rax11 = f16(0.0);
        if (a_ok11 && k_odd + a_k11 < k_end) {
            rax11 = a[(a_off11 + k_odd * p.a_cs)];
        }
        rax12 = f16(0.0);
        if (a_ok12 && k_odd + a_k12 < k_end) {
            rax12 = a[(a_off12 + k_odd * p.a_cs)];
        }
        rax13 = f16(0.0);
        if (a_ok13 && k_odd + a_k13 < k_end) {
            rax13 = a[(a_off13 + k_odd * p.a_cs)];
        }
        rax14 = f16(0.0);
        if (a_ok14 && k_odd + a_k14 < k_end) {
            rax14 = a[(a_off14 + k_odd * p.a_cs)];
        }
        rax15 = f16(0.0);
        if (a_ok15 && k_odd + a_k15 < k_end) {
            rax15 = a[(a_off15 + k_odd * p.a_cs)];
        }
        rbx0 = f16(0.0);
        if (b_ok0 && k_odd + b_k0 < k_end) {
            rbx0 = b[(b_off0 + k_odd * p.b_rs)];
        }
        rbx1 = f16(0.0);
        if (b_ok1 && k_odd + b_k1 < k_end) {
            rbx1 = b[(b_off1 + k_odd * p.b_rs)];
        }
        rbx2 = f16(0.0);
        if (b_ok2 && k_odd + b_k2 < k_end) {
            rbx2 = b[(b_off2 + k_odd * p.b_rs)];
        }
        rbx3 = f16(0.0);
        if (b_ok3 && k_odd + b_k3 < k_end) {
            rbx3 = b[(b_off3 + k_odd * p.b_rs)];
        }
        rbx4 = f16(0.0);
        if (b_ok4 && k_odd + b_k4 < k_end) {
            rbx4 = b[(b_off4 + k_odd * p.b_rs)];
        }
        rbx5 = f16(0.0);
        if (b_ok5 && k_odd + b_k5 < k_end) {
            rbx5 = b[(b_off5 + k_odd * p.b_rs)];
        }
        rbx6 = f16(0.0);
        if (b_ok6 && k_odd + b_k6 < k_end) {
            rbx6 = b[(b_off6 + k_odd * p.b_rs)];
        }
        rbx7 = f16(0.0);
        if (b_ok7 && k_odd + b_k7 < k_end) {
            rbx7 = b[(b_off7 + k_odd * p.b_rs)];
        }
        rbx8 = f16(0.0);
        if (b_ok8 && k_odd + b_k8 < k_end) {
            rbx8 = b[(b_off8 + k_odd * p.b_rs)];
        }
        rbx9 = f16(0.0);
        if (b_ok9 && k_odd + b_k9 < k_end) {
            rbx9 = b[(b_off9 + k_odd * p.b_rs)];
        }
        rbx10 = f16(0.0);
        if (b_ok10 && k_odd + b_k10 < k_end) {
            rbx10 = b[(b_off10 + k_odd * p.b_rs)];
        }
        rbx11 = f16(0.0);
        if (b_ok11 && k_odd + b_k11 < k_end) {
            rbx11 = b[(b_off11 + k_odd * p.b_rs)];
        }
        rbx12 = f16(0.0);
        if (b_ok12 && k_odd + b_k12 < k_end) {
            rbx12 = b[(b_off12 + k_odd * p.b_rs)];
        }
        rbx13 = f16(0.0);
        if (b_ok13 && k_odd + b_k13 < k_end) {
            rbx13 = b[(b_off13 + k_odd * p.b_rs)];
        }
        rbx14 = f16(0.0);
        if (b_ok14 && k_odd + b_k14 < k_end) {
            rbx14 = b[(b_off14 + k_odd * p.b_rs)];
        }
        rbx15 = f16(0.0);
        if (b_ok15 && k_odd + b_k15 < k_end) {
            rbx15 = b[(b_off15 + k_odd * p.b_rs)];
        }
        {
        let a_cur = 1u * A_STAGE + a_sg;
        let b_cur = 1u * B_STAGE + b_sg;
        let ea0_0 = a_cur + 0u;
        let fa0_0 = coopLoad<coop_mat16x16<f16, A>>(&a_tile[ea0_0], SA);
        let ea0_1 = a_cur + 16u;
        let fa0_1 = coopLoad<coop_mat16x16<f16, A>>(&a_tile[ea0_1], SA);
        let eb0_0 = b_cur + 0u;
        let fb0_0 = coopLoadT<coop_mat16x16<f16, B>>(&b_tile[eb0_0], SB);
        let eb0_1 = b_cur + 16u;
        let fb0_1 = coopLoadT<coop_mat16x16<f16, B>>(&b_tile[eb0_1], SB);
        acc0_0 = coopMultiplyAdd(fa0_0, fb0_0, acc0_0);
        acc0_1 = coopMultiplyAdd(fa0_0, fb0_1, acc0_1);
        acc1_0 = coopMultiplyAdd(fa0_1, fb0_0, acc1_0);
        acc1_1 = coopMultiplyAdd(fa0_1, fb0_1, acc1_1);
        let ea1_0 = a_cur + 1152u;
        let fa1_0 = coopLoad<coop_mat16x16<f16, A>>(&a_tile[ea1_0], SA);
        let ea1_1 = a_cur + 1168u;
        let fa1_1 = coopLoad<coop_mat16x16<f16, A>>(&a_tile[ea1_1], SA);
        let eb1_0 = b_cur + 1152u;
        let fb1_0 = coopLoadT<coop_mat16x16<f16, B>>(&b_tile[eb1_0], SB);
        let eb1_1 = b_cur + 1168u;
        let fb1_1 = coopLoadT<coop_mat16x16<f16, B>>(&b_tile[eb1_1], SB);
        acc0_0 = coopMultiplyAdd(fa1_0, fb1_0, acc0_0);
        acc0_1 = coopMultiplyAdd(fa1_0, fb1_1, acc0_1);
        acc1_0 = coopMultiplyAdd(fa1_1, fb1_0, acc1_0);
        acc1_1 = coopMultiplyAdd(fa1_1, fb1_1, acc1_1);
        }
        a_tile[(0u * A_STAGE + a_st0)] = f16(ra0);
        a_tile[(0u * A_STAGE + a_st1)] = f16(ra1);
        a_tile[(0u * A_STAGE + a_st2)] = f16(ra2);
        a_tile[(0u * A_STAGE + a_st3)] = f16(ra3);
        a_tile[(0u * A_STAGE + a_st4)] = f16(ra4);
        a_tile[(0u * A_STAGE + a_st5)] = f16(ra5);
        a_tile[(0u * A_STAGE + a_st6)] = f16(ra6);
        a_tile[(0u * A_STAGE + a_st7)] = f16(ra7);
        a_tile[(0u * A_STAGE + a_st8)] = f16(ra8);
        a_tile[(0u * A_STAGE + a_st9)] = f16(ra9);
        a_tile[(0u * A_STAGE + a_st10)] = f16(ra10);
        a_tile[(0u * A_STAGE + a_st11)] = f16(ra11);
        a_tile[(0u * A_STAGE + a_st12)] = f16(ra12);
        a_tile[(0u * A_STAGE + a_st13)] = f16(ra13);
        a_tile[(0u * A_STAGE + a_st14)] = f16(ra14);
        a_tile[(0u * A_STAGE + a_st15)] = f16(ra15);
        b_tile[(0u * B_STAGE + b_st0)] = f16(rb0);
        b_tile[(0u * B_STAGE + b_st1)] = f16(rb1);
        b_tile[(0u * B_STAGE + b_st2)] = f16(rb2);
        b_tile[(0u * B_STAGE + b_st3)] = f16(rb3);
        b_tile[(0u * B_STAGE + b_st4)] = f16(rb4);
        b_tile[(0u * B_STAGE + b_st5)] = f16(rb5);
        b_tile[(0u * B_STAGE + b_st6)] = f16(rb6);
        b_tile[(0u * B_STAGE + b_st7)] = f16(rb7);
        b_tile[(0u * B_STAGE + b_st8)] = f16(rb8);
        b_tile[(0u * B_STAGE + b_st9)] = f16(rb9);
        b_tile[(0u * B_STAGE + b_st10)] = f16(rb10);
        b_tile[(0u * B_STAGE + b_st11)] = f16(rb11);
        b_tile[(0u * B_STAGE + b_st12)] = f16(rb12);
        b_tile[(0u * B_STAGE + b_st13)] = f16(rb13);
        b_tile[(0u * B_STAGE + b_st14)] = f16(rb14);
        b_tile[(0u * B_STAGE + b_st15)] = f16(rb15);
        workgroupBarrier();
    }

    let c_base = (split * p.batch_count + batch) * p.m * p.n;
    let bias_base = 0u;
    let c_sg = sg * 256u;
    // One fragment per iteration, each stored through the subgroup's scratch: the write code
    // exists once (unrolled per fragment, the driver compiled it 4 times, which made
    // the pipeline about a third slower to create; issue 15).
    for (var f = 0u; f < 4u; f = f + 1u) {
        let f_row = row0 + wm0 + (f / 2u) * 16u;
        let f_col = col0 + wn0 + (f % 2u) * 16u;
        switch f {
            case 0u: {
                coopStoreT(acc0_0, &c_tile[c_sg], 16u);
            }
            case 1u: {
                coopStoreT(acc0_1, &c_tile[c_sg], 16u);
            }
            case 2u: {
                coopStoreT(acc1_0, &c_tile[c_sg], 16u);
            }
            default: {
                coopStoreT(acc1_1, &c_tile[c_sg], 16u);
            }
        }        subgroupBarrier();
        if (live) {
            write_frag(c_sg, lane, f_row, f_col, c_base, bias_base);
        }
        subgroupBarrier();
    }
}
