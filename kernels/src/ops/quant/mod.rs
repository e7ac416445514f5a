//! Quantised ops: com.microsoft MatMulNBits (`nbits`) and GatherBlockQuantized (`gather_block`),
//! blockwise 2-, 4- and 8-bit weights as onnxruntime-genai's model builder and ONNX Runtime's
//! quantisation tools emit them.
//!
//! The weights stay packed on the GPU as ONNX Runtime's bytes. Few rows of A (decode) run the
//! GEMV kernel that streams the packed weights once per group of rows and dequantises them on
//! the fly (`quant_nbits_gemv.wgsl.j2`); more rows run a 64×64-tiled kernel that dequantises B's
//! slices into workgroup memory (`quant_nbits_tiled.wgsl.j2`). From 32 rows on a device with
//! tensor cores, constant weights are dequantised once into a `[K, N]` buffer of A's type
//! (`quant_nbits_dequant.wgsl.j2`, `_kn`, on the node's first prepare) that the GEMM engine
//! multiplies as an untransposed B, with the tiles an fp16 model's MatMul gets: one
//! full-precision copy of each such node's weights, kept for every shape set (see
//! `NbitsKernel::dequantized`). Weights that are not initializers take that path only when
//! forced, dequantised every run into `[N, K]` (read as a transposed B).
//!
//! com.microsoft GatherBlockQuantized (`gather_block`), the embedding lookup of int4 models
//! with tied embeddings, reads the same packed bytes: one kernel gathers rows and dequantises
//! them (`quant_gather_block.wgsl.j2`).

pub mod gather_block;
pub mod nbits;
pub mod source;

/// The quant op definitions.
pub fn ops() -> Vec<&'static dyn crate::ops::OpDef> {
    nbits::OPS.iter().chain(gather_block::OPS).copied().collect()
}
