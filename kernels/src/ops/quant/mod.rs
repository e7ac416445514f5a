//! Quantised ops: com.microsoft MatMulNBits (`nbits`), blockwise 4- and 8-bit weights as
//! onnxruntime-genai's model builder and ONNX Runtime's quantisation tools emit them.
//!
//! The weights stay packed on the GPU as ONNX Runtime's bytes. Few rows of A (decode) run the
//! GEMV kernel that streams the packed weights once per group of rows and dequantises them on
//! the fly (`quant_nbits_gemv.wgsl.j2`); more rows dequantise B into a `[N, K]` buffer of A's
//! type (`quant_nbits_dequant.wgsl.j2`) that the GEMM engine multiplies as a transposed B.

pub mod nbits;
mod source;

/// The quant op definitions.
pub fn ops() -> Vec<&'static dyn crate::ops::OpDef> {
    nbits::OPS.to_vec()
}
