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


fn activation(x: f32) -> f32 {
    var v = x;
    let act = (p.flags >> 1u) & 3u;
    if (act == 1u) {
        v = act_keep_nan(select(v, 0.0, v < 0.0), v);
    } else if (act == 2u) {
        v = select(v, p.clip_min, v < p.clip_min);
        v = act_keep_nan(select(v, p.clip_max, v > p.clip_max), x);
    }
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

const BK: u32 = 16u;
const VW: u32 = 4u;
// f16 elements between consecutive staged rows, and per stage, of A and B.
const SA: u32 = 24u;
const SB: u32 = 24u;
const A_STAGE: u32 = 3072u;
const B_STAGE: u32 = 3072u;

var<workgroup> a_tile: array<array<f16, 4>, 768>;
var<workgroup> b_tile: array<array<f16, 4>, 768>;
var<workgroup> a_lo_tile: array<array<f16, 4>, 768>;
var<workgroup> b_lo_tile: array<array<f16, 4>, 768>;
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
fn write_frag(c0: u32, lane: u32, row: u32, col: u32, c_base: u32, bias_base: u32, small: array<f32, 8>) {
    for (var q = 0u; q < 8u; q = q + 1u) {
        let e = lane + q * 32u;
        let r = row + e / 16u;
        let c = col + e % 16u;
        if (r < p.m && c < p.n) {
            let v = ldexp(ldexp(c_tile[c0 + e] + small[q], -shift_a), -shift_b);
            out[c_base + r * p.c_rs + c * p.c_cs] = f32(epilogue(v, bias_base + r * p.bias_rs + c * p.bias_cs));
        }
    }
}

// The 8 elements of a fragment's small parts this invocation writes (as write_frag reads them).
fn small_parts(c0: u32, lane: u32) -> array<f32, 8> {
    var s: array<f32, 8>;
    for (var q = 0u; q < 8u; q = q + 1u) {
        s[q] = c_tile[c0 + lane + q * 32u];
    }
    return s;
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
    let largest = operand_maxima(tid);
    shift_a = split_shift(largest.x);
    shift_b = split_shift(largest.y);
    scale_a = ldexp(1.0, shift_a);
    scale_b = ldexp(1.0, shift_b);
    let sg = tid / 32u;
    let lane = tid % 32u;
    let wm0 = (sg / 4u) * 64u;
    let wn0 = (sg % 4u) * 32u;
    let a_sg = wm0 * SA;
    let b_sg = wn0 * SB;

    // The chunks this invocation loads, independent of K: validity along M/N, the global
    // offset at k = 0, the K coordinate within the slice, and the staged position.
    let ae0 = tid + 0u;
    let ao0 = ae0 / 4u;
    let ai0 = (ae0 % 4u) * VW;
    let a_ok0 = row0 + ao0 < p.m;
    let a_k0 = ai0;
    let a_off0 = a_base + (row0 + ao0) * p.a_rs + ai0 * p.a_cs;
    let a_st0 = ao0 * SA + ai0;
    var ra0: vec4<f32>;
    let ae1 = tid + 256u;
    let ao1 = ae1 / 4u;
    let ai1 = (ae1 % 4u) * VW;
    let a_ok1 = row0 + ao1 < p.m;
    let a_k1 = ai1;
    let a_off1 = a_base + (row0 + ao1) * p.a_rs + ai1 * p.a_cs;
    let a_st1 = ao1 * SA + ai1;
    var ra1: vec4<f32>;
    let be0 = tid + 0u;
    let bo0 = be0 / 4u;
    let bi0 = (be0 % 4u) * VW;
    let b_ok0 = col0 + bo0 < p.n;
    let b_k0 = bi0;
    let b_off0 = b_base + bi0 * p.b_rs + (col0 + bo0) * p.b_cs;
    let b_st0 = bo0 * SB + bi0;
    var rb0: vec4<f32>;
    let be1 = tid + 256u;
    let bo1 = be1 / 4u;
    let bi1 = (be1 % 4u) * VW;
    let b_ok1 = col0 + bo1 < p.n;
    let b_k1 = bi1;
    let b_off1 = b_base + bi1 * p.b_rs + (col0 + bo1) * p.b_cs;
    let b_st1 = bo1 * SB + bi1;
    var rb1: vec4<f32>;

    var acc0_0 = coop_mat16x16<f32, C>();
    var sm0_0 = coop_mat16x16<f32, C>();
    var acc0_1 = coop_mat16x16<f32, C>();
    var sm0_1 = coop_mat16x16<f32, C>();
    var acc1_0 = coop_mat16x16<f32, C>();
    var sm1_0 = coop_mat16x16<f32, C>();
    var acc1_1 = coop_mat16x16<f32, C>();
    var sm1_1 = coop_mat16x16<f32, C>();
    var acc2_0 = coop_mat16x16<f32, C>();
    var sm2_0 = coop_mat16x16<f32, C>();
    var acc2_1 = coop_mat16x16<f32, C>();
    var sm2_1 = coop_mat16x16<f32, C>();
    var acc3_0 = coop_mat16x16<f32, C>();
    var sm3_0 = coop_mat16x16<f32, C>();
    var acc3_1 = coop_mat16x16<f32, C>();
    var sm3_1 = coop_mat16x16<f32, C>();

    let n_slices = select(0u, (k_end - k_begin + BK - 1u) / BK, k_end > k_begin);
    if (n_slices > 0u) {
        ra0 = vec4<f32>();
        if (a_ok0 && k_begin + a_k0 < k_end) {
            ra0 = a[(a_off0 + k_begin * p.a_cs) / VW];
        }
        ra1 = vec4<f32>();
        if (a_ok1 && k_begin + a_k1 < k_end) {
            ra1 = a[(a_off1 + k_begin * p.a_cs) / VW];
        }
        rb0 = vec4<f32>();
        if (b_ok0 && k_begin + b_k0 < k_end) {
            rb0 = b[(b_off0 + k_begin * p.b_rs) / VW];
        }
        rb1 = vec4<f32>();
        if (b_ok1 && k_begin + b_k1 < k_end) {
            rb1 = b[(b_off1 + k_begin * p.b_rs) / VW];
        }
    }
    for (var s = 0u; s < n_slices; s = s + 1u) {
        {
        let hi = split_part(ra0, scale_a, false);
        let lo = split_part(ra0, scale_a, true);
        a_tile[(0u * A_STAGE + a_st0) / VW] = array<f16, 4>(f16(hi.x), f16(hi.y), f16(hi.z), f16(hi.w));
        a_lo_tile[(0u * A_STAGE + a_st0) / VW] = array<f16, 4>(f16(lo.x), f16(lo.y), f16(lo.z), f16(lo.w));
        }
        {
        let hi = split_part(ra1, scale_a, false);
        let lo = split_part(ra1, scale_a, true);
        a_tile[(0u * A_STAGE + a_st1) / VW] = array<f16, 4>(f16(hi.x), f16(hi.y), f16(hi.z), f16(hi.w));
        a_lo_tile[(0u * A_STAGE + a_st1) / VW] = array<f16, 4>(f16(lo.x), f16(lo.y), f16(lo.z), f16(lo.w));
        }
        {
        let hi = split_part(rb0, scale_b, false);
        let lo = split_part(rb0, scale_b, true);
        b_tile[(0u * B_STAGE + b_st0) / VW] = array<f16, 4>(f16(hi.x), f16(hi.y), f16(hi.z), f16(hi.w));
        b_lo_tile[(0u * B_STAGE + b_st0) / VW] = array<f16, 4>(f16(lo.x), f16(lo.y), f16(lo.z), f16(lo.w));
        }
        {
        let hi = split_part(rb1, scale_b, false);
        let lo = split_part(rb1, scale_b, true);
        b_tile[(0u * B_STAGE + b_st1) / VW] = array<f16, 4>(f16(hi.x), f16(hi.y), f16(hi.z), f16(hi.w));
        b_lo_tile[(0u * B_STAGE + b_st1) / VW] = array<f16, 4>(f16(lo.x), f16(lo.y), f16(lo.z), f16(lo.w));
        }
        workgroupBarrier();
        if (s + 1u < n_slices) {
            let k_next = k_begin + (s + 1u) * BK;
        ra0 = vec4<f32>();
        if (a_ok0 && k_next + a_k0 < k_end) {
            ra0 = a[(a_off0 + k_next * p.a_cs) / VW];
        }
        ra1 = vec4<f32>();
        if (a_ok1 && k_next + a_k1 < k_end) {
            ra1 = a[(a_off1 + k_next * p.a_cs) / VW];
        }
        rb0 = vec4<f32>();
        if (b_ok0 && k_next + b_k0 < k_end) {
            rb0 = b[(b_off0 + k_next * p.b_rs) / VW];
        }
        rb1 = vec4<f32>();
        if (b_ok1 && k_next + b_k1 < k_end) {
            rb1 = b[(b_off1 + k_next * p.b_rs) / VW];
        }
        }
        let a_cur = 0u * A_STAGE + a_sg;
        let b_cur = 0u * B_STAGE + b_sg;
        let ea0_0 = a_cur + 0u;
        let ea0_0c = ea0_0 / VW;
        let fa0_0 = coopLoadT<coop_mat16x16<f16, A>>(&a_tile[ea0_0c][0], SA);
        let fal0_0 = coopLoadT<coop_mat16x16<f16, A>>(&a_lo_tile[ea0_0c][0], SA);
        let ea0_1 = a_cur + 384u;
        let ea0_1c = ea0_1 / VW;
        let fa0_1 = coopLoadT<coop_mat16x16<f16, A>>(&a_tile[ea0_1c][0], SA);
        let fal0_1 = coopLoadT<coop_mat16x16<f16, A>>(&a_lo_tile[ea0_1c][0], SA);
        let ea0_2 = a_cur + 768u;
        let ea0_2c = ea0_2 / VW;
        let fa0_2 = coopLoadT<coop_mat16x16<f16, A>>(&a_tile[ea0_2c][0], SA);
        let fal0_2 = coopLoadT<coop_mat16x16<f16, A>>(&a_lo_tile[ea0_2c][0], SA);
        let ea0_3 = a_cur + 1152u;
        let ea0_3c = ea0_3 / VW;
        let fa0_3 = coopLoadT<coop_mat16x16<f16, A>>(&a_tile[ea0_3c][0], SA);
        let fal0_3 = coopLoadT<coop_mat16x16<f16, A>>(&a_lo_tile[ea0_3c][0], SA);
        let eb0_0 = b_cur + 0u;
        let eb0_0c = eb0_0 / VW;
        let fb0_0 = coopLoad<coop_mat16x16<f16, B>>(&b_tile[eb0_0c][0], SB);
        let fbl0_0 = coopLoad<coop_mat16x16<f16, B>>(&b_lo_tile[eb0_0c][0], SB);
        let eb0_1 = b_cur + 384u;
        let eb0_1c = eb0_1 / VW;
        let fb0_1 = coopLoad<coop_mat16x16<f16, B>>(&b_tile[eb0_1c][0], SB);
        let fbl0_1 = coopLoad<coop_mat16x16<f16, B>>(&b_lo_tile[eb0_1c][0], SB);
        sm0_0 = coopMultiplyAdd(fa0_0, fbl0_0, sm0_0);
        sm0_0 = coopMultiplyAdd(fal0_0, fb0_0, sm0_0);
        acc0_0 = coopMultiplyAdd(fa0_0, fb0_0, acc0_0);
        sm0_1 = coopMultiplyAdd(fa0_0, fbl0_1, sm0_1);
        sm0_1 = coopMultiplyAdd(fal0_0, fb0_1, sm0_1);
        acc0_1 = coopMultiplyAdd(fa0_0, fb0_1, acc0_1);
        sm1_0 = coopMultiplyAdd(fa0_1, fbl0_0, sm1_0);
        sm1_0 = coopMultiplyAdd(fal0_1, fb0_0, sm1_0);
        acc1_0 = coopMultiplyAdd(fa0_1, fb0_0, acc1_0);
        sm1_1 = coopMultiplyAdd(fa0_1, fbl0_1, sm1_1);
        sm1_1 = coopMultiplyAdd(fal0_1, fb0_1, sm1_1);
        acc1_1 = coopMultiplyAdd(fa0_1, fb0_1, acc1_1);
        sm2_0 = coopMultiplyAdd(fa0_2, fbl0_0, sm2_0);
        sm2_0 = coopMultiplyAdd(fal0_2, fb0_0, sm2_0);
        acc2_0 = coopMultiplyAdd(fa0_2, fb0_0, acc2_0);
        sm2_1 = coopMultiplyAdd(fa0_2, fbl0_1, sm2_1);
        sm2_1 = coopMultiplyAdd(fal0_2, fb0_1, sm2_1);
        acc2_1 = coopMultiplyAdd(fa0_2, fb0_1, acc2_1);
        sm3_0 = coopMultiplyAdd(fa0_3, fbl0_0, sm3_0);
        sm3_0 = coopMultiplyAdd(fal0_3, fb0_0, sm3_0);
        acc3_0 = coopMultiplyAdd(fa0_3, fb0_0, acc3_0);
        sm3_1 = coopMultiplyAdd(fa0_3, fbl0_1, sm3_1);
        sm3_1 = coopMultiplyAdd(fal0_3, fb0_1, sm3_1);
        acc3_1 = coopMultiplyAdd(fa0_3, fb0_1, acc3_1);
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
                coopStoreT(sm0_0, &c_tile[c_sg], 16u);
            }
            case 1u: {
                coopStoreT(sm0_1, &c_tile[c_sg], 16u);
            }
            case 2u: {
                coopStoreT(sm1_0, &c_tile[c_sg], 16u);
            }
            case 3u: {
                coopStoreT(sm1_1, &c_tile[c_sg], 16u);
            }
            case 4u: {
                coopStoreT(sm2_0, &c_tile[c_sg], 16u);
            }
            case 5u: {
                coopStoreT(sm2_1, &c_tile[c_sg], 16u);
            }
            case 6u: {
                coopStoreT(sm3_0, &c_tile[c_sg], 16u);
            }
            default: {
                coopStoreT(sm3_1, &c_tile[c_sg], 16u);
            }
        }        subgroupBarrier();
        let small = small_parts(c_sg, lane);
        subgroupBarrier();
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
            write_frag(c_sg, lane, f_row, f_col, c_base, bias_base, small);
        }
        subgroupBarrier();
    }
}
