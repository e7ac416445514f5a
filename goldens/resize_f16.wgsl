enable f16;

struct Params {
    count: u32,
    rank: u32,
    // 0 nearest, 1 linear.
    linear: u32,
    // 0 half_pixel, 1 asymmetric, 2 pytorch_half_pixel, 3 align_corners, 4 tf_half_pixel_for_nn,
    // 5 half_pixel_symmetric.
    coordinates: u32,
    // 0 round_prefer_floor, 1 round_prefer_ceil, 2 floor, 3 ceil, 4 simple (ceil when
    // downsampling, else floor).
    nearest: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
    in_shape: array<vec4<u32>, 2>,
    out_shape: array<vec4<u32>, 2>,
    scales: array<vec4<f32>, 2>,
}

@group(0) @binding(0) var<storage, read> x: array<f16>;
@group(0) @binding(1) var<storage, read_write> y: array<f16>;
@group(0) @binding(2) var<uniform> p: Params;

fn in_len(d: u32) -> u32 {
    return p.in_shape[d / 4u][d % 4u];
}

fn out_len(d: u32) -> u32 {
    return p.out_shape[d / 4u][d % 4u];
}

// a / b as IEEE division rounds it: a driver may divide through an approximate reciprocal (the
// NVIDIA driver gave (3 + 0.5) / 3.5 = 1.0000001), which moves a nearest-mode tie such as 0.5 to
// the next pixel. One correction by the rest a − q·b, exact when fma is fused (it is on GPUs), brings
// q to the rounded quotient.
fn div_exact(a: f32, b: f32) -> f32 {
    let q = a / b;
    return q + fma(-q, b, a) / b;
}

// The input coordinate of output position o along axis d, computed as ONNX Runtime's CPU EP does.
fn coordinate(o: u32, d: u32) -> f32 {
    let s = p.scales[d / 4u][d % 4u];
    let n_in = f32(in_len(d));
    // The resized length before rounding (ONNX's length_resized when scales are given).
    let n_out = s * n_in;
    let xo = f32(o);
    switch p.coordinates {
        case 1u: {
            return div_exact(xo, s);
        }
        case 2u: {
            return select(0.0, div_exact(xo + 0.5, s) - 0.5, n_out > 1.0);
        }
        case 3u: {
            return select(div_exact(xo * (n_in - 1.0), n_out - 1.0), 0.0, n_out == 1.0);
        }
        case 4u: {
            return div_exact(xo + 0.5, s);
        }
        case 5u: {
            let adjustment = div_exact(f32(out_len(d)), n_out);
            let offset = n_in * 0.5 * (1.0 - adjustment);
            return offset + div_exact(xo + 0.5, s) - 0.5;
        }
        default: {
            return div_exact(xo + 0.5, s) - 0.5;
        }
    }
}

// The input index nearest coordinate c along axis d.
fn nearest(c: f32, d: u32) -> u32 {
    var i: f32;
    let half = fract(c) == 0.5;
    switch p.nearest {
        case 1u: {
            i = select(round(c), ceil(c), half);
        }
        case 2u: {
            i = floor(c);
        }
        case 3u: {
            i = ceil(c);
        }
        case 4u: {
            i = select(trunc(c), ceil(c), p.scales[d / 4u][d % 4u] < 1.0);
        }
        default: {
            i = select(round(c), floor(c), half);
        }
    }
    return u32(clamp(i, 0.0, f32(in_len(d)) - 1.0));
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let e = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if e >= p.count {
        return;
    }
    // The input offset of the non-interpolated axes; for linear, the two last axes' taps.
    var rest = e;
    var base = 0u;
    var stride = 1u;
    var i0 = vec2<u32>(0u);
    var i1 = vec2<u32>(0u);
    var w = vec2<f32>(0.0);
    var strides = vec2<u32>(0u);
    for (var k = 0u; k < p.rank; k++) {
        let d = p.rank - 1u - k;
        let o = rest % out_len(d);
        rest = rest / out_len(d);
        if p.linear != 0u && k < 2u {
            let c = clamp(coordinate(o, d), 0.0, f32(in_len(d)) - 1.0);
            let lo = u32(floor(c));
            i0[k] = lo;
            i1[k] = min(lo + 1u, in_len(d) - 1u);
            w[k] = c - f32(lo);
            strides[k] = stride;
        } else if p.linear != 0u {
            base += o * stride;
        } else {
            base += nearest(coordinate(o, d), d) * stride;
        }
        stride *= in_len(d);
    }
    if p.linear == 0u {
        y[e] = x[base];
        return;
    }
    // k = 0 is the last axis (x), k = 1 the one before (y; stride 0 and weight 0 at rank 1).
    let a = f32(x[base + i0.y * strides.y + i0.x * strides.x]);
    let b = f32(x[base + i0.y * strides.y + i1.x * strides.x]);
    let c = f32(x[base + i1.y * strides.y + i0.x * strides.x]);
    let dd = f32(x[base + i1.y * strides.y + i1.x * strides.x]);
    let top = a + (b - a) * w.x;
    let bottom = c + (dd - c) * w.x;
    y[e] = f16(top + (bottom - top) * w.y);
}
