struct Params {
    // Batch, K/V heads, keys, head size.
    dims: vec4<u32>,
    k_stride: vec4<u32>,
    v_stride: vec4<u32>,
    // Elements of each (the product of dims), and the workgroups sharing them.
    total: u32,
    groups: u32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<storage, read> k: array<f32>;
@group(0) @binding(1) var<storage, read> v: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<vec2<u32>>;
@group(0) @binding(3) var<uniform> p: Params;

var<workgroup> part: array<vec2<u32>, 256>;

fn mag(x: f32) -> u32 {
    let b = bitcast<u32>(x) & 0x7fffffffu;
    return select(b, 0u, b >= 0x7f800000u);
}

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    var m = vec2<u32>();
    let step = p.groups * 256u;
    // Four elements of each a round, their loads in flight together.
    for (var i = wid.x * 256u + tid; i < p.total; i = i + 4u * step) {
        for (var u = 0u; u < 4u; u = u + 1u) {
            let j = i + u * step;
            if (j < p.total) {
                let dd = j % p.dims.w;
                let r = j / p.dims.w;
                let s = r % p.dims.z;
                let bh = r / p.dims.z;
                let h = bh % p.dims.y;
                let b = bh / p.dims.y;
                let ek = b * p.k_stride.x + h * p.k_stride.y + s * p.k_stride.z + dd * p.k_stride.w;
                let ev = b * p.v_stride.x + h * p.v_stride.y + s * p.v_stride.z + dd * p.v_stride.w;
                m = max(m, vec2<u32>(mag(k[ek]), mag(v[ev])));
            }
        }
    }
    part[tid] = m;
    workgroupBarrier();
    for (var half = 128u; half > 0u; half = half / 2u) {
        if (tid < half) {
            part[tid] = max(part[tid], part[tid + half]);
        }
        workgroupBarrier();
    }
    if (tid == 0u) {
        out[wid.x] = part[0];
    }
}
