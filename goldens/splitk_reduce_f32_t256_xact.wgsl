@group(0) @binding(0) var<storage, read> partials: array<f32>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

struct Params {
    m: u32,
    n: u32,
    k: u32,
    k_chunk: u32,
    a_rs: u32,
    a_cs: u32,
    b_rs: u32,
    b_cs: u32,
    c_rs: u32,
    c_cs: u32,
    bias_rs: u32,
    bias_cs: u32,
    tiles_n: u32,
    tiles_m: u32,
    splits: u32,
    batch_count: u32,
    grid_x: u32,
    grid_y: u32,
    total_workgroups: u32,
    flags: u32,
    alpha: f32,
    beta: f32,
    clip_min: f32,
    clip_max: f32,
    batch_shape: vec4<u32>,
    a_bs: vec4<u32>,
    b_bs: vec4<u32>,
    c_bs: vec4<u32>,
    bias_bs: vec4<u32>,
}

// Element offset of batch `b` (row-major over batch_shape) for an operand's batch strides.
fn batch_offset(b: u32, strides: vec4<u32>) -> u32 {
    var rest = b;
    let c3 = rest % p.batch_shape.w;
    rest = rest / p.batch_shape.w;
    let c2 = rest % p.batch_shape.z;
    rest = rest / p.batch_shape.z;
    let c1 = rest % p.batch_shape.y;
    rest = rest / p.batch_shape.y;
    return rest * strides.x + c1 * strides.y + c2 * strides.z + c3 * strides.w;
}

// Linear workgroup index of a (possibly folded) 3-D grid.
fn linear_workgroup(wid: vec3<u32>) -> u32 {
    return wid.x + p.grid_x * (wid.y + p.grid_y * wid.z);
}

// The activations beyond Relu/Clip (flag bits 4–7; clip_min and clip_max hold their α and β):
// 1 HardSigmoid, 2 HardSwish, 3 SiLU, 4 LeakyRelu. NaN passes through.
fn extended_activation(x: f32) -> f32 {
    let kind = (p.flags >> 4u) & 15u;
    if (kind == 1u || kind == 2u) {
        var h = p.clip_min * x + p.clip_max;
        h = select(h, 0.0, h < 0.0);
        h = select(h, 1.0, h > 1.0);
        return select(h, x * h, kind == 2u);
    } else if (kind == 3u) {
        return x / (1.0 + exp(-x));
    } else if (kind == 4u) {
        return select(x, p.clip_min * x, x < 0.0);
    }
    return x;
}

// alpha · acc + beta · bias, then the activation. NaN passes through like ONNX Runtime's CPU EP.
fn epilogue(acc: f32, bias_index: u32) -> f32 {
    var v = p.alpha * acc;
    if ((p.flags & 1u) != 0u) {
        v = v + p.beta * f32(bias[bias_index]);
    }
    let act = (p.flags >> 1u) & 3u;
    if (act == 1u) {
        v = select(v, 0.0, v < 0.0);
    } else if (act == 2u) {
        v = select(v, p.clip_min, v < p.clip_min);
        v = select(v, p.clip_max, v > p.clip_max);
    }
    v = extended_activation(v);
    return v;
}

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let lin = linear_workgroup(wid);
    let per_batch = p.m * p.n;
    let idx = lin * 256u + tid;
    if (lin >= p.total_workgroups || idx >= p.batch_count * per_batch) {
        return;
    }
    let batch = idx / per_batch;
    let row = (idx % per_batch) / p.n;
    let col = idx % p.n;
    var sum: f32 = 0.0;
    for (var s = 0u; s < p.splits; s = s + 1u) {
        sum = sum + partials[s * p.batch_count * per_batch + idx];
    }
    let bias_index = batch_offset(batch, p.bias_bs) + row * p.bias_rs + col * p.bias_cs;
    out[batch_offset(batch, p.c_bs) + row * p.c_rs + col * p.c_cs] = f32(epilogue(sum, bias_index));
}
