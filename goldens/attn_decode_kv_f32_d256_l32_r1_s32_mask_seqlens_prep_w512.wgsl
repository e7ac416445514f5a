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
    // Keys per chunk (a multiple of 128).
    chunk: u32,
    // Workgroups with work: batch · K/V heads · row blocks · splits.
    count: u32,
    splits: u32,
    // Query rows per K/V head (group · sq), and blocks of 1 of them.
    rows: u32,
    row_blocks: u32,
    kv_heads: u32,
    // Nonzero: the last chunk's workgroup of each (batch, K/V head, row block) combines the
    // chunks' partials into `o` itself (no combine dispatch).
    fused: u32,
    pad1: u32,
    // The preparation: elements per token row of the query and of the K/V sources, where Q's, K's and
    // V's heads start in them, rot / 2 (0: none) and the cos/sin caches' rows, flags (bit 0 interleaved
    // pairs, bit 1 Q's norm, bit 2 K's norm, bits 3 and 4 the present K, V is the past's own range),
    // the past caches' rows, the status code and the norms' epsilons.
    q_row: u32,
    kv_row: u32,
    q_off: u32,
    k_off: u32,
    v_off: u32,
    half: u32,
    max_seq: u32,
    flags: u32,
    past: u32,
    code: u32,
    q_eps: f32,
    k_eps: f32,
}

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k_src: array<f32>;
@group(0) @binding(2) var<storage, read> v_src: array<f32>;
@group(0) @binding(3) var<storage, read> k_past: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> v_past: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> m: array<i32>;
@group(0) @binding(6) var<storage, read> cos_cache: array<f32>;
@group(0) @binding(7) var<storage, read> sin_cache: array<f32>;
@group(0) @binding(8) var<storage, read> q_norm: array<f32>;
@group(0) @binding(9) var<storage, read> k_norm: array<f32>;
// The present caches, in 16-byte chunks.
@group(0) @binding(10) var<storage, read_write> k: array<vec4<f32>>;
@group(0) @binding(11) var<storage, read_write> v: array<vec4<f32>>;
@group(0) @binding(12) var<storage, read_write> part: array<f32>;
@group(0) @binding(13) var<storage, read_write> status: array<u32>;
@group(0) @binding(14) var<storage, read_write> o: array<f32>;
@group(0) @binding(15) var<storage, read_write> done: array<atomic<u32>>;
@group(0) @binding(16) var<uniform> p: Params;

const D: u32 = 256u;
// Invocations per key row (16 key groups in the workgroup).
const L: u32 = 32u;
// Keys per step: 8 per key group.
const STEP: u32 = 128u;
// Elements per 16-byte chunk.
const E: u32 = 4u;

// The subgroups' output columns of 1 row(s), then their maxima and sums.
var<workgroup> red: array<f32, 4096>;
var<workgroup> ml: array<f32, 32>;
// The chunks counted done for this workgroup's rows, as its first invocation read them.
var<workgroup> counted: u32;

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


fn chunk_f32(r: vec4<f32>) -> array<f32, 4> {
    return array<f32, 4>(r.x, r.y, r.z, r.w);
}

// The preparation's sources and norm weights, element by element.
fn q_in(i: u32) -> f32 {
    return f32(q[i]);
}

fn k_in(i: u32) -> f32 {
    return f32(k_src[i]);
}

fn q_w(i: u32) -> f32 {
    return f32(q_norm[i]);
}

fn k_w(i: u32) -> f32 {
    return f32(k_norm[i]);
}

// This invocation's share of the squares of the Q head row at `base` (its chunks li, li + L, ...).
fn q_squares(base: u32, li: u32) -> f32 {
    var ss = 0.0;
    for (var c = 0u; c < 2u; c++) {
        for (var j = 0u; j < E; j++) {
            let x = q_in(base + (c * L + li) * E + j);
            ss = fma(x, x, ss);
        }
    }
    return ss;
}

// Element i of the Q head row at `base`: times `inv` and its norm weight where `inv` > 0,
// rounded to f32 as the preparation's own kernel stores it.
fn q_normed(base: u32, i: u32, inv: f32) -> f32 {
    let x = q_in(base + i);
    if (inv <= 0.0) {
        return x;
    }
    return f32(f32(x * inv * q_w(i)));
}

// ... rotated to position `pos` (interleaved pairs, flags bit 0, or halves; rot / 2 = p.half), rounded again.
fn q_new(base: u32, i: u32, inv: f32, pos: u32) -> f32 {
    let x = q_normed(base, i, inv);
    let rot = 2u * p.half;
    if (i >= rot) {
        return x;
    }
    if ((p.flags & 1u) != 0u) {
        let c = pos * p.half + i / 2u;
        let cs = f32(cos_cache[c]);
        let sn = f32(sin_cache[c]);
        if (i % 2u == 0u) {
            return f32(f32(x * cs - q_normed(base, i + 1u, inv) * sn));
        }
        return f32(f32(x * cs + q_normed(base, i - 1u, inv) * sn));
    }
    let c = pos * p.half + i % p.half;
    let y = q_normed(base, (i + p.half) % rot, inv);
    return f32(f32(x * f32(cos_cache[c]) + select(1.0, -1.0, i < p.half) * y * f32(sin_cache[c])));
}

// This invocation's share of the squares of the K head row at `base` (its chunks li, li + L, ...).
fn k_squares(base: u32, li: u32) -> f32 {
    var ss = 0.0;
    for (var c = 0u; c < 2u; c++) {
        for (var j = 0u; j < E; j++) {
            let x = k_in(base + (c * L + li) * E + j);
            ss = fma(x, x, ss);
        }
    }
    return ss;
}

