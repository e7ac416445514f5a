// f32l_f32b__preluf32_i0_i1
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
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> P: Params;


fn value(o: u32) -> f32 {
    var rem = o;
    var j0 = 0u;
    for (var d = 0u; d < P.rank; d++) {
        let n = P.dims[d / 4u][d % 4u];
        let c = rem % n;
        rem = rem / n;
        j0 += c * P.strides[0u + d / 4u][d % 4u];
    }
    let x0 = in0[o];
    let x1 = in1[j0];
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
    out[i] = value(i);
}
