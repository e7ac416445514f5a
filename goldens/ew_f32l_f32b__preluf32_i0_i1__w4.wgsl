// f32l_f32b__preluf32_i0_i1__w4
struct Params {
    count: u32,
    total: u32,
    rank: u32,
    pad: u32,
    dims: array<vec4<u32>, 2>,
    strides: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read> in0: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> in1: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> P: Params;


// Each invocation computes 4 consecutive elements: whole vec4s of the output and of each
// input of its shape, loaded and stored as such.
fn value(x0: f32, x1: f32) -> f32 {
    let v0: f32 = select(x0, x0 * x1, x0 < 0.0);
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
    let a0_0 = in0[i];
    let s0 = P.strides[0u].x;
    out[i] = vec4<f32>(value(a0_0[0], in1[j0 + 0u * s0]), value(a0_0[1], in1[j0 + 1u * s0]), value(a0_0[2], in1[j0 + 2u * s0]), value(a0_0[3], in1[j0 + 3u * s0]));
}
