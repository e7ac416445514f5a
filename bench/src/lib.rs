//! Kernel microbenchmarks of the engine: correctness against a float64 reference on sampled
//! elements and GPU time from timestamp queries, per planned GEMM (`kernel_bench`).

pub mod args;
pub mod cases;
pub mod check;
pub mod conv;
pub mod measure;
pub mod sweep;
