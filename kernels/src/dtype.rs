//! Element types the kernels handle.

use serde::{Deserialize, Serialize};

/// Storage type of a tensor's elements. Accumulation is always f32.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    F32,
    F16,
}

impl DType {
    pub const fn size(self) -> u64 {
        match self {
            DType::F32 => 4,
            DType::F16 => 2,
        }
    }

    /// The lowest and highest finite values (ONNX's `numeric_limits::lowest()` and `max()`).
    pub fn finite_range(self) -> (f32, f32) {
        match self {
            DType::F32 => (f32::MIN, f32::MAX),
            DType::F16 => (half::f16::MIN.to_f32(), half::f16::MAX.to_f32()),
        }
    }

    /// WGSL scalar type name; also used in variant and golden file names.
    pub const fn wgsl(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
        }
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.wgsl())
    }
}
