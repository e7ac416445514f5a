enable f16;

struct Params {
    total: u32,
    seq: u32,
    heads: u32,
    head: u32,
    // rot / 2 (the caches' row length), the caches' rows.
    half: u32,
    max_seq: u32,
    // Bit 0: interleaved; bit 1: X is [B, N, S, D]; bit 2: one start position; bit 3: a cache row per token.
    flags: u32,
    code: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f16>;
@group(0) @binding(1) var<storage, read> pos: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> cos_cache: array<f16>;
@group(0) @binding(3) var<storage, read> sin_cache: array<f16>;
@group(0) @binding(4) var<storage, read_write> y: array<f16>;
@group(0) @binding(5) var<storage, read_write> status: array<u32>;
@group(0) @binding(6) var<uniform> p: Params;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let e = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if (e >= p.total) {
        return;
    }
    let i = e % p.head;
    let rot = 2u * p.half;
    if (i >= rot) {
        y[e] = x[e];
        return;
    }
    var s: u32;
    var b: u32;
    if ((p.flags & 2u) != 0u) {
        s = (e / p.head) % p.seq;
        b = e / (p.head * p.seq * p.heads);
    } else {
        s = (e / (p.head * p.heads)) % p.seq;
        b = e / (p.head * p.heads * p.seq);
    }
    var id: vec2<u32>;
    var position: u32;
    if ((p.flags & 8u) != 0u) {
        id = vec2<u32>(b * p.seq + s, 0u);
        position = id.x;
    } else if ((p.flags & 4u) != 0u) {
        id = pos[0];
        position = id.x + s;
    } else {
        id = pos[b * p.seq + s];
        position = id.x;
    }
    if (id.y != 0u || id.x >= p.max_seq || position >= p.max_seq) {
        status[0] = p.code;
        y[e] = f16(0.0);
        return;
    }
    var c: u32;
    var sign: f32;
    var j: u32;
    if ((p.flags & 1u) != 0u) {
        c = i / 2u;
        sign = select(1.0, -1.0, i % 2u == 0u);
        j = select(i - 1u, i + 1u, i % 2u == 0u);
    } else {
        c = i % p.half;
        sign = select(1.0, -1.0, i < p.half);
        j = (i + p.half) % rot;
    }
    let k = position * p.half + c;
    let v = f32(x[e]) * f32(cos_cache[k]) + sign * f32(x[e - i + j]) * f32(sin_cache[k]);
    y[e] = f16(v);
}
