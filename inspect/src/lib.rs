//! The offline inspector: reads an ONNX file into the graph model the EP places
//! (`ep_kernels::graph::Graph`), then runs the EP's own placement, program building and planners
//! over a recorded `DeviceCaps` profile, and reports what would run where and how.

#![forbid(unsafe_code)]

/// The ONNX messages, generated from `proto/onnx.proto` by `build.rs`.
pub mod proto {
    include!(concat!(env!("OUT_DIR"), "/onnx_proto/mod.rs"));
}

pub mod cli;
pub mod reader;
pub mod render;
pub mod report;
pub mod shapes;
pub mod tensor;
