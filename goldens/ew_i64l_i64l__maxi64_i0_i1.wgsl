// i64l_i64l__maxi64_i0_i1
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

fn value(o: u32) -> vec2<u32> {
    let x0 = in0[o];
    let x1 = in1[o];
    let v0: vec2<u32> = select(x0, x1, ew_lt64(x0, x1));
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
