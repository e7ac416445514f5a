struct Params {
    count: u32,
    rank: u32,
    // 0 nearest, 1 linear.
    linear: u32,
    pad0: u32,
    in_shape: array<vec4<u32>, 2>,
    out_shape: array<vec4<u32>, 2>,
    // Where each axis's entries start in `table`.
    offsets: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> table: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

fn in_len(d: u32) -> u32 {
    return p.in_shape[d / 4u][d % 4u];
}

fn out_len(d: u32) -> u32 {
    return p.out_shape[d / 4u][d % 4u];
}

fn offset(d: u32) -> u32 {
    return p.offsets[d / 4u][d % 4u];
}

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
    // The input offset of the non-interpolated axes; for linear, the two last axes' taps.
    var rest = e;
    var base = 0u;
    var stride = 1u;
    var i0 = vec2<u32>(0u);
    var i1 = vec2<u32>(0u);
    var w = vec2<f32>(0.0);
    var strides = vec2<u32>(0u);
    for (var k = 0u; k < p.rank; k++) {
        let d = p.rank - 1u - k;
        let o = rest % out_len(d);
        rest = rest / out_len(d);
        if p.linear != 0u && k < 2u {
            let at = offset(d) + 3u * o;
            i0[k] = table[at];
            i1[k] = table[at + 1u];
            w[k] = bitcast<f32>(table[at + 2u]);
            strides[k] = stride;
        } else if p.linear != 0u {
            base += o * stride;
        } else {
            base += table[offset(d) + o] * stride;
        }
        stride *= in_len(d);
    }
    if p.linear == 0u {
        y[e] = x[base];
        return;
    }
    // k = 0 is the last axis (x), k = 1 the one before (y; stride 0 and weight 0 at rank 1).
    let a = f32(x[base + i0.y * strides.y + i0.x * strides.x]);
    let b = f32(x[base + i0.y * strides.y + i1.x * strides.x]);
    let c = f32(x[base + i1.y * strides.y + i0.x * strides.x]);
    let dd = f32(x[base + i1.y * strides.y + i1.x * strides.x]);
    let top = a + (b - a) * w.x;
    let bottom = c + (dd - c) * w.x;
    y[e] = f32(top + (bottom - top) * w.y);
}
