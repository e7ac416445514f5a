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

/// Element type of any tensor the graph layer moves: the float storage types of the GEMM and
/// conv kernels plus the integer and boolean types of indices, masks and casts.
///
/// Storage follows ONNX Runtime's bytes exactly (the executor copies tensors unchanged):
/// `I64` is two 32-bit words (low, high; kernels read it as `vec2<u32>` and compute exactly in
/// 64 bits where they claim it), `Bool` is one byte per element (kernels read and write it
/// through packed `u32` words). `U8` is one byte per element too; only the ops that read packed
/// bytes (MatMulNBits' and GatherBlockQuantized's weights and zero points) claim it, so it is not
/// in [`ElemType::ALL`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElemType {
    F32,
    F16,
    I32,
    I64,
    Bool,
    U8,
}

impl ElemType {
    pub const ALL: [ElemType; 5] = [ElemType::F32, ElemType::F16, ElemType::I32, ElemType::I64, ElemType::Bool];

    /// Bytes per element.
    pub const fn size(self) -> u64 {
        match self {
            ElemType::F32 | ElemType::I32 => 4,
            ElemType::F16 => 2,
            ElemType::I64 => 8,
            ElemType::Bool | ElemType::U8 => 1,
        }
    }

    /// The float storage type, for the GEMM and conv kernels.
    pub const fn float(self) -> Option<DType> {
        match self {
            ElemType::F32 => Some(DType::F32),
            ElemType::F16 => Some(DType::F16),
            _ => None,
        }
    }

    pub const fn is_float(self) -> bool {
        matches!(self, ElemType::F32 | ElemType::F16)
    }

    /// The ONNX `TensorProto.DataType` code.
    pub const fn onnx(self) -> i32 {
        match self {
            ElemType::F32 => 1,
            ElemType::F16 => 10,
            ElemType::I32 => 6,
            ElemType::I64 => 7,
            ElemType::Bool => 9,
            ElemType::U8 => 2,
        }
    }

    /// The type of an ONNX `TensorProto.DataType` code, if we move tensors of it.
    pub fn from_onnx(code: i32) -> Option<ElemType> {
        ElemType::ALL.into_iter().chain([ElemType::U8]).find(|t| t.onnx() == code)
    }

    /// Short name used in variant and golden file names.
    pub const fn name(self) -> &'static str {
        match self {
            ElemType::F32 => "f32",
            ElemType::F16 => "f16",
            ElemType::I32 => "i32",
            ElemType::I64 => "i64",
            ElemType::Bool => "bool",
            ElemType::U8 => "u8",
        }
    }
}

impl From<DType> for ElemType {
    fn from(d: DType) -> Self {
        match d {
            DType::F32 => ElemType::F32,
            DType::F16 => ElemType::F16,
        }
    }
}

impl std::fmt::Display for ElemType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
