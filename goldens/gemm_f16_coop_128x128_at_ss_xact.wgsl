enable f16;
enable wgpu_cooperative_matrix;

@group(0) @binding(0) var<storage, read> a: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> b: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> bias: array<f16>;
@group(0) @binding(3) var<storage, read_write> out: array<f16>;
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

const BK: u32 = 32u;
const VW: u32 = 8u;
// f16 elements between consecutive staged rows, and per stage, of A and B.
const SA: u32 = 136u;
const SB: u32 = 136u;
const A_STAGE: u32 = 4352u;
const B_STAGE: u32 = 4352u;

var<workgroup> a_tile: array<array<f16, 8>, 1088>;
var<workgroup> b_tile: array<array<f16, 8>, 1088>;
var<workgroup> c_tile: array<f32, 2048>;


// Writes the fragment a subgroup left in its scratch (row-major 16×16 at c0) to rows row.. and
// columns col.. of the output; each invocation writes 8 of its elements.
fn write_frag(c0: u32, lane: u32, row: u32, col: u32, c_base: u32, bias_base: u32) {
    for (var q = 0u; q < 8u; q = q + 1u) {
        let e = lane + q * 32u;
        let r = row + e / 16u;
        let c = col + e % 16u;
        if (r < p.m && c < p.n) {
            let v = c_tile[c0 + e];
            out[c_base + r * p.c_rs + c * p.c_cs] = f16(epilogue(v, bias_base + r * p.bias_rs + c * p.bias_cs));
        }
    }
}

