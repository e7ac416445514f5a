struct Params {
    count: u32,
    channels: u32,
    // Elements per channel of one image (the product of the spatial dimensions).
    inner: u32,
    epsilon: f32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> scale: array<f32>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read> mean: array<f32>;
@group(0) @binding(4) var<storage, read> variance: array<f32>;
@group(0) @binding(5) var<storage, read_write> y: array<f32>;
@group(0) @binding(6) var<uniform> p: Params;

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
    let c = (e / p.inner) % p.channels;
    let a = f32(scale[c]) / sqrt(f32(variance[c]) + p.epsilon);
    y[e] = f32((f32(x[e]) - f32(mean[c])) * a + f32(bias[c]));
}
