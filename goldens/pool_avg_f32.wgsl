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

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let e = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
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
    // Positions inside the padded input (what count_include_pad divides by).
    let padded = size + vec3<i32>(p.pad_end.xyz);
    let dil = vec3<i32>(p.dilation.xyz);
    var acc = 0.0;
    var inside = 0u;
    var counted = 0u;
    for (var kd = 0u; kd < p.kernel.x; kd++) {
        let id = start.x + i32(kd) * dil.x;
        for (var kh = 0u; kh < p.kernel.y; kh++) {
            let ih = start.y + i32(kh) * dil.y;
            for (var kw = 0u; kw < p.kernel.z; kw++) {
                let iw = start.z + i32(kw) * dil.z;
                let at = vec3<i32>(id, ih, iw);
                if all(at < padded) {
                    counted += 1u;
                }
                if any(at < vec3<i32>(0)) || any(at >= size) {
                    continue;
                }
                let v = f32(x[base + (u32(id) * p.in_size.y + u32(ih)) * p.in_size.z + u32(iw)]);
                acc += v;
                inside += 1u;
            }
        }
    }
    let n = select(inside, counted, p.include_pad != 0u);
    y[e] = f32(acc / f32(max(n, 1u)));
}
