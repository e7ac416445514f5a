struct Params {
    count: u32,
    m_per_group: u32,
    c_per_group: u32,
    has_bias: u32,
    // [channels, height, width] of X and Y.
    x_dims: vec4<u32>,
    y_dims: vec4<u32>,
    // Kernel (kh, kw), strides, dilations, leading pads (top, left).
    kernel: vec2<u32>,
    stride: vec2<u32>,
    dilation: vec2<u32>,
    pad: vec2<u32>,
}

@group(0) @binding(0) var<storage, read> cols: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

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
    let ow = e % p.y_dims.z;
    let oh = (e / p.y_dims.z) % p.y_dims.y;
    // Image and channel: cols holds kh · kw planes of X's size per (n, m).
    let nm = e / (p.y_dims.z * p.y_dims.y);
    var acc = 0.0;
    if p.has_bias != 0u {
        acc = f32(b[nm % p.y_dims.x]);
    }
    let plane = p.x_dims.y * p.x_dims.z;
    let base = nm * p.kernel.x * p.kernel.y * plane;
    for (var kh = 0u; kh < p.kernel.x; kh++) {
        let th = i32(oh + p.pad.x) - i32(kh * p.dilation.x);
        if th < 0 || th % i32(p.stride.x) != 0 {
            continue;
        }
        let ih = u32(th) / p.stride.x;
        if ih >= p.x_dims.y {
            continue;
        }
        for (var kw = 0u; kw < p.kernel.y; kw++) {
            let tw = i32(ow + p.pad.y) - i32(kw * p.dilation.y);
            if tw < 0 || tw % i32(p.stride.y) != 0 {
                continue;
            }
            let iw = u32(tw) / p.stride.y;
            if iw >= p.x_dims.z {
                continue;
            }
            acc += f32(cols[base + (kh * p.kernel.y + kw) * plane + ih * p.x_dims.z + iw]);
        }
    }
    y[e] = f32(acc);
}
