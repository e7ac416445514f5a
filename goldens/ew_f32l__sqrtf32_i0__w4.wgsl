// f32l__sqrtf32_i0__w4
struct Params {
    count: u32,
    total: u32,
    rank: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> in0: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> out: array<vec4<f32>>;
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

// The logarithm and the square root with NaN below zero written out, and the exponential with
// its overflow to infinity and underflow to 0: a driver that assumes no NaN or infinity (Vulkan
// without SignedZeroInfNanPreserve, which WGSL cannot ask for) folds exp(log(x)), sqrt(x)² and
// log(exp(x)) to x inside one kernel (llvmpipe did, and IsNaN or IsInf after them saw none).
fn ew_exp(x: f32) -> f32 {
    // ±inf from x's own bits (a non-finite constant is invalid WGSL); +inf where it is taken.
    let inf = bitcast<f32>((bitcast<u32>(x) & 0x80000000u) | 0x7f800000u);
    return select(select(exp(x), 0.0, x < -103.97208), inf, x > 88.72284);
}

fn ew_log(x: f32) -> f32 {
    return select(log(x), ew_nan_of(x), x < 0.0);
}

fn ew_sqrt(x: f32) -> f32 {
    return select(sqrt(x), ew_nan_of(x), x < 0.0);
}

// Each invocation computes 4 consecutive elements: whole vec4s of the output and of each
// input of its shape, loaded and stored as such.
fn value(x0: f32) -> f32 {
    let v0: f32 = ew_sqrt(x0);
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
    out[i] = vec4<f32>(value(a0_0[0]), value(a0_0[1]), value(a0_0[2]), value(a0_0[3]));
}
