struct Params {
    batch: u32,
    seq: u32,
    heads: u32,
    d: u32,
    // Rows of the output (present length T, or S in query mode); rows of the past cache (0: none).
    rows: u32,
    past: u32,
    // Elements per token row of the source, and where these heads start in it.
    row: u32,
    offset: u32,
    // rot / 2 (0: no rotation) and the caches' rows.
    half: u32,
    max_seq: u32,
    // Bit 0: interleaved; bit 3: query mode; bit 4: per-head RMS norm; bit 5: the present is the past's range;
    // bit 6: with bit 5, only the new rows are visited.
    flags: u32,
    total: u32,
    window: i32,
    code: u32,
    eps: f32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> src0: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> src1: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> src2: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> past1: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> past2: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> seqlens: array<i32>;
@group(0) @binding(6) var<storage, read> cos_cache: array<f32>;
@group(0) @binding(7) var<storage, read> sin_cache: array<f32>;
@group(0) @binding(8) var<storage, read> norm0: array<f32>;
@group(0) @binding(9) var<storage, read> norm1: array<f32>;
@group(0) @binding(10) var<storage, read_write> y0: array<vec4<f32>>;
@group(0) @binding(11) var<storage, read_write> y1: array<vec4<f32>>;
@group(0) @binding(12) var<storage, read_write> y2: array<vec4<f32>>;
@group(0) @binding(13) var<storage, read_write> mask: array<u32>;
@group(0) @binding(14) var<storage, read_write> status: array<u32>;
@group(0) @binding(15) var<uniform> pp: array<Params, 4>;

// Stage st's source (0: Q, 1: K, 2: V) and norm weights (Q's, K's).
fn src_at(st: u32, k: u32) -> vec4<f32> {
    switch st {
        case 0u: {
            return src0[k];
        }
        case 1u: {
            return src1[k];
        }
        default: {
            return src2[k];
        }
    }
}

fn norm_at(st: u32, i: u32) -> f32 {
    if (st == 0u) {
        return norm0[i];
    }
    return norm1[i];
}

// Quad k of stage st's past cache (1: K, 2: V).
fn past_at(st: u32, k: u32) -> vec4<f32> {
    if (st == 1u) {
        return past1[k];
    }
    return past2[k];
}

// Quad k of stage st's output.
fn store(st: u32, k: u32, v: vec4<f32>) {
    switch st {
        case 0u: {
            y0[k] = v;
        }
        case 1u: {
            y1[k] = v;
        }
        default: {
            y2[k] = v;
        }
    }
}

// 1 / RMS of the head row at `base` of the source when flags bit 4 asks for the norm, else 1.
fn head_inv(st: u32, base: u32) -> f32 {
    if ((pp[st].flags & 16u) == 0u) {
        return 1.0;
    }
    var sum = 0.0;
    for (var k = 0u; k < pp[st].d; k += 4u) {
        let v = vec4<f32>(src_at(st, (base + k) / 4u));
        sum += dot(v, v);
    }
    return inverseSqrt(sum / f32(pp[st].d) + pp[st].eps);
}

// Elements i..i+3 (i a multiple of 4) of the head row at `base` of the source, RMS-normalised by
// `inv` when flags bit 4 is set (each rounded to the tensor type, as the CPU EP's separate norm).
// Rows, heads and head sizes are multiples of 4 elements, so the source is read as vec4.
fn load4(st: u32, base: u32, i: u32, inv: f32) -> vec4<f32> {
    let v = vec4<f32>(src_at(st, (base + i) / 4u));
    if ((pp[st].flags & 16u) == 0u) {
        return v;
    }
    let w = vec4<f32>(f32(norm_at(st, i + 0u)), f32(norm_at(st, i + 1u)), f32(norm_at(st, i + 2u)), f32(norm_at(st, i + 3u)));
    return vec4<f32>(vec4<f32>(v * inv * w));
}

// Elements i..i+3 of head h of new token s of batch b, rotated to `position`: the head's norm once.
// half is a multiple of 8 (gqa.rs checks it, as ONNX Runtime does), so a quad rotates whole: with
// its partner quad (halves) or its own pairs (interleaved).
fn new_quad(st: u32, b: u32, s: u32, h: u32, i: u32, position: u32) -> vec4<f32> {
    let base = (b * pp[st].seq + s) * pp[st].row + pp[st].offset + h * pp[st].d;
    let inv = head_inv(st, base);
    let half = pp[st].half;
    let x = load4(st, base, i, inv);
    let rot = 2u * half;
    if (i >= rot) {
        return vec4<f32>(x);
    }
    let k = position * half;
    if ((pp[st].flags & 1u) != 0u) {
        let c = k + i / 2u;
        let c0 = f32(cos_cache[c]);
        let s0 = f32(sin_cache[c]);
        let c1 = f32(cos_cache[c + 1u]);
        let s1 = f32(sin_cache[c + 1u]);
        return vec4<f32>(vec4<f32>(x.x * c0 - x.y * s0, x.y * c0 + x.x * s0, x.z * c1 - x.w * s1, x.w * c1 + x.z * s1));
    }
    let y = load4(st, base, (i + half) % rot, inv);
    let c = k + i % half;
    let cs = vec4<f32>(f32(cos_cache[c]), f32(cos_cache[c + 1u]), f32(cos_cache[c + 2u]), f32(cos_cache[c + 3u]));
    let sn = vec4<f32>(f32(sin_cache[c]), f32(sin_cache[c + 1u]), f32(sin_cache[c + 2u]), f32(sin_cache[c + 3u]));
    return vec4<f32>(x * cs + select(1.0, -1.0, i < half) * y * sn);
}

// Quad `quad` of the stage's output (pp[st]): Q's, or a present cache's.
fn stage_quad(st: u32, quad: u32) {
    let e = quad * 4u;
    let i = e % pp[st].d;
    let query = (pp[st].flags & 8u) != 0u;
    // Flags bit 6: only the new rows of a present that is the past's own range, one invocation
    // per quad of them ([B, H, S, D]); the rows before and after them stay as they are.
    let only_new = (pp[st].flags & 64u) != 0u;
    var b: u32;
    var h: u32;
    var r: u32;
    if (query) {
        h = (e / pp[st].d) % pp[st].heads;
        r = (e / (pp[st].d * pp[st].heads)) % pp[st].rows;
        b = e / (pp[st].d * pp[st].heads * pp[st].rows);
    } else {
        let rows = select(pp[st].rows, pp[st].seq, only_new);
        r = (e / pp[st].d) % rows;
        h = (e / (pp[st].d * rows)) % pp[st].heads;
        b = e / (pp[st].d * rows * pp[st].heads);
    }
    let total = seqlens[b] + 1;
    let past_b = u32(max(total - i32(pp[st].seq), 0));
    let bad = total < 1 || (!query && (past_b + pp[st].seq > pp[st].rows || past_b > pp[st].past))
        || (pp[st].half > 0u && past_b + pp[st].seq > pp[st].max_seq);
    var out = quad;
    if (only_new) {
        r = r + past_b;
        out = (((b * pp[st].heads + h) * pp[st].rows + min(r, pp[st].rows - 1u)) * pp[st].d + i) / 4u;
    }
    if (bad) {
        status[0] = pp[st].code;
        if (!only_new) {
            store(st, out, vec4<f32>());
        }
        return;
    }
    if (query) {
        store(st, quad, new_quad(st, b, r, h, i, past_b + r));
    } else if (only_new) {
        store(st, out, new_quad(st, b, r - past_b, h, i, r));
    } else if (r < past_b) {
        // Flags bit 5: the present is the past's own range; its rows are already there.
        if ((pp[st].flags & 32u) == 0u) {
            store(st, quad, past_at(st, (((b * pp[st].heads + h) * pp[st].past + r) * pp[st].d + i) / 4u));
        }
    } else if (r < past_b + pp[st].seq) {
        store(st, quad, new_quad(st, b, r - past_b, h, i, r));
    } else {
        store(st, quad, vec4<f32>());
    }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let id = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    // Q's quads, then the present K's, then V's, then the mask's words.
    let end0 = pp[0].total / 4u;
    let end1 = end0 + pp[1].total / 4u;
    let end2 = end1 + pp[2].total / 4u;
    if (id >= end2) {
        let w = id - end2;
        if (w < pp[3].total) {
            var word = 0u;
            let bytes = pp[3].batch * pp[3].seq * pp[3].rows;
            for (var k = 0u; k < 4u; k++) {
                let n = 4u * w + k;
                if (n >= bytes) {
                    break;
                }
                let t = i32(n % pp[3].rows);
                let s = (n / pp[3].rows) % pp[3].seq;
                let b = n / (pp[3].rows * pp[3].seq);
                let last = max(seqlens[b] + 1 - i32(pp[3].seq), 0) + i32(s);
                let seen = t <= last && (pp[3].window <= 0 || t > last - pp[3].window);
                word |= select(0u, 1u, seen) << (8u * k);
            }
            mask[w] = word;
        }
        return;
    }
    if (id >= end1) {
        stage_quad(2u, id - end1);
    } else if (id >= end0) {
        stage_quad(1u, id - end0);
    } else {
        stage_quad(0u, id);
    }
}
