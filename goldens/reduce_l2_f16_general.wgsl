enable f16;

struct Params {
    outputs: u32,
    // The last reduced dimension: its size and stride.
    r_last: u32,
    r_stride: u32,
    // How many runs of the last reduced dimension one output combines.
    r_outer: u32,
    nkept: u32,
    // The reduced dimensions before the last one.
    nred: u32,
    // The sum is divided by this (ReduceMean: the count; else 1).
    divisor: f32,
    // Bits of the initial value: 0, or the lowest/highest value for max/min.
    fill: u32,
    kept_size: array<vec4<u32>, 2>,
    kept_stride: array<vec4<u32>, 2>,
    red_size: array<vec4<u32>, 2>,
    red_stride: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read> x: array<f16>;
@group(0) @binding(1) var<storage, read_write> y: array<f16>;
@group(0) @binding(2) var<uniform> p: Params;

fn combine(a: f32, b: f32) -> f32 {
    return a + b;
}

// An element (or four) as it enters the combination.
fn element(v: f32) -> f32 {
    return v * v;
}

fn finish(a: f32) -> f16 {
    return f16(sqrt(a));
}

@compute @workgroup_size(256, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let o = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + tid;
    if (o >= p.outputs) {
        return;
    }
    var rem = o;
    var base = 0u;
    for (var d = p.nkept; d > 0u; d = d - 1u) {
        let i = d - 1u;
        let size = p.kept_size[i / 4u][i % 4u];
        base = base + (rem % size) * p.kept_stride[i / 4u][i % 4u];
        rem = rem / size;
    }
    var a = bitcast<f32>(p.fill);
    for (var q = 0u; q < p.r_outer; q = q + 1u) {
        var qrem = q;
        var off = base;
        for (var d = p.nred; d > 0u; d = d - 1u) {
            let i = d - 1u;
            let size = p.red_size[i / 4u][i % 4u];
            off = off + (qrem % size) * p.red_stride[i / 4u][i % 4u];
            qrem = qrem / size;
        }
        for (var j = 0u; j < p.r_last; j = j + 1u) {
            a = combine(a, element(f32(x[off + j * p.r_stride])));
        }
    }
    y[o] = finish(a);
}

