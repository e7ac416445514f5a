//! Batched GEMM: problem description, tilings, the planner.

pub mod plan;
pub mod problem;
pub mod tiling;

pub use plan::{fold_grid, plan_gemm, GemmParams, GemmPlan, GemmStep, StepIo};
pub use problem::{
    broadcast_layout, broadcast_shapes, contiguous_layout, matmul_problem, Activation, Epilogue, GemmProblem,
    MatrixLayout, MAX_BATCH_DIMS,
};
pub use tiling::{GemmVariant, GemvShape, TileShape, Tiling, TilingChoice};
