enable f16;

struct Params {
    outputs: u32,
    n: u32,
    inner: u32,
    // Bit 0: the last index among equal extremes.
    flags: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f16>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

// Whether (v, i) beats (best, bi): smaller, or equal with the preferred index.
fn better(v: f32, i: u32, best: f32, bi: u32) -> bool {
    if (v < best) {
        return true;
    }
    if (v == best) {
        return select((i < bi), (i > bi), (p.flags & 1u) != 0u);
    }
    return false;
}

@compute @workgroup_size(256, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let o = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + tid;
    if (o >= p.outputs) {
        return;
    }
    let base = (o / p.inner) * p.n * p.inner + o % p.inner;
    var bi = 0u;
    var best = f32(x[base]);
    for (var j = 1u; j < p.n; j = j + 1u) {
        let v = f32(x[base + j * p.inner]);
        if (better(v, j, best, bi)) {
            best = v;
            bi = j;
        }
    }
    y[2u * o] = bi;
    y[2u * o + 1u] = 0u;
}

