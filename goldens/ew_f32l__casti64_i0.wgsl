// f32l__casti64_i0
struct Params {
    count: u32,
    total: u32,
    rank: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<vec2<u32>>;
@group(0) @binding(2) var<uniform> P: Params;


fn ew_nan(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}

fn ew_inf(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u;
}

// Infinity with the sign of s (built at run time: a non-finite constant is invalid WGSL).
fn ew_infinity(s: f32) -> f32 {
    return bitcast<f32>(select(0x7f800000u, 0xff800000u, s < 0.0));
}

// A quiet NaN (built from x so it is not a constant).
fn ew_nan_of(x: f32) -> f32 {
    return bitcast<f32>(bitcast<u32>(x) | 0x7fc00000u);
}

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

// f32 to i64 truncating, exact below 2^63; NaN and out of range give i64's lowest value.
fn ew_f2l(x: f32) -> vec2<u32> {
    if (!(abs(x) < 9223372036854775808.0)) {
        return vec2<u32>(0u, 0x80000000u);
    }
    let a = trunc(abs(x));
    let hi = floor(a * 2.3283064365386963e-10);
    let m = vec2<u32>(u32(a - hi * 4294967296.0), u32(hi));
    return select(m, ew_neg64(m), x < 0.0);
}

fn value(o: u32) -> vec2<u32> {
    let x0 = in0[o];
    let v0: vec2<u32> = ew_f2l(x0);
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
