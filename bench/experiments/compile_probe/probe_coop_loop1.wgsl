enable f16;
enable wgpu_cooperative_matrix;

struct Params { m: u32, n: u32, k: u32, tiles_n: u32 }
@group(0) @binding(0) var<storage, read> a: array<f16>;
@group(0) @binding(1) var<storage, read> b: array<f16>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

// One 16x16 output tile per subgroup; K walked 16 at a time, one product per step.
@compute @workgroup_size(32, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>) {
    let row0 = (wid.x / p.tiles_n) * 16u;
    let col0 = (wid.x % p.tiles_n) * 16u;
    var acc = coop_mat16x16<f32, C>();
    for (var k = 0u; k < p.k; k = k + 16u) {
        let fa = coopLoadT<coop_mat16x16<f16, A>>(&a[row0 * p.k + k], p.k);
        let fb = coopLoadT<coop_mat16x16<f16, B>>(&b[k * p.n + col0], p.n);
        acc = coopMultiplyAdd(fa, fb, acc);
    }
    let ldc = p.n;
    let c_at = row0 * ldc + col0;
    coopStoreT(acc, &out[c_at], ldc);
}
