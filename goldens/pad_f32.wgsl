struct Params {
    count: u32,
    rank: u32,
    // 0 constant, 1 reflect, 2 edge, 3 wrap.
    mode: u32,
    // The constant's bits (an f32).
    value: u32,
    out_shape: array<vec4<u32>, 2>,
    in_shape: array<vec4<u32>, 2>,
    // Leading padding per axis (negative: cropped), as i32 bits.
    begin: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

// Position i (may be outside [0, n)) mapped into [0, n) by the mode, or -1 for the constant.
fn source(i: i32, n: i32) -> i32 {
    if i >= 0 && i < n {
        return i;
    }
    switch p.mode {
        case 1u: {
            if n == 1 {
                return 0;
            }
            let period = 2 * (n - 1);
            var r = abs(i) % period;
            if r >= n {
                r = period - r;
            }
            return r;
        }
        case 2u: {
            return clamp(i, 0, n - 1);
        }
        case 3u: {
            return ((i % n) + n) % n;
        }
        default: {
            return -1;
        }
    }
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let e = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if e >= p.count {
        return;
    }
    var rest = e;
    var src = 0u;
    var stride = 1u;
    for (var k = 0u; k < p.rank; k++) {
        let d = p.rank - 1u - k;
        let n_out = p.out_shape[d / 4u][d % 4u];
        let n_in = p.in_shape[d / 4u][d % 4u];
        let o = rest % n_out;
        rest = rest / n_out;
        let i = source(i32(o) - bitcast<i32>(p.begin[d / 4u][d % 4u]), i32(n_in));
        if i < 0 {
            y[e] = f32(bitcast<f32>(p.value));
            return;
        }
        src += u32(i) * stride;
        stride *= n_in;
    }
    y[e] = x[src];
}