// Element i of the K head row at `base`: times `inv` and its norm weight where `inv` > 0,
// rounded to f32 as the preparation's own kernel stores it.
fn k_normed(base: u32, i: u32, inv: f32) -> f32 {
    let x = k_in(base + i);
    if (inv <= 0.0) {
        return x;
    }
    return f32(f32(x * inv * k_w(i)));
}

// ... rotated to position `pos` (interleaved pairs, flags bit 0, or halves; rot / 2 = p.half), rounded again.
fn k_new(base: u32, i: u32, inv: f32, pos: u32) -> f32 {
    let x = k_normed(base, i, inv);
    let rot = 2u * p.half;
    if (i >= rot) {
        return x;
    }
    if ((p.flags & 1u) != 0u) {
        let c = pos * p.half + i / 2u;
        let cs = f32(cos_cache[c]);
        let sn = f32(sin_cache[c]);
        if (i % 2u == 0u) {
            return f32(f32(x * cs - k_normed(base, i + 1u, inv) * sn));
        }
        return f32(f32(x * cs + k_normed(base, i - 1u, inv) * sn));
    }
    let c = pos * p.half + i % p.half;
    let y = k_normed(base, (i + p.half) % rot, inv);
    return f32(f32(x * f32(cos_cache[c]) + select(1.0, -1.0, i < p.half) * y * f32(sin_cache[c])));
}

