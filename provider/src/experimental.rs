//! The opt-in token for wgpu's experimental features (cooperative matrices).

/// Lets a device use `EXPERIMENTAL_*` features: the f16 tensor-core GEMM needs
/// `EXPERIMENTAL_COOPERATIVE_MATRIX`.
pub fn cooperative_matrix_opt_in() -> wgpu::ExperimentalFeatures {
    // SAFETY: wgpu asks callers of experimental features to accept that their implementation
    // may contain bugs. We only use cooperative-matrix loads/stores/multiply-adds on buffers the
    // planner sized, every variant is validated by naga in the goldens test and checked against
    // a float64 reference on real hardware, and pipeline creation runs under catch_unwind.
    unsafe { wgpu::ExperimentalFeatures::enabled() }
}

/// Compiles the engine's self-guarding shaders without wgpu's runtime checks.
pub struct UncheckedShaders;

impl ep_kernels::runtime::TrustedShaders for UncheckedShaders {
    fn create(&self, device: &wgpu::Device, desc: wgpu::ShaderModuleDescriptor<'_>) -> wgpu::ShaderModule {
        // SAFETY: the runtime only passes variants whose templates compare every buffer index
        // against the uniform sizes before the access (`ShaderVariant::guards_every_access`),
        // over bindings the planner sized from the same numbers; every loop runs to a bound
        // computed from uniforms; every divisor is a tile or batch count the planner makes ≥ 1.
        unsafe { device.create_shader_module_trusted(desc, wgpu::ShaderRuntimeChecks::unchecked()) }
    }
}
