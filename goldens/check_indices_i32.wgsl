// Checks int32 indices against an axis of length axis_len (negative ones count
// from the end) and writes `code` into the run's status word when one is out of range, so the run
// fails with a message, as ONNX Runtime's CPU EP does, instead of reading out of bounds.
@group(0) @binding(0) var<storage, read> idx: array<u32>;
@group(0) @binding(1) var<storage, read_write> status: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

struct Params {
    count: u32,
    axis_len: u32,
    code: u32,
    pad: u32,
}

fn in_range(q: u32) -> bool {
    let j = bitcast<i32>(idx[q]);
    let n = i32(p.axis_len);
    return j >= -n && j < n;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let q = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if q >= p.count {
        return;
    }
    if !in_range(q) {
        status[0] = p.code;
    }
}
