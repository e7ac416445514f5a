//! ONNX Runtime plugin-EP boundary of onnxruntime-ep-wgpu. The only crate with `unsafe` and
//! `extern "C"`: it turns ORT objects into plain Rust values, calls the `ep_kernels` engine
//! and maps errors to `OrtStatus` in one place.

pub mod experimental;
