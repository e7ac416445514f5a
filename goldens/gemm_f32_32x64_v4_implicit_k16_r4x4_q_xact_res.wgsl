@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;
@group(0) @binding(5) var<uniform> g: ConvGeometry;

// Mirrors `ImplicitConvParams` in kernels/src/conv/variant.rs: B is X of one image, [c, h, w].
struct ConvGeometry {
    c: u32,
    h: u32,
    w: u32,
    ow: u32,
    kh: u32,
    kw: u32,
    taps: u32,
    plane: u32,
    stride_h: u32,
    stride_w: u32,
    dil_h: u32,
    dil_w: u32,
    pad_top: u32,
    pad_left: u32,
    reserved0: u32,
    reserved1: u32,
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

@group(0) @binding(6) var<storage, read> residual: array<f32>;

// The epilogue with the residual operand (the output's shape, so the output's index) added: a
// conv's alpha is 1, so before the activation it joins the accumulator; after it with flag bit 9.
// Flag bit 10 multiplies the result by it instead (a gated product).
fn epilogue_at(acc: f32, bias_index: u32, out_index: u32) -> f32 {
    return epilogue_with(acc, bias_index, f32(residual[out_index]));
}

// The same with the residual's element already loaded.
fn epilogue_with(acc: f32, bias_index: u32, r: f32) -> f32 {
    if ((p.flags & 1024u) != 0u) {
        return epilogue(acc, bias_index) * r;
    }
    if ((p.flags & 512u) != 0u) {
        return epilogue(acc, bias_index) + r;
    }
    return epilogue(acc + r, bias_index);
}

const BK: u32 = 16u;
// vec4s between staged K rows, and per stage, of A ([BK][BM]) and B ([BK][BN]).
const SA: u32 = 9u;
const SB: u32 = 17u;
const A_STAGE: u32 = 144u;
const B_STAGE: u32 = 272u;

var<workgroup> a_tile: array<vec4<f32>, 288>;
var<workgroup> b_tile: array<vec4<f32>, 544>;
// Writes 4 adjacent outputs of one row with bounds checks.
fn store4(row: u32, col: u32, v: vec4<f32>, c_base: u32, bias_base: u32) {
    if (row >= p.m) {
        return;
    }
    // 4, in a form the driver cannot unroll (no workgroup runs when total_workgroups is 0).
    let width = select(4u, 0u, p.total_workgroups == 0u);
    for (var c = 0u; c < width; c = c + 1u) {
        let cc = col + c;
        if (cc < p.n) {
            let o = c_base + row * p.c_rs + cc * p.c_cs;
            out[o] = f32(epilogue_at(v[c], bias_base + row * p.bias_rs + cc * p.bias_cs, o));
        }
    }
}

@compute @workgroup_size(16, 8, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let lin = linear_workgroup(wid);
    if (lin >= p.total_workgroups) {
        return;
    }
    let tile_n = lin % p.tiles_n;
    let tile_m = (lin / p.tiles_n) % p.tiles_m;
    let batch_split = lin / (p.tiles_n * p.tiles_m);
    let split = batch_split % p.splits;
    let batch = batch_split / p.splits;
    let row0 = tile_m * 32u;
    let col0 = tile_n * 64u;
    let a_base = batch_offset(batch, p.a_bs);
    let b_base = batch_offset(batch, p.b_bs);
    let k_begin = split * p.k_chunk;
    let k_end = min(p.k, k_begin + p.k_chunk);

    // The vec4 chunks this invocation loads, independent of K.
    let ae0 = tid + 0u;
    let ao0 = ae0 / 4u;
    let ai0 = (ae0 % 4u) * 4u;
    let a_ok0 = row0 + ao0 < p.m;
    let a_k0 = ai0;
    let a_off0 = a_base + (row0 + ao0) * p.a_rs + ai0 * p.a_cs;
    let a_st0 = ai0 * SA + ao0 / 4u;
    let a_comp0 = ao0 % 4u;
    var ra0: vec4<f32>;
    let be0 = tid + 0u;
    let bo0 = be0 / 16u;
    let bi0 = (be0 % 16u) * 4u;
    let b_k0 = bo0;
    let b_st0 = bo0 * SB + bi0 / 4u;
    // Output pixels of the chunk's 4 columns and the input row/column of their first kernel
    // tap. Padding makes these "negative": u32 wraps, so a tap left of or above the image
    // compares ≥ the image size and reads zero, and adding the dilation wraps back into range.
    let bp0_0 = col0 + bi0 + 0u;
    let bv0_0 = bp0_0 < p.n;
    let boh0_0 = bp0_0 / g.ow;
    let bh0_0 = boh0_0 * g.stride_h - g.pad_top;
    let bw0_0 = (bp0_0 - boh0_0 * g.ow) * g.stride_w - g.pad_left;
    let bp0_1 = col0 + bi0 + 1u;
    let bv0_1 = bp0_1 < p.n;
    let boh0_1 = bp0_1 / g.ow;
    let bh0_1 = boh0_1 * g.stride_h - g.pad_top;
    let bw0_1 = (bp0_1 - boh0_1 * g.ow) * g.stride_w - g.pad_left;
    let bp0_2 = col0 + bi0 + 2u;
    let bv0_2 = bp0_2 < p.n;
    let boh0_2 = bp0_2 / g.ow;
    let bh0_2 = boh0_2 * g.stride_h - g.pad_top;
    let bw0_2 = (bp0_2 - boh0_2 * g.ow) * g.stride_w - g.pad_left;
    let bp0_3 = col0 + bi0 + 3u;
    let bv0_3 = bp0_3 < p.n;
    let boh0_3 = bp0_3 / g.ow;
    let bh0_3 = boh0_3 * g.stride_h - g.pad_top;
    let bw0_3 = (bp0_3 - boh0_3 * g.ow) * g.stride_w - g.pad_left;
    var rb0: vec4<f32>;
    let be1 = tid + 128u;
    let bo1 = be1 / 16u;
    let bi1 = (be1 % 16u) * 4u;
    let b_k1 = bo1;
    let b_st1 = bo1 * SB + bi1 / 4u;
    // Output pixels of the chunk's 4 columns and the input row/column of their first kernel
    // tap. Padding makes these "negative": u32 wraps, so a tap left of or above the image
    // compares ≥ the image size and reads zero, and adding the dilation wraps back into range.
    let bp1_0 = col0 + bi1 + 0u;
    let bv1_0 = bp1_0 < p.n;
    let boh1_0 = bp1_0 / g.ow;
    let bh1_0 = boh1_0 * g.stride_h - g.pad_top;
    let bw1_0 = (bp1_0 - boh1_0 * g.ow) * g.stride_w - g.pad_left;
    let bp1_1 = col0 + bi1 + 1u;
    let bv1_1 = bp1_1 < p.n;
    let boh1_1 = bp1_1 / g.ow;
    let bh1_1 = boh1_1 * g.stride_h - g.pad_top;
    let bw1_1 = (bp1_1 - boh1_1 * g.ow) * g.stride_w - g.pad_left;
    let bp1_2 = col0 + bi1 + 2u;
    let bv1_2 = bp1_2 < p.n;
    let boh1_2 = bp1_2 / g.ow;
    let bh1_2 = boh1_2 * g.stride_h - g.pad_top;
    let bw1_2 = (bp1_2 - boh1_2 * g.ow) * g.stride_w - g.pad_left;
    let bp1_3 = col0 + bi1 + 3u;
    let bv1_3 = bp1_3 < p.n;
    let boh1_3 = bp1_3 / g.ow;
    let bh1_3 = boh1_3 * g.stride_h - g.pad_top;
    let bw1_3 = (bp1_3 - boh1_3 * g.ow) * g.stride_w - g.pad_left;
    var rb1: vec4<f32>;

    var acc0_0 = vec4<f32>();
    var acc1_0 = vec4<f32>();
    var acc2_0 = vec4<f32>();
    var acc3_0 = vec4<f32>();

    let n_slices = select(0u, (k_end - k_begin + BK - 1u) / BK, k_end > k_begin);
    if (n_slices > 0u) {
        ra0 = vec4<f32>();
        if (a_ok0 && k_begin + a_k0 < k_end) {
            ra0 = vec4<f32>(a[(a_off0 + k_begin * p.a_cs) / 4u]);
        }
        rb0 = vec4<f32>();
        let kb0 = k_begin + b_k0;
        if (kb0 < k_end) {
            let ci0 = kb0 / g.taps;
            let tap0 = kb0 - ci0 * g.taps;
            let ti0 = tap0 / g.kw;
            let dh0 = ti0 * g.dil_h;
            let dw0 = (tap0 - ti0 * g.kw) * g.dil_w;
            let plane0 = b_base + ci0 * g.plane;
            let ih0_0 = bh0_0 + dh0;
            let iw0_0 = bw0_0 + dw0;
            if (bv0_0 && ih0_0 < g.h && iw0_0 < g.w) {
                rb0[0] = f32(b[plane0 + ih0_0 * g.w + iw0_0]);
            }
            let ih0_1 = bh0_1 + dh0;
            let iw0_1 = bw0_1 + dw0;
            if (bv0_1 && ih0_1 < g.h && iw0_1 < g.w) {
                rb0[1] = f32(b[plane0 + ih0_1 * g.w + iw0_1]);
            }
            let ih0_2 = bh0_2 + dh0;
            let iw0_2 = bw0_2 + dw0;
            if (bv0_2 && ih0_2 < g.h && iw0_2 < g.w) {
                rb0[2] = f32(b[plane0 + ih0_2 * g.w + iw0_2]);
            }
            let ih0_3 = bh0_3 + dh0;
            let iw0_3 = bw0_3 + dw0;
            if (bv0_3 && ih0_3 < g.h && iw0_3 < g.w) {
                rb0[3] = f32(b[plane0 + ih0_3 * g.w + iw0_3]);
            }
        }
        rb1 = vec4<f32>();
        let kb1 = k_begin + b_k1;
        if (kb1 < k_end) {
            let ci1 = kb1 / g.taps;
            let tap1 = kb1 - ci1 * g.taps;
            let ti1 = tap1 / g.kw;
            let dh1 = ti1 * g.dil_h;
            let dw1 = (tap1 - ti1 * g.kw) * g.dil_w;
            let plane1 = b_base + ci1 * g.plane;
            let ih1_0 = bh1_0 + dh1;
            let iw1_0 = bw1_0 + dw1;
            if (bv1_0 && ih1_0 < g.h && iw1_0 < g.w) {
                rb1[0] = f32(b[plane1 + ih1_0 * g.w + iw1_0]);
            }
            let ih1_1 = bh1_1 + dh1;
            let iw1_1 = bw1_1 + dw1;
            if (bv1_1 && ih1_1 < g.h && iw1_1 < g.w) {
                rb1[1] = f32(b[plane1 + ih1_1 * g.w + iw1_1]);
            }
            let ih1_2 = bh1_2 + dh1;
            let iw1_2 = bw1_2 + dw1;
            if (bv1_2 && ih1_2 < g.h && iw1_2 < g.w) {
                rb1[2] = f32(b[plane1 + ih1_2 * g.w + iw1_2]);
            }
            let ih1_3 = bh1_3 + dh1;
            let iw1_3 = bw1_3 + dw1;
            if (bv1_3 && ih1_3 < g.h && iw1_3 < g.w) {
                rb1[3] = f32(b[plane1 + ih1_3 * g.w + iw1_3]);
            }
        }

        a_tile[0u * A_STAGE + a_st0 + 0u * SA][a_comp0] = ra0[0];
        a_tile[0u * A_STAGE + a_st0 + 1u * SA][a_comp0] = ra0[1];
        a_tile[0u * A_STAGE + a_st0 + 2u * SA][a_comp0] = ra0[2];
        a_tile[0u * A_STAGE + a_st0 + 3u * SA][a_comp0] = ra0[3];
        b_tile[0u * B_STAGE + b_st0] = rb0;
        b_tile[0u * B_STAGE + b_st1] = rb1;

    }
    workgroupBarrier();
    for (var s = 0u; s < n_slices; s = s + 1u) {
        let cur = s & 1u;
        let has_next = s + 1u < n_slices;
        if (has_next) {
            let k_next = k_begin + (s + 1u) * BK;
        ra0 = vec4<f32>();
        if (a_ok0 && k_next + a_k0 < k_end) {
            ra0 = vec4<f32>(a[(a_off0 + k_next * p.a_cs) / 4u]);
        }
        rb0 = vec4<f32>();
        let kb0 = k_next + b_k0;
        if (kb0 < k_end) {
            let ci0 = kb0 / g.taps;
            let tap0 = kb0 - ci0 * g.taps;
            let ti0 = tap0 / g.kw;
            let dh0 = ti0 * g.dil_h;
            let dw0 = (tap0 - ti0 * g.kw) * g.dil_w;
            let plane0 = b_base + ci0 * g.plane;
            let ih0_0 = bh0_0 + dh0;
            let iw0_0 = bw0_0 + dw0;
            if (bv0_0 && ih0_0 < g.h && iw0_0 < g.w) {
                rb0[0] = f32(b[plane0 + ih0_0 * g.w + iw0_0]);
            }
            let ih0_1 = bh0_1 + dh0;
            let iw0_1 = bw0_1 + dw0;
            if (bv0_1 && ih0_1 < g.h && iw0_1 < g.w) {
                rb0[1] = f32(b[plane0 + ih0_1 * g.w + iw0_1]);
            }
            let ih0_2 = bh0_2 + dh0;
            let iw0_2 = bw0_2 + dw0;
            if (bv0_2 && ih0_2 < g.h && iw0_2 < g.w) {
                rb0[2] = f32(b[plane0 + ih0_2 * g.w + iw0_2]);
            }
            let ih0_3 = bh0_3 + dh0;
            let iw0_3 = bw0_3 + dw0;
            if (bv0_3 && ih0_3 < g.h && iw0_3 < g.w) {
                rb0[3] = f32(b[plane0 + ih0_3 * g.w + iw0_3]);
            }
        }
        rb1 = vec4<f32>();
        let kb1 = k_next + b_k1;
        if (kb1 < k_end) {
            let ci1 = kb1 / g.taps;
            let tap1 = kb1 - ci1 * g.taps;
            let ti1 = tap1 / g.kw;
            let dh1 = ti1 * g.dil_h;
            let dw1 = (tap1 - ti1 * g.kw) * g.dil_w;
            let plane1 = b_base + ci1 * g.plane;
            let ih1_0 = bh1_0 + dh1;
            let iw1_0 = bw1_0 + dw1;
            if (bv1_0 && ih1_0 < g.h && iw1_0 < g.w) {
                rb1[0] = f32(b[plane1 + ih1_0 * g.w + iw1_0]);
            }
            let ih1_1 = bh1_1 + dh1;
            let iw1_1 = bw1_1 + dw1;
            if (bv1_1 && ih1_1 < g.h && iw1_1 < g.w) {
                rb1[1] = f32(b[plane1 + ih1_1 * g.w + iw1_1]);
            }
            let ih1_2 = bh1_2 + dh1;
            let iw1_2 = bw1_2 + dw1;
            if (bv1_2 && ih1_2 < g.h && iw1_2 < g.w) {
                rb1[2] = f32(b[plane1 + ih1_2 * g.w + iw1_2]);
            }
            let ih1_3 = bh1_3 + dh1;
            let iw1_3 = bw1_3 + dw1;
            if (bv1_3 && ih1_3 < g.h && iw1_3 < g.w) {
                rb1[3] = f32(b[plane1 + ih1_3 * g.w + iw1_3]);
            }
        }

        }
        let a_cur = cur * A_STAGE + lid.y;
        let b_cur = cur * B_STAGE + lid.x;
        for (var kk = 0u; kk < BK; kk = kk + 1u) {
            let a0 = a_tile[a_cur + kk * SA + 0u];
            let b0 = b_tile[b_cur + kk * SB + 0u];
            acc0_0 = fma(vec4<f32>(a0[0]), b0, acc0_0);
            acc1_0 = fma(vec4<f32>(a0[1]), b0, acc1_0);
            acc2_0 = fma(vec4<f32>(a0[2]), b0, acc2_0);
            acc3_0 = fma(vec4<f32>(a0[3]), b0, acc3_0);
        }
        if (has_next) {
        a_tile[(1u - cur) * A_STAGE + a_st0 + 0u * SA][a_comp0] = ra0[0];
        a_tile[(1u - cur) * A_STAGE + a_st0 + 1u * SA][a_comp0] = ra0[1];
        a_tile[(1u - cur) * A_STAGE + a_st0 + 2u * SA][a_comp0] = ra0[2];
        a_tile[(1u - cur) * A_STAGE + a_st0 + 3u * SA][a_comp0] = ra0[3];
        b_tile[(1u - cur) * B_STAGE + b_st0] = rb0;
        b_tile[(1u - cur) * B_STAGE + b_st1] = rb1;

        }
        workgroupBarrier();
    }

    let c_base = batch_offset(batch, p.c_bs);
    let bias_base = batch_offset(batch, p.bias_bs);
    let out_row = row0 + lid.y * 4u;
    let out_col = col0 + lid.x * 4u;
    // Block e = (i·4 + r)·1 + j: rows i·32 + r, columns j·64.
    let accs = array<vec4<f32>, 4>(acc0_0, acc1_0, acc2_0, acc3_0, );
    let blocks = select(4u, 0u, p.total_workgroups == 0u);
    for (var e = 0u; e < blocks; e = e + 1u) {
        let ir = e / 1u;
        let row = out_row + (ir / 4u) * 32u + ir % 4u;
        store4(row, out_col + (e % 1u) * 64u, accs[e], c_base, bias_base);
    }
}
