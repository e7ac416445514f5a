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
    pad: u32,
}

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> scale: array<f32>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<vec4<f32>>;
@group(0) @binding(4) var<uniform> p: Params;

const T: u32 = 256u;

var<workgroup> part: array<f32, T>;

// The sum of every invocation's v, for every invocation.
fn workgroup_sum(v: f32, tid: u32) -> f32 {
    part[tid] = v;
    workgroupBarrier();
    for (var s = T / 2u; s > 0u; s = s / 2u) {
        if tid < s {
            part[tid] += part[tid + s];
        }
        workgroupBarrier();
    }
    let total = part[0];
    workgroupBarrier();
    return total;
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let row = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    // Uniform per workgroup, so every invocation of a live workgroup reaches the barriers.
    if row >= p.rows {
        return;
    }
    // Whole vec4s (spatial % 4 = 0, so a vec4 is one channel's).
    let n4 = p.len / 4u;
    let base = row * n4;
    var s = 0.0;
    for (var i = tid; i < n4; i += T) {
        let v = vec4<f32>(x[base + i]);
        s += (v.x + v.y) + (v.z + v.w);
    }
    let mean = workgroup_sum(s, tid) / f32(p.len);
    var q = 0.0;
    for (var i = tid; i < n4; i += T) {
        let d = vec4<f32>(x[base + i]) - mean;
        q += dot(d, d);
    }
    let inv = 1.0 / sqrt(workgroup_sum(q, tid) / f32(p.len) + p.epsilon);
    let groups = p.channels / p.channels_per_group;
    let group = row % groups;
    for (var i = tid; i < n4; i += T) {
        let c = group * p.channels_per_group + i * 4u / p.spatial;
        let k = select(c, group, p.per_group != 0u);
        y[base + i] = vec4<f32>((vec4<f32>(x[base + i]) - mean) * inv * f32(scale[k]) + f32(bias[k]));
    }
}
