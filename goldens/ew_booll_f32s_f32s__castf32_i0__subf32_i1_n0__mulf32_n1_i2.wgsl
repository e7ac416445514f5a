// booll_f32s_f32s__castf32_i0__subf32_i1_n0__mulf32_n1_i2
struct Params {
    count: u32,
    total: u32,
    rank: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> in0: array<u32>;
@group(0) @binding(1) var<storage, read> in1: array<f32>;
@group(0) @binding(2) var<storage, read> in2: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<uniform> P: Params;


// Byte j (of its word w) of a bool tensor.
fn ew_bool(w: u32, j: u32) -> bool {
    return ((w >> ((j & 3u) * 8u)) & 0xffu) != 0u;
}

fn value(o: u32) -> f32 {
    let x0 = ew_bool(in0[o >> 2u], o);
    let x1 = in1[0u];
    let x2 = in2[0u];
    let v0: f32 = select(0.0, 1.0, x0);
    let v1: f32 = x1 - v0;
    let v2: f32 = v1 * x2;
    return v2;
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
