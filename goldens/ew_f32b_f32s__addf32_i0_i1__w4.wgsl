// f32b_f32s__addf32_i0_i1__w4
struct Params {
    count: u32,
    total: u32,
    rank: u32,
    pad: u32,
    dims: array<vec4<u32>, 2>,
    strides: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read> in1: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> P: Params;


// Each invocation computes 4 consecutive elements: whole vec4s of the output and of each
// input of its shape, loaded and stored as such.
fn value(x0: f32, x1: f32) -> f32 {
    let v0: f32 = x0 + x1;
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
    let a1 = in1[0u];
    out[i] = vec4<f32>(value(in0[j0 + 0u * s0], a1), value(in0[j0 + 1u * s0], a1), value(in0[j0 + 2u * s0], a1), value(in0[j0 + 3u * s0], a1));
}
