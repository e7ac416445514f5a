enable f16;

struct Params {
    rows: u32,
    n: u32,
    eps: f32,
    // Bit 0: write the mean; bit 1: write the inverse standard deviation.
    flags: u32,
    // Collapsed dimensions of X and the element strides of scale and bias along them.
    nd: u32,
    // Elements of skip (a multiple of the row length; it repeats over X).
    skip_len: u32,
    pad1: u32,
    pad2: u32,
    dims: array<vec4<u32>, 2>,
    s_str: array<vec4<u32>, 2>,
    b_str: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read> x: array<vec4<f16>>;
@group(0) @binding(1) var<storage, read> skip: array<vec4<f16>>;
@group(0) @binding(2) var<storage, read> scale: array<vec4<f16>>;
@group(0) @binding(3) var<storage, read> sbias: array<vec4<f16>>;
@group(0) @binding(4) var<storage, read_write> y: array<vec4<f16>>;
@group(0) @binding(5) var<storage, read_write> mean_out: array<f32>;
@group(0) @binding(6) var<storage, read_write> inv_out: array<f32>;
@group(0) @binding(7) var<storage, read_write> sum_out: array<vec4<f16>>;
@group(0) @binding(8) var<uniform> p: Params;

const T: u32 = 64u;

var<workgroup> w_part: array<vec4<f32>, T>;

// The sum of `v` over the workgroup, for every invocation.
fn workgroup_sum(v: vec4<f32>, lane: u32, sg: u32, nsg: u32) -> vec4<f32> {
    let s = subgroupAdd(v);
    if (lane == 0u) {
        w_part[sg] = s;
    }
    workgroupBarrier();
    var total = w_part[0];
    for (var i = 1u; i < nsg; i = i + 1u) {
        total = total + w_part[i];
    }
    return total;
}


// Element j of the row at `base`: x + skip (+ bias when flags bit 3 is set).
fn load(base: u32, j: u32) -> vec4<f32> {
    var v = vec4<f32>(x[base + j]) + vec4<f32>(skip[(base + j) % p.skip_len]);
    if ((p.flags & 8u) != 0u) {
        v = v + vec4<f32>(sbias[j]);
    }
    return v;
}

@compute @workgroup_size(64, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_id) sg: u32,
    @builtin(num_subgroups) nsg: u32,
) {
    let row = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if (row >= p.rows) {
        return;
    }
    let len = p.n / 4u;
    let base = row * len;
    let nf = f32(p.n);
    var shift = 0.0;
    if (p.n > 0u) {
        shift = load(base, 0u).x;
    }
    // Σ(x - k), Σ((x - k)·r)² with r = 1/√n (the shifted mean square, past f32's range only where it is), and
    // Σ x²/n with each square in f32 as the CPU EP takes them (+Inf where one is past f32's range).
    let r = inverseSqrt(nf);
    let rn = 1.0 / nf;
    var acc = vec4<f32>(0.0, 0.0, 0.0, 0.0);
    for (var j = tid; j < len; j = j + T) {
        let s = load(base, j);
        if ((p.flags & 4u) != 0u) {
            sum_out[base + j] = vec4<f16>(s);
        }
        let d = s - shift;
        let sq = s * s;
        acc = acc + vec4<f32>(d.x + d.y + d.z + d.w, dot(d * r, d * r), (sq.x + sq.y + sq.z + sq.w) * rn, 0.0);
    }
    let total = workgroup_sum(acc, lane, sg, nsg);
    let dm = total.x / nf;
    let mean = shift + dm;
    // Rounding may leave a tiny negative variance; NaN (an infinite input) must stay NaN, as
    // ONNX Runtime's CPU EP gives, so no `max` (which would turn NaN into 0). Squares past f32's
    // range make the variance +Inf, as ONNX's definition with the f32 stash_type (and the CPU
    // EP) gives: an infinite mean square must not meet an infinite squared mean (Inf − Inf).
    let ms = total.y;
    let raw = total.z;
    var variance = ms - dm * dm;
    // A first element far from the rest can take the shifted mean square past f32's range where the row's
    // own stays in it: then E[x²] - mean², as the CPU EP takes it.
    if (ms > 3.0e38) {
        variance = raw - mean * mean;
    }
    if (raw > 3.0e38) {
        variance = raw;
    }
    let inv = 1.0 / sqrt(select(variance, 0.0, variance < 0.0) + p.eps);
    if (tid == 0u) {
        if ((p.flags & 1u) != 0u) {
            mean_out[row] = f32(mean);
        }
        if ((p.flags & 2u) != 0u) {
            inv_out[row] = f32(inv);
        }
    }
    for (var j = tid; j < len; j = j + T) {
        let si = j;
        let v = (load(base, j) - mean) * inv * vec4<f32>(scale[si]);
        y[base + j] = vec4<f16>(v);
    }
}