@compute @workgroup_size(256, 1, 1)
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
    let row0 = tile_m * 128u;
    let col0 = tile_n * 128u;
    let a_base = batch_offset(batch, p.a_bs);
    let b_base = batch_offset(batch, p.b_bs);
    let k_begin = split * p.k_chunk;
    let k_end = min(p.k, k_begin + p.k_chunk);
    let sg = tid / 32u;
    let lane = tid % 32u;
    let wm0 = (sg / 4u) * 64u;
    let wn0 = (sg % 4u) * 32u;
    let a_sg = wm0;
    let b_sg = wn0;

    // The chunks this invocation loads, independent of K: validity along M/N, the global
    // offset at k = 0, the K coordinate within the slice, and the staged position.
    let ae0 = tid + 0u;
    let ao0 = ae0 / 16u;
    let ai0 = (ae0 % 16u) * VW;
    let a_ok0 = row0 + ai0 < p.m;
    let a_k0 = ao0;
    let a_off0 = a_base + (row0 + ai0) * p.a_rs + ao0 * p.a_cs;
    let a_st0 = ao0 * SA + ai0;
    var ra0: vec4<u32>;
    var rax0: vec4<u32>;
    let ae1 = tid + 256u;
    let ao1 = ae1 / 16u;
    let ai1 = (ae1 % 16u) * VW;
    let a_ok1 = row0 + ai1 < p.m;
    let a_k1 = ao1;
    let a_off1 = a_base + (row0 + ai1) * p.a_rs + ao1 * p.a_cs;
    let a_st1 = ao1 * SA + ai1;
    var ra1: vec4<u32>;
    var rax1: vec4<u32>;
    let be0 = tid + 0u;
    let bo0 = be0 / 16u;
    let bi0 = (be0 % 16u) * VW;
    let b_ok0 = col0 + bi0 < p.n;
    let b_k0 = bo0;
    let b_off0 = b_base + bo0 * p.b_rs + (col0 + bi0) * p.b_cs;
    let b_st0 = bo0 * SB + bi0;
    var rb0: vec4<u32>;
    var rbx0: vec4<u32>;
    let be1 = tid + 256u;
    let bo1 = be1 / 16u;
    let bi1 = (be1 % 16u) * VW;
    let b_ok1 = col0 + bi1 < p.n;
    let b_k1 = bo1;
    let b_off1 = b_base + bo1 * p.b_rs + (col0 + bi1) * p.b_cs;
    let b_st1 = bo1 * SB + bi1;
    var rb1: vec4<u32>;
    var rbx1: vec4<u32>;

    var acc0_0 = coop_mat16x16<f32, C>();
    var acc0_1 = coop_mat16x16<f32, C>();
    var acc1_0 = coop_mat16x16<f32, C>();
    var acc1_1 = coop_mat16x16<f32, C>();
    var acc2_0 = coop_mat16x16<f32, C>();
    var acc2_1 = coop_mat16x16<f32, C>();
    var acc3_0 = coop_mat16x16<f32, C>();
    var acc3_1 = coop_mat16x16<f32, C>();

    let n_slices = select(0u, (k_end - k_begin + BK - 1u) / BK, k_end > k_begin);
    // Two register sets: a slice is fetched two slices before it is staged. Slices past the
    // end load as zeros, so the loop always runs whole pairs (an odd count adds one zero slice).
        ra0 = vec4<u32>();
        if (a_ok0 && k_begin + a_k0 < k_end) {
            ra0 = a[(a_off0 + k_begin * p.a_cs) / VW];
        }
        ra1 = vec4<u32>();
        if (a_ok1 && k_begin + a_k1 < k_end) {
            ra1 = a[(a_off1 + k_begin * p.a_cs) / VW];
        }
        rb0 = vec4<u32>();
        if (b_ok0 && k_begin + b_k0 < k_end) {
            rb0 = b[(b_off0 + k_begin * p.b_rs) / VW];
        }
        rb1 = vec4<u32>();
        if (b_ok1 && k_begin + b_k1 < k_end) {
            rb1 = b[(b_off1 + k_begin * p.b_rs) / VW];
        }
    let k_second = k_begin + BK;
        rax0 = vec4<u32>();
        if (a_ok0 && k_second + a_k0 < k_end) {
            rax0 = a[(a_off0 + k_second * p.a_cs) / VW];
        }
        rax1 = vec4<u32>();
        if (a_ok1 && k_second + a_k1 < k_end) {
            rax1 = a[(a_off1 + k_second * p.a_cs) / VW];
        }
        rbx0 = vec4<u32>();
        if (b_ok0 && k_second + b_k0 < k_end) {
            rbx0 = b[(b_off0 + k_second * p.b_rs) / VW];
        }
        rbx1 = vec4<u32>();
        if (b_ok1 && k_second + b_k1 < k_end) {
            rbx1 = b[(b_off1 + k_second * p.b_rs) / VW];
        }
        a_tile[(0u * A_STAGE + a_st0) / VW] = f16x8(ra0);
        a_tile[(0u * A_STAGE + a_st1) / VW] = f16x8(ra1);
        b_tile[(0u * B_STAGE + b_st0) / VW] = f16x8(rb0);
        b_tile[(0u * B_STAGE + b_st1) / VW] = f16x8(rb1);
    workgroupBarrier();
    for (var s = 0u; s < n_slices; s = s + 2u) {
        let k_even = k_begin + (s + 2u) * BK;
        ra0 = vec4<u32>();
        if (a_ok0 && k_even + a_k0 < k_end) {
            ra0 = a[(a_off0 + k_even * p.a_cs) / VW];
        }
        ra1 = vec4<u32>();
        if (a_ok1 && k_even + a_k1 < k_end) {
            ra1 = a[(a_off1 + k_even * p.a_cs) / VW];
        }
        rb0 = vec4<u32>();
        if (b_ok0 && k_even + b_k0 < k_end) {
            rb0 = b[(b_off0 + k_even * p.b_rs) / VW];
        }
        rb1 = vec4<u32>();
        if (b_ok1 && k_even + b_k1 < k_end) {
            rb1 = b[(b_off1 + k_even * p.b_rs) / VW];
        }
        let a_cur = 0u * A_STAGE + a_sg;
        let b_cur = 0u * B_STAGE + b_sg;
        let ea0_0 = a_cur + 0u;
        let ea0_0c = ea0_0 / VW;
        let fa0_0 = coopLoad<coop_mat16x16<f16, A>>(&a_tile[ea0_0c][0], SA);
        let ea0_1 = a_cur + 16u;
        let ea0_1c = ea0_1 / VW;
        let fa0_1 = coopLoad<coop_mat16x16<f16, A>>(&a_tile[ea0_1c][0], SA);
        let ea0_2 = a_cur + 32u;
        let ea0_2c = ea0_2 / VW;
        let fa0_2 = coopLoad<coop_mat16x16<f16, A>>(&a_tile[ea0_2c][0], SA);
        let ea0_3 = a_cur + 48u;
        let ea0_3c = ea0_3 / VW;
        let fa0_3 = coopLoad<coop_mat16x16<f16, A>>(&a_tile[ea0_3c][0], SA);
        let eb0_0 = b_cur + 0u;
        let eb0_0c = eb0_0 / VW;
        let fb0_0 = coopLoadT<coop_mat16x16<f16, B>>(&b_tile[eb0_0c][0], SB);
        let eb0_1 = b_cur + 16u;
        let eb0_1c = eb0_1 / VW;
        let fb0_1 = coopLoadT<coop_mat16x16<f16, B>>(&b_tile[eb0_1c][0], SB);
        acc0_0 = coopMultiplyAdd(fa0_0, fb0_0, acc0_0);
        acc0_1 = coopMultiplyAdd(fa0_0, fb0_1, acc0_1);
        acc1_0 = coopMultiplyAdd(fa0_1, fb0_0, acc1_0);
        acc1_1 = coopMultiplyAdd(fa0_1, fb0_1, acc1_1);
        acc2_0 = coopMultiplyAdd(fa0_2, fb0_0, acc2_0);
        acc2_1 = coopMultiplyAdd(fa0_2, fb0_1, acc2_1);
        acc3_0 = coopMultiplyAdd(fa0_3, fb0_0, acc3_0);
        acc3_1 = coopMultiplyAdd(fa0_3, fb0_1, acc3_1);
        let ea1_0 = a_cur + 2176u;
        let ea1_0c = ea1_0 / VW;
        let fa1_0 = coopLoad<coop_mat16x16<f16, A>>(&a_tile[ea1_0c][0], SA);
        let ea1_1 = a_cur + 2192u;
        let ea1_1c = ea1_1 / VW;
        let fa1_1 = coopLoad<coop_mat16x16<f16, A>>(&a_tile[ea1_1c][0], SA);
        let ea1_2 = a_cur + 2208u;
        let ea1_2c = ea1_2 / VW;
        let fa1_2 = coopLoad<coop_mat16x16<f16, A>>(&a_tile[ea1_2c][0], SA);
        let ea1_3 = a_cur + 2224u;
        let ea1_3c = ea1_3 / VW;
        let fa1_3 = coopLoad<coop_mat16x16<f16, A>>(&a_tile[ea1_3c][0], SA);
        let eb1_0 = b_cur + 2176u;
        let eb1_0c = eb1_0 / VW;
        let fb1_0 = coopLoadT<coop_mat16x16<f16, B>>(&b_tile[eb1_0c][0], SB);
        let eb1_1 = b_cur + 2192u;
        let eb1_1c = eb1_1 / VW;
        let fb1_1 = coopLoadT<coop_mat16x16<f16, B>>(&b_tile[eb1_1c][0], SB);
        acc0_0 = coopMultiplyAdd(fa1_0, fb1_0, acc0_0);
        acc0_1 = coopMultiplyAdd(fa1_0, fb1_1, acc0_1);
        acc1_0 = coopMultiplyAdd(fa1_1, fb1_0, acc1_0);
        acc1_1 = coopMultiplyAdd(fa1_1, fb1_1, acc1_1);
        acc2_0 = coopMultiplyAdd(fa1_2, fb1_0, acc2_0);
        acc2_1 = coopMultiplyAdd(fa1_2, fb1_1, acc2_1);
        acc3_0 = coopMultiplyAdd(fa1_3, fb1_0, acc3_0);
        acc3_1 = coopMultiplyAdd(fa1_3, fb1_1, acc3_1);
        a_tile[(1u * A_STAGE + a_st0) / VW] = f16x8(rax0);
        a_tile[(1u * A_STAGE + a_st1) / VW] = f16x8(rax1);
        b_tile[(1u * B_STAGE + b_st0) / VW] = f16x8(rbx0);
        b_tile[(1u * B_STAGE + b_st1) / VW] = f16x8(rbx1);
        workgroupBarrier();
        let k_odd = k_begin + (s + 3u) * BK;
        rax0 = vec4<u32>();
        if (a_ok0 && k_odd + a_k0 < k_end) {
            rax0 = a[(a_off0 + k_odd * p.a_cs) / VW];
        }
        rax1 = vec4<u32>();
        if (a_ok1 && k_odd + a_k1 < k_end) {
            rax1 = a[(a_off1 + k_odd * p.a_cs) / VW];
        }
        rbx0 = vec4<u32>();
        if (b_ok0 && k_odd + b_k0 < k_end) {
            rbx0 = b[(b_off0 + k_odd * p.b_rs) / VW];
        }
        rbx1 = vec4<u32>();
        if (b_ok1 && k_odd + b_k1 < k_end) {
            rbx1 = b[(b_off1 + k_odd * p.b_rs) / VW];
        }
        {
        let a_cur = 1u * A_STAGE + a_sg;
        let b_cur = 1u * B_STAGE + b_sg;
        let ea0_0 = a_cur + 0u;
        let ea0_0c = ea0_0 / VW;
        let fa0_0 = coopLoad<coop_mat16x16<f16, A>>(&a_tile[ea0_0c][0], SA);
        let ea0_1 = a_cur + 16u;
        let ea0_1c = ea0_1 / VW;
        let fa0_1 = coopLoad<coop_mat16x16<f16, A>>(&a_tile[ea0_1c][0], SA);
        let ea0_2 = a_cur + 32u;
        let ea0_2c = ea0_2 / VW;
        let fa0_2 = coopLoad<coop_mat16x16<f16, A>>(&a_tile[ea0_2c][0], SA);
        let ea0_3 = a_cur + 48u;
        let ea0_3c = ea0_3 / VW;
        let fa0_3 = coopLoad<coop_mat16x16<f16, A>>(&a_tile[ea0_3c][0], SA);
        let eb0_0 = b_cur + 0u;
        let eb0_0c = eb0_0 / VW;
        let fb0_0 = coopLoadT<coop_mat16x16<f16, B>>(&b_tile[eb0_0c][0], SB);
        let eb0_1 = b_cur + 16u;
        let eb0_1c = eb0_1 / VW;
        let fb0_1 = coopLoadT<coop_mat16x16<f16, B>>(&b_tile[eb0_1c][0], SB);
        acc0_0 = coopMultiplyAdd(fa0_0, fb0_0, acc0_0);
        acc0_1 = coopMultiplyAdd(fa0_0, fb0_1, acc0_1);
        acc1_0 = coopMultiplyAdd(fa0_1, fb0_0, acc1_0);
        acc1_1 = coopMultiplyAdd(fa0_1, fb0_1, acc1_1);
        acc2_0 = coopMultiplyAdd(fa0_2, fb0_0, acc2_0);
        acc2_1 = coopMultiplyAdd(fa0_2, fb0_1, acc2_1);
        acc3_0 = coopMultiplyAdd(fa0_3, fb0_0, acc3_0);
        acc3_1 = coopMultiplyAdd(fa0_3, fb0_1, acc3_1);
        let ea1_0 = a_cur + 2176u;
        let ea1_0c = ea1_0 / VW;
        let fa1_0 = coopLoad<coop_mat16x16<f16, A>>(&a_tile[ea1_0c][0], SA);
        let ea1_1 = a_cur + 2192u;
        let ea1_1c = ea1_1 / VW;
        let fa1_1 = coopLoad<coop_mat16x16<f16, A>>(&a_tile[ea1_1c][0], SA);
        let ea1_2 = a_cur + 2208u;
        let ea1_2c = ea1_2 / VW;
        let fa1_2 = coopLoad<coop_mat16x16<f16, A>>(&a_tile[ea1_2c][0], SA);
        let ea1_3 = a_cur + 2224u;
        let ea1_3c = ea1_3 / VW;
        let fa1_3 = coopLoad<coop_mat16x16<f16, A>>(&a_tile[ea1_3c][0], SA);
        let eb1_0 = b_cur + 2176u;
        let eb1_0c = eb1_0 / VW;
        let fb1_0 = coopLoadT<coop_mat16x16<f16, B>>(&b_tile[eb1_0c][0], SB);
        let eb1_1 = b_cur + 2192u;
        let eb1_1c = eb1_1 / VW;
        let fb1_1 = coopLoadT<coop_mat16x16<f16, B>>(&b_tile[eb1_1c][0], SB);
        acc0_0 = coopMultiplyAdd(fa1_0, fb1_0, acc0_0);
        acc0_1 = coopMultiplyAdd(fa1_0, fb1_1, acc0_1);
        acc1_0 = coopMultiplyAdd(fa1_1, fb1_0, acc1_0);
        acc1_1 = coopMultiplyAdd(fa1_1, fb1_1, acc1_1);
        acc2_0 = coopMultiplyAdd(fa1_2, fb1_0, acc2_0);
        acc2_1 = coopMultiplyAdd(fa1_2, fb1_1, acc2_1);
        acc3_0 = coopMultiplyAdd(fa1_3, fb1_0, acc3_0);
        acc3_1 = coopMultiplyAdd(fa1_3, fb1_1, acc3_1);
        }
        a_tile[(0u * A_STAGE + a_st0) / VW] = f16x8(ra0);
        a_tile[(0u * A_STAGE + a_st1) / VW] = f16x8(ra1);
        b_tile[(0u * B_STAGE + b_st0) / VW] = f16x8(rb0);
        b_tile[(0u * B_STAGE + b_st1) / VW] = f16x8(rb1);
        workgroupBarrier();
    }

    let c_base = batch_offset(batch, p.c_bs);
    let bias_base = batch_offset(batch, p.bias_bs);
    let c_sg = sg * 256u;
    // One fragment per iteration, each stored through the subgroup's scratch: the write code
    // exists once (unrolled per fragment, the driver compiled it 8 times, which made
    // the pipeline about a third slower to create; issue 15).
    for (var f = 0u; f < 8u; f = f + 1u) {
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
            case 3u: {
                coopStoreT(acc1_1, &c_tile[c_sg], 16u);
            }
            case 4u: {
                coopStoreT(acc2_0, &c_tile[c_sg], 16u);
            }
            case 5u: {
                coopStoreT(acc2_1, &c_tile[c_sg], 16u);
            }
            case 6u: {
                coopStoreT(acc3_0, &c_tile[c_sg], 16u);
            }
            default: {
                coopStoreT(acc3_1, &c_tile[c_sg], 16u);
            }
        }        subgroupBarrier();
        if (live) {
            write_frag(c_sg, lane, f_row, f_col, c_base, bias_base);
        }
        subgroupBarrier();
    }
}
