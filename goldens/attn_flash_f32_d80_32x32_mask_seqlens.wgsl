struct Params {
    sq: u32,
    skv: u32,
    heads: u32,
    // Query heads per K/V head.
    group: u32,
    q_stride: vec4<u32>,
    k_stride: vec4<u32>,
    v_stride: vec4<u32>,
    o_stride: vec4<u32>,
    // Mask strides over (batch, head, query, key); 0 where it broadcasts.
    m_stride: vec4<u32>,
    scale: f32,
    causal: u32,
    causal_offset: i32,
    // Scaled scores become softcap · tanh(s / softcap) where this is positive.
    softcap: f32,
    q_tiles: u32,
    // Workgroups with work: (batch · heads) · q_tiles.
    count: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read> m: array<i32>;
@group(0) @binding(4) var<storage, read_write> o: array<f32>;
@group(0) @binding(5) var<uniform> p: Params;

const BR: u32 = 32u;
const BC: u32 = 32u;
const D: u32 = 80u;
// Rows of the Q and K/V tiles are padded by one word so the 8 columns of invocations reading
// different rows hit different banks.
const DP: u32 = 81u;
const BCP: u32 = 33u;
// Per invocation: RR query rows, CC keys of a tile, DC output columns.
const RR: u32 = 4u;
const CC: u32 = 4u;
const DC: u32 = 10u;

var<workgroup> q_tile: array<f32, 2592>;
var<workgroup> kv_tile: array<f32, 2592>;
// Scores, then probabilities, of the current tile.
var<workgroup> p_tile: array<f32, 1056>;
var<workgroup> row_max: array<f32, BR>;
var<workgroup> row_sum: array<f32, BR>;
var<workgroup> row_alpha: array<f32, BR>;

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


// Loads `BC` keys (or values) from `k0` into `kv_tile`; rows past the end are zeros.
fn load_kv(use_v: bool, base: u32, stride: vec4<u32>, k0: u32, tid: u32) {
    for (var i = tid; i < BC * D; i = i + 64u) {
        let c = i / D;
        let dd = i % D;
        var x = 0.0;
        if (k0 + c < p.skv) {
            let at = base + (k0 + c) * stride.z + dd * stride.w;
            if (use_v) {
                x = f32(v[at]);
            } else {
                x = f32(k[at]);
            }
        }
        kv_tile[c * DP + dd] = x;
    }
}

@compute @workgroup_size(64, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let lin = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    // The whole workgroup leaves together, before any barrier.
    if (lin >= p.count) {
        return;
    }
    let bh = lin / p.q_tiles;
    let q0 = (lin % p.q_tiles) * BR;
    let b = bh / p.heads;
    let causal_offset = max(m[b] + 1 - i32(p.sq), 0);
    let h = bh % p.heads;
    let kvh = h / p.group;
    let q_base = b * p.q_stride.x + h * p.q_stride.y;
    let k_base = b * p.k_stride.x + kvh * p.k_stride.y;
    let v_base = b * p.v_stride.x + kvh * p.v_stride.y;
    let o_base = b * p.o_stride.x + h * p.o_stride.y;
    for (var i = tid; i < BR * D; i = i + 64u) {
        let r = i / D;
        let dd = i % D;
        var x = 0.0;
        if (q0 + r < p.sq) {
            x = f32(q[q_base + (q0 + r) * p.q_stride.z + dd * p.q_stride.w]);
        }
        q_tile[r * DP + dd] = x;
    }
    if (tid < BR) {
        row_max[tid] = neg_inf();
        row_sum[tid] = 0.0;
    }
    let ty = tid / 8u;
    let tx = tid % 8u;
    var acc: array<f32, 40>;
    for (var i = 0u; i < RR * DC; i = i + 1u) {
        acc[i] = 0.0;
    }
    // Keys past the last one a causal tile can see are never loaded.
    var k_end = p.skv;
    if (p.causal != 0u) {
        k_end = u32(clamp(i32(min(q0 + BR, p.sq)) + causal_offset, 0, i32(p.skv)));
    }
    for (var k0 = 0u; k0 < k_end; k0 = k0 + BC) {
        workgroupBarrier();
        load_kv(false, k_base, p.k_stride, k0, tid);
        workgroupBarrier();
        var s: array<f32, 16>;
        for (var i = 0u; i < RR * CC; i = i + 1u) {
            s[i] = 0.0;
        }
        for (var dd = 0u; dd < D; dd = dd + 1u) {
            var kc: array<f32, 4>;
            for (var j = 0u; j < CC; j = j + 1u) {
                kc[j] = kv_tile[(tx + 8u * j) * DP + dd];
            }
            for (var i = 0u; i < RR; i = i + 1u) {
                let qv = q_tile[(ty * RR + i) * DP + dd];
                for (var j = 0u; j < CC; j = j + 1u) {
                    s[i * CC + j] = fma(qv, kc[j], s[i * CC + j]);
                }
            }
        }
        for (var i = 0u; i < RR; i = i + 1u) {
            let r = ty * RR + i;
            let qi = q0 + r;
            for (var j = 0u; j < CC; j = j + 1u) {
                let c = tx + 8u * j;
                let kj = k0 + c;
                var x = neg_inf();
                if (kj < p.skv && qi < p.sq && (p.causal == 0u || i32(kj) <= i32(qi) + causal_offset)) {
                    x = capped(s[i * CC + j] * p.scale);
                }
                p_tile[r * BCP + c] = x;
            }
        }
        workgroupBarrier();
        // Row statistics (one invocation per row) while every invocation loads V.
        if (tid < BR) {
            let m_old = row_max[tid];
            var m_new = m_old;
            for (var c = 0u; c < BC; c = c + 1u) {
                m_new = max(m_new, p_tile[tid * BCP + c]);
            }
            var alpha = 1.0;
            var sum = 0.0;
            if (m_new != neg_inf()) {
                alpha = exp(m_old - m_new);
                for (var c = 0u; c < BC; c = c + 1u) {
                    let e = exp(p_tile[tid * BCP + c] - m_new);
                    p_tile[tid * BCP + c] = e;
                    sum = sum + e;
                }
            } else {
                for (var c = 0u; c < BC; c = c + 1u) {
                    p_tile[tid * BCP + c] = 0.0;
                }
            }
            row_max[tid] = m_new;
            row_sum[tid] = row_sum[tid] * alpha + sum;
            row_alpha[tid] = alpha;
        }
        load_kv(true, v_base, p.v_stride, k0, tid);
        workgroupBarrier();
        for (var i = 0u; i < RR; i = i + 1u) {
            let r = ty * RR + i;
            let alpha = row_alpha[r];
            for (var j = 0u; j < DC; j = j + 1u) {
                acc[i * DC + j] = acc[i * DC + j] * alpha;
            }
        }
        for (var c = 0u; c < BC; c = c + 1u) {
            var vc: array<f32, 10>;
            for (var j = 0u; j < DC; j = j + 1u) {
                vc[j] = kv_tile[c * DP + tx + 8u * j];
            }
            for (var i = 0u; i < RR; i = i + 1u) {
                let pr = p_tile[(ty * RR + i) * BCP + c];
                for (var j = 0u; j < DC; j = j + 1u) {
                    acc[i * DC + j] = fma(pr, vc[j], acc[i * DC + j]);
                }
            }
        }
    }
    workgroupBarrier();
    for (var i = 0u; i < RR; i = i + 1u) {
        let r = ty * RR + i;
        if (q0 + r < p.sq) {
            // A row that sees no key is softmax over nothing: NaN, as Softmax of -inf scores.
            let inv = 1.0 / row_sum[r];
            let at = o_base + (q0 + r) * p.o_stride.z;
            for (var j = 0u; j < DC; j = j + 1u) {
                o[at + (tx + 8u * j) * p.o_stride.w] = f32(acc[i * DC + j] * inv);
            }
        }
    }
}
