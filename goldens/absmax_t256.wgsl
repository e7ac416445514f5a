@group(0) @binding(0) var<storage, read> a: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> b: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;
@group(0) @binding(4) var<uniform> p: Params;

// `GemmParams`: m and n are the operands' lengths in vec4s, k where b's start, tiles_n the
// workgroups per operand.
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

var<workgroup> part: array<u32, 256>;

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let lin = wid.x + p.grid_x * (wid.y + p.grid_y * wid.z);
    if (lin >= p.total_workgroups) {
        return;
    }
    let on_b = lin >= p.tiles_n;
    let group = select(lin, lin - p.tiles_n, on_b);
    let len = select(p.m, p.n, on_b);
    let step = p.tiles_n * 256u;
    // Four loads in flight per invocation.
    var largest = vec4<u32>();
    for (var i = group * 256u + tid; i < len; i = i + 4u * step) {
        for (var u = 0u; u < 4u; u = u + 1u) {
            let j = i + u * step;
            if (j < len) {
                var words: vec4<u32>;
                if (on_b) {
                    words = b[p.k + j];
                } else {
                    words = a[j];
                }
                let magnitude = words & vec4<u32>(0x7fffffffu);
                largest = max(largest, select(magnitude, vec4<u32>(), magnitude >= vec4<u32>(0x7f800000u)));
            }
        }
    }
    part[tid] = max(max(largest.x, largest.y), max(largest.z, largest.w));
    workgroupBarrier();
    for (var half = 128u; half > 0u; half = half / 2u) {
        if (tid < half) {
            part[tid] = max(part[tid], part[tid + half]);
        }
        workgroupBarrier();
    }
    if (tid == 0u) {
        out[lin] = part[0];
    }
}
