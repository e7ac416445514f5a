enable f16;

struct Params {
    sq: u32,
    skv: u32,
    heads: u32,
    group: u32,
    q_stride: vec4<u32>,
    k_stride: vec4<u32>,
    v_stride: vec4<u32>,
    o_stride: vec4<u32>,
    m_stride: vec4<u32>,
    scale: f32,
    causal: u32,
    causal_offset: i32,
    // Keys per chunk (a multiple of 64).
    chunk: u32,
    // Workgroups with work: (batch · heads · sq) · splits.
    count: u32,
    splits: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<storage, read> q: array<f16>;
@group(0) @binding(1) var<storage, read> k: array<f16>;
@group(0) @binding(2) var<storage, read> v: array<f16>;
@group(0) @binding(3) var<storage, read> m: array<u32>;
@group(0) @binding(4) var<storage, read_write> part: array<f32>;
@group(0) @binding(5) var<uniform> p: Params;

const D: u32 = 80u;
// Output columns per invocation.
const DC: u32 = 2u;

var<workgroup> q_row: array<f32, D>;
var<workgroup> probs: array<f32, 64>;
var<workgroup> red: array<f32, 64>;

fn neg_inf() -> f32 {
    return bitcast<f32>(0xff800000u);
}

fn mask_byte(i: u32) -> u32 {
    return (m[i / 4u] >> (8u * (i % 4u))) & 0xffu;
}

// The workgroup's max (`is_max`) or sum of `x`, for every invocation.
fn reduce(x: f32, tid: u32, is_max: bool) -> f32 {
    workgroupBarrier();
    red[tid] = x;
    workgroupBarrier();
    for (var s = 32u; s > 0u; s = s >> 1u) {
        if (tid < s) {
            if (is_max) {
                red[tid] = max(red[tid], red[tid + s]);
            } else {
                red[tid] = red[tid] + red[tid + s];
            }
        }
        workgroupBarrier();
    }
    return red[0];
}

@compute @workgroup_size(64, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let lin = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if (lin >= p.count) {
        return;
    }
    let row = lin / p.splits;
    let split = lin % p.splits;
    let qi = row % p.sq;
    let bh = row / p.sq;
    let b = bh / p.heads;
    let h = bh % p.heads;
    let kvh = h / p.group;
    let q_base = b * p.q_stride.x + h * p.q_stride.y + qi * p.q_stride.z;
    let k_base = b * p.k_stride.x + kvh * p.k_stride.y;
    let v_base = b * p.v_stride.x + kvh * p.v_stride.y;
    let m_base = b * p.m_stride.x + h * p.m_stride.y + qi * p.m_stride.z;
    for (var dd = tid; dd < D; dd = dd + 64u) {
        q_row[dd] = f32(q[q_base + dd * p.q_stride.w]);
    }
    var k_end = p.skv;
    if (p.causal != 0u) {
        k_end = u32(clamp(i32(qi) + p.causal_offset + 1, 0, i32(p.skv)));
    }
    let c0 = split * p.chunk;
    let c1 = min(c0 + p.chunk, k_end);
    var m_run = neg_inf();
    var l_run = 0.0;
    var acc: array<f32, DC>;
    for (var j = 0u; j < DC; j = j + 1u) {
        acc[j] = 0.0;
    }
    workgroupBarrier();
    for (var j0 = c0; j0 < c1; j0 = j0 + 64u) {
        let kj = j0 + tid;
        var s = neg_inf();
        if (kj < c1) {
            var dot = 0.0;
            let at = k_base + kj * p.k_stride.z;
            for (var dd = 0u; dd < D; dd = dd + 1u) {
                dot = fma(q_row[dd], f32(k[at + dd * p.k_stride.w]), dot);
            }
            s = dot * p.scale;
            if (mask_byte(m_base + kj * p.m_stride.w) == 0u) {
                s = neg_inf();
            }
        }
        let m_new = max(m_run, reduce(s, tid, true));
        var e = 0.0;
        var alpha = 1.0;
        if (m_new != neg_inf()) {
            e = exp(s - m_new);
            alpha = exp(m_run - m_new);
        }
        let sum = reduce(e, tid, false);
        probs[tid] = e;
        workgroupBarrier();
        l_run = l_run * alpha + sum;
        m_run = m_new;
        let n = min(64u, c1 - j0);
        for (var j = 0u; j < DC; j = j + 1u) {
            let col = tid + 64u * j;
            if (col < D) {
                var a = acc[j] * alpha;
                for (var c = 0u; c < n; c = c + 1u) {
                    a = fma(probs[c], f32(v[v_base + (j0 + c) * p.v_stride.z + col * p.v_stride.w]), a);
                }
                acc[j] = a;
            }
        }
    }
    let out = lin * (D + 2u);
    for (var j = 0u; j < DC; j = j + 1u) {
        let col = tid + 64u * j;
        if (col < D) {
            part[out + col] = acc[j];
        }
    }
    if (tid == 0u) {
        part[out + D] = m_run;
        part[out + D + 1u] = l_run;
    }
}
