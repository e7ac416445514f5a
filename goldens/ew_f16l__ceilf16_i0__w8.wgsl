enable f16;

// f16l__ceilf16_i0__w8
struct Params {
    count: u32,
    total: u32,
    rank: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> in0: array<vec4<f16>>;
@group(0) @binding(1) var<storage, read_write> out: array<vec4<f16>>;
@group(0) @binding(2) var<uniform> P: Params;


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

// f32 to f16 as IEEE rounds: |x| >= 65520 becomes infinity (WGSL leaves out-of-range
// conversions undefined), NaN stays NaN.
fn ew_f16(x: f32) -> f16 {
    if (abs(x) < 65520.0) {
        return f16(x);
    }
    let bits = select(0x7f800000u, 0xff800000u, x < 0.0) | select(0u, 0x00400000u, ew_nan(x));
    return f16(bitcast<f32>(bits));
}

// An f16 value held in f32: rounded as ONNX Runtime rounds after each f16 op.
fn ew_r16(x: f32) -> f32 {
    return f32(ew_f16(x));
}

// Each invocation computes 8 consecutive elements: whole vec4s of the output and of each
// input of its shape, loaded and stored as such.
fn value(x0: f32) -> f32 {
    let v0: f32 = ceil(x0);
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
    let a0_0 = in0[i * 2u + 0u];
    let a0_1 = in0[i * 2u + 1u];
    out[i * 2u + 0u] = vec4<f16>(ew_f16(value(f32(a0_0[0]))), ew_f16(value(f32(a0_0[1]))), ew_f16(value(f32(a0_0[2]))), ew_f16(value(f32(a0_0[3]))));
    out[i * 2u + 1u] = vec4<f16>(ew_f16(value(f32(a0_1[0]))), ew_f16(value(f32(a0_1[1]))), ew_f16(value(f32(a0_1[2]))), ew_f16(value(f32(a0_1[3]))));
}
