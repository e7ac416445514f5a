// f32l_f32l__minf32_i0_i1__w4
struct Params {
    count: u32,
    total: u32,
    rank: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> in0: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> in1: array<vec4<f32>>;
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

// max and min that return NaN when either operand is NaN, as ONNX Runtime's.
fn ew_max(a: f32, b: f32) -> f32 {
    return select(select(max(a, b), b, ew_nan(b)), a, ew_nan(a));
}

fn ew_min(a: f32, b: f32) -> f32 {
    return select(select(min(a, b), b, ew_nan(b)), a, ew_nan(a));
}

// Each invocation computes 4 consecutive elements: whole vec4s of the output and of each
// input of its shape, loaded and stored as such.
fn value(x0: f32, x1: f32) -> f32 {
    let v0: f32 = ew_min(x0, x1);
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
