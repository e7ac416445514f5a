//! A shader with subgroup barriers goes to wgpu as naga IR whose barriers order workgroup memory
//! (`runtime::subgroup_sync`): it compiles on the test adapter and each invocation reads what its
//! subgroup partner wrote to workgroup memory before the barrier.

mod common;

use ep_kernels::runtime::subgroup_sync::shader_source;

const SHADER: &str = "
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
var<workgroup> s: array<u32, 64>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) i: u32, @builtin(workgroup_id) w: vec3<u32>) {
    s[i] = i * 7u + w.x;
    subgroupBarrier();
    let partner = subgroupShuffleXor(i, 1u);
    out[w.x * 64u + i] = s[partner] + 1000000u * partner;
}";

#[test]
fn subgroup_barriers_compile_as_ir_and_order_the_scratch() {
    let gpu = common::gpu();
    if !gpu.caps().subgroup_barrier || gpu.caps().subgroup_min_size < 2 {
        eprintln!("skipped: this adapter has no subgroup barriers");
        return;
    }
    let device = gpu.device();
    let source = shader_source(SHADER).unwrap();
    assert!(matches!(source, wgpu::ShaderSource::Naga(_)));
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor { label: Some("subgroup_sync"), source });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("subgroup_sync"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let groups = 5u32;
    let out = gpu.upload(&vec![0xffu8; (groups * 64 * 4) as usize], "out").unwrap();
    let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[wgpu::BindGroupEntry { binding: 0, resource: out.binding() }],
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind, &[]);
        pass.dispatch_workgroups(groups, 1, 1);
    }
    gpu.queue().submit([encoder.finish()]);
    let bytes = gpu.read_buffer(&out).unwrap();
    for (n, word) in bytes.chunks_exact(4).enumerate() {
        let got = u32::from_le_bytes(word.try_into().unwrap());
        let (w, partner) = (n as u32 / 64, got / 1_000_000);
        assert!(partner < 64 && partner != n as u32 % 64, "invocation {n}: partner {partner}");
        assert_eq!(got % 1_000_000, partner * 7 + w, "invocation {n} read its partner's word");
    }
}
