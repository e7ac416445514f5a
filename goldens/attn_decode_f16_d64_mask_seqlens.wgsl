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
    // Scaled scores become softcap · tanh(s / softcap) where this is positive.
    softcap: f32,
    // Keys per chunk (a multiple of 64).
    chunk: u32,
    // Workgroups with work: (batch · heads · sq) · splits.
    count: u32,
    splits: u32,
    pad1: u32,
}

@group(0) @binding(0) var<storage, read> q: array<f16>;
@group(0) @binding(1) var<storage, read> k: array<f16>;
@group(0) @binding(2) var<storage, read> v: array<f16>;
@group(0) @binding(3) var<storage, read> m: array<i32>;
@group(0) @binding(4) var<storage, read_write> part: array<f32>;
@group(0) @binding(5) var<uniform> p: Params;

const D: u32 = 64u;
// Output columns per invocation.
const DC: u32 = 1u;

var<workgroup> q_row: array<f32, D>;
var<workgroup> probs: array<f32, 64>;
var<workgroup> red: array<f32, 64>;

fn neg_inf() -> f32 {
    return bitcast<f32>(0xff800000u);
}

// softcap · tanh(x / softcap) where p.softcap > 0 (GroupQueryAttention's softcap, on the scaled
// score before the mask, as ONNX Runtime's CPU EP applies it), else x. tanh's argument is clamped
// where tanh is ±1 in f32, so no driver's exp-based tanh overflows.
fn capped(x: f32) -> f32 {
    if (p.softcap > 0.0) {
        return p.softcap * tanh(clamp(x / p.softcap, -9.0, 9.0));
    }
    return x;
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
    let causal_offset = max(m[b] + 1 - i32(p.sq), 0);
    let h = bh % p.heads;
    let kvh = h / p.group;
    let q_base = b * p.q_stride.x + h * p.q_stride.y + qi * p.q_stride.z;
    let k_base = b * p.k_stride.x + kvh * p.k_stride.y;
    let v_base = b * p.v_stride.x + kvh * p.v_stride.y;
    for (var dd = tid; dd < D; dd = dd + 64u) {
        q_row[dd] = f32(q[q_base + dd * p.q_stride.w]);
    }
    var k_end = p.skv;
    if (p.causal != 0u) {
        k_end = u32(clamp(i32(qi) + causal_offset + 1, 0, i32(p.skv)));
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
            // Unrolled with four independent sums, so the row's loads are all in flight at once.
            let at = k_base + kj * p.k_stride.z;
            let ws = p.k_stride.w;
            var dot0 = 0.0;
            var dot1 = 0.0;
            var dot2 = 0.0;
            var dot3 = 0.0;
            dot0 = fma(q_row[0u], f32(k[at + 0u * ws]), dot0);
            dot1 = fma(q_row[1u], f32(k[at + 1u * ws]), dot1);
            dot2 = fma(q_row[2u], f32(k[at + 2u * ws]), dot2);
            dot3 = fma(q_row[3u], f32(k[at + 3u * ws]), dot3);
            dot0 = fma(q_row[4u], f32(k[at + 4u * ws]), dot0);
            dot1 = fma(q_row[5u], f32(k[at + 5u * ws]), dot1);
            dot2 = fma(q_row[6u], f32(k[at + 6u * ws]), dot2);
            dot3 = fma(q_row[7u], f32(k[at + 7u * ws]), dot3);
            dot0 = fma(q_row[8u], f32(k[at + 8u * ws]), dot0);
            dot1 = fma(q_row[9u], f32(k[at + 9u * ws]), dot1);
            dot2 = fma(q_row[10u], f32(k[at + 10u * ws]), dot2);
            dot3 = fma(q_row[11u], f32(k[at + 11u * ws]), dot3);
            dot0 = fma(q_row[12u], f32(k[at + 12u * ws]), dot0);
            dot1 = fma(q_row[13u], f32(k[at + 13u * ws]), dot1);
            dot2 = fma(q_row[14u], f32(k[at + 14u * ws]), dot2);
            dot3 = fma(q_row[15u], f32(k[at + 15u * ws]), dot3);
            dot0 = fma(q_row[16u], f32(k[at + 16u * ws]), dot0);
            dot1 = fma(q_row[17u], f32(k[at + 17u * ws]), dot1);
            dot2 = fma(q_row[18u], f32(k[at + 18u * ws]), dot2);
            dot3 = fma(q_row[19u], f32(k[at + 19u * ws]), dot3);
            dot0 = fma(q_row[20u], f32(k[at + 20u * ws]), dot0);
            dot1 = fma(q_row[21u], f32(k[at + 21u * ws]), dot1);
            dot2 = fma(q_row[22u], f32(k[at + 22u * ws]), dot2);
            dot3 = fma(q_row[23u], f32(k[at + 23u * ws]), dot3);
            dot0 = fma(q_row[24u], f32(k[at + 24u * ws]), dot0);
            dot1 = fma(q_row[25u], f32(k[at + 25u * ws]), dot1);
            dot2 = fma(q_row[26u], f32(k[at + 26u * ws]), dot2);
            dot3 = fma(q_row[27u], f32(k[at + 27u * ws]), dot3);
            dot0 = fma(q_row[28u], f32(k[at + 28u * ws]), dot0);
            dot1 = fma(q_row[29u], f32(k[at + 29u * ws]), dot1);
            dot2 = fma(q_row[30u], f32(k[at + 30u * ws]), dot2);
            dot3 = fma(q_row[31u], f32(k[at + 31u * ws]), dot3);
            dot0 = fma(q_row[32u], f32(k[at + 32u * ws]), dot0);
            dot1 = fma(q_row[33u], f32(k[at + 33u * ws]), dot1);
            dot2 = fma(q_row[34u], f32(k[at + 34u * ws]), dot2);
            dot3 = fma(q_row[35u], f32(k[at + 35u * ws]), dot3);
            dot0 = fma(q_row[36u], f32(k[at + 36u * ws]), dot0);
            dot1 = fma(q_row[37u], f32(k[at + 37u * ws]), dot1);
            dot2 = fma(q_row[38u], f32(k[at + 38u * ws]), dot2);
            dot3 = fma(q_row[39u], f32(k[at + 39u * ws]), dot3);
            dot0 = fma(q_row[40u], f32(k[at + 40u * ws]), dot0);
            dot1 = fma(q_row[41u], f32(k[at + 41u * ws]), dot1);
            dot2 = fma(q_row[42u], f32(k[at + 42u * ws]), dot2);
            dot3 = fma(q_row[43u], f32(k[at + 43u * ws]), dot3);
            dot0 = fma(q_row[44u], f32(k[at + 44u * ws]), dot0);
            dot1 = fma(q_row[45u], f32(k[at + 45u * ws]), dot1);
            dot2 = fma(q_row[46u], f32(k[at + 46u * ws]), dot2);
            dot3 = fma(q_row[47u], f32(k[at + 47u * ws]), dot3);
            dot0 = fma(q_row[48u], f32(k[at + 48u * ws]), dot0);
            dot1 = fma(q_row[49u], f32(k[at + 49u * ws]), dot1);
            dot2 = fma(q_row[50u], f32(k[at + 50u * ws]), dot2);
            dot3 = fma(q_row[51u], f32(k[at + 51u * ws]), dot3);
            dot0 = fma(q_row[52u], f32(k[at + 52u * ws]), dot0);
            dot1 = fma(q_row[53u], f32(k[at + 53u * ws]), dot1);
            dot2 = fma(q_row[54u], f32(k[at + 54u * ws]), dot2);
            dot3 = fma(q_row[55u], f32(k[at + 55u * ws]), dot3);
            dot0 = fma(q_row[56u], f32(k[at + 56u * ws]), dot0);
            dot1 = fma(q_row[57u], f32(k[at + 57u * ws]), dot1);
            dot2 = fma(q_row[58u], f32(k[at + 58u * ws]), dot2);
            dot3 = fma(q_row[59u], f32(k[at + 59u * ws]), dot3);
            dot0 = fma(q_row[60u], f32(k[at + 60u * ws]), dot0);
            dot1 = fma(q_row[61u], f32(k[at + 61u * ws]), dot1);
            dot2 = fma(q_row[62u], f32(k[at + 62u * ws]), dot2);
            dot3 = fma(q_row[63u], f32(k[at + 63u * ws]), dot3);
            s = capped(((dot0 + dot1) + (dot2 + dot3)) * p.scale);
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
                let vc = v_base + col * p.v_stride.w;
                var c = 0u;
                // Eight keys' loads in flight at a time, then the tail one by one.
                for (; c + 8u <= n; c = c + 8u) {
                    let v0 = f32(v[vc + (j0 + c + 0u) * p.v_stride.z]);
                    let v1 = f32(v[vc + (j0 + c + 1u) * p.v_stride.z]);
                    let v2 = f32(v[vc + (j0 + c + 2u) * p.v_stride.z]);
                    let v3 = f32(v[vc + (j0 + c + 3u) * p.v_stride.z]);
                    let v4 = f32(v[vc + (j0 + c + 4u) * p.v_stride.z]);
                    let v5 = f32(v[vc + (j0 + c + 5u) * p.v_stride.z]);
                    let v6 = f32(v[vc + (j0 + c + 6u) * p.v_stride.z]);
                    let v7 = f32(v[vc + (j0 + c + 7u) * p.v_stride.z]);
                    a = fma(probs[c + 0u], v0, a);
                    a = fma(probs[c + 1u], v1, a);
                    a = fma(probs[c + 2u], v2, a);
                    a = fma(probs[c + 3u], v3, a);
                    a = fma(probs[c + 4u], v4, a);
                    a = fma(probs[c + 5u], v5, a);
                    a = fma(probs[c + 6u], v6, a);
                    a = fma(probs[c + 7u], v7, a);
                }
                for (; c < n; c = c + 1u) {
                    a = fma(probs[c], f32(v[vc + (j0 + c) * p.v_stride.z]), a);
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
