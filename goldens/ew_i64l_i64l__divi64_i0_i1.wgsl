// i64l_i64l__divi64_i0_i1
struct Params {
    count: u32,
    total: u32,
    rank: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> in0: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read> in1: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read_write> out: array<vec2<u32>>;
@group(0) @binding(3) var<uniform> P: Params;


// Two's-complement 64-bit integers as vec2<u32> (low word, high word).
fn ew_add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

fn ew_sub64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return vec2<u32>(a.x - b.x, a.y - b.y - select(0u, 1u, a.x < b.x));
}

fn ew_neg64(a: vec2<u32>) -> vec2<u32> {
    return ew_sub64(vec2<u32>(), a);
}

fn ew_abs64(a: vec2<u32>) -> vec2<u32> {
    return select(a, ew_neg64(a), a.y >= 0x80000000u);
}

// Signed a < b.
fn ew_lt64(a: vec2<u32>, b: vec2<u32>) -> bool {
    let ah = bitcast<i32>(a.y);
    let bh = bitcast<i32>(b.y);
    return ah < bh || (ah == bh && a.x < b.x);
}

// Unsigned 64-bit long division, one quotient bit a step.
fn ew_udiv64(n: vec2<u32>, d: vec2<u32>) -> vec2<u32> {
    var q = vec2<u32>();
    var r = vec2<u32>();
    for (var i = 0u; i < 64u; i++) {
        let k = 63u - i;
        let bit = select(n.x >> k, n.y >> (k - 32u), k >= 32u) & 1u;
        r = vec2<u32>((r.x << 1u) | bit, (r.y << 1u) | (r.x >> 31u));
        if (r.y > d.y || (r.y == d.y && r.x >= d.x)) {
            r = ew_sub64(r, d);
            q |= select(vec2<u32>(1u << k, 0u), vec2<u32>(0u, 1u << (k - 32u)), k >= 32u);
        }
    }
    return q;
}

// Signed division truncating toward zero (x / 0 gives -1 or 1: ONNX leaves it undefined).
fn ew_div64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let na = a.y >= 0x80000000u;
    let nb = b.y >= 0x80000000u;
    let q = ew_udiv64(select(a, ew_neg64(a), na), select(b, ew_neg64(b), nb));
    return select(q, ew_neg64(q), na != nb);
}

fn value(o: u32) -> vec2<u32> {
    let x0 = in0[o];
    let x1 = in1[o];
    let v0: vec2<u32> = ew_div64(x0, x1);
    return v0;
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if (i >= P.count) {
        return;
    }
    out[i] = value(i);
}
