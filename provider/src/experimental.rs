//! The `unsafe` wgpu calls: the opt-in token for experimental features (cooperative matrices),
//! shader modules without runtime checks, and the driver's pipeline cache from a saved blob.

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

    fn create_spirv(&self, device: &wgpu::Device, label: &str, words: &[u32]) -> Option<wgpu::ShaderModule> {
        if !device.features().contains(wgpu::Features::PASSTHROUGH_SHADERS) {
            return None;
        }
        let entry = [wgpu::PassthroughShaderEntryPoint { name: "main".into(), workgroup_size: (1, 1, 1) }];
        let desc = wgpu::ShaderModuleDescriptorPassthrough {
            label: Some(label),
            entry_points: entry[..].into(),
            spirv: Some(words.into()),
            ..Default::default()
        };
        // SAFETY: only an experiment build passes SPIR-V here (`EXP_ROLLED=1`,
        // `ep_kernels::runtime::rolled`): naga's own output for a module it validated, written
        // with the options wgpu-hal's Vulkan backend uses for the same checks, whose only change
        // is the loop-control word of the loops that carry cooperative-matrix products.
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
