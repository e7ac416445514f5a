@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> weights: array<f32>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

struct Params {
    n: u32,
    c: u32,
    h: u32,
    w: u32,
    m: u32,
    oh: u32,
    ow: u32,
    pixels: u32,
    kh: u32,
    kw: u32,
    stride_h: u32,
    stride_w: u32,
    dil_h: u32,
    dil_w: u32,
    pad_top: u32,
    pad_left: u32,
    c_per_group: u32,
    m_per_group: u32,
    col_k: u32,
    k_per_thread: u32,
    tiles_k: u32,
    invocations: u32,
    grid_x: u32,
    grid_y: u32,
    total_workgroups: u32,
    flags: u32,
    clip_min: f32,
    clip_max: f32,
}

// Linear workgroup index of a (possibly folded) 3-D grid.
fn linear_workgroup(wid: vec3<u32>) -> u32 {
    return wid.x + p.grid_x * (wid.y + p.grid_y * wid.z);
}

// Input row/column of the first kernel tap for an output row/column. Padding makes it
// "negative": u32 arithmetic wraps, so it and every tap left of the image compare ≥ the
// image size and read as zero, and adding the dilation wraps back into range.
fn first_tap(out_index: u32, stride: u32, pad: u32) -> u32 {
    return out_index * stride - pad;
}

const THREADS: u32 = 256u;

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


// Bias, then the activation. NaN passes through like ONNX Runtime's CPU EP.
fn epilogue(acc: f32, channel: u32) -> f32 {
    var v = acc;
    if ((p.flags & 1u) != 0u) {
        v = v + f32(bias[channel]);
    }
    return activation(v);
}

@group(0) @binding(6) var<storage, read> residual: array<f32>;

// The epilogue with the residual operand (the output's shape, so the output's index) added: a
// conv's alpha is 1, so before the activation it joins the accumulator; after it with flag bit 9.
fn epilogue_at(acc: f32, channel: u32, out_index: u32) -> f32 {
    let r = f32(residual[out_index]);
    if ((p.flags & 512u) != 0u) {
        return epilogue(acc, channel) + r;
    }
    return epilogue(acc + r, channel);
}

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let lin = linear_workgroup(wid);
    let idx = lin * THREADS + tid;
    if (lin >= p.total_workgroups || idx >= p.invocations) {
        return;
    }
    let pix = idx % p.pixels;
    let image_channel = idx / p.pixels;
    let channel = image_channel % p.m;
    let n = image_channel / p.m;
    let oh = pix / p.ow;
    let ow = pix - oh * p.ow;
    let ih0 = first_tap(oh, p.stride_h, p.pad_top);
    let iw0 = first_tap(ow, p.stride_w, p.pad_left);
    let group = channel / p.m_per_group;
    let plane = p.h * p.w;
    var x_plane = (n * p.c + group * p.c_per_group) * plane;
    var w_row = channel * p.c_per_group * p.kh * p.kw;

    var acc: f32 = 0.0;
    for (var c = 0u; c < p.c_per_group; c = c + 1u) {
        var ih = ih0;
        for (var i = 0u; i < p.kh; i = i + 1u) {
            if (ih < p.h) {
                let x_row = x_plane + ih * p.w;
                var iw = iw0;
                for (var j = 0u; j < p.kw; j = j + 1u) {
                    if (iw < p.w) {
                        acc = fma(f32(x[x_row + iw]), f32(weights[w_row + j]), acc);
                    }
                    iw = iw + p.dil_w;
                }
            }
            ih = ih + p.dil_h;
            w_row = w_row + p.kw;
        }
        x_plane = x_plane + plane;
    }
    out[idx] = f32(epilogue_at(acc, channel, idx));
}
