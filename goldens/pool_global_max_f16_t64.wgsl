enable f16;

struct Params {
    planes: u32,
    // Elements per plane.
    len: u32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f16>;
@group(0) @binding(1) var<storage, read_write> y: array<f16>;
@group(0) @binding(2) var<uniform> p: Params;

const T: u32 = 64u;

var<workgroup> part: array<f32, T>;

@compute @workgroup_size(64)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let plane = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    // Uniform per workgroup, so every invocation of a live workgroup reaches the barriers.
    if plane >= p.planes {
        return;
    }
    let base = plane * p.len;
    var acc = -3.4028234663852886e38;
    for (var i = tid; i < p.len; i += T) {
        let v = f32(x[base + i]);
        acc = select(acc, v, v > acc);
    }
    part[tid] = acc;
    workgroupBarrier();
    for (var s = T / 2u; s > 0u; s = s / 2u) {
        if tid < s {
            let v = part[tid + s];
            part[tid] = select(part[tid], v, v > part[tid]);
        }
        workgroupBarrier();
    }
    if tid == 0u {
        y[plane] = f16(part[0]);
    }
}
