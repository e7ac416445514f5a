// f32b_f32l_f32s__maxf32_i0_i1__maxf32_n0_i2__w4
struct Params {
    count: u32,
    total: u32,
    rank: u32,
    pad: u32,
    dims: array<vec4<u32>, 2>,
    strides: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read> in1: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> in2: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(4) var<uniform> P: Params;


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

// max and min that return NaN when either operand is NaN, as ONNX Runtime's.
fn ew_max(a: f32, b: f32) -> f32 {
    return select(select(max(a, b), b, ew_nan(b)), a, ew_nan(a));
}

fn ew_min(a: f32, b: f32) -> f32 {
    return select(select(min(a, b), b, ew_nan(b)), a, ew_nan(a));
}

// Each invocation computes 4 consecutive elements: whole vec4s of the output and of each
// input of its shape, loaded and stored as such.
fn value(x0: f32, x1: f32, x2: f32) -> f32 {
    let v0: f32 = ew_max(x0, x1);
    let v1: f32 = ew_max(v0, x2);
    return v1;
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
    let o = i * 4u;
    var rem = o;
    var j0 = 0u;
    for (var d = 0u; d < P.rank; d++) {
        let n = P.dims[d / 4u][d % 4u];
        let c = rem % n;
        rem = rem / n;
        j0 += c * P.strides[0u + d / 4u][d % 4u];
    }
    let s0 = P.strides[0u].x;
    let a1_0 = in1[i];
    let a2 = in2[0u];
    out[i] = vec4<f32>(value(in0[j0 + 0u * s0], a1_0[0], a2), value(in0[j0 + 1u * s0], a1_0[1], a2), value(in0[j0 + 2u * s0], a1_0[2], a2), value(in0[j0 + 3u * s0], a1_0[3], a2));
}
