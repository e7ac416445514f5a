enable f16;

struct Params {
    rows: u32,
    n: u32,
    eps: f32,
    // Bit 0: write the mean; bit 1: write the inverse standard deviation.
    flags: u32,
    // Collapsed dimensions of X and the element strides of scale and bias along them.
    nd: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
    dims: array<vec4<u32>, 2>,
    s_str: array<vec4<u32>, 2>,
    b_str: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> scale: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<storage, read_write> mean_out: array<f16>;
@group(0) @binding(4) var<storage, read_write> inv_out: array<f16>;
@group(0) @binding(5) var<uniform> p: Params;

const T: u32 = 128u;

var<workgroup> w_cnt: array<u32, T>;
var<workgroup> w_mean: array<f32, T>;
var<workgroup> w_m2: array<f32, T>;

@compute @workgroup_size(128, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let row = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if (row >= p.rows) {
        return;
    }
    let base = row * p.n;
    var shift = 0.0;
    if (tid < p.n) {
        shift = f32(x[base + tid]);
    }
    var cnt = 0u;
    var s1 = 0.0;
    var s2 = 0.0;
    for (var j = tid; j < p.n; j = j + T) {
        let d = f32(x[base + j]) - shift;
        s1 = s1 + d;
        s2 = fma(d, d, s2);
        cnt = cnt + 1u;
    }
    var m = 0.0;
    var m2 = 0.0;
    if (cnt > 0u) {
        m = shift + s1 / f32(cnt);
        m2 = max(s2 - s1 * s1 / f32(cnt), 0.0);
    }
    w_cnt[tid] = cnt;
    w_mean[tid] = m;
    w_m2[tid] = m2;
    workgroupBarrier();
    for (var s = T / 2u; s > 0u; s = s >> 1u) {
        if (tid < s && w_cnt[tid + s] > 0u) {
            let na = f32(w_cnt[tid]);
            let nb = f32(w_cnt[tid + s]);
            let nt = na + nb;
            let delta = w_mean[tid + s] - w_mean[tid];
            w_mean[tid] = w_mean[tid] + delta * (nb / nt);
            w_m2[tid] = w_m2[tid] + w_m2[tid + s] + delta * delta * (na * nb / nt);
            w_cnt[tid] = w_cnt[tid] + w_cnt[tid + s];
        }
        workgroupBarrier();
    }
    let mean = w_mean[0];
    let inv = 1.0 / sqrt(w_m2[0] / f32(p.n) + p.eps);
    if (tid == 0u) {
        if ((p.flags & 1u) != 0u) {
            mean_out[row] = f16(mean);
        }
        if ((p.flags & 2u) != 0u) {
            inv_out[row] = f16(inv);
        }
    }
    for (var j = tid; j < p.n; j = j + T) {
        let si = j;
        let v = (f32(x[base + j]) - mean) * inv * f32(scale[si]);
        y[base + j] = f32(v);
    }
}
