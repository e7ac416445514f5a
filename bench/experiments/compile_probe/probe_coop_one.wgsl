enable f16;
enable wgpu_cooperative_matrix;

@group(0) @binding(0) var<storage, read> a: array<f16>;
@group(0) @binding(1) var<storage, read> b: array<f16>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

// One 16x16x16 product per subgroup, operands straight from storage.
@compute @workgroup_size(32, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>) {
    let base = wid.x * 256u;
    let fa = coopLoadT<coop_mat16x16<f16, A>>(&a[base], 16u);
    let fb = coopLoadT<coop_mat16x16<f16, B>>(&b[base], 16u);
    let acc = coopMultiplyAdd(fa, fb, coop_mat16x16<f32, C>());
    coopStoreT(acc, &out[base], 16u);
}
