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

// Lanes over the chunks, and over the columns (each holds columns c, c + 64, ...).
const SL: u32 = 4u;
const CL: u32 = 64u;
const NEG_INF: u32 = 0xff800000u;

var<workgroup> red: array<f32, 256>;
var<workgroup> accs: array<f32, 1024>;
var<workgroup> sums: array<f32, 4>;

// The weight of the chunk whose max is `ms` against the row's max `mx`.
fn weight(ms: f32, mx: f32) -> f32 {
    if (ms == bitcast<f32>(NEG_INF)) {
        return 0.0;
    }
    return exp(ms - mx);
}

@compute @workgroup_size(256, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let row = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if (row >= p.rows) {
        return;
    }
    let w = p.d + 2u;
    let base = row * p.splits * w;
    // The row's max over its chunks.
    var mx = bitcast<f32>(NEG_INF);
    for (var s = tid; s < p.splits; s = s + 256u) {
        mx = max(mx, part[base + s * w + p.d]);
    }
    red[tid] = mx;
    workgroupBarrier();
    for (var h = 128u; h > 0u; h = h >> 1u) {
        if (tid < h) {
            red[tid] = max(red[tid], red[tid + h]);
        }
        workgroupBarrier();
    }
    mx = red[0];
    let sl = tid / CL;
    let cl = tid % CL;
    var l = 0.0;
    var a0 = 0.0;
    var a1 = 0.0;
    var a2 = 0.0;
    var a3 = 0.0;
    let c1 = min(cl + 64u, p.d - 1u);
    let c2 = min(cl + 128u, p.d - 1u);
    let c3 = min(cl + 192u, p.d - 1u);
    var s = sl;
    // Four chunks per lane at a time, then the rest one by one.
    for (; s + 3u * SL < p.splits; s = s + 4u * SL) {
        let at0 = base + s * w;
        let at1 = at0 + SL * w;
        let at2 = at1 + SL * w;
        let at3 = at2 + SL * w;
        let f0 = weight(part[at0 + p.d], mx);
        let f1 = weight(part[at1 + p.d], mx);
        let f2 = weight(part[at2 + p.d], mx);
        let f3 = weight(part[at3 + p.d], mx);
        l = l + f0 * part[at0 + p.d + 1u] + f1 * part[at1 + p.d + 1u] + f2 * part[at2 + p.d + 1u] + f3 * part[at3 + p.d + 1u];
        a0 = a0 + f0 * part[at0 + cl] + f1 * part[at1 + cl] + f2 * part[at2 + cl] + f3 * part[at3 + cl];
        a1 = a1 + f0 * part[at0 + c1] + f1 * part[at1 + c1] + f2 * part[at2 + c1] + f3 * part[at3 + c1];
        a2 = a2 + f0 * part[at0 + c2] + f1 * part[at1 + c2] + f2 * part[at2 + c2] + f3 * part[at3 + c2];
        a3 = a3 + f0 * part[at0 + c3] + f1 * part[at1 + c3] + f2 * part[at2 + c3] + f3 * part[at3 + c3];
    }
    for (; s < p.splits; s = s + SL) {
        let at = base + s * w;
        let f = weight(part[at + p.d], mx);
        l = l + f * part[at + p.d + 1u];
        a0 = a0 + f * part[at + cl];
        a1 = a1 + f * part[at + c1];
        a2 = a2 + f * part[at + c2];
        a3 = a3 + f * part[at + c3];
    }
    accs[sl * 256u + cl] = a0;
    accs[sl * 256u + cl + 64u] = a1;
    accs[sl * 256u + cl + 128u] = a2;
    accs[sl * 256u + cl + 192u] = a3;
    if (cl == 0u) {
        sums[sl] = l;
    }
    workgroupBarrier();
    let lt = (sums[0] + sums[1]) + (sums[2] + sums[3]);
    let qi = row % p.sq;
    let bh = row / p.sq;
    let o_base = (bh / p.heads) * p.o_stride.x + (bh % p.heads) * p.o_stride.y + qi * p.o_stride.z;
    for (var col = tid; col < p.d; col = col + 256u) {
        let acc = (accs[col] + accs[256u + col]) + (accs[512u + col] + accs[768u + col]);
        o[o_base + col * p.o_stride.w] = f32(acc / lt);
    }
}
