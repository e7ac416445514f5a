enable f16;

struct Params {
    count: u32,
    include_pad: u32,
    // Output tiles along a row, and per plane.
    tiles_w: u32,
    tiles: u32,
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

var<workgroup> tile: array<f32, 2048>;

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let g = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    let plane = g / p.tiles;
    let t = g % p.tiles;
    let oh0 = (t / p.tiles_w) * 8u;
    let ow0 = (t % p.tiles_w) * 32u;
    // The input rectangle under the tile, from its first window's corner.
    let rows = (8u - 1u) * p.stride.y + (p.kernel.y - 1u) * p.dilation.y + 1u;
    let cols = (32u - 1u) * p.stride.z + (p.kernel.z - 1u) * p.dilation.z + 1u;
    let top = i32(oh0 * p.stride.y) - i32(p.pad_begin.y);
    let left = i32(ow0 * p.stride.z) - i32(p.pad_begin.z);
    let size = vec2<i32>(p.in_size.yz);
    let base = plane * p.in_size.y * p.in_size.z;
    let live = plane * p.out_size.y * p.out_size.z < p.count;
    for (var i = lid; i < rows * cols; i += 256u) {
        let at = vec2<i32>(top + i32(i / cols), left + i32(i % cols));
        var v = -3.4028234663852886e38;
        if live && all(at >= vec2<i32>(0)) && all(at < size) {
            v = f32(x[base + u32(at.x) * p.in_size.z + u32(at.y)]);
        }
        tile[i] = v;
    }
    workgroupBarrier();
    let oh = oh0 + lid / 32u;
    let ow = ow0 + lid % 32u;
    if !live || oh >= p.out_size.y || ow >= p.out_size.z {
        return;
    }
    let local = vec2<u32>(lid / 32u * p.stride.y, lid % 32u * p.stride.z);
    let start = vec2<i32>(top, left) + vec2<i32>(local);
    let padded = size + vec2<i32>(p.pad_end.yz);
    var acc = -3.4028234663852886e38;
    for (var kh = 0u; kh < p.kernel.y; kh++) {
        let r = local.x + kh * p.dilation.y;
        for (var kw = 0u; kw < p.kernel.z; kw++) {
            let c = local.y + kw * p.dilation.z;
            let v = tile[r * cols + c];
            // Padding holds the initial value, which never wins; a NaN never wins either.
            acc = select(acc, v, v > acc);
        }
    }
    let e = (plane * p.out_size.y + oh) * p.out_size.z + ow;
    y[e] = f16(acc);
}
