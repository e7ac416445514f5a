enable f16;
enable wgpu_cooperative_matrix;

@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> b: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;
// The largest magnitudes, as f32 bits, of each workgroup's share of A and then of B (the max
// pass before this product; p.flags >> 16 workgroups per operand).
@group(0) @binding(5) var<storage, read> maxima: array<u32>;

// Power-of-two exponents that bring each operand's largest finite magnitude into [2^14, 2^15)
// (0 for an operand of zeros), and the factors 2^shift. Reduced from the maxima once per
// workgroup; the epilogue undoes them.
var<private> shift_a: i32;
var<private> shift_b: i32;
var<private> scale_a: f32;
var<private> scale_b: f32;

fn split_shift(bits: u32) -> i32 {
    let e = i32((bits >> 23u) & 255u);
    if (bits == 0u || e == 255) {
        return 0;
    }
    return clamp(141 - e, -126, 126);
}

// The high part of four scaled elements (their leading 11 significant bits, truncated: what
// f16 holds exactly) or the low part (the exact rest, which staging rounds to f16). Integer
// masking, not f32→f16→f32 conversions, which a driver may fold away. (Rounding the high part
// to nearest measured 3% slower on the H200 for 8–10% less error: the tensor cores' own
// accumulation dominates.)
// An infinity's hi part is f16's largest finite value of its sign and its lo part the infinity
// (finite values scale below 2^15, which the clamp leaves alone; a NaN stays NaN in the lo part).
// The infinity then meets only the other operand's hi part, nonzero for every value f16 holds
// once scaled, and gives ±inf as in f32, never 0·inf or inf − inf (the NaN a lo part of 0 or of
// the other sign would make); the hi parts' products stay finite. A nonzero value below f16's
// least normal once scaled (2^-28 of its operand's largest magnitude and less) has no hi part:
// there an infinity gives NaN where f32 gives ±inf (docs/RELIABILITY.md §8). Marking such
// operands and forcing their parts nonzero made the common case 10% slower on an H100.
fn split_part(x: vec4<f32>, scale: f32, low: bool) -> vec4<f32> {
    let xs = x * scale;
    let bits = bitcast<vec4<f32>>(bitcast<vec4<u32>>(xs) & vec4<u32>(0xffffe000u));
    let hi = clamp(bits, vec4<f32>(-65504.0), vec4<f32>(65504.0));
    if (low) {
        return xs - hi;
    }
    return hi;
}

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
const VW: u32 = 4u;
// f16 elements between consecutive staged rows, and per stage, of A and B.
const SA: u32 = 136u;
const SB: u32 = 40u;
const A_STAGE: u32 = 4352u;
const B_STAGE: u32 = 5120u;

var<workgroup> a_tile: array<array<f16, 4>, 2176>;
var<workgroup> b_tile: array<array<f16, 4>, 2560>;
var<workgroup> c_tile: array<f32, 2048>;

// The largest of the max pass's per-workgroup maxima of A and of B (p.flags >> 16 of each): a
// strided share per invocation, then a tree through the epilogue's scratch, unused until the
// epilogue (which the K loop's barriers keep after every invocation's read here). Compared as
// u32 bits (finite magnitudes order alike; no denormal is flushed).
fn operand_maxima(tid: u32) -> vec2<u32> {
    let groups = p.flags >> 16u;
    var m = vec2<u32>();
    for (var g = tid; g < groups; g = g + 256u) {
        m = max(m, vec2<u32>(maxima[g], maxima[groups + g]));
    }
    c_tile[tid] = bitcast<f32>(m.x);
    c_tile[256u + tid] = bitcast<f32>(m.y);
    workgroupBarrier();
    for (var half = 128u; half > 0u; half = half / 2u) {
        if (tid < half) {
            let a = max(bitcast<u32>(c_tile[tid]), bitcast<u32>(c_tile[tid + half]));
            let b = max(bitcast<u32>(c_tile[256u + tid]), bitcast<u32>(c_tile[256u + tid + half]));
            c_tile[tid] = bitcast<f32>(a);
            c_tile[256u + tid] = bitcast<f32>(b);
        }
        workgroupBarrier();
    }
    return vec2<u32>(bitcast<u32>(c_tile[0]), bitcast<u32>(c_tile[256u]));
}


