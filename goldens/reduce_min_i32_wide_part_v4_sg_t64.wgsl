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
    // Chunks per output, and reduced elements per chunk.
    chunks: u32,
    chunk: u32,
}

@group(0) @binding(0) var<storage, read> x: array<vec4<i32>>;
@group(0) @binding(1) var<storage, read_write> y: array<i32>;
@group(0) @binding(2) var<uniform> p: Params;

fn combine(a: i32, b: i32) -> i32 {
    return min(a, b);
}

fn finish(a: i32) -> i32 {
    return a;
}

const T: u32 = 64u;

var<workgroup> w: array<i32, T>;

// The combination of every invocation's `a`, for invocation 0.
fn workgroup_reduce(a: i32, lane: u32, sg: u32, nsg: u32) -> i32 {
    let s = subgroupMin(a);
    if (lane == 0u) {
        w[sg] = s;
    }
    workgroupBarrier();
    var total = w[0];
    for (var i = 1u; i < nsg; i = i + 1u) {
        total = combine(total, w[i]);
    }
    return total;
}

@compute @workgroup_size(64, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_id) sg: u32,
    @builtin(num_subgroups) nsg: u32,
) {
    let g = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if (g >= p.outputs * p.chunks) {
        return;
    }
    let o = g / p.chunks;
    var rem = o;
    var base = 0u;
    for (var d = p.nkept; d > 0u; d = d - 1u) {
        let i = d - 1u;
        let size = p.kept_size[i / 4u][i % 4u];
        base = base + (rem % size) * p.kept_stride[i / 4u][i % 4u];
        rem = rem / size;
    }
    let start = (g % p.chunks) * p.chunk;
    let end = min(start + p.chunk, p.r_outer * p.r_last);
    var a = bitcast<i32>(p.fill);
    // One contiguous run (no outer reduced dimensions) in chunks of whole vec4s.
    for (var l = (base + start) / 4u + tid; l < (base + end) / 4u; l = l + T) {
        let v = vec4<i32>(x[l]);
        a = combine(a, combine(combine(v.x, v.y), combine(v.z, v.w)));
    }
    let total = workgroup_reduce(a, lane, sg, nsg);
    if (tid == 0u) {
        y[g] = total;
    }
}

