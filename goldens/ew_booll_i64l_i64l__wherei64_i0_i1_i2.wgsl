// booll_i64l_i64l__wherei64_i0_i1_i2
struct Params {
    count: u32,
    total: u32,
    rank: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> in0: array<u32>;
@group(0) @binding(1) var<storage, read> in1: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> in2: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read_write> out: array<vec2<u32>>;
@group(0) @binding(4) var<uniform> P: Params;


// Byte j (of its word w) of a bool tensor.
fn ew_bool(w: u32, j: u32) -> bool {
    return ((w >> ((j & 3u) * 8u)) & 0xffu) != 0u;
}

fn value(o: u32) -> vec2<u32> {
    let x0 = ew_bool(in0[o >> 2u], o);
    let x1 = in1[o];
    let x2 = in2[o];
    let v0: vec2<u32> = select(x2, x1, x0);
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
