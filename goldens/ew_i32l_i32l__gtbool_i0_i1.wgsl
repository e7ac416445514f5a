// i32l_i32l__gtbool_i0_i1
struct Params {
    count: u32,
    total: u32,
    rank: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> in0: array<i32>;
@group(0) @binding(1) var<storage, read> in1: array<i32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
@group(0) @binding(3) var<uniform> P: Params;


fn value(o: u32) -> bool {
    let x0 = in0[o];
    let x1 = in1[o];
    let v0: bool = x0 > x1;
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
