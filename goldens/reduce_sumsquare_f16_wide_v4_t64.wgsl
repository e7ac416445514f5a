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
    // Chunks per output, and reduced elements per chunk.
    chunks: u32,
    chunk: u32,
}

@group(0) @binding(0) var<storage, read> x: array<vec4<f16>>;
@group(0) @binding(1) var<storage, read_write> y: array<f16>;
@group(0) @binding(2) var<uniform> p: Params;

fn combine(a: f32, b: f32) -> f32 {
    return a + b;
}

// An element (or four) as it enters the combination.
fn element(v: vec4<f32>) -> vec4<f32> {
    return v * v;
}

fn finish(a: f32) -> f16 {
    return f16(a / p.divisor);
}

const T: u32 = 64u;

var<workgroup> w: array<f32, T>;

// The combination of every invocation's `a`, for invocation 0.
fn workgroup_reduce(a: f32, tid: u32) -> f32 {
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
    var a = bitcast<f32>(p.fill);
    // One contiguous run (no outer reduced dimensions) in chunks of whole vec4s.
    for (var l = (base + start) / 4u + tid; l < (base + end) / 4u; l = l + T) {
        let v = element(vec4<f32>(x[l]));
        a = combine(a, combine(combine(v.x, v.y), combine(v.z, v.w)));
    }
    let total = workgroup_reduce(a, tid);
    if (tid == 0u) {
        y[g] = finish(total);
    }
}

