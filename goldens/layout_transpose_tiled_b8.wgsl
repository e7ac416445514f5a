// Tiled transpose of 8-byte elements: out[b, i, j] = in[base(b) + j * col_stride + i],
// where the input's contiguous axis i becomes the output's second-innermost one. A workgroup
// reads a 32x32 tile along i (contiguous reads), and writes it along j (contiguous writes).
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

struct Params {
    cols: u32,
    rows: u32,
    col_stride: u32,
    tiles_j: u32,
    tiles_i: u32,
    workgroups: u32,
    rank: u32,
    pad: u32,
    // The batch dims (innermost first) and their input strides.
    dims: array<vec4<u32>, 2>,
    strides: array<vec4<u32>, 2>,
}

// tile[j][i], one column of padding so the transposed reads spread over banks.
var<workgroup> tile: array<array<vec2<u32>, 33>, 32>;

fn load(s: u32) -> vec2<u32> {
    return vec2<u32>(src[2u * s], src[2u * s + 1u]);
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let w = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if w >= p.workgroups {
        return;
    }
    let tj = w % p.tiles_j;
    let t = w / p.tiles_j;
    let ti = t % p.tiles_i;
    let b = t / p.tiles_i;
    var rest = b;
    var base = 0u;
    for (var d = 0u; d < p.rank; d++) {
        let n = p.dims[d / 4u][d % 4u];
        base += (rest % n) * p.strides[d / 4u][d % 4u];
        rest /= n;
    }
    let lx = lid % 32u;
    let i = ti * 32u + lx;
    for (var r = 0u; r < 32u; r += 8u) {
        let jl = lid / 32u + r;
        let j = tj * 32u + jl;
        if i < p.rows && j < p.cols {
            tile[jl][lx] = load(base + j * p.col_stride + i);
        }
    }
    workgroupBarrier();
    let wx = lid % 32u;
    let j0 = tj * 32u + 1u * wx;
    for (var r = 0u; r < 32u; r += 8u) {
        let il = lid / 32u + r;
        let i2 = ti * 32u + il;
        if i2 < p.rows && j0 < p.cols {
            let e = (b * p.rows + i2) * p.cols + j0;
            let v = tile[wx][il];
            dst[2u * e] = v.x;
            dst[2u * e + 1u] = v.y;
        }
    }
}
