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

@group(0) @binding(0) var<storage, read> seqlens: array<i32>;
@group(0) @binding(1) var<storage, read_write> mask: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let w = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if (w >= p.total) {
        return;
    }
    var word = 0u;
    let bytes = p.batch * p.seq * p.rows;
    for (var k = 0u; k < 4u; k++) {
        let n = 4u * w + k;
        if (n >= bytes) {
            break;
        }
        let t = i32(n % p.rows);
        let s = (n / p.rows) % p.seq;
        let b = n / (p.rows * p.seq);
        let last = max(seqlens[b] + 1 - i32(p.seq), 0) + i32(s);
        let seen = t <= last && (p.window <= 0 || t > last - p.window);
        word |= select(0u, 1u, seen) << (8u * k);
    }
    mask[w] = word;
}
