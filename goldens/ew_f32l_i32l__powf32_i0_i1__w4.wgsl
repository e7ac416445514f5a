// f32l_i32l__powf32_i0_i1__w4
struct Params {
    count: u32,
    total: u32,
    rank: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> in0: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> in1: array<vec4<i32>>;
@group(0) @binding(2) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> P: Params;


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

// C's pow: exact squares; a negative base only to an integer power (negative when odd);
// zero, infinite and NaN operands by the C rules.
fn ew_pow(x: f32, y: f32) -> f32 {
    if (y == 2.0) {
        return x * x;
    }
    if (y == 0.0 || x == 1.0) {
        return 1.0;
    }
    if (ew_nan(x) || ew_nan(y)) {
        return ew_nan_of(x + y);
    }
    let ax = abs(x);
    let integral = floor(y) == y;
    let odd = integral && abs(y) < 16777216.0 && fract(y * 0.5) != 0.0;
    var r: f32;
    if (ew_inf(y)) {
        r = select(select(0.0, ew_infinity(1.0), (ax > 1.0) == (y > 0.0)), 1.0, ax == 1.0);
    } else if (ax == 0.0) {
        r = select(0.0, ew_infinity(1.0), y < 0.0);
    } else if (ew_inf(ax)) {
        r = select(0.0, ew_infinity(1.0), y > 0.0);
    } else if (x < 0.0 && !integral) {
        return ew_nan_of(x);
    } else {
        r = exp2(y * log2(ax));
    }
    return select(r, -r, odd && bitcast<u32>(x) >= 0x80000000u);
}

// Each invocation computes 4 consecutive elements: whole vec4s of the output and of each
// input of its shape, loaded and stored as such.
fn value(x0: f32, x1: i32) -> f32 {
    let v0: f32 = ew_pow(x0, f32(x1));
    return v0;
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if (i >= P.count) {
        return;
    }
    let a0_0 = in0[i];
    let a1_0 = in1[i];
    out[i] = vec4<f32>(value(a0_0[0], a1_0[0]), value(a0_0[1], a1_0[1]), value(a0_0[2], a1_0[2]), value(a0_0[3], a1_0[3]));
}
