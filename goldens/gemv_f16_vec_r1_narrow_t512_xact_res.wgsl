enable f16;

@group(0) @binding(0) var<storage, read> a: array<f16>;
// Eight f16 per 16-byte word: one load each (two vec4<f16> loads measured slower in the tensor-core
// kernels; wgsl/f16x8.wgsl.j2), unpacked straight to f32.
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

@group(0) @binding(6) var<storage, read> residual: array<f16>;

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

const ROWS: u32 = 1u;
const CT: u32 = 2u;
const KT: u32 = 256u;
const VEC: u32 = 8u;
// vec4 accumulators per invocation and row (8 columns).
const GROUPS: u32 = 2u;

var<workgroup> partial: array<vec4<f32>, 1024>;
// The K lanes summed 8 at a time first, then those 32 sums.
const PARTS: u32 = 32u;
var<workgroup> parts: array<vec4<f32>, 128>;

// Both halves of one 16-byte chunk (`i` counts chunks).
fn load_b(i: u32) -> array<vec4<f32>, 2> {
    let w = b[i];
    return array<vec4<f32>, 2>(
        vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y)),
        vec4<f32>(unpack2x16float(w.z), unpack2x16float(w.w)),
    );
}

@compute @workgroup_size(512, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let lin = linear_workgroup(wid);
    if (lin >= p.total_workgroups) {
        return;
    }
    let c_lane = tid % CT;
    let k_lane = tid / CT;
    let tile_n = lin % p.tiles_n;
    var rest = lin / p.tiles_n;
    let tile_m = rest % p.tiles_m;
    rest = rest / p.tiles_m;
    let batch = rest % p.batch_count;
    let split = rest / p.batch_count;
    let row0 = tile_m * ROWS;
    let col0 = (tile_n * CT + c_lane) * VEC;
    let a_base = batch_offset(batch, p.a_bs);
    let b_base = batch_offset(batch, p.b_bs) + col0;
    let k_begin = split * p.k_chunk;
    let k_end = min(k_begin + p.k_chunk, p.k);

    var acc0_0 = vec4<f32>(0.0);
    var acc0_1 = vec4<f32>(0.0);
    if (col0 < p.n) {
        let arow0 = a_base + min(row0 + 0u, p.m - 1u) * p.a_rs;
        var k = k_begin + k_lane;
        // 16 loads in flight, then their multiply-adds.
        for (; k + 15u * KT < k_end; k = k + 16u * KT) {
            let b0 = load_b((b_base + (k + 0u * KT) * p.b_rs) / VEC);
            let b1 = load_b((b_base + (k + 1u * KT) * p.b_rs) / VEC);
            let b2 = load_b((b_base + (k + 2u * KT) * p.b_rs) / VEC);
            let b3 = load_b((b_base + (k + 3u * KT) * p.b_rs) / VEC);
            let b4 = load_b((b_base + (k + 4u * KT) * p.b_rs) / VEC);
            let b5 = load_b((b_base + (k + 5u * KT) * p.b_rs) / VEC);
            let b6 = load_b((b_base + (k + 6u * KT) * p.b_rs) / VEC);
            let b7 = load_b((b_base + (k + 7u * KT) * p.b_rs) / VEC);
            let b8 = load_b((b_base + (k + 8u * KT) * p.b_rs) / VEC);
            let b9 = load_b((b_base + (k + 9u * KT) * p.b_rs) / VEC);
            let b10 = load_b((b_base + (k + 10u * KT) * p.b_rs) / VEC);
            let b11 = load_b((b_base + (k + 11u * KT) * p.b_rs) / VEC);
            let b12 = load_b((b_base + (k + 12u * KT) * p.b_rs) / VEC);
            let b13 = load_b((b_base + (k + 13u * KT) * p.b_rs) / VEC);
            let b14 = load_b((b_base + (k + 14u * KT) * p.b_rs) / VEC);
            let b15 = load_b((b_base + (k + 15u * KT) * p.b_rs) / VEC);
            let a0_0 = f32(a[arow0 + (k + 0u * KT) * p.a_cs]);
            acc0_0 = fma(vec4<f32>(a0_0), b0[0], acc0_0);
            acc0_1 = fma(vec4<f32>(a0_0), b0[1], acc0_1);
            let a1_0 = f32(a[arow0 + (k + 1u * KT) * p.a_cs]);
            acc0_0 = fma(vec4<f32>(a1_0), b1[0], acc0_0);
            acc0_1 = fma(vec4<f32>(a1_0), b1[1], acc0_1);
            let a2_0 = f32(a[arow0 + (k + 2u * KT) * p.a_cs]);
            acc0_0 = fma(vec4<f32>(a2_0), b2[0], acc0_0);
            acc0_1 = fma(vec4<f32>(a2_0), b2[1], acc0_1);
            let a3_0 = f32(a[arow0 + (k + 3u * KT) * p.a_cs]);
            acc0_0 = fma(vec4<f32>(a3_0), b3[0], acc0_0);
            acc0_1 = fma(vec4<f32>(a3_0), b3[1], acc0_1);
            let a4_0 = f32(a[arow0 + (k + 4u * KT) * p.a_cs]);
            acc0_0 = fma(vec4<f32>(a4_0), b4[0], acc0_0);
            acc0_1 = fma(vec4<f32>(a4_0), b4[1], acc0_1);
            let a5_0 = f32(a[arow0 + (k + 5u * KT) * p.a_cs]);
            acc0_0 = fma(vec4<f32>(a5_0), b5[0], acc0_0);
            acc0_1 = fma(vec4<f32>(a5_0), b5[1], acc0_1);
            let a6_0 = f32(a[arow0 + (k + 6u * KT) * p.a_cs]);
            acc0_0 = fma(vec4<f32>(a6_0), b6[0], acc0_0);
            acc0_1 = fma(vec4<f32>(a6_0), b6[1], acc0_1);
            let a7_0 = f32(a[arow0 + (k + 7u * KT) * p.a_cs]);
            acc0_0 = fma(vec4<f32>(a7_0), b7[0], acc0_0);
            acc0_1 = fma(vec4<f32>(a7_0), b7[1], acc0_1);
            let a8_0 = f32(a[arow0 + (k + 8u * KT) * p.a_cs]);
            acc0_0 = fma(vec4<f32>(a8_0), b8[0], acc0_0);
            acc0_1 = fma(vec4<f32>(a8_0), b8[1], acc0_1);
            let a9_0 = f32(a[arow0 + (k + 9u * KT) * p.a_cs]);
            acc0_0 = fma(vec4<f32>(a9_0), b9[0], acc0_0);
            acc0_1 = fma(vec4<f32>(a9_0), b9[1], acc0_1);
            let a10_0 = f32(a[arow0 + (k + 10u * KT) * p.a_cs]);
            acc0_0 = fma(vec4<f32>(a10_0), b10[0], acc0_0);
            acc0_1 = fma(vec4<f32>(a10_0), b10[1], acc0_1);
            let a11_0 = f32(a[arow0 + (k + 11u * KT) * p.a_cs]);
            acc0_0 = fma(vec4<f32>(a11_0), b11[0], acc0_0);
            acc0_1 = fma(vec4<f32>(a11_0), b11[1], acc0_1);
            let a12_0 = f32(a[arow0 + (k + 12u * KT) * p.a_cs]);
            acc0_0 = fma(vec4<f32>(a12_0), b12[0], acc0_0);
            acc0_1 = fma(vec4<f32>(a12_0), b12[1], acc0_1);
            let a13_0 = f32(a[arow0 + (k + 13u * KT) * p.a_cs]);
            acc0_0 = fma(vec4<f32>(a13_0), b13[0], acc0_0);
            acc0_1 = fma(vec4<f32>(a13_0), b13[1], acc0_1);
            let a14_0 = f32(a[arow0 + (k + 14u * KT) * p.a_cs]);
            acc0_0 = fma(vec4<f32>(a14_0), b14[0], acc0_0);
            acc0_1 = fma(vec4<f32>(a14_0), b14[1], acc0_1);
            let a15_0 = f32(a[arow0 + (k + 15u * KT) * p.a_cs]);
            acc0_0 = fma(vec4<f32>(a15_0), b15[0], acc0_0);
            acc0_1 = fma(vec4<f32>(a15_0), b15[1], acc0_1);
        }
        for (; k < k_end; k = k + KT) {
            let bv = load_b((b_base + k * p.b_rs) / VEC);
            let av0 = f32(a[arow0 + k * p.a_cs]);
            acc0_0 = fma(vec4<f32>(av0), bv[0], acc0_0);
            acc0_1 = fma(vec4<f32>(av0), bv[1], acc0_1);
        }
    }
    let c_base = batch_offset(batch, p.c_bs);
    let bias_base = batch_offset(batch, p.bias_bs);
    // Invocation `tid` < CT·GROUPS adds the K lanes of one vec4 of columns.
    let sum_lane = tid / GROUPS;
    let sum_group = tid % GROUPS;
    let col = (tile_n * CT + sum_lane) * VEC + sum_group * 4u;
    workgroupBarrier();
    partial[(k_lane * CT + c_lane) * GROUPS + 0u] = acc0_0;
    partial[(k_lane * CT + c_lane) * GROUPS + 1u] = acc0_1;
    workgroupBarrier();
    if (tid < CT * GROUPS * PARTS) {
        let slot = tid % (CT * GROUPS);
        let part = tid / (CT * GROUPS);
        var s8 = vec4<f32>(0.0);
        for (var l = part * 8u; l < part * 8u + 8u; l = l + 1u) {
            s8 = s8 + partial[(l * CT + slot / GROUPS) * GROUPS + slot % GROUPS];
        }
        parts[part * CT * GROUPS + slot] = s8;
    }
    workgroupBarrier();
    if (tid < CT * GROUPS && col < p.n && row0 + 0u < p.m) {
        var s = vec4<f32>(0.0);
        for (var l = 0u; l < PARTS; l = l + 1u) {
            s = s + parts[l * CT * GROUPS + tid];
        }
        let row = row0 + 0u;
        for (var j = 0u; j < 4u; j = j + 1u) {
            let o = c_base + row * p.c_rs + (col + j) * p.c_cs;
            out[o] = f16(epilogue_at(s[j], bias_base + row * p.bias_rs + (col + j) * p.bias_cs, o));
        }
    }
}
