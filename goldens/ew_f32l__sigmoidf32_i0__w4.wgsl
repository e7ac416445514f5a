// f32l__sigmoidf32_i0__w4
struct Params {
    count: u32,
    total: u32,
    rank: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> in0: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(2) var<uniform> P: Params;


// 1 / (1 + exp(-x)) through exp(-|x|), which never overflows.
fn ew_sigmoid(x: f32) -> f32 {
    let e = exp(-abs(x));
    let r = 1.0 / (1.0 + e);
    return select(e * r, r, x >= 0.0);
}

// Each invocation computes 4 consecutive elements: whole vec4s of the output and of each
// input of its shape, loaded and stored as such.
fn value(x0: f32) -> f32 {
    let v0: f32 = ew_sigmoid(x0);
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
