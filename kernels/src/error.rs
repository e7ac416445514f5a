//! Typed errors of planning, shader generation and execution.

use thiserror::Error;

/// Why a problem cannot be planned on a device. Each message is shown to users (ORT logs it
/// when a node is declined), so it names the limit involved.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PlanError {
    #[error("f16 tensors need the shader-f16 feature, which this adapter lacks")]
    F16Unsupported,
    #[error("{what} needs {needed} bytes in one storage binding; the device allows {limit}")]
    BindingTooLarge { what: &'static str, needed: u64, limit: u64 },
    #[error("{workgroups} workgroups do not fit a grid of {limit}³")]
    GridTooLarge { workgroups: u64, limit: u32 },
    #[error("the device allows {invocations} invocations per workgroup; at least {needed} are needed")]
    WorkgroupTooSmall { invocations: u32, needed: u32 },
    #[error("dimension {what} = {value} exceeds the 32-bit index range of the kernels")]
    IndexOverflow { what: &'static str, value: u64 },
    #[error("invalid problem: {0}")]
    Invalid(String),
    #[error(
        "{what}: one invocation would run {iterations} loop iterations; the CPU adapter (llvmpipe) stops every \
         loop after 65535, so its result would be wrong"
    )]
    CpuLoopLimit { what: String, iterations: u64 },
}

/// Failures while talking to the GPU.
#[derive(Debug, Error)]
pub enum GpuError {
    #[error("no wgpu adapter matches {0}")]
    NoAdapter(String),
    #[error("could not create a device on '{adapter}': {reason}")]
    DeviceCreation { adapter: String, reason: String },
    #[error("out of GPU memory: {0}")]
    OutOfMemory(String),
    #[error("wgpu validation error in {context}: {message}")]
    Validation { context: String, message: String },
    #[error("shader {variant} failed to compile: {message}")]
    ShaderCompile { variant: String, message: String },
    #[error("the GPU device was lost: {0}")]
    DeviceLost(String),
    #[error("waiting for the GPU failed: {0}")]
    Poll(String),
    #[error("reading back a buffer failed: {0}")]
    Readback(String),
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The user's input is wrong (shapes that do not match, a bad value at run time).
    #[error("{0}")]
    Invalid(String),
    /// An invariant of the EP itself failed: a bug of ours, never the user's input.
    #[error("internal error (an EP bug, please report it): {0}")]
    Internal(String),
}
