//! The GPU engine of onnxruntime-ep-wgpu: device capabilities, pure planners for GEMM (and
//! conv, built on it), WGSL rendered from templates, and wgpu execution.
//!
//! `plan(problem, &DeviceCaps) -> Plan` is pure and unit-tested against recorded device
//! profiles; `ShaderVariant::emit` renders a plan's program; `runtime::Gpu` compiles, caches
//! and dispatches. No `unsafe` here: the ONNX Runtime boundary lives in the `provider` crate.
#![forbid(unsafe_code)]

pub mod caps;
pub mod conv;
pub mod dtype;
pub mod error;
pub mod gemm;
pub mod graph;
pub mod hostcopy;
pub mod ops;
pub mod options;
pub mod shader;
pub mod variants;

pub use caps::{CoopMatrixConfig, CoopScalar, DeviceCaps, DeviceKind};
pub use dtype::{DType, ElemType};
pub use error::{GpuError, PlanError};
pub use shader::ShaderVariant;
pub mod runtime;

/// Whether an experiment build's `EXP_NO_FOLD` (a comma list of `gqa`, `norm`, `nbits`, `last`, `dual`) turns
/// that fold off, so one library times each fold against its absence (`bench/README.md`).
/// Release builds never read the variable.
pub(crate) fn fold_off(name: &str) -> bool {
    exp_listed("EXP_NO_FOLD", name)
}

/// Whether an experiment build's `EXP_SKIP` (a comma list; `gqa_prep`: GroupQueryAttention's
/// one-token preparation dispatch) leaves that dispatch out: timing only, the results are wrong.
/// Release builds never read the variable.
pub(crate) fn exp_skip(name: &str) -> bool {
    exp_listed("EXP_SKIP", name)
}

fn exp_listed(var: &str, name: &str) -> bool {
    cfg!(feature = "wgsl-override") && std::env::var(var).is_ok_and(|v| v.split(',').any(|f| f.trim() == name))
}
