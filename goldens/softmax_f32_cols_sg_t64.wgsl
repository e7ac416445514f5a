struct Params {
    outer: u32,
    n: u32,
    inner: u32,
    // Rows (row variant) or columns (strided variant).
    count: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

// The lowest finite f32: an empty partial (sum 0) that rescales to nothing.
const LOWEST: f32 = -3.4028234663852886e38;
const T: u32 = 64u;

var<workgroup> w_part: array<vec2<f32>, T>;

// The online pair (m, s) after one more value v.
fn push(ms: vec2<f32>, v: f32) -> vec2<f32> {
    if (v > ms.x) {
        return vec2<f32>(v, ms.y * exp(ms.x - v) + 1.0);
    }
    return vec2<f32>(ms.x, ms.y + exp(v - ms.x));
}

// Two pairs as one, rescaled to the larger max.
fn merge(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    let m = max(a.x, b.x);
    return vec2<f32>(m, a.y * exp(a.x - m) + b.y * exp(b.x - m));
}

// The row's pair from every invocation's, for every invocation.
fn workgroup_merge(ms: vec2<f32>, lane: u32, sg: u32, nsg: u32) -> vec2<f32> {
    let m = subgroupMax(ms.x);
    let s = subgroupAdd(ms.y * exp(ms.x - m));
    if (lane == 0u) {
        w_part[sg] = vec2<f32>(m, s);
    }
    workgroupBarrier();
    var total = w_part[0];
    for (var i = 1u; i < nsg; i = i + 1u) {
        total = merge(total, w_part[i]);
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
    let lin = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    let row = lin;
    if (row >= p.count) {
        return;
    }
    let len = p.n;
    let base = (row / p.inner) * p.n * p.inner + row % p.inner;
    let stride = p.inner;
    var ms = vec2<f32>(LOWEST, 0.0);
    for (var j = tid; j < len; j = j + T) {
        ms = push(ms, f32(x[base + j * stride]));
    }
    let total = workgroup_merge(ms, lane, sg, nsg);
    let m = total.x;
    let pairs_sum = total.y;
    let first = tid;
    let step = T;
    // A row holding +Inf: its max is +Inf and Inf − Inf makes ONNX Runtime's sum, so every
    // output, NaN; the online pairs give it 1. (A NaN built from m: WGSL has no NaN literal.)
    let m_bits = bitcast<u32>(m);
    let sum = select(pairs_sum, bitcast<f32>(m_bits | 0x7fc00000u), m_bits == 0x7f800000u);
    let inv = 1.0 / sum;
    for (var j = first; j < len; j = j + step) {
        let i = base + j * stride;
        y[i] = f32(exp(f32(x[i]) - m) * inv);
    }
}