// Writes the fragment a subgroup left in its scratch (row-major 16×16 at c0) to rows row.. and
// columns col.. of the output; each invocation writes 8 of its elements.
fn write_frag(c0: u32, lane: u32, row: u32, col: u32, c_base: u32, bias_base: u32) {
    for (var q = 0u; q < 8u; q = q + 1u) {
        let e = lane + q * 32u;
        let r = row + e / 16u;
        let c = col + e % 16u;
        if (r < p.m && c < p.n) {
            let v = ldexp(ldexp(c_tile[c0 + e], -shift_a), -shift_b);
            out[c_base + r * p.c_rs + c * p.c_cs] = f32(epilogue(v, bias_base + r * p.bias_rs + c * p.bias_cs));
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
    // Three segments of K, each rounded up to whole slices.
    let k_seg = (p.k + BK - 1u) / BK * BK;
    let k_end = min(3u * k_seg, k_begin + p.k_chunk);
    let largest = operand_maxima(tid);
    shift_a = split_shift(largest.x);
    shift_b = split_shift(largest.y);
    scale_a = ldexp(1.0, shift_a);
    scale_b = ldexp(1.0, shift_b);
    let sg = tid / 32u;
    let lane = tid % 32u;
    let wm0 = (sg / 4u) * 64u;
    let wn0 = (sg % 4u) * 32u;
    let a_sg = wm0;
    let b_sg = wn0 * SB;

    // The chunks this invocation loads, independent of K: validity along M/N, the global
    // offset at k = 0, the K coordinate within the slice, and the staged position.
    let ae0 = tid + 0u;
    let ao0 = ae0 / 32u;
    let ai0 = (ae0 % 32u) * VW;
    let a_ok0 = row0 + ai0 < p.m;
    let a_k0 = ao0;
    let a_off0 = a_base + (row0 + ai0) * p.a_rs + ao0 * p.a_cs;
    let a_st0 = ao0 * SA + ai0;
    var ra0: vec4<f32>;
    var rax0: vec4<f32>;
    let ae1 = tid + 256u;
    let ao1 = ae1 / 32u;
    let ai1 = (ae1 % 32u) * VW;
    let a_ok1 = row0 + ai1 < p.m;
    let a_k1 = ao1;
    let a_off1 = a_base + (row0 + ai1) * p.a_rs + ao1 * p.a_cs;
    let a_st1 = ao1 * SA + ai1;
    var ra1: vec4<f32>;
    var rax1: vec4<f32>;
    let ae2 = tid + 512u;
    let ao2 = ae2 / 32u;
    let ai2 = (ae2 % 32u) * VW;
    let a_ok2 = row0 + ai2 < p.m;
    let a_k2 = ao2;
    let a_off2 = a_base + (row0 + ai2) * p.a_rs + ao2 * p.a_cs;
    let a_st2 = ao2 * SA + ai2;
    var ra2: vec4<f32>;
    var rax2: vec4<f32>;
    let ae3 = tid + 768u;
    let ao3 = ae3 / 32u;
    let ai3 = (ae3 % 32u) * VW;
    let a_ok3 = row0 + ai3 < p.m;
    let a_k3 = ao3;
    let a_off3 = a_base + (row0 + ai3) * p.a_rs + ao3 * p.a_cs;
    let a_st3 = ao3 * SA + ai3;
    var ra3: vec4<f32>;
    var rax3: vec4<f32>;
    let be0 = tid + 0u;
    let bo0 = be0 / 8u;
    let bi0 = (be0 % 8u) * VW;
    let b_ok0 = col0 + bo0 < p.n;
    let b_k0 = bi0;
    let b_off0 = b_base + bi0 * p.b_rs + (col0 + bo0) * p.b_cs;
    let b_st0 = bo0 * SB + bi0;
    var rb0: vec4<f32>;
    var rbx0: vec4<f32>;
    let be1 = tid + 256u;
    let bo1 = be1 / 8u;
    let bi1 = (be1 % 8u) * VW;
    let b_ok1 = col0 + bo1 < p.n;
    let b_k1 = bi1;
    let b_off1 = b_base + bi1 * p.b_rs + (col0 + bo1) * p.b_cs;
    let b_st1 = bo1 * SB + bi1;
    var rb1: vec4<f32>;
    var rbx1: vec4<f32>;
    let be2 = tid + 512u;
    let bo2 = be2 / 8u;
    let bi2 = (be2 % 8u) * VW;
    let b_ok2 = col0 + bo2 < p.n;
    let b_k2 = bi2;
    let b_off2 = b_base + bi2 * p.b_rs + (col0 + bo2) * p.b_cs;
    let b_st2 = bo2 * SB + bi2;
    var rb2: vec4<f32>;
    var rbx2: vec4<f32>;
    let be3 = tid + 768u;
    let bo3 = be3 / 8u;
    let bi3 = (be3 % 8u) * VW;
    let b_ok3 = col0 + bo3 < p.n;
    let b_k3 = bi3;
    let b_off3 = b_base + bi3 * p.b_rs + (col0 + bo3) * p.b_cs;
    let b_st3 = bo3 * SB + bi3;
    var rb3: vec4<f32>;
    var rbx3: vec4<f32>;

    var low_a: bool;
    var low_b: bool;
    var low_ax: bool;
    var low_bx: bool;
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
        {
        // Segment of the three-part K (A: hi, lo, hi; B: lo, hi, hi) and the real K within it.
        // (The split itself waits for the store, so the loads stay in flight over the multiply.)
        let seg = k_begin / k_seg;
        let kr = k_begin - seg * k_seg;
        low_a = seg == 1u;
        low_b = seg == 0u;
        ra0 = vec4<f32>();
        if (a_ok0 && kr + a_k0 < p.k && k_begin + a_k0 < k_end) {
            ra0 = a[(a_off0 + kr * p.a_cs) / VW];
        }
        ra1 = vec4<f32>();
        if (a_ok1 && kr + a_k1 < p.k && k_begin + a_k1 < k_end) {
            ra1 = a[(a_off1 + kr * p.a_cs) / VW];
        }
        ra2 = vec4<f32>();
        if (a_ok2 && kr + a_k2 < p.k && k_begin + a_k2 < k_end) {
            ra2 = a[(a_off2 + kr * p.a_cs) / VW];
        }
        ra3 = vec4<f32>();
        if (a_ok3 && kr + a_k3 < p.k && k_begin + a_k3 < k_end) {
            ra3 = a[(a_off3 + kr * p.a_cs) / VW];
        }
        rb0 = vec4<f32>();
        if (b_ok0 && kr + b_k0 < p.k && k_begin + b_k0 < k_end) {
            rb0 = b[(b_off0 + kr * p.b_rs) / VW];
        }
        rb1 = vec4<f32>();
        if (b_ok1 && kr + b_k1 < p.k && k_begin + b_k1 < k_end) {
            rb1 = b[(b_off1 + kr * p.b_rs) / VW];
        }
        rb2 = vec4<f32>();
        if (b_ok2 && kr + b_k2 < p.k && k_begin + b_k2 < k_end) {
            rb2 = b[(b_off2 + kr * p.b_rs) / VW];
        }
        rb3 = vec4<f32>();
        if (b_ok3 && kr + b_k3 < p.k && k_begin + b_k3 < k_end) {
            rb3 = b[(b_off3 + kr * p.b_rs) / VW];
        }
        }
    let k_second = k_begin + BK;
        {
        // Segment of the three-part K (A: hi, lo, hi; B: lo, hi, hi) and the real K within it.
        // (The split itself waits for the store, so the loads stay in flight over the multiply.)
        let seg = k_second / k_seg;
        let kr = k_second - seg * k_seg;
        low_ax = seg == 1u;
        low_bx = seg == 0u;
        rax0 = vec4<f32>();
        if (a_ok0 && kr + a_k0 < p.k && k_second + a_k0 < k_end) {
            rax0 = a[(a_off0 + kr * p.a_cs) / VW];
        }
        rax1 = vec4<f32>();
        if (a_ok1 && kr + a_k1 < p.k && k_second + a_k1 < k_end) {
            rax1 = a[(a_off1 + kr * p.a_cs) / VW];
        }
        rax2 = vec4<f32>();
        if (a_ok2 && kr + a_k2 < p.k && k_second + a_k2 < k_end) {
            rax2 = a[(a_off2 + kr * p.a_cs) / VW];
        }
        rax3 = vec4<f32>();
        if (a_ok3 && kr + a_k3 < p.k && k_second + a_k3 < k_end) {
            rax3 = a[(a_off3 + kr * p.a_cs) / VW];
        }
        rbx0 = vec4<f32>();
        if (b_ok0 && kr + b_k0 < p.k && k_second + b_k0 < k_end) {
            rbx0 = b[(b_off0 + kr * p.b_rs) / VW];
        }
        rbx1 = vec4<f32>();
        if (b_ok1 && kr + b_k1 < p.k && k_second + b_k1 < k_end) {
            rbx1 = b[(b_off1 + kr * p.b_rs) / VW];
        }
        rbx2 = vec4<f32>();
        if (b_ok2 && kr + b_k2 < p.k && k_second + b_k2 < k_end) {
            rbx2 = b[(b_off2 + kr * p.b_rs) / VW];
        }
        rbx3 = vec4<f32>();
        if (b_ok3 && kr + b_k3 < p.k && k_second + b_k3 < k_end) {
            rbx3 = b[(b_off3 + kr * p.b_rs) / VW];
        }
        }
        ra0 = split_part(ra0, scale_a, low_a);
        ra1 = split_part(ra1, scale_a, low_a);
        ra2 = split_part(ra2, scale_a, low_a);
        ra3 = split_part(ra3, scale_a, low_a);
        rb0 = split_part(rb0, scale_b, low_b);
        rb1 = split_part(rb1, scale_b, low_b);
        rb2 = split_part(rb2, scale_b, low_b);
        rb3 = split_part(rb3, scale_b, low_b);
        a_tile[(0u * A_STAGE + a_st0) / VW] = array<f16, 4>(f16(ra0.x), f16(ra0.y), f16(ra0.z), f16(ra0.w));
        a_tile[(0u * A_STAGE + a_st1) / VW] = array<f16, 4>(f16(ra1.x), f16(ra1.y), f16(ra1.z), f16(ra1.w));
        a_tile[(0u * A_STAGE + a_st2) / VW] = array<f16, 4>(f16(ra2.x), f16(ra2.y), f16(ra2.z), f16(ra2.w));
        a_tile[(0u * A_STAGE + a_st3) / VW] = array<f16, 4>(f16(ra3.x), f16(ra3.y), f16(ra3.z), f16(ra3.w));
        b_tile[(0u * B_STAGE + b_st0) / VW] = array<f16, 4>(f16(rb0.x), f16(rb0.y), f16(rb0.z), f16(rb0.w));
        b_tile[(0u * B_STAGE + b_st1) / VW] = array<f16, 4>(f16(rb1.x), f16(rb1.y), f16(rb1.z), f16(rb1.w));
        b_tile[(0u * B_STAGE + b_st2) / VW] = array<f16, 4>(f16(rb2.x), f16(rb2.y), f16(rb2.z), f16(rb2.w));
        b_tile[(0u * B_STAGE + b_st3) / VW] = array<f16, 4>(f16(rb3.x), f16(rb3.y), f16(rb3.z), f16(rb3.w));
    workgroupBarrier();
    for (var s = 0u; s < n_slices; s = s + 2u) {
        let k_even = k_begin + (s + 2u) * BK;
        {
        // Segment of the three-part K (A: hi, lo, hi; B: lo, hi, hi) and the real K within it.
        // (The split itself waits for the store, so the loads stay in flight over the multiply.)
        let seg = k_even / k_seg;
        let kr = k_even - seg * k_seg;
        low_a = seg == 1u;
        low_b = seg == 0u;
        ra0 = vec4<f32>();
        if (a_ok0 && kr + a_k0 < p.k && k_even + a_k0 < k_end) {
            ra0 = a[(a_off0 + kr * p.a_cs) / VW];
        }
        ra1 = vec4<f32>();
        if (a_ok1 && kr + a_k1 < p.k && k_even + a_k1 < k_end) {
            ra1 = a[(a_off1 + kr * p.a_cs) / VW];
        }
        ra2 = vec4<f32>();
        if (a_ok2 && kr + a_k2 < p.k && k_even + a_k2 < k_end) {
            ra2 = a[(a_off2 + kr * p.a_cs) / VW];
        }
        ra3 = vec4<f32>();
        if (a_ok3 && kr + a_k3 < p.k && k_even + a_k3 < k_end) {
            ra3 = a[(a_off3 + kr * p.a_cs) / VW];
        }
        rb0 = vec4<f32>();
        if (b_ok0 && kr + b_k0 < p.k && k_even + b_k0 < k_end) {
            rb0 = b[(b_off0 + kr * p.b_rs) / VW];
        }
        rb1 = vec4<f32>();
        if (b_ok1 && kr + b_k1 < p.k && k_even + b_k1 < k_end) {
            rb1 = b[(b_off1 + kr * p.b_rs) / VW];
        }
        rb2 = vec4<f32>();
        if (b_ok2 && kr + b_k2 < p.k && k_even + b_k2 < k_end) {
            rb2 = b[(b_off2 + kr * p.b_rs) / VW];
        }
        rb3 = vec4<f32>();
        if (b_ok3 && kr + b_k3 < p.k && k_even + b_k3 < k_end) {
            rb3 = b[(b_off3 + kr * p.b_rs) / VW];
        }
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
        let fb0_0 = coopLoad<coop_mat16x16<f16, B>>(&b_tile[eb0_0c][0], SB);
        let eb0_1 = b_cur + 640u;
        let eb0_1c = eb0_1 / VW;
        let fb0_1 = coopLoad<coop_mat16x16<f16, B>>(&b_tile[eb0_1c][0], SB);
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
        let eb1_0 = b_cur + 16u;
        let eb1_0c = eb1_0 / VW;
        let fb1_0 = coopLoad<coop_mat16x16<f16, B>>(&b_tile[eb1_0c][0], SB);
        let eb1_1 = b_cur + 656u;
        let eb1_1c = eb1_1 / VW;
        let fb1_1 = coopLoad<coop_mat16x16<f16, B>>(&b_tile[eb1_1c][0], SB);
        acc0_0 = coopMultiplyAdd(fa1_0, fb1_0, acc0_0);
        acc0_1 = coopMultiplyAdd(fa1_0, fb1_1, acc0_1);
        acc1_0 = coopMultiplyAdd(fa1_1, fb1_0, acc1_0);
        acc1_1 = coopMultiplyAdd(fa1_1, fb1_1, acc1_1);
        acc2_0 = coopMultiplyAdd(fa1_2, fb1_0, acc2_0);
        acc2_1 = coopMultiplyAdd(fa1_2, fb1_1, acc2_1);
        acc3_0 = coopMultiplyAdd(fa1_3, fb1_0, acc3_0);
        acc3_1 = coopMultiplyAdd(fa1_3, fb1_1, acc3_1);
        rax0 = split_part(rax0, scale_a, low_ax);
        rax1 = split_part(rax1, scale_a, low_ax);
        rax2 = split_part(rax2, scale_a, low_ax);
        rax3 = split_part(rax3, scale_a, low_ax);
        rbx0 = split_part(rbx0, scale_b, low_bx);
        rbx1 = split_part(rbx1, scale_b, low_bx);
        rbx2 = split_part(rbx2, scale_b, low_bx);
        rbx3 = split_part(rbx3, scale_b, low_bx);
        a_tile[(1u * A_STAGE + a_st0) / VW] = array<f16, 4>(f16(rax0.x), f16(rax0.y), f16(rax0.z), f16(rax0.w));
        a_tile[(1u * A_STAGE + a_st1) / VW] = array<f16, 4>(f16(rax1.x), f16(rax1.y), f16(rax1.z), f16(rax1.w));
        a_tile[(1u * A_STAGE + a_st2) / VW] = array<f16, 4>(f16(rax2.x), f16(rax2.y), f16(rax2.z), f16(rax2.w));
        a_tile[(1u * A_STAGE + a_st3) / VW] = array<f16, 4>(f16(rax3.x), f16(rax3.y), f16(rax3.z), f16(rax3.w));
        b_tile[(1u * B_STAGE + b_st0) / VW] = array<f16, 4>(f16(rbx0.x), f16(rbx0.y), f16(rbx0.z), f16(rbx0.w));
        b_tile[(1u * B_STAGE + b_st1) / VW] = array<f16, 4>(f16(rbx1.x), f16(rbx1.y), f16(rbx1.z), f16(rbx1.w));
        b_tile[(1u * B_STAGE + b_st2) / VW] = array<f16, 4>(f16(rbx2.x), f16(rbx2.y), f16(rbx2.z), f16(rbx2.w));
        b_tile[(1u * B_STAGE + b_st3) / VW] = array<f16, 4>(f16(rbx3.x), f16(rbx3.y), f16(rbx3.z), f16(rbx3.w));
        workgroupBarrier();
        let k_odd = k_begin + (s + 3u) * BK;
        {
        // Segment of the three-part K (A: hi, lo, hi; B: lo, hi, hi) and the real K within it.
        // (The split itself waits for the store, so the loads stay in flight over the multiply.)
        let seg = k_odd / k_seg;
        let kr = k_odd - seg * k_seg;
        low_ax = seg == 1u;
        low_bx = seg == 0u;
        rax0 = vec4<f32>();
        if (a_ok0 && kr + a_k0 < p.k && k_odd + a_k0 < k_end) {
            rax0 = a[(a_off0 + kr * p.a_cs) / VW];
        }
        rax1 = vec4<f32>();
        if (a_ok1 && kr + a_k1 < p.k && k_odd + a_k1 < k_end) {
            rax1 = a[(a_off1 + kr * p.a_cs) / VW];
        }
        rax2 = vec4<f32>();
        if (a_ok2 && kr + a_k2 < p.k && k_odd + a_k2 < k_end) {
            rax2 = a[(a_off2 + kr * p.a_cs) / VW];
        }
        rax3 = vec4<f32>();
        if (a_ok3 && kr + a_k3 < p.k && k_odd + a_k3 < k_end) {
            rax3 = a[(a_off3 + kr * p.a_cs) / VW];
        }
        rbx0 = vec4<f32>();
        if (b_ok0 && kr + b_k0 < p.k && k_odd + b_k0 < k_end) {
            rbx0 = b[(b_off0 + kr * p.b_rs) / VW];
        }
        rbx1 = vec4<f32>();
        if (b_ok1 && kr + b_k1 < p.k && k_odd + b_k1 < k_end) {
            rbx1 = b[(b_off1 + kr * p.b_rs) / VW];
        }
        rbx2 = vec4<f32>();
        if (b_ok2 && kr + b_k2 < p.k && k_odd + b_k2 < k_end) {
            rbx2 = b[(b_off2 + kr * p.b_rs) / VW];
        }
        rbx3 = vec4<f32>();
        if (b_ok3 && kr + b_k3 < p.k && k_odd + b_k3 < k_end) {
            rbx3 = b[(b_off3 + kr * p.b_rs) / VW];
        }
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
        let fb0_0 = coopLoad<coop_mat16x16<f16, B>>(&b_tile[eb0_0c][0], SB);
        let eb0_1 = b_cur + 640u;
        let eb0_1c = eb0_1 / VW;
        let fb0_1 = coopLoad<coop_mat16x16<f16, B>>(&b_tile[eb0_1c][0], SB);
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
        let eb1_0 = b_cur + 16u;
        let eb1_0c = eb1_0 / VW;
        let fb1_0 = coopLoad<coop_mat16x16<f16, B>>(&b_tile[eb1_0c][0], SB);
        let eb1_1 = b_cur + 656u;
        let eb1_1c = eb1_1 / VW;
        let fb1_1 = coopLoad<coop_mat16x16<f16, B>>(&b_tile[eb1_1c][0], SB);
        acc0_0 = coopMultiplyAdd(fa1_0, fb1_0, acc0_0);
        acc0_1 = coopMultiplyAdd(fa1_0, fb1_1, acc0_1);
        acc1_0 = coopMultiplyAdd(fa1_1, fb1_0, acc1_0);
        acc1_1 = coopMultiplyAdd(fa1_1, fb1_1, acc1_1);
        acc2_0 = coopMultiplyAdd(fa1_2, fb1_0, acc2_0);
        acc2_1 = coopMultiplyAdd(fa1_2, fb1_1, acc2_1);
        acc3_0 = coopMultiplyAdd(fa1_3, fb1_0, acc3_0);
        acc3_1 = coopMultiplyAdd(fa1_3, fb1_1, acc3_1);
        }
        ra0 = split_part(ra0, scale_a, low_a);
        ra1 = split_part(ra1, scale_a, low_a);
        ra2 = split_part(ra2, scale_a, low_a);
        ra3 = split_part(ra3, scale_a, low_a);
        rb0 = split_part(rb0, scale_b, low_b);
        rb1 = split_part(rb1, scale_b, low_b);
        rb2 = split_part(rb2, scale_b, low_b);
        rb3 = split_part(rb3, scale_b, low_b);
        a_tile[(0u * A_STAGE + a_st0) / VW] = array<f16, 4>(f16(ra0.x), f16(ra0.y), f16(ra0.z), f16(ra0.w));
        a_tile[(0u * A_STAGE + a_st1) / VW] = array<f16, 4>(f16(ra1.x), f16(ra1.y), f16(ra1.z), f16(ra1.w));
        a_tile[(0u * A_STAGE + a_st2) / VW] = array<f16, 4>(f16(ra2.x), f16(ra2.y), f16(ra2.z), f16(ra2.w));
        a_tile[(0u * A_STAGE + a_st3) / VW] = array<f16, 4>(f16(ra3.x), f16(ra3.y), f16(ra3.z), f16(ra3.w));
        b_tile[(0u * B_STAGE + b_st0) / VW] = array<f16, 4>(f16(rb0.x), f16(rb0.y), f16(rb0.z), f16(rb0.w));
        b_tile[(0u * B_STAGE + b_st1) / VW] = array<f16, 4>(f16(rb1.x), f16(rb1.y), f16(rb1.z), f16(rb1.w));
        b_tile[(0u * B_STAGE + b_st2) / VW] = array<f16, 4>(f16(rb2.x), f16(rb2.y), f16(rb2.z), f16(rb2.w));
        b_tile[(0u * B_STAGE + b_st3) / VW] = array<f16, 4>(f16(rb3.x), f16(rb3.y), f16(rb3.z), f16(rb3.w));
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
