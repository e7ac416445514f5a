//! Convolution (ONNX `Conv`, 1-D and 2-D) on the GEMM engine: attribute resolution, the
//! planner choosing between a pointwise GEMM, im2col + GEMM, an implicit GEMM (im2col on load)
//! and a direct grouped kernel, and the conv kernels' variants.

pub mod plan;
pub mod problem;
pub mod variant;

pub use plan::{
    im2col_bytes, plan_conv, plan_conv_with, prefer_implicit, prepack_weights, ConvAlgo, ConvPath, ConvPlan,
    ConvSchedule, ConvStep, DIRECT_MAX_K, DIRECT_MAX_M_PER_GROUP,
};
pub use problem::{resolve, AutoPad, ConvAttrs, ConvInputs, ConvProblem, Residual};
pub use variant::{ConvParams, ConvVariant, ImplicitConvParams};
