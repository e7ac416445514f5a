enable f16;

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

const BM: u32 = 64u;
const BN: u32 = 64u;
const BK: u32 = 16u;
const THREADS: u32 = 256u;

// A slice stored k-major ([BK][BM]) and B slice [BK][BN], so the inner loop reads rows.
var<workgroup> a_tile: array<f16, 1024>;
var<workgroup> b_tile: array<f16, 1024>;

@compute @workgroup_size(16, 16, 1)
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
    let row0 = tile_m * BM;
    let col0 = tile_n * BN;
    let a_base = batch_offset(batch, p.a_bs);
    let b_base = batch_offset(batch, p.b_bs);
    let k_begin = split * p.k_chunk;
    let k_end = min(p.k, k_begin + p.k_chunk);
    // Load mappings follow the contiguous dimension of each operand so global reads coalesce.
    let a_k_fast = p.a_cs == 1u;
    let b_n_fast = p.b_cs == 1u;

    var acc_0_0: f32 = 0.0;
    var acc_0_1: f32 = 0.0;
    var acc_0_2: f32 = 0.0;
    var acc_0_3: f32 = 0.0;
    var acc_1_0: f32 = 0.0;
    var acc_1_1: f32 = 0.0;
    var acc_1_2: f32 = 0.0;
    var acc_1_3: f32 = 0.0;
    var acc_2_0: f32 = 0.0;
    var acc_2_1: f32 = 0.0;
    var acc_2_2: f32 = 0.0;
    var acc_2_3: f32 = 0.0;
    var acc_3_0: f32 = 0.0;
    var acc_3_1: f32 = 0.0;
    var acc_3_2: f32 = 0.0;
    var acc_3_3: f32 = 0.0;

    for (var k0 = k_begin; k0 < k_end; k0 = k0 + BK) {
        for (var l = 0u; l < 4u; l = l + 1u) {
            let e = tid + l * THREADS;
            var r = e % BM;
            var kk = e / BM;
            if (a_k_fast) {
                r = e / BK;
                kk = e % BK;
            }
            let gr = row0 + r;
            let gk = k0 + kk;
            var v: f16 = f16(0.0);
            if (gr < p.m && gk < k_end) {
                v = a[a_base + gr * p.a_rs + gk * p.a_cs];
            }
            a_tile[kk * BM + r] = v;
        }
        for (var l = 0u; l < 4u; l = l + 1u) {
            let e = tid + l * THREADS;
            var c = e / BK;
            var kk = e % BK;
            if (b_n_fast) {
                c = e % BN;
                kk = e / BN;
            }
            let gc = col0 + c;
            let gk = k0 + kk;
            var v: f16 = f16(0.0);
            if (gc < p.n && gk < k_end) {
                v = b[b_base + gk * p.b_rs + gc * p.b_cs];
            }
            b_tile[kk * BN + c] = v;
        }
        workgroupBarrier();
        for (var kk = 0u; kk < BK; kk = kk + 1u) {
            let a0 = f32(a_tile[kk * BM + lid.y + 0u]);
            let a1 = f32(a_tile[kk * BM + lid.y + 16u]);
            let a2 = f32(a_tile[kk * BM + lid.y + 32u]);
            let a3 = f32(a_tile[kk * BM + lid.y + 48u]);
            let b0 = f32(b_tile[kk * BN + lid.x + 0u]);
            let b1 = f32(b_tile[kk * BN + lid.x + 16u]);
            let b2 = f32(b_tile[kk * BN + lid.x + 32u]);
            let b3 = f32(b_tile[kk * BN + lid.x + 48u]);
            acc_0_0 = fma(a0, b0, acc_0_0);
            acc_0_1 = fma(a0, b1, acc_0_1);
            acc_0_2 = fma(a0, b2, acc_0_2);
            acc_0_3 = fma(a0, b3, acc_0_3);
            acc_1_0 = fma(a1, b0, acc_1_0);
            acc_1_1 = fma(a1, b1, acc_1_1);
            acc_1_2 = fma(a1, b2, acc_1_2);
            acc_1_3 = fma(a1, b3, acc_1_3);
            acc_2_0 = fma(a2, b0, acc_2_0);
            acc_2_1 = fma(a2, b1, acc_2_1);
            acc_2_2 = fma(a2, b2, acc_2_2);
            acc_2_3 = fma(a2, b3, acc_2_3);
            acc_3_0 = fma(a3, b0, acc_3_0);
            acc_3_1 = fma(a3, b1, acc_3_1);
            acc_3_2 = fma(a3, b2, acc_3_2);
            acc_3_3 = fma(a3, b3, acc_3_3);
        }
        workgroupBarrier();
    }

    let out_base = (split * p.batch_count + batch) * p.m * p.n;
    let out_row0 = row0 + lid.y + 0u;
    let out_row1 = row0 + lid.y + 16u;
    let out_row2 = row0 + lid.y + 32u;
    let out_row3 = row0 + lid.y + 48u;
    let out_col0 = col0 + lid.x + 0u;
    let out_col1 = col0 + lid.x + 16u;
    let out_col2 = col0 + lid.x + 32u;
    let out_col3 = col0 + lid.x + 48u;
    if (out_row0 < p.m) {
        if (out_col0 < p.n) {
            out[out_base + out_row0 * p.n + out_col0] = acc_0_0;
        }
        if (out_col1 < p.n) {
            out[out_base + out_row0 * p.n + out_col1] = acc_0_1;
        }
        if (out_col2 < p.n) {
            out[out_base + out_row0 * p.n + out_col2] = acc_0_2;
        }
        if (out_col3 < p.n) {
            out[out_base + out_row0 * p.n + out_col3] = acc_0_3;
        }
    }
    if (out_row1 < p.m) {
        if (out_col0 < p.n) {
            out[out_base + out_row1 * p.n + out_col0] = acc_1_0;
        }
        if (out_col1 < p.n) {
            out[out_base + out_row1 * p.n + out_col1] = acc_1_1;
        }
        if (out_col2 < p.n) {
            out[out_base + out_row1 * p.n + out_col2] = acc_1_2;
        }
        if (out_col3 < p.n) {
            out[out_base + out_row1 * p.n + out_col3] = acc_1_3;
        }
    }
    if (out_row2 < p.m) {
        if (out_col0 < p.n) {
            out[out_base + out_row2 * p.n + out_col0] = acc_2_0;
        }
        if (out_col1 < p.n) {
            out[out_base + out_row2 * p.n + out_col1] = acc_2_1;
        }
        if (out_col2 < p.n) {
            out[out_base + out_row2 * p.n + out_col2] = acc_2_2;
        }
        if (out_col3 < p.n) {
            out[out_base + out_row2 * p.n + out_col3] = acc_2_3;
        }
    }
    if (out_row3 < p.m) {
        if (out_col0 < p.n) {
            out[out_base + out_row3 * p.n + out_col0] = acc_3_0;
        }
        if (out_col1 < p.n) {
            out[out_base + out_row3 * p.n + out_col1] = acc_3_1;
        }
        if (out_col2 < p.n) {
            out[out_base + out_row3 * p.n + out_col2] = acc_3_2;
        }
        if (out_col3 < p.n) {
            out[out_base + out_row3 * p.n + out_col3] = acc_3_3;
        }
    }
}
