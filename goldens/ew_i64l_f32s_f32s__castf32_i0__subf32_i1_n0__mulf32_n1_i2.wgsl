// i64l_f32s_f32s__castf32_i0__subf32_i1_n0__mulf32_n1_i2
struct Params {
    count: u32,
    total: u32,
    rank: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> in0: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read> in1: array<f32>;
@group(0) @binding(2) var<storage, read> in2: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<uniform> P: Params;


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

// i64 to f32, correctly rounded: the magnitude's top 32 bits with the rest as a sticky bit
// round once in the u32 conversion, then scale exactly.
fn ew_l2f(v: vec2<u32>) -> f32 {
    let neg = v.y >= 0x80000000u;
    let m = select(v, ew_neg64(v), neg);
    var r: f32;
    if (m.y == 0u) {
        r = f32(m.x);
    } else {
        let n = countLeadingZeros(m.y);
        let top = (m.y << n) | select(m.x >> (32u - n), 0u, n == 0u);
        let sticky = select(0u, 1u, (m.x << n) != 0u);
        r = ldexp(f32(top | sticky), i32(32u - n));
    }
    return select(r, -r, neg);
}

fn value(o: u32) -> f32 {
    let x0 = in0[o];
    let x1 = in1[0u];
    let x2 = in2[0u];
    let v0: f32 = ew_l2f(x0);
    let v1: f32 = x1 - v0;
    let v2: f32 = v1 * x2;
    return v2;
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
