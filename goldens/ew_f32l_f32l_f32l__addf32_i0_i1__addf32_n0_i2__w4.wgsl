// f32l_f32l_f32l__addf32_i0_i1__addf32_n0_i2__w4
struct Params {
    count: u32,
    total: u32,
    rank: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> in0: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> in1: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> in2: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(4) var<uniform> P: Params;


// Each invocation computes 4 consecutive elements: whole vec4s of the output and of each
// input of its shape, loaded and stored as such.
fn value(x0: f32, x1: f32, x2: f32) -> f32 {
    let v0: f32 = x0 + x1;
    let v1: f32 = v0 + x2;
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
    let a0_0 = in0[i];
    let a1_0 = in1[i];
    let a2_0 = in2[i];
    out[i] = vec4<f32>(value(a0_0[0], a1_0[0], a2_0[0]), value(a0_0[1], a1_0[1], a2_0[1]), value(a0_0[2], a1_0[2], a2_0[2]), value(a0_0[3], a1_0[3], a2_0[3]));
}
