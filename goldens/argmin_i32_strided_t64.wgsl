struct Params {
    outputs: u32,
    n: u32,
    inner: u32,
    // Bit 0: the last index among equal extremes.
    flags: u32,
}

@group(0) @binding(0) var<storage, read> x: array<i32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

// Whether (v, i) beats (best, bi): smaller, or equal with the preferred index.
fn better(v: i32, i: u32, best: i32, bi: u32) -> bool {
    if (v < best) {
        return true;
    }
    if (v == best) {
        return select((i < bi), (i > bi), (p.flags & 1u) != 0u);
    }
    return false;
}

const T: u32 = 64u;

var<workgroup> w_val: array<i32, T>;
var<workgroup> w_idx: array<u32, T>;

@compute @workgroup_size(64, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let o = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if (o >= p.outputs) {
        return;
    }
    let base = (o / p.inner) * p.n * p.inner + o % p.inner;
    // Each invocation starts from its first element (every invocation has one: n ≥ T).
    var bi = min(tid, p.n - 1u);
    var best = i32(x[base + bi * p.inner]);
    for (var j = tid + T; j < p.n; j = j + T) {
        let v = i32(x[base + j * p.inner]);
        if (better(v, j, best, bi)) {
            best = v;
            bi = j;
        }
    }
    w_val[tid] = best;
    w_idx[tid] = bi;
    workgroupBarrier();
    for (var s = T / 2u; s > 0u; s = s >> 1u) {
        if (tid < s && better(w_val[tid + s], w_idx[tid + s], w_val[tid], w_idx[tid])) {
            w_val[tid] = w_val[tid + s];
            w_idx[tid] = w_idx[tid + s];
        }
        workgroupBarrier();
    }
    if (tid == 0u) {
        y[2u * o] = w_idx[0];
        y[2u * o + 1u] = 0u;
    }
}

