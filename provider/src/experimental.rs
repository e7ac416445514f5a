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
