//! The `unsafe` wgpu calls: the opt-in token for experimental features (cooperative matrices),
//! shader modules without runtime checks or from our own SPIR-V, and the driver's pipeline cache
//! from a saved blob.

/// Lets a device use `EXPERIMENTAL_*` features: the f16 tensor-core GEMM needs
/// `EXPERIMENTAL_COOPERATIVE_MATRIX`.
pub fn cooperative_matrix_opt_in() -> wgpu::ExperimentalFeatures {
    // SAFETY: wgpu asks callers of experimental features to accept that their implementation
    // may contain bugs. We only use cooperative-matrix loads/stores/multiply-adds on buffers the
    // planner sized, every variant is validated by naga in the goldens test and checked against
    // a float64 reference on real hardware, and pipeline creation runs under catch_unwind.
    unsafe { wgpu::ExperimentalFeatures::enabled() }
}

/// Compiles the engine's self-guarding shaders without wgpu's runtime checks, and those whose
/// loops provably end without its loop-bounding counter.
pub struct UncheckedShaders;

impl ep_kernels::runtime::TrustedShaders for UncheckedShaders {
    fn create(
        &self,
        device: &wgpu::Device,
        desc: wgpu::ShaderModuleDescriptor<'_>,
        keep: ep_kernels::runtime::KeptChecks,
    ) -> wgpu::ShaderModule {
        let mut checks = wgpu::ShaderRuntimeChecks::unchecked();
        checks.bounds_checks = keep.bounds;
        checks.force_loop_bounding = keep.loop_bounding;
        checks.int_div_checks = keep.int_div;
        // SAFETY: the runtime passes (`ShaderVariant::kept_checks`) either variants whose
        // templates compare every buffer index against the uniform sizes before the access,
        // over bindings the planner sized from the same numbers, whose loops run to bounds
        // computed from uniforms and whose divisors are counts the planner makes ≥ 1 (`keep`
        // empty), or variants whose loops provably end, with wgpu's index clamps and division
        // guards kept (`keep.bounds`, `keep.int_div`). Only an experiment build passes other
        // sets (`EXP_COOP_CHECKS`).
        unsafe { device.create_shader_module_trusted(desc, checks) }
    }

    fn create_spirv(
        &self,
        device: &wgpu::Device,
        spirv: ep_kernels::runtime::rolled::Spirv<'_>,
    ) -> Option<wgpu::ShaderModule> {
        if !device.features().contains(wgpu::Features::PASSTHROUGH_SHADERS) {
            return None;
        }
        let [x, y, z] = spirv.workgroup_size;
        let entry = [wgpu::PassthroughShaderEntryPoint { name: "main".into(), workgroup_size: (x, y, z) }];
        let desc = wgpu::ShaderModuleDescriptorPassthrough {
            label: Some(spirv.label),
            entry_points: entry[..].into(),
            spirv: Some(spirv.words.into()),
            ..Default::default()
        };
        // SAFETY: wgpu does not validate a passthrough module. The runtime passes only naga's own
        // output for a WGSL module naga validated (`ep_kernels::runtime::rolled::spirv`), written
        // with the options wgpu-hal's Vulkan backend uses for the checks the variant keeps (the
        // same as `create` above) and with the binding numbers wgpu-hal gives the pipeline's
        // layout; its only change is the loop-control word of the loops that carry
        // cooperative-matrix products. The entry point and workgroup size are the module's own.
        Some(unsafe { device.create_shader_module_passthrough(desc) })
    }
}

/// Makes the driver's pipeline cache, from a blob the runtime read back from its cache file.
pub struct SavedPipelineCaches;

impl ep_kernels::runtime::PipelineCaches for SavedPipelineCaches {
    fn create(&self, device: &wgpu::Device, data: Option<&[u8]>) -> wgpu::PipelineCache {
        let desc = wgpu::PipelineCacheDescriptor { label: Some("onnxruntime-ep-wgpu"), data, fallback: true };
        // SAFETY: wgpu requires `data` to come from `PipelineCache::get_data`. The runtime only
        // passes the data of a file it wrote itself from `get_data` (`runtime::pipeline_cache`):
        // the file's key (crate version, backend, adapter ids and name, driver and its version)
        // must equal this adapter's, and the data's checksum must match, or it passes `None`.
        // wgpu checks its own header again and `fallback` makes it start empty on a mismatch.
        unsafe { device.create_pipeline_cache(&desc) }
    }
}
