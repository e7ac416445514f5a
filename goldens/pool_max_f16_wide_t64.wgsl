enable f16;

struct Params {
    // Output elements, and whether an average counts the padding (count_include_pad).
    count: u32,
    include_pad: u32,
    pad0: u32,
    pad1: u32,
    // Per axis (d, h, w): input and output sizes, window, strides, dilations, leading and
    // trailing padding.
    in_size: vec4<u32>,
    out_size: vec4<u32>,
    kernel: vec4<u32>,
    stride: vec4<u32>,
    dilation: vec4<u32>,
    pad_begin: vec4<u32>,
    pad_end: vec4<u32>,
}

@group(0) @binding(0) var<storage, read> x: array<f16>;
@group(0) @binding(1) var<storage, read_write> y: array<f16>;
@group(0) @binding(2) var<uniform> p: Params;

const T: u32 = 64u;

// Each invocation's partial, combined pairwise.
var<workgroup> w_acc: array<f32, T>;

// Wide variant: one workgroup per output element (a large window), its invocations sharing the
// window's positions.
@compute @workgroup_size(64)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let e = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if e >= p.count {
        return;
    }
    let ow = e % p.out_size.z;
    let oh = (e / p.out_size.z) % p.out_size.y;
    let od = (e / (p.out_size.z * p.out_size.y)) % p.out_size.x;
    let plane = e / (p.out_size.z * p.out_size.y * p.out_size.x);
    let base = plane * p.in_size.x * p.in_size.y * p.in_size.z;
    let start = vec3<i32>(vec3<u32>(od, oh, ow) * p.stride.xyz) - vec3<i32>(p.pad_begin.xyz);
    let size = vec3<i32>(p.in_size.xyz);
    let padded = size + vec3<i32>(p.pad_end.xyz);
    let dil = vec3<i32>(p.dilation.xyz);
    let window = p.kernel.x * p.kernel.y * p.kernel.z;
    var acc = -3.4028234663852886e38;
    for (var k = lid; k < window; k += T) {
        let kw = k % p.kernel.z;
        let kh = (k / p.kernel.z) % p.kernel.y;
        let kd = k / (p.kernel.z * p.kernel.y);
        let at = start + vec3<i32>(vec3<u32>(kd, kh, kw)) * dil;
        if any(at < vec3<i32>(0)) || any(at >= size) {
            continue;
        }
        let v = f32(x[base + (u32(at.x) * p.in_size.y + u32(at.y)) * p.in_size.z + u32(at.z)]);
        acc = select(acc, v, v > acc);
    }
    w_acc[lid] = acc;
    workgroupBarrier();
    for (var s = T / 2u; s > 0u; s = s >> 1u) {
        if lid < s {
            w_acc[lid] = select(w_acc[lid], w_acc[lid + s], w_acc[lid + s] > w_acc[lid]);
        }
        workgroupBarrier();
    }
    if lid == 0u {
        y[e] = f16(w_acc[0]);
    }
}

