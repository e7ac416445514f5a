enable f16;
enable wgpu_cooperative_matrix;

struct Params { m: u32, n: u32, k: u32, tiles_n: u32, alpha: f32 }
@group(0) @binding(0) var<storage, read> a: array<f16>;
@group(0) @binding(1) var<storage, read> b: array<f16>;
@group(0) @binding(2) var<storage, read_write> out: array<f16>;
@group(0) @binding(3) var<uniform> p: Params;

var<workgroup> c_tile: array<f32, 1024>;

// A 64x64 tile on four subgroups, 2x2 fragments each; operands straight from storage (the
// caches do the reuse), the output through a scratch with bounds checks and alpha.
@compute @workgroup_size(128, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let row0 = (wid.x / p.tiles_n) * 64u;
    let col0 = (wid.x % p.tiles_n) * 64u;
    let sg = tid / 32u;
    let lane = tid % 32u;
    let wm = row0 + (sg / 2u) * 32u;
    let wn = col0 + (sg % 2u) * 32u;
    var acc0_0 = coop_mat16x16<f32, C>();
    var acc0_1 = coop_mat16x16<f32, C>();
    var acc1_0 = coop_mat16x16<f32, C>();
    var acc1_1 = coop_mat16x16<f32, C>();
    for (var k = 0u; k < p.k; k = k + 16u) {
        let fa0 = coopLoadT<coop_mat16x16<f16, A>>(&a[wm * p.k + k], p.k);
        let fa1 = coopLoadT<coop_mat16x16<f16, A>>(&a[(wm + 16u) * p.k + k], p.k);
        let fb0 = coopLoadT<coop_mat16x16<f16, B>>(&b[k * p.n + wn], p.n);
        let fb1 = coopLoadT<coop_mat16x16<f16, B>>(&b[k * p.n + wn + 16u], p.n);
        acc0_0 = coopMultiplyAdd(fa0, fb0, acc0_0);
        acc0_1 = coopMultiplyAdd(fa0, fb1, acc0_1);
        acc1_0 = coopMultiplyAdd(fa1, fb0, acc1_0);
        acc1_1 = coopMultiplyAdd(fa1, fb1, acc1_1);
    }
    let c0 = sg * 256u;
    for (var f = 0u; f < 4u; f = f + 1u) {
        switch f {
            case 0u: { coopStoreT(acc0_0, &c_tile[c0], 16u); }
            case 1u: { coopStoreT(acc0_1, &c_tile[c0], 16u); }
            case 2u: { coopStoreT(acc1_0, &c_tile[c0], 16u); }
            default: { coopStoreT(acc1_1, &c_tile[c0], 16u); }
        }
        subgroupBarrier();
        let fr = wm + (f / 2u) * 16u;
        let fc = wn + (f % 2u) * 16u;
        for (var q = 0u; q < 8u; q = q + 1u) {
            let e = lane + q * 32u;
            let r = fr + e / 16u;
            let c = fc + e % 16u;
            if (r < p.m && c < p.n) {
                out[r * p.n + c] = f16(p.alpha * c_tile[c0 + e]);
            }
        }
        subgroupBarrier();
    }
}
