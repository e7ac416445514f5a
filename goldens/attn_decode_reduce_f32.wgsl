struct Params {
    // (batch · heads · sq) rows of `d` columns, `splits` partials each.
    rows: u32,
    d: u32,
    splits: u32,
    sq: u32,
    heads: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
    o_stride: vec4<u32>,
}

@group(0) @binding(0) var<storage, read> part: array<f32>;
@group(0) @binding(1) var<storage, read_write> o: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(256, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + tid;
    let quads = p.d / 4u;
    if (i >= p.rows * quads) {
        return;
    }
    let row = i / quads;
    let col = (i % quads) * 4u;
    let w = p.d + 2u;
    var m = bitcast<f32>(0xff800000u);
    for (var s = 0u; s < p.splits; s = s + 1u) {
        m = max(m, part[(row * p.splits + s) * w + p.d]);
    }
    var l = 0.0;
    var acc = vec4<f32>();
    if (m != bitcast<f32>(0xff800000u)) {
        for (var s = 0u; s < p.splits; s = s + 1u) {
            let at = (row * p.splits + s) * w;
            let f = exp(part[at + p.d] - m);
            l = l + part[at + p.d + 1u] * f;
            let c = at + col;
            acc = acc + vec4<f32>(part[c], part[c + 1u], part[c + 2u], part[c + 3u]) * f;
        }
    }
    let qi = row % p.sq;
    let bh = row / p.sq;
    let at = (bh / p.heads) * p.o_stride.x + (bh % p.heads) * p.o_stride.y + qi * p.o_stride.z + col * p.o_stride.w;
    for (var c = 0u; c < 4u; c = c + 1u) {
        o[at + c * p.o_stride.w] = f32(acc[c] / l);
    }
}
