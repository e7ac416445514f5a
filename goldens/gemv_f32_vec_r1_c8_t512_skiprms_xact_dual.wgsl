@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<vec4<f32>>;

@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;
@group(0) @binding(6) var<storage, read> b_up: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read> skip: array<f32>;
@group(0) @binding(8) var<storage, read> gamma: array<f32>;
@group(0) @binding(9) var<storage, read_write> sum_out: array<f32>;
@group(0) @binding(10) var<storage, read> norm_eps: array<f32>;

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

const ROWS: u32 = 1u;
const CT: u32 = 8u;
const KT: u32 = 64u;
const VEC: u32 = 4u;
// vec4 accumulators per invocation and row (4 columns).
const GROUPS: u32 = 1u;

var<workgroup> partial: array<vec4<f32>, 512>;
// The K lanes summed 8 at a time first, then those 8 sums.
const PARTS: u32 = 8u;
var<workgroup> parts: array<vec4<f32>, 64>;
// Each K lane's squares of x + skip, then sums of eight of them.
var<workgroup> squares: array<f32, 64>;
var<workgroup> square_parts: array<f32, 8>;

// A's element k of the row at `at`: (x + skip)·γ; `ss` gains (x + skip)² and the first workgroup's
// column-0 lanes store x + skip.
fn a_at(at: u32, k: u32, ss: ptr<function, f32>, first: bool) -> f32 {
    let x = f32(a[at]) + f32(skip[k]);
    *ss = fma(x, x, *ss);
    if (first) {
        sum_out[k] = f32(x);
    }
    return x * f32(gamma[k]);
}

fn load_b(i: u32) -> array<vec4<f32>, 1> {
    return array<vec4<f32>, 1>(b[i]);
}

