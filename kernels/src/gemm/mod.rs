//! Batched GEMM: problem description, tilings and kernel variants, the planner.

pub(crate) mod coop;
pub mod layout;
pub mod options;
pub mod params;
pub mod plan;
pub mod problem;
pub(crate) mod split;
pub mod tiling;
pub mod tuning;
pub mod variant;

pub use coop::EMULATED_MAX_K;
pub use layout::{a_contig, a_wide_loads_ok, b_contig, wide_loads_ok};
pub use options::{CoopMode, GemmOptions};
pub use params::{fold_grid, GemmParams};
pub use plan::{plan_gemm, plan_gemm_implicit, plan_gemm_tuned, GemmPlan, GemmStep, StepIo};
pub use problem::{
    broadcast_layout, broadcast_shapes, contiguous_layout, erf, matmul_problem, matmul_problem_strided,
    matmul_problem_with_bias, Activation, Epilogue, GemmProblem, MatrixLayout, OperandView, EXT_ACT_SHIFT,
    FLAG_RESIDUAL, FLAG_RESIDUAL_AFTER_ACT, FLAG_RESIDUAL_MUL, MAX_BATCH_DIMS,
};
pub use split::max_pass_of_a;
pub use tiling::{Contig, CoopShape, GemvShape, TileShape, Tiling, TilingChoice};
pub use tuning::Tuning;
pub use variant::{coop_device_check, CoopVariant, GemmVariant, GemvVec, COOP_CONFIG};
