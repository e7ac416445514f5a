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
@group(0) @binding(1) var<storage, read> scale: array<f32>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read> part: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<vec4<f32>>;
@group(0) @binding(5) var<uniform> p: Params;

var<workgroup> stats: vec2<f32>;

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
    if tid == 0u {
        var n = 0.0;
        var mean = 0.0;
        var m2 = 0.0;
        for (var k = 0u; k < p.chunks; k++) {
            let j = 3u * (row * p.chunks + k);
            let nb = part[j];
            let delta = part[j + 1u] - mean;
            let total = n + nb;
            mean += delta * nb / total;
            m2 += part[j + 2u] + delta * delta * n * nb / total;
            n = total;
        }
        stats = vec2<f32>(mean, 1.0 / sqrt(m2 / f32(p.len) + p.epsilon));
    }
    workgroupBarrier();
    let st = workgroupUniformLoad(&stats);
    let groups = p.channels / p.channels_per_group;
    let group = row % groups;
    for (var i = first + tid; i < last; i += T) {
        let c = group * p.channels_per_group + i * 4u / p.spatial;
        let k = select(c, group, p.per_group != 0u);
        y[base + i] = vec4<f32>((vec4<f32>(x[base + i]) - st.x) * st.y * f32(scale[k]) + f32(bias[k]));
    }
}
