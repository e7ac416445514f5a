enable f16;

@group(0) @binding(0) var<storage, read> x: array<f16>;
@group(0) @binding(3) var<storage, read_write> col: array<f16>;
@group(0) @binding(4) var<uniform> p: Params;

struct Params {
    n: u32,
    c: u32,
    h: u32,
    w: u32,
    m: u32,
    oh: u32,
    ow: u32,
    pixels: u32,
    kh: u32,
    kw: u32,
    stride_h: u32,
    stride_w: u32,
    dil_h: u32,
    dil_w: u32,
    pad_top: u32,
    pad_left: u32,
    c_per_group: u32,
    m_per_group: u32,
    col_k: u32,
    k_per_thread: u32,
    tiles_k: u32,
    invocations: u32,
    grid_x: u32,
    grid_y: u32,
    total_workgroups: u32,
    flags: u32,
    clip_min: f32,
    clip_max: f32,
}

// Linear workgroup index of a (possibly folded) 3-D grid.
fn linear_workgroup(wid: vec3<u32>) -> u32 {
    return wid.x + p.grid_x * (wid.y + p.grid_y * wid.z);
}

// Input row/column of the first kernel tap for an output row/column. Padding makes it
// "negative": u32 arithmetic wraps, so it and every tap left of the image compare ≥ the
// image size and read as zero, and adding the dilation wraps back into range.
fn first_tap(out_index: u32, stride: u32, pad: u32) -> u32 {
    return out_index * stride - pad;
}

const THREADS: u32 = 256u;

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let lin = linear_workgroup(wid);
    let idx = lin * THREADS + tid;
    if (lin >= p.total_workgroups || idx >= p.invocations) {
        return;
    }
    let pix = idx % p.pixels;
    let row_block = idx / p.pixels;
    let kb = row_block % p.tiles_k;
    let n = row_block / p.tiles_k;
    let oh = pix / p.ow;
    let ow = pix - oh * p.ow;
    let ih0 = first_tap(oh, p.stride_h, p.pad_top);
    let iw0 = first_tap(ow, p.stride_w, p.pad_left);

    let k_begin = kb * p.k_per_thread;
    let k_end = min(k_begin + p.k_per_thread, p.col_k);
    let taps = p.kh * p.kw;
    var c = k_begin / taps;
    let tap = k_begin - c * taps;
    var i = tap / p.kw;
    var j = tap - i * p.kw;
    let plane = p.h * p.w;
    var x_plane = (n * p.c + c) * plane;
    var dst = (n * p.col_k + k_begin) * p.pixels + pix;
    for (var k = k_begin; k < k_end; k = k + 1u) {
        let ih = ih0 + i * p.dil_h;
        let iw = iw0 + j * p.dil_w;
        var v: f16 = f16(0.0);
        if (ih < p.h && iw < p.w) {
            v = x[x_plane + ih * p.w + iw];
        }
        col[dst] = v;
        dst = dst + p.pixels;
        j = j + 1u;
        if (j == p.kw) {
            j = 0u;
            i = i + 1u;
            if (i == p.kh) {
                i = 0u;
                x_plane = x_plane + plane;
            }
        }
    }
}
