// f32l__sinf32_i0__w4
struct Params {
    count: u32,
    total: u32,
    rank: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> in0: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(2) var<uniform> P: Params;


// sin and cos to about an ulp (Cephes' sinf and cosf): x less the nearest multiple j of π/2 in
// three parts, each product of j exact for |j| < 2^15, then the sine or cosine polynomial of that
// quadrant. A driver's own sin may be exact only to 2^-11 absolutely (WGSL's bound; the NVIDIA
// driver's sin(x)/x near 0 was 1% off the CPU EP's). NaN and ±inf give NaN.
fn ew_sincos(x: f32, quarter: u32) -> f32 {
    let j = round(x * 0.636619772367581343);
    var r = fma(j, -1.5703125, x);
    r = fma(j, -4.837512969970703125e-4, r);
    r = fma(j, -7.54978995489188216e-8, r);
    let r2 = r * r;
    let s = fma(r * r2, fma(r2, fma(r2, -1.9515295891e-4, 8.3321608736e-3), -1.6666654611e-1), r);
    let c = fma(r2, fma(r2, fma(r2, fma(r2, 2.443315711809948e-5, -1.388731625493765e-3), 4.166664568298827e-2), -0.5), 1.0);
    let q = (bitcast<u32>(i32(j)) + quarter) & 3u;
    let v = select(s, c, (q & 1u) == 1u);
    return select(v, -v, (q & 2u) == 2u);
}

// Each invocation computes 4 consecutive elements: whole vec4s of the output and of each
// input of its shape, loaded and stored as such.
fn value(x0: f32) -> f32 {
    let v0: f32 = ew_sincos(x0, 0u);
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
    let a0_0 = in0[i];
    out[i] = vec4<f32>(value(a0_0[0]), value(a0_0[1]), value(a0_0[2]), value(a0_0[3]));
}
