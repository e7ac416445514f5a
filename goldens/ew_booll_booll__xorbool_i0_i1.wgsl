// booll_booll__xorbool_i0_i1
struct Params {
    count: u32,
    total: u32,
    rank: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> in0: array<u32>;
@group(0) @binding(1) var<storage, read> in1: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
@group(0) @binding(3) var<uniform> P: Params;


// Byte j (of its word w) of a bool tensor.
fn ew_bool(w: u32, j: u32) -> bool {
    return ((w >> ((j & 3u) * 8u)) & 0xffu) != 0u;
}

fn value(o: u32) -> bool {
    let x0 = ew_bool(in0[o >> 2u], o);
    let x1 = ew_bool(in1[o >> 2u], o);
    let v0: bool = x0 != x1;
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
    // Four elements to a word, written whole by this invocation alone.
    var w = 0u;
    for (var e = 0u; e < 4u; e++) {
        let o = i * 4u + e;
        if (o < P.total && value(o)) {
            w |= 1u << (e * 8u);
        }
    }
    out[i] = w;
}
