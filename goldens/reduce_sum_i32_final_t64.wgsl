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

@group(0) @binding(0) var<storage, read> x: array<i32>;
@group(0) @binding(1) var<storage, read_write> y: array<i32>;
@group(0) @binding(2) var<uniform> p: Params;

fn combine(a: i32, b: i32) -> i32 {
    return a + b;
}

fn finish(a: i32) -> i32 {
    return a;
}

const T: u32 = 64u;

var<workgroup> w: array<i32, T>;

// The combination of every invocation's `a`, for invocation 0.
fn workgroup_reduce(a: i32, tid: u32) -> i32 {
    w[tid] = a;
    workgroupBarrier();
    for (var s = T / 2u; s > 0u; s = s >> 1u) {
        if (tid < s) {
            w[tid] = combine(w[tid], w[tid + s]);
        }
        workgroupBarrier();
    }
    return w[0];
}

@compute @workgroup_size(64, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let o = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if (o >= p.outputs) {
        return;
    }
    let len = p.r_last;
    let base = o * len;
    var a = bitcast<i32>(p.fill);
    for (var j = tid; j < len; j = j + T) {
        a = combine(a, i32(x[base + j]));
    }
    let total = workgroup_reduce(a, tid);
    if (tid == 0u) {
        y[o] = finish(total);
    }
}

