enable f16;

struct Params {
    outer: u32,
    n: u32,
    inner: u32,
    // Rows (row variant) or columns (strided variant).
    count: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f16>;
@group(0) @binding(1) var<storage, read_write> y: array<f16>;
@group(0) @binding(2) var<uniform> p: Params;

// The lowest finite f32: an empty partial (sum 0) that rescales to nothing.
const LOWEST: f32 = -3.4028234663852886e38;
const T: u32 = 128u;

var<workgroup> w_max: array<f32, T>;
var<workgroup> w_sum: array<f32, T>;

// The online pair (m, s) after one more value v.
fn push(ms: vec2<f32>, v: f32) -> vec2<f32> {
    if (v > ms.x) {
        return vec2<f32>(v, ms.y * exp(ms.x - v) + 1.0);
    }
    return vec2<f32>(ms.x, ms.y + exp(v - ms.x));
}

@compute @workgroup_size(128, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let lin = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    let row = lin;
    if (row >= p.count) {
        return;
    }
    let base = row * p.n;
    var ms = vec2<f32>(LOWEST, 0.0);
    for (var j = tid; j < p.n; j = j + T) {
        ms = push(ms, f32(x[base + j]));
    }
    w_max[tid] = ms.x;
    w_sum[tid] = ms.y;
    workgroupBarrier();
    for (var s = T / 2u; s > 0u; s = s >> 1u) {
        if (tid < s) {
            let ma = w_max[tid];
            let mb = w_max[tid + s];
            let m = max(ma, mb);
            w_sum[tid] = w_sum[tid] * exp(ma - m) + w_sum[tid + s] * exp(mb - m);
            w_max[tid] = m;
        }
        workgroupBarrier();
    }
    let m = w_max[0];
    let sum = w_sum[0];
    let first = tid;
    let step = T;
    let stride = 1u;
    let inv = 1.0 / sum;
    for (var j = first; j < p.n; j = j + step) {
        let i = base + j * stride;
        y[i] = f16(exp(f32(x[i]) - m) * inv);
    }
}
