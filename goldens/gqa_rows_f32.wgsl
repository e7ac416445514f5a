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

@group(0) @binding(0) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> past: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> seqlens: array<i32>;
@group(0) @binding(3) var<storage, read> cos_cache: array<f32>;
@group(0) @binding(4) var<storage, read> sin_cache: array<f32>;
@group(0) @binding(5) var<storage, read> norm: array<f32>;
@group(0) @binding(6) var<storage, read_write> y: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> status: array<u32>;
@group(0) @binding(8) var<uniform> p: Params;

fn past_at(k: u32) -> vec4<f32> {
    return past[k];
}

fn store(k: u32, v: vec4<f32>) {
    y[k] = v;
}

// 1 / RMS of the head row at `base` of the source when flags bit 4 asks for the norm, else 1.
fn head_inv(base: u32) -> f32 {
    if ((p.flags & 16u) == 0u) {
        return 1.0;
    }
    var sum = 0.0;
    for (var k = 0u; k < p.d; k += 4u) {
        let v = vec4<f32>(src[(base + k) / 4u]);
        sum += dot(v, v);
    }
    return inverseSqrt(sum / f32(p.d) + p.eps);
}

// Elements i..i+3 (i a multiple of 4) of the head row at `base` of the source, RMS-normalised by
// `inv` when flags bit 4 is set (each rounded to the tensor type, as the CPU EP's separate norm).
// Rows, heads and head sizes are multiples of 4 elements, so the source is read as vec4.
fn load4(base: u32, i: u32, inv: f32) -> vec4<f32> {
    let v = vec4<f32>(src[(base + i) / 4u]);
    if ((p.flags & 16u) == 0u) {
        return v;
    }
    let w = vec4<f32>(f32(norm[i + 0u]), f32(norm[i + 1u]), f32(norm[i + 2u]), f32(norm[i + 3u]));
    return vec4<f32>(vec4<f32>(v * inv * w));
}

// Elements i..i+3 of head h of new token s of batch b, rotated to `position`: the head's norm once.
// half is a multiple of 8 (gqa.rs checks it, as ONNX Runtime does), so a quad rotates whole: with
// its partner quad (halves) or its own pairs (interleaved).
fn new_quad(b: u32, s: u32, h: u32, i: u32, position: u32) -> vec4<f32> {
    let base = (b * p.seq + s) * p.row + p.offset + h * p.d;
    let inv = head_inv(base);
    let half = p.half;
    let x = load4(base, i, inv);
    let rot = 2u * half;
    if (i >= rot) {
        return vec4<f32>(x);
    }
    let k = position * half;
    if ((p.flags & 1u) != 0u) {
        let c = k + i / 2u;
        let c0 = f32(cos_cache[c]);
        let s0 = f32(sin_cache[c]);
        let c1 = f32(cos_cache[c + 1u]);
        let s1 = f32(sin_cache[c + 1u]);
        return vec4<f32>(vec4<f32>(x.x * c0 - x.y * s0, x.y * c0 + x.x * s0, x.z * c1 - x.w * s1, x.w * c1 + x.z * s1));
    }
    let y = load4(base, (i + half) % rot, inv);
    let c = k + i % half;
    let cs = vec4<f32>(f32(cos_cache[c]), f32(cos_cache[c + 1u]), f32(cos_cache[c + 2u]), f32(cos_cache[c + 3u]));
    let sn = vec4<f32>(f32(sin_cache[c]), f32(sin_cache[c + 1u]), f32(sin_cache[c + 2u]), f32(sin_cache[c + 3u]));
    return vec4<f32>(x * cs + select(1.0, -1.0, i < half) * y * sn);
}

// Quad `quad` of the stage's output (p): Q's, or a present cache's.
fn stage_quad(quad: u32) {
    let e = quad * 4u;
    let i = e % p.d;
    let query = (p.flags & 8u) != 0u;
    // Flags bit 6: only the new rows of a present that is the past's own range, one invocation
    // per quad of them ([B, H, S, D]); the rows before and after them stay as they are.
    let only_new = (p.flags & 64u) != 0u;
    var b: u32;
    var h: u32;
    var r: u32;
    if (query) {
        h = (e / p.d) % p.heads;
        r = (e / (p.d * p.heads)) % p.rows;
        b = e / (p.d * p.heads * p.rows);
    } else {
        let rows = select(p.rows, p.seq, only_new);
        r = (e / p.d) % rows;
        h = (e / (p.d * rows)) % p.heads;
        b = e / (p.d * rows * p.heads);
    }
    let total = seqlens[b] + 1;
    let past_b = u32(max(total - i32(p.seq), 0));
    let bad = total < 1 || (!query && (past_b + p.seq > p.rows || past_b > p.past))
        || (p.half > 0u && past_b + p.seq > p.max_seq);
    var out = quad;
    if (only_new) {
        r = r + past_b;
        out = (((b * p.heads + h) * p.rows + min(r, p.rows - 1u)) * p.d + i) / 4u;
    }
    if (bad) {
        status[0] = p.code;
        if (!only_new) {
            store(out, vec4<f32>());
        }
        return;
    }
    if (query) {
        store(quad, new_quad(b, r, h, i, past_b + r));
    } else if (only_new) {
        store(out, new_quad(b, r - past_b, h, i, r));
    } else if (r < past_b) {
        // Flags bit 5: the present is the past's own range; its rows are already there.
        if ((p.flags & 32u) == 0u) {
            store(quad, past_at((((b * p.heads + h) * p.past + r) * p.d + i) / 4u));
        }
    } else if (r < past_b + p.seq) {
        store(quad, new_quad(b, r - past_b, h, i, r));
    } else {
        store(quad, vec4<f32>());
    }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let quad = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if (quad < p.total / 4u) {
        stage_quad(quad);
    }
}