fn load_up(i: u32) -> array<vec4<f32>, 1> {
    return array<vec4<f32>, 1>(b_up[i]);
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
    var up0_0 = vec4<f32>(0.0);
    // Only the column-0 lanes count squares (every column lane reads the same A).
    var ss = 0.0;
    let first = lin == 0u && c_lane == 0u;
    if (col0 < p.n) {
        let arow0 = a_base + min(row0 + 0u, p.m - 1u) * p.a_rs;
        var k = k_begin + k_lane;
        // 8 loads in flight, then their multiply-adds.
        for (; k + 7u * KT < k_end; k = k + 8u * KT) {
            let b0 = load_b((b_base + (k + 0u * KT) * p.b_rs) / VEC);
            let c0 = load_up((b_base + (k + 0u * KT) * p.b_rs) / VEC);
            let b1 = load_b((b_base + (k + 1u * KT) * p.b_rs) / VEC);
            let c1 = load_up((b_base + (k + 1u * KT) * p.b_rs) / VEC);
            let b2 = load_b((b_base + (k + 2u * KT) * p.b_rs) / VEC);
            let c2 = load_up((b_base + (k + 2u * KT) * p.b_rs) / VEC);
            let b3 = load_b((b_base + (k + 3u * KT) * p.b_rs) / VEC);
            let c3 = load_up((b_base + (k + 3u * KT) * p.b_rs) / VEC);
            let b4 = load_b((b_base + (k + 4u * KT) * p.b_rs) / VEC);
            let c4 = load_up((b_base + (k + 4u * KT) * p.b_rs) / VEC);
            let b5 = load_b((b_base + (k + 5u * KT) * p.b_rs) / VEC);
            let c5 = load_up((b_base + (k + 5u * KT) * p.b_rs) / VEC);
            let b6 = load_b((b_base + (k + 6u * KT) * p.b_rs) / VEC);
            let c6 = load_up((b_base + (k + 6u * KT) * p.b_rs) / VEC);
            let b7 = load_b((b_base + (k + 7u * KT) * p.b_rs) / VEC);
            let c7 = load_up((b_base + (k + 7u * KT) * p.b_rs) / VEC);
            let a0_0 = a_at(arow0 + (k + 0u * KT) * p.a_cs, k + 0u * KT, &ss, first);
            acc0_0 = fma(vec4<f32>(a0_0), b0[0], acc0_0);
            up0_0 = fma(vec4<f32>(a0_0), c0[0], up0_0);
            let a1_0 = a_at(arow0 + (k + 1u * KT) * p.a_cs, k + 1u * KT, &ss, first);
            acc0_0 = fma(vec4<f32>(a1_0), b1[0], acc0_0);
            up0_0 = fma(vec4<f32>(a1_0), c1[0], up0_0);
            let a2_0 = a_at(arow0 + (k + 2u * KT) * p.a_cs, k + 2u * KT, &ss, first);
            acc0_0 = fma(vec4<f32>(a2_0), b2[0], acc0_0);
            up0_0 = fma(vec4<f32>(a2_0), c2[0], up0_0);
            let a3_0 = a_at(arow0 + (k + 3u * KT) * p.a_cs, k + 3u * KT, &ss, first);
            acc0_0 = fma(vec4<f32>(a3_0), b3[0], acc0_0);
            up0_0 = fma(vec4<f32>(a3_0), c3[0], up0_0);
            let a4_0 = a_at(arow0 + (k + 4u * KT) * p.a_cs, k + 4u * KT, &ss, first);
            acc0_0 = fma(vec4<f32>(a4_0), b4[0], acc0_0);
            up0_0 = fma(vec4<f32>(a4_0), c4[0], up0_0);
            let a5_0 = a_at(arow0 + (k + 5u * KT) * p.a_cs, k + 5u * KT, &ss, first);
            acc0_0 = fma(vec4<f32>(a5_0), b5[0], acc0_0);
            up0_0 = fma(vec4<f32>(a5_0), c5[0], up0_0);
            let a6_0 = a_at(arow0 + (k + 6u * KT) * p.a_cs, k + 6u * KT, &ss, first);
            acc0_0 = fma(vec4<f32>(a6_0), b6[0], acc0_0);
            up0_0 = fma(vec4<f32>(a6_0), c6[0], up0_0);
            let a7_0 = a_at(arow0 + (k + 7u * KT) * p.a_cs, k + 7u * KT, &ss, first);
            acc0_0 = fma(vec4<f32>(a7_0), b7[0], acc0_0);
            up0_0 = fma(vec4<f32>(a7_0), c7[0], up0_0);
        }
        for (; k < k_end; k = k + KT) {
            let bv = load_b((b_base + k * p.b_rs) / VEC);
            let cv = load_up((b_base + k * p.b_rs) / VEC);
            let av0 = a_at(arow0 + k * p.a_cs, k, &ss, first);
            acc0_0 = fma(vec4<f32>(av0), bv[0], acc0_0);
            up0_0 = fma(vec4<f32>(av0), cv[0], up0_0);
        }
    }
    let c_base = batch_offset(batch, p.c_bs);
    let bias_base = batch_offset(batch, p.bias_bs);
    // Invocation `tid` < CT·GROUPS adds the K lanes of one vec4 of columns.
    let sum_lane = tid / GROUPS;
    let sum_group = tid % GROUPS;
    let col = (tile_n * CT + sum_lane) * VEC + sum_group * 4u;
    if (c_lane == 0u) {
        squares[k_lane] = ss;
    }
    // The gate's sums (scaled by the norm), kept for the up projection's pass.
    var gate = vec4<f32>(0.0);
    workgroupBarrier();
    partial[(k_lane * CT + c_lane) * GROUPS + 0u] = acc0_0;
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
    // The squares, eight at a time, by the last PARTS invocations (apart from those above).
    if (tid >= 512u - PARTS) {
        let part = tid - (512u - PARTS);
        var q8 = 0.0;
        for (var l = part * 8u; l < part * 8u + 8u; l = l + 1u) {
            q8 = q8 + squares[l];
        }
        square_parts[part] = q8;
    }
    workgroupBarrier();
    if (tid < CT * GROUPS && col < p.n && row0 + 0u < p.m) {
        var s = vec4<f32>(0.0);
        for (var l = 0u; l < PARTS; l = l + 1u) {
            s = s + parts[l * CT * GROUPS + tid];
        }
        var sq = 0.0;
        for (var l = 0u; l < PARTS; l = l + 1u) {
            sq = sq + square_parts[l];
        }
        s = s * inverseSqrt(sq / f32(p.k) + norm_eps[0]);
        gate = s;
    }
    workgroupBarrier();
    partial[(k_lane * CT + c_lane) * GROUPS + 0u] = up0_0;
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
        var sq = 0.0;
        for (var l = 0u; l < PARTS; l = l + 1u) {
            sq = sq + square_parts[l];
        }
        s = s * inverseSqrt(sq / f32(p.k) + norm_eps[0]);
        let row = row0 + 0u;
        for (var j = 0u; j < 4u; j = j + 1u) {
            let v = epilogue(gate[j], bias_base + row * p.bias_rs + (col + j) * p.bias_cs) * s[j];
            out[c_base + row * p.c_rs + (col + j) * p.c_cs] = f32(v);
        }
    }
}
