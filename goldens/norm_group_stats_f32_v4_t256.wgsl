struct Params {
    rows: u32,
    // Elements per row (channels per group · spatial), and per channel (spatial).
    len: u32,
    spatial: u32,
    channels_per_group: u32,
    // Channels of X.
    channels: u32,
    // 1: scale and bias hold one value per group (GroupNormalization-18), else per channel.
    per_group: u32,
    epsilon: f32,
    pad0: u32,
    // Chunks per row and elements per chunk (the last may be shorter).
    chunks: u32,
    chunk: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> part: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

const T: u32 = 256u;

var<workgroup> acc: array<f32, T>;

// The sum of every invocation's v, for every invocation.
fn workgroup_sum(v: f32, tid: u32) -> f32 {
    acc[tid] = v;
    workgroupBarrier();
    for (var s = T / 2u; s > 0u; s = s / 2u) {
        if tid < s {
            acc[tid] += acc[tid + s];
        }
        workgroupBarrier();
    }
    let total = acc[0];
    workgroupBarrier();
    return total;
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let item = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    // Uniform per workgroup, so every invocation of a live workgroup reaches the barriers.
    if item >= p.rows * p.chunks {
        return;
    }
    let row = item / p.chunks;
    let start = (item % p.chunks) * p.chunk;
    let end = min(start + p.chunk, p.len);
    // Whole vec4s: the spatial size and the chunk are multiples of 4 (a vec4 is one channel's).
    let base = row * (p.len / 4u);
    let first = start / 4u;
    let last = end / 4u;
    let n = f32(end - start);
    var s = 0.0;
    for (var i = first + tid; i < last; i += T) {
        let v = vec4<f32>(x[base + i]);
        s += (v.x + v.y) + (v.z + v.w);
    }
    let mean = workgroup_sum(s, tid) / n;
    var q = 0.0;
    for (var i = first + tid; i < last; i += T) {
        let d = vec4<f32>(x[base + i]) - mean;
        q += dot(d, d);
    }
    let m2 = workgroup_sum(q, tid);
    if tid == 0u {
        part[3u * item] = n;
        part[3u * item + 1u] = mean;
        part[3u * item + 2u] = m2;
    }
}