@compute @workgroup_size(512, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
    @builtin(subgroup_size) sg_size: u32,
) {
    let lin = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if (lin >= p.count) {
        return;
    }
    let split = lin % p.splits;
    let t1 = lin / p.splits;
    let blk = t1 % p.row_blocks;
    let t2 = t1 / p.row_blocks;
    let kvh = t2 % p.kv_heads;
    let b = t2 / p.kv_heads;
    let causal_offset = max(m[b] + 1 - i32(p.sq), 0);
    // The new token's position, and whether the caches hold it.
    let past_b = u32(causal_offset);
    let bad = m[b] < 0 || past_b >= p.skv || past_b > p.past || (p.half > 0u && past_b >= p.max_seq);
    if (bad) {
        status[0] = p.code;
    }
    let pos = select(past_b, 0u, bad);
    // This invocation's key group and its place in a key row: chunks li, li + L, ...
    let li = tid % L;
    let kg = tid / L;
    let k_base = b * p.k_stride.x + kvh * p.k_stride.y;
    let v_base = b * p.v_stride.x + kvh * p.v_stride.y;

    // Row 0 of the block: query head h0, query row qi0; end0 keys it sees.
    let rg0 = blk * 1u + 0u;
    let live0 = rg0 < p.rows;
    let h0 = kvh * p.group + rg0 / p.sq;
    let qi0 = rg0 % p.sq;
    var end0 = 0u;
    var q0: array<f32, 8>;
    if (live0) {
        end0 = p.skv;
        if (p.causal != 0u) {
            end0 = u32(clamp(i32(qi0) + causal_offset + 1, 0, i32(p.skv)));
        }
        if (bad) {
            end0 = 0u;
        }
        // Q's head row from the query, normalised (flags bit 1) and rotated to the token's position.
        let q_at = b * p.q_row + p.q_off + h0 * D;
        var inv = 0.0;
        if ((p.flags & 2u) != 0u) {
            var ss = q_squares(q_at, li);
            ss = ss + subgroupShuffleXor(ss, 16u);
            ss = ss + subgroupShuffleXor(ss, 8u);
            ss = ss + subgroupShuffleXor(ss, 4u);
            ss = ss + subgroupShuffleXor(ss, 2u);
            ss = ss + subgroupShuffleXor(ss, 1u);
            inv = inverseSqrt(ss / f32(D) + p.q_eps);
        }
        q0[0] = q_new(q_at, 0u * L * E + li * E + 0u, inv, pos);
        q0[1] = q_new(q_at, 0u * L * E + li * E + 1u, inv, pos);
        q0[2] = q_new(q_at, 0u * L * E + li * E + 2u, inv, pos);
        q0[3] = q_new(q_at, 0u * L * E + li * E + 3u, inv, pos);
        q0[4] = q_new(q_at, 1u * L * E + li * E + 0u, inv, pos);
        q0[5] = q_new(q_at, 1u * L * E + li * E + 1u, inv, pos);
        q0[6] = q_new(q_at, 1u * L * E + li * E + 2u, inv, pos);
        q0[7] = q_new(q_at, 1u * L * E + li * E + 3u, inv, pos);
    }
    var m0 = neg_inf();
    var l0 = 0.0;
    var acc0: array<f32, 8>;

    var k_hi = end0;
    let c0 = split * p.chunk;
    let c1 = min(c0 + p.chunk, k_hi);
    // The new K row (normalised, flags bit 2, and rotated) and V row into the present caches, by every
    // workgroup whose chunk holds key past_b (the same values), before its loop reads them there.
    let k_at = b * p.kv_row + p.k_off + kvh * D;
    let v_at = b * p.kv_row + p.v_off + kvh * D;
    var k_inv = 0.0;
    if ((p.flags & 4u) != 0u) {
        var ss = k_squares(k_at, li);
        ss = ss + subgroupShuffleXor(ss, 16u);
        ss = ss + subgroupShuffleXor(ss, 8u);
        ss = ss + subgroupShuffleXor(ss, 4u);
        ss = ss + subgroupShuffleXor(ss, 2u);
        ss = ss + subgroupShuffleXor(ss, 1u);
        k_inv = inverseSqrt(ss / f32(D) + p.k_eps);
    }
    if (!bad && kg == 0u && past_b >= c0 && past_b < c0 + p.chunk) {
        let ka = (k_base + past_b * p.k_stride.z) / E + li;
        let va = (v_base + past_b * p.v_stride.z) / E + li;
        for (var c = 0u; c < 2u; c++) {
            let e0 = (c * L + li) * E;
            k[ka + c * L] = vec4<f32>(k_new(k_at, e0 + 0u, k_inv, pos), k_new(k_at, e0 + 1u, k_inv, pos), k_new(k_at, e0 + 2u, k_inv, pos), k_new(k_at, e0 + 3u, k_inv, pos));
            v[va + c * L] = vec4<f32>(v_src[v_at + e0 + 0u], v_src[v_at + e0 + 1u], v_src[v_at + e0 + 2u], v_src[v_at + e0 + 3u]);
        }
    }
    // A present that is not its past's own range (flags bits 3, 4 clear): zeros after the new row, as
    // ONNX Runtime's CPU kernel writes them (the first row block).
    if (!bad && blk == 0u) {
        let z_end = min(c0 + p.chunk, p.skv);
        for (var key = max(c0, past_b + 1u) + kg; key < z_end; key = key + 16u) {
            let ka = (k_base + key * p.k_stride.z) / E + li;
            let va = (v_base + key * p.v_stride.z) / E + li;
            for (var c = 0u; c < 2u; c++) {
                if ((p.flags & 8u) == 0u) {
                    k[ka + c * L] = vec4<f32>();
                }
                if ((p.flags & 16u) == 0u) {
                    v[va + c * L] = vec4<f32>();
                }
            }
        }
    }
    storageBarrier();
    for (var j0 = c0; j0 < c1; j0 = j0 + STEP) {
        // All of the step's K and V loads are issued before any is used.
        let key0 = j0 + kg + 0u;
        let ok0 = key0 < c1;
        var kx0_0 = vec4<f32>();
        var vx0_0 = vec4<f32>();
        var kx0_1 = vec4<f32>();
        var vx0_1 = vec4<f32>();
        if (ok0) {
            let ka = (k_base + key0 * p.k_stride.z) / E + li;
            let va = (v_base + key0 * p.v_stride.z) / E + li;
            // Rows before the new one come from a past that is not the present's range (flags bits 3,
            // 4 clear), and go into the present as they pass (the first row block).
            let pa = ((b * p.kv_heads + kvh) * p.past + key0) * (D / E) + li;
            if (key0 < past_b && (p.flags & 8u) == 0u) {
                kx0_0 = k_past[pa + 0u * L];
                kx0_1 = k_past[pa + 1u * L];
                if (blk == 0u) {
                    k[ka + 0u * L] = kx0_0;
                    k[ka + 1u * L] = kx0_1;
                }
            } else {
                kx0_0 = k[ka + 0u * L];
                kx0_1 = k[ka + 1u * L];
            }
            if (key0 < past_b && (p.flags & 16u) == 0u) {
                vx0_0 = v_past[pa + 0u * L];
                vx0_1 = v_past[pa + 1u * L];
                if (blk == 0u) {
                    v[va + 0u * L] = vx0_0;
                    v[va + 1u * L] = vx0_1;
                }
            } else {
                vx0_0 = v[va + 0u * L];
                vx0_1 = v[va + 1u * L];
            }
        }
        let key1 = j0 + kg + 16u;
        let ok1 = key1 < c1;
        var kx1_0 = vec4<f32>();
        var vx1_0 = vec4<f32>();
        var kx1_1 = vec4<f32>();
        var vx1_1 = vec4<f32>();
        if (ok1) {
            let ka = (k_base + key1 * p.k_stride.z) / E + li;
            let va = (v_base + key1 * p.v_stride.z) / E + li;
            // Rows before the new one come from a past that is not the present's range (flags bits 3,
            // 4 clear), and go into the present as they pass (the first row block).
            let pa = ((b * p.kv_heads + kvh) * p.past + key1) * (D / E) + li;
            if (key1 < past_b && (p.flags & 8u) == 0u) {
                kx1_0 = k_past[pa + 0u * L];
                kx1_1 = k_past[pa + 1u * L];
                if (blk == 0u) {
                    k[ka + 0u * L] = kx1_0;
                    k[ka + 1u * L] = kx1_1;
                }
            } else {
                kx1_0 = k[ka + 0u * L];
                kx1_1 = k[ka + 1u * L];
            }
            if (key1 < past_b && (p.flags & 16u) == 0u) {
                vx1_0 = v_past[pa + 0u * L];
                vx1_1 = v_past[pa + 1u * L];
                if (blk == 0u) {
                    v[va + 0u * L] = vx1_0;
                    v[va + 1u * L] = vx1_1;
                }
            } else {
                vx1_0 = v[va + 0u * L];
                vx1_1 = v[va + 1u * L];
            }
        }
        let key2 = j0 + kg + 32u;
        let ok2 = key2 < c1;
        var kx2_0 = vec4<f32>();
        var vx2_0 = vec4<f32>();
        var kx2_1 = vec4<f32>();
        var vx2_1 = vec4<f32>();
        if (ok2) {
            let ka = (k_base + key2 * p.k_stride.z) / E + li;
            let va = (v_base + key2 * p.v_stride.z) / E + li;
            // Rows before the new one come from a past that is not the present's range (flags bits 3,
            // 4 clear), and go into the present as they pass (the first row block).
            let pa = ((b * p.kv_heads + kvh) * p.past + key2) * (D / E) + li;
            if (key2 < past_b && (p.flags & 8u) == 0u) {
                kx2_0 = k_past[pa + 0u * L];
                kx2_1 = k_past[pa + 1u * L];
                if (blk == 0u) {
                    k[ka + 0u * L] = kx2_0;
                    k[ka + 1u * L] = kx2_1;
                }
            } else {
                kx2_0 = k[ka + 0u * L];
                kx2_1 = k[ka + 1u * L];
            }
            if (key2 < past_b && (p.flags & 16u) == 0u) {
                vx2_0 = v_past[pa + 0u * L];
                vx2_1 = v_past[pa + 1u * L];
                if (blk == 0u) {
                    v[va + 0u * L] = vx2_0;
                    v[va + 1u * L] = vx2_1;
                }
            } else {
                vx2_0 = v[va + 0u * L];
                vx2_1 = v[va + 1u * L];
            }
        }
        let key3 = j0 + kg + 48u;
        let ok3 = key3 < c1;
        var kx3_0 = vec4<f32>();
        var vx3_0 = vec4<f32>();
        var kx3_1 = vec4<f32>();
        var vx3_1 = vec4<f32>();
        if (ok3) {
            let ka = (k_base + key3 * p.k_stride.z) / E + li;
            let va = (v_base + key3 * p.v_stride.z) / E + li;
            // Rows before the new one come from a past that is not the present's range (flags bits 3,
            // 4 clear), and go into the present as they pass (the first row block).
            let pa = ((b * p.kv_heads + kvh) * p.past + key3) * (D / E) + li;
            if (key3 < past_b && (p.flags & 8u) == 0u) {
                kx3_0 = k_past[pa + 0u * L];
                kx3_1 = k_past[pa + 1u * L];
                if (blk == 0u) {
                    k[ka + 0u * L] = kx3_0;
                    k[ka + 1u * L] = kx3_1;
                }
            } else {
                kx3_0 = k[ka + 0u * L];
                kx3_1 = k[ka + 1u * L];
            }
            if (key3 < past_b && (p.flags & 16u) == 0u) {
                vx3_0 = v_past[pa + 0u * L];
                vx3_1 = v_past[pa + 1u * L];
                if (blk == 0u) {
                    v[va + 0u * L] = vx3_0;
                    v[va + 1u * L] = vx3_1;
                }
            } else {
                vx3_0 = v[va + 0u * L];
                vx3_1 = v[va + 1u * L];
            }
        }
        let key4 = j0 + kg + 64u;
        let ok4 = key4 < c1;
        var kx4_0 = vec4<f32>();
        var vx4_0 = vec4<f32>();
        var kx4_1 = vec4<f32>();
        var vx4_1 = vec4<f32>();
        if (ok4) {
            let ka = (k_base + key4 * p.k_stride.z) / E + li;
            let va = (v_base + key4 * p.v_stride.z) / E + li;
            // Rows before the new one come from a past that is not the present's range (flags bits 3,
            // 4 clear), and go into the present as they pass (the first row block).
            let pa = ((b * p.kv_heads + kvh) * p.past + key4) * (D / E) + li;
            if (key4 < past_b && (p.flags & 8u) == 0u) {
                kx4_0 = k_past[pa + 0u * L];
                kx4_1 = k_past[pa + 1u * L];
                if (blk == 0u) {
                    k[ka + 0u * L] = kx4_0;
                    k[ka + 1u * L] = kx4_1;
                }
            } else {
                kx4_0 = k[ka + 0u * L];
                kx4_1 = k[ka + 1u * L];
            }
            if (key4 < past_b && (p.flags & 16u) == 0u) {
                vx4_0 = v_past[pa + 0u * L];
                vx4_1 = v_past[pa + 1u * L];
                if (blk == 0u) {
                    v[va + 0u * L] = vx4_0;
                    v[va + 1u * L] = vx4_1;
                }
            } else {
                vx4_0 = v[va + 0u * L];
                vx4_1 = v[va + 1u * L];
            }
        }
        let key5 = j0 + kg + 80u;
        let ok5 = key5 < c1;
        var kx5_0 = vec4<f32>();
        var vx5_0 = vec4<f32>();
        var kx5_1 = vec4<f32>();
        var vx5_1 = vec4<f32>();
        if (ok5) {
            let ka = (k_base + key5 * p.k_stride.z) / E + li;
            let va = (v_base + key5 * p.v_stride.z) / E + li;
            // Rows before the new one come from a past that is not the present's range (flags bits 3,
            // 4 clear), and go into the present as they pass (the first row block).
            let pa = ((b * p.kv_heads + kvh) * p.past + key5) * (D / E) + li;
            if (key5 < past_b && (p.flags & 8u) == 0u) {
                kx5_0 = k_past[pa + 0u * L];
                kx5_1 = k_past[pa + 1u * L];
                if (blk == 0u) {
                    k[ka + 0u * L] = kx5_0;
                    k[ka + 1u * L] = kx5_1;
                }
            } else {
                kx5_0 = k[ka + 0u * L];
                kx5_1 = k[ka + 1u * L];
            }
            if (key5 < past_b && (p.flags & 16u) == 0u) {
                vx5_0 = v_past[pa + 0u * L];
                vx5_1 = v_past[pa + 1u * L];
                if (blk == 0u) {
                    v[va + 0u * L] = vx5_0;
                    v[va + 1u * L] = vx5_1;
                }
            } else {
                vx5_0 = v[va + 0u * L];
                vx5_1 = v[va + 1u * L];
            }
        }
        let key6 = j0 + kg + 96u;
        let ok6 = key6 < c1;
        var kx6_0 = vec4<f32>();
        var vx6_0 = vec4<f32>();
        var kx6_1 = vec4<f32>();
        var vx6_1 = vec4<f32>();
        if (ok6) {
            let ka = (k_base + key6 * p.k_stride.z) / E + li;
            let va = (v_base + key6 * p.v_stride.z) / E + li;
            // Rows before the new one come from a past that is not the present's range (flags bits 3,
            // 4 clear), and go into the present as they pass (the first row block).
            let pa = ((b * p.kv_heads + kvh) * p.past + key6) * (D / E) + li;
            if (key6 < past_b && (p.flags & 8u) == 0u) {
                kx6_0 = k_past[pa + 0u * L];
                kx6_1 = k_past[pa + 1u * L];
                if (blk == 0u) {
                    k[ka + 0u * L] = kx6_0;
                    k[ka + 1u * L] = kx6_1;
                }
            } else {
                kx6_0 = k[ka + 0u * L];
                kx6_1 = k[ka + 1u * L];
            }
            if (key6 < past_b && (p.flags & 16u) == 0u) {
                vx6_0 = v_past[pa + 0u * L];
                vx6_1 = v_past[pa + 1u * L];
                if (blk == 0u) {
                    v[va + 0u * L] = vx6_0;
                    v[va + 1u * L] = vx6_1;
                }
            } else {
                vx6_0 = v[va + 0u * L];
                vx6_1 = v[va + 1u * L];
            }
        }
        let key7 = j0 + kg + 112u;
        let ok7 = key7 < c1;
        var kx7_0 = vec4<f32>();
        var vx7_0 = vec4<f32>();
        var kx7_1 = vec4<f32>();
        var vx7_1 = vec4<f32>();
        if (ok7) {
            let ka = (k_base + key7 * p.k_stride.z) / E + li;
            let va = (v_base + key7 * p.v_stride.z) / E + li;
            // Rows before the new one come from a past that is not the present's range (flags bits 3,
            // 4 clear), and go into the present as they pass (the first row block).
            let pa = ((b * p.kv_heads + kvh) * p.past + key7) * (D / E) + li;
            if (key7 < past_b && (p.flags & 8u) == 0u) {
                kx7_0 = k_past[pa + 0u * L];
                kx7_1 = k_past[pa + 1u * L];
                if (blk == 0u) {
                    k[ka + 0u * L] = kx7_0;
                    k[ka + 1u * L] = kx7_1;
                }
            } else {
                kx7_0 = k[ka + 0u * L];
                kx7_1 = k[ka + 1u * L];
            }
            if (key7 < past_b && (p.flags & 16u) == 0u) {
                vx7_0 = v_past[pa + 0u * L];
                vx7_1 = v_past[pa + 1u * L];
                if (blk == 0u) {
                    v[va + 0u * L] = vx7_0;
                    v[va + 1u * L] = vx7_1;
                }
            } else {
                vx7_0 = v[va + 0u * L];
                vx7_1 = v[va + 1u * L];
            }
        }
        // This invocation's share of each key's dot products, then the key row's sum.
        let kf0_0 = chunk_f32(kx0_0);
        let kf0_1 = chunk_f32(kx0_1);
        var s0_0 = 0.0;
        s0_0 = fma(q0[0], kf0_0[0], s0_0);
        s0_0 = fma(q0[1], kf0_0[1], s0_0);
        s0_0 = fma(q0[2], kf0_0[2], s0_0);
        s0_0 = fma(q0[3], kf0_0[3], s0_0);
        s0_0 = fma(q0[4], kf0_1[0], s0_0);
        s0_0 = fma(q0[5], kf0_1[1], s0_0);
        s0_0 = fma(q0[6], kf0_1[2], s0_0);
        s0_0 = fma(q0[7], kf0_1[3], s0_0);
        let kf1_0 = chunk_f32(kx1_0);
        let kf1_1 = chunk_f32(kx1_1);
        var s1_0 = 0.0;
        s1_0 = fma(q0[0], kf1_0[0], s1_0);
        s1_0 = fma(q0[1], kf1_0[1], s1_0);
        s1_0 = fma(q0[2], kf1_0[2], s1_0);
        s1_0 = fma(q0[3], kf1_0[3], s1_0);
        s1_0 = fma(q0[4], kf1_1[0], s1_0);
        s1_0 = fma(q0[5], kf1_1[1], s1_0);
        s1_0 = fma(q0[6], kf1_1[2], s1_0);
        s1_0 = fma(q0[7], kf1_1[3], s1_0);
        let kf2_0 = chunk_f32(kx2_0);
        let kf2_1 = chunk_f32(kx2_1);
        var s2_0 = 0.0;
        s2_0 = fma(q0[0], kf2_0[0], s2_0);
        s2_0 = fma(q0[1], kf2_0[1], s2_0);
        s2_0 = fma(q0[2], kf2_0[2], s2_0);
        s2_0 = fma(q0[3], kf2_0[3], s2_0);
        s2_0 = fma(q0[4], kf2_1[0], s2_0);
        s2_0 = fma(q0[5], kf2_1[1], s2_0);
        s2_0 = fma(q0[6], kf2_1[2], s2_0);
        s2_0 = fma(q0[7], kf2_1[3], s2_0);
        let kf3_0 = chunk_f32(kx3_0);
        let kf3_1 = chunk_f32(kx3_1);
        var s3_0 = 0.0;
        s3_0 = fma(q0[0], kf3_0[0], s3_0);
        s3_0 = fma(q0[1], kf3_0[1], s3_0);
        s3_0 = fma(q0[2], kf3_0[2], s3_0);
        s3_0 = fma(q0[3], kf3_0[3], s3_0);
        s3_0 = fma(q0[4], kf3_1[0], s3_0);
        s3_0 = fma(q0[5], kf3_1[1], s3_0);
        s3_0 = fma(q0[6], kf3_1[2], s3_0);
        s3_0 = fma(q0[7], kf3_1[3], s3_0);
        let kf4_0 = chunk_f32(kx4_0);
        let kf4_1 = chunk_f32(kx4_1);
        var s4_0 = 0.0;
        s4_0 = fma(q0[0], kf4_0[0], s4_0);
        s4_0 = fma(q0[1], kf4_0[1], s4_0);
        s4_0 = fma(q0[2], kf4_0[2], s4_0);
        s4_0 = fma(q0[3], kf4_0[3], s4_0);
        s4_0 = fma(q0[4], kf4_1[0], s4_0);
        s4_0 = fma(q0[5], kf4_1[1], s4_0);
        s4_0 = fma(q0[6], kf4_1[2], s4_0);
        s4_0 = fma(q0[7], kf4_1[3], s4_0);
        let kf5_0 = chunk_f32(kx5_0);
        let kf5_1 = chunk_f32(kx5_1);
        var s5_0 = 0.0;
        s5_0 = fma(q0[0], kf5_0[0], s5_0);
        s5_0 = fma(q0[1], kf5_0[1], s5_0);
        s5_0 = fma(q0[2], kf5_0[2], s5_0);
        s5_0 = fma(q0[3], kf5_0[3], s5_0);
        s5_0 = fma(q0[4], kf5_1[0], s5_0);
        s5_0 = fma(q0[5], kf5_1[1], s5_0);
        s5_0 = fma(q0[6], kf5_1[2], s5_0);
        s5_0 = fma(q0[7], kf5_1[3], s5_0);
        let kf6_0 = chunk_f32(kx6_0);
        let kf6_1 = chunk_f32(kx6_1);
        var s6_0 = 0.0;
        s6_0 = fma(q0[0], kf6_0[0], s6_0);
        s6_0 = fma(q0[1], kf6_0[1], s6_0);
        s6_0 = fma(q0[2], kf6_0[2], s6_0);
        s6_0 = fma(q0[3], kf6_0[3], s6_0);
        s6_0 = fma(q0[4], kf6_1[0], s6_0);
        s6_0 = fma(q0[5], kf6_1[1], s6_0);
        s6_0 = fma(q0[6], kf6_1[2], s6_0);
        s6_0 = fma(q0[7], kf6_1[3], s6_0);
        let kf7_0 = chunk_f32(kx7_0);
        let kf7_1 = chunk_f32(kx7_1);
        var s7_0 = 0.0;
        s7_0 = fma(q0[0], kf7_0[0], s7_0);
        s7_0 = fma(q0[1], kf7_0[1], s7_0);
        s7_0 = fma(q0[2], kf7_0[2], s7_0);
        s7_0 = fma(q0[3], kf7_0[3], s7_0);
        s7_0 = fma(q0[4], kf7_1[0], s7_0);
        s7_0 = fma(q0[5], kf7_1[1], s7_0);
        s7_0 = fma(q0[6], kf7_1[2], s7_0);
        s7_0 = fma(q0[7], kf7_1[3], s7_0);
        s0_0 = s0_0 + subgroupShuffleXor(s0_0, 16u);
        s1_0 = s1_0 + subgroupShuffleXor(s1_0, 16u);
        s2_0 = s2_0 + subgroupShuffleXor(s2_0, 16u);
        s3_0 = s3_0 + subgroupShuffleXor(s3_0, 16u);
        s4_0 = s4_0 + subgroupShuffleXor(s4_0, 16u);
        s5_0 = s5_0 + subgroupShuffleXor(s5_0, 16u);
        s6_0 = s6_0 + subgroupShuffleXor(s6_0, 16u);
        s7_0 = s7_0 + subgroupShuffleXor(s7_0, 16u);
        s0_0 = s0_0 + subgroupShuffleXor(s0_0, 8u);
        s1_0 = s1_0 + subgroupShuffleXor(s1_0, 8u);
        s2_0 = s2_0 + subgroupShuffleXor(s2_0, 8u);
        s3_0 = s3_0 + subgroupShuffleXor(s3_0, 8u);
        s4_0 = s4_0 + subgroupShuffleXor(s4_0, 8u);
        s5_0 = s5_0 + subgroupShuffleXor(s5_0, 8u);
        s6_0 = s6_0 + subgroupShuffleXor(s6_0, 8u);
        s7_0 = s7_0 + subgroupShuffleXor(s7_0, 8u);
        s0_0 = s0_0 + subgroupShuffleXor(s0_0, 4u);
        s1_0 = s1_0 + subgroupShuffleXor(s1_0, 4u);
        s2_0 = s2_0 + subgroupShuffleXor(s2_0, 4u);
        s3_0 = s3_0 + subgroupShuffleXor(s3_0, 4u);
        s4_0 = s4_0 + subgroupShuffleXor(s4_0, 4u);
        s5_0 = s5_0 + subgroupShuffleXor(s5_0, 4u);
        s6_0 = s6_0 + subgroupShuffleXor(s6_0, 4u);
        s7_0 = s7_0 + subgroupShuffleXor(s7_0, 4u);
        s0_0 = s0_0 + subgroupShuffleXor(s0_0, 2u);
        s1_0 = s1_0 + subgroupShuffleXor(s1_0, 2u);
        s2_0 = s2_0 + subgroupShuffleXor(s2_0, 2u);
        s3_0 = s3_0 + subgroupShuffleXor(s3_0, 2u);
        s4_0 = s4_0 + subgroupShuffleXor(s4_0, 2u);
        s5_0 = s5_0 + subgroupShuffleXor(s5_0, 2u);
        s6_0 = s6_0 + subgroupShuffleXor(s6_0, 2u);
        s7_0 = s7_0 + subgroupShuffleXor(s7_0, 2u);
        s0_0 = s0_0 + subgroupShuffleXor(s0_0, 1u);
        s1_0 = s1_0 + subgroupShuffleXor(s1_0, 1u);
        s2_0 = s2_0 + subgroupShuffleXor(s2_0, 1u);
        s3_0 = s3_0 + subgroupShuffleXor(s3_0, 1u);
        s4_0 = s4_0 + subgroupShuffleXor(s4_0, 1u);
        s5_0 = s5_0 + subgroupShuffleXor(s5_0, 1u);
        s6_0 = s6_0 + subgroupShuffleXor(s6_0, 1u);
        s7_0 = s7_0 + subgroupShuffleXor(s7_0, 1u);
        // Scale, cap and mask; keys past the chunk or a row's end are excluded.
        var x0_0 = neg_inf();
        if (ok0 && key0 < end0) {
            x0_0 = capped(s0_0 * p.scale);
        }
        var x1_0 = neg_inf();
        if (ok1 && key1 < end0) {
            x1_0 = capped(s1_0 * p.scale);
        }
        var x2_0 = neg_inf();
        if (ok2 && key2 < end0) {
            x2_0 = capped(s2_0 * p.scale);
        }
        var x3_0 = neg_inf();
        if (ok3 && key3 < end0) {
            x3_0 = capped(s3_0 * p.scale);
        }
        var x4_0 = neg_inf();
        if (ok4 && key4 < end0) {
            x4_0 = capped(s4_0 * p.scale);
        }
        var x5_0 = neg_inf();
        if (ok5 && key5 < end0) {
            x5_0 = capped(s5_0 * p.scale);
        }
        var x6_0 = neg_inf();
        if (ok6 && key6 < end0) {
            x6_0 = capped(s6_0 * p.scale);
        }
        var x7_0 = neg_inf();
        if (ok7 && key7 < end0) {
            x7_0 = capped(s7_0 * p.scale);
        }
        // Online softmax per row over the step's keys, and P·V into the output columns.
        let vf0_0 = chunk_f32(vx0_0);
        let vf0_1 = chunk_f32(vx0_1);
        let vf1_0 = chunk_f32(vx1_0);
        let vf1_1 = chunk_f32(vx1_1);
        let vf2_0 = chunk_f32(vx2_0);
        let vf2_1 = chunk_f32(vx2_1);
        let vf3_0 = chunk_f32(vx3_0);
        let vf3_1 = chunk_f32(vx3_1);
        let vf4_0 = chunk_f32(vx4_0);
        let vf4_1 = chunk_f32(vx4_1);
        let vf5_0 = chunk_f32(vx5_0);
        let vf5_1 = chunk_f32(vx5_1);
        let vf6_0 = chunk_f32(vx6_0);
        let vf6_1 = chunk_f32(vx6_1);
        let vf7_0 = chunk_f32(vx7_0);
        let vf7_1 = chunk_f32(vx7_1);
        {
            var t = x0_0;
            t = max(t, x1_0);
            t = max(t, x2_0);
            t = max(t, x3_0);
            t = max(t, x4_0);
            t = max(t, x5_0);
            t = max(t, x6_0);
            t = max(t, x7_0);
            let m_new = max(m0, t);
            if (m_new != neg_inf()) {
                let alpha = exp(m0 - m_new);
                let p0 = exp(x0_0 - m_new);
                let p1 = exp(x1_0 - m_new);
                let p2 = exp(x2_0 - m_new);
                let p3 = exp(x3_0 - m_new);
                let p4 = exp(x4_0 - m_new);
                let p5 = exp(x5_0 - m_new);
                let p6 = exp(x6_0 - m_new);
                let p7 = exp(x7_0 - m_new);
                l0 = l0 * alpha + p0 + p1 + p2 + p3 + p4 + p5 + p6 + p7;
                acc0[0] = fma(p0, vf0_0[0], fma(p1, vf1_0[0], fma(p2, vf2_0[0], fma(p3, vf3_0[0], fma(p4, vf4_0[0], fma(p5, vf5_0[0], fma(p6, vf6_0[0], fma(p7, vf7_0[0], acc0[0] * alpha))))))));
                acc0[1] = fma(p0, vf0_0[1], fma(p1, vf1_0[1], fma(p2, vf2_0[1], fma(p3, vf3_0[1], fma(p4, vf4_0[1], fma(p5, vf5_0[1], fma(p6, vf6_0[1], fma(p7, vf7_0[1], acc0[1] * alpha))))))));
                acc0[2] = fma(p0, vf0_0[2], fma(p1, vf1_0[2], fma(p2, vf2_0[2], fma(p3, vf3_0[2], fma(p4, vf4_0[2], fma(p5, vf5_0[2], fma(p6, vf6_0[2], fma(p7, vf7_0[2], acc0[2] * alpha))))))));
                acc0[3] = fma(p0, vf0_0[3], fma(p1, vf1_0[3], fma(p2, vf2_0[3], fma(p3, vf3_0[3], fma(p4, vf4_0[3], fma(p5, vf5_0[3], fma(p6, vf6_0[3], fma(p7, vf7_0[3], acc0[3] * alpha))))))));
                acc0[4] = fma(p0, vf0_1[0], fma(p1, vf1_1[0], fma(p2, vf2_1[0], fma(p3, vf3_1[0], fma(p4, vf4_1[0], fma(p5, vf5_1[0], fma(p6, vf6_1[0], fma(p7, vf7_1[0], acc0[4] * alpha))))))));
                acc0[5] = fma(p0, vf0_1[1], fma(p1, vf1_1[1], fma(p2, vf2_1[1], fma(p3, vf3_1[1], fma(p4, vf4_1[1], fma(p5, vf5_1[1], fma(p6, vf6_1[1], fma(p7, vf7_1[1], acc0[5] * alpha))))))));
                acc0[6] = fma(p0, vf0_1[2], fma(p1, vf1_1[2], fma(p2, vf2_1[2], fma(p3, vf3_1[2], fma(p4, vf4_1[2], fma(p5, vf5_1[2], fma(p6, vf6_1[2], fma(p7, vf7_1[2], acc0[6] * alpha))))))));
                acc0[7] = fma(p0, vf0_1[3], fma(p1, vf1_1[3], fma(p2, vf2_1[3], fma(p3, vf3_1[3], fma(p4, vf4_1[3], fma(p5, vf5_1[3], fma(p6, vf6_1[3], fma(p7, vf7_1[3], acc0[7] * alpha))))))));
                m0 = m_new;
            }
        }
    }
    // A subgroup's key groups merged by shuffles (lanes L, 2L, ... apart): its first key group
    // then holds the subgroup's partials.
    for (var off = L; off < sg_size; off = off * 2u) {
        {
            let mo = subgroupShuffleXor(m0, off);
            let lo = subgroupShuffleXor(l0, off);
            let mx = max(m0, mo);
            var fa = 0.0;
            if (m0 != neg_inf()) {
                fa = exp(m0 - mx);
            }
            var fb = 0.0;
            if (mo != neg_inf()) {
                fb = exp(mo - mx);
            }
            acc0[0] = acc0[0] * fa + subgroupShuffleXor(acc0[0], off) * fb;
            acc0[1] = acc0[1] * fa + subgroupShuffleXor(acc0[1], off) * fb;
            acc0[2] = acc0[2] * fa + subgroupShuffleXor(acc0[2], off) * fb;
            acc0[3] = acc0[3] * fa + subgroupShuffleXor(acc0[3], off) * fb;
            acc0[4] = acc0[4] * fa + subgroupShuffleXor(acc0[4], off) * fb;
            acc0[5] = acc0[5] * fa + subgroupShuffleXor(acc0[5], off) * fb;
            acc0[6] = acc0[6] * fa + subgroupShuffleXor(acc0[6], off) * fb;
            acc0[7] = acc0[7] * fa + subgroupShuffleXor(acc0[7], off) * fb;
            l0 = l0 * fa + lo * fb;
            m0 = mx;
        }
    }
    // The subgroups' partials combined in workgroup memory, 1 row(s) at a time.
    let sg = tid / sg_size;
    let nsg = 512u / sg_size;
    let lead = tid % sg_size < L;
    if (lead) {
        ml[(sg * 1u + 0u) * 2u] = m0;
        ml[(sg * 1u + 0u) * 2u + 1u] = l0;
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 0u] = acc0[0];
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 1u] = acc0[1];
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 2u] = acc0[2];
        red[(sg * 1u + 0u) * D + 0u * L * E + li * E + 3u] = acc0[3];
        red[(sg * 1u + 0u) * D + 1u * L * E + li * E + 0u] = acc0[4];
        red[(sg * 1u + 0u) * D + 1u * L * E + li * E + 1u] = acc0[5];
        red[(sg * 1u + 0u) * D + 1u * L * E + li * E + 2u] = acc0[6];
        red[(sg * 1u + 0u) * D + 1u * L * E + li * E + 3u] = acc0[7];
    }
    workgroupBarrier();
    for (var i = tid; i < 1u * D; i = i + 512u) {
        let r = i / D;
        let col = i % D;
        let rg = blk * 1u + 0u + r;
        if (rg < p.rows) {
            var mx = neg_inf();
            for (var g = 0u; g < nsg; g = g + 1u) {
                mx = max(mx, ml[(g * 1u + r) * 2u]);
            }
            var sum = 0.0;
            var lt = 0.0;
            for (var g = 0u; g < nsg; g = g + 1u) {
                let mg = ml[(g * 1u + r) * 2u];
                if (mg != neg_inf()) {
                    let f = exp(mg - mx);
                    sum = sum + red[(g * 1u + r) * D + col] * f;
                    lt = lt + ml[(g * 1u + r) * 2u + 1u] * f;
                }
            }
            let h = kvh * p.group + rg / p.sq;
            let ob = b * p.o_stride.x + h * p.o_stride.y + (rg % p.sq) * p.o_stride.z + col * p.o_stride.w;
            o[ob] = f32(sum / lt);
        }
    }
}
