//! Attention: `O = softmax(scale · Q·Kᵀ (+ mask)) · V` as one flash kernel (`wgsl/attn_flash.wgsl.j2`):
//! a workgroup owns a tile of query rows and streams K/V tiles through workgroup memory with an
//! online softmax, so no Sq×Skv matrix is ever written.
//!
//! - `fused`: the internal op `FlashAttention` (domain [`INTERNAL_DOMAIN`]) that the exported pattern
//!   `MatMul(Q, Kᵀ) → scale → (+ mask) → Softmax → MatMul(·, V)` is rewritten into
//!   (`graph/attention.rs`);
//! - `onnx`: ONNX `Attention` (opset 23);
//! - `decode`: the split-KV variant for a few query rows (decode), chosen at prepare time;
//! - `mha`: `com.microsoft` `MultiHeadAttention` without a KV cache;
//! - `gqa`: `com.microsoft` `GroupQueryAttention` (KV cache, rotary, local window) as genai builds it.
//!
//! Every operand is read through logical (batch, head, seq, dim) strides ([`Layout`]), so absorbed
//! Transposes, packed `[B, S, H·D]` tensors and grouped-query heads (`H_q` a multiple of `H_kv`)
//! cost no copy.

pub mod coop;
pub mod decode;
mod decode_source;
pub mod fused;
pub mod gqa;
pub mod kernel;
pub mod mha;
pub mod onnx;
mod unfused;

use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::shader::{render, OpSource};

pub use kernel::{Engine, FlashKernel, Layout, MaskKind, OutLayout};

/// The domain of the EP's own ops, which only pattern rewrites create.
pub const INTERNAL_DOMAIN: &str = "ep.wgpu";

/// The head sizes the flash kernels (SIMT and split-KV decode) are generated for. 256 is Gemma's
/// (GroupQueryAttention, MultiHeadAttention and ONNX `Attention`, which have no unfused form here);
/// the tensor-core kernel stops at [`coop::MAX_HEAD_SIZE`] and the rewrite of the exported
/// pattern at [`REWRITE_HEAD_SIZES`].
pub const HEAD_SIZES: [u64; 5] = [64, 80, 96, 128, 256];

/// The head sizes whose exported `MatMul → Softmax → MatMul` pattern is rewritten into one flash
/// kernel: those measured against the unfused products, and whose smallest tiling fits WebGPU's
/// minimum of 16 KB of workgroup memory, so a rewritten pattern runs on every device.
pub const REWRITE_HEAD_SIZES: [u64; 4] = [64, 80, 96, 128];

/// Invocations per workgroup (an 8×8 grid).
pub const THREADS: u32 = 64;

/// The definitions of this family.
pub fn ops() -> Vec<&'static dyn crate::ops::OpDef> {
    vec![&fused::FlashAttentionDef, &onnx::AttentionDef, &mha::MultiHeadAttentionDef, &gqa::GroupQueryAttentionDef]
}

/// Query rows and keys per tile for head size `d` on `caps`: the largest tiles whose workgroup
/// memory fits, or `None`.
pub fn plan_tiles(d: u64, caps: &DeviceCaps) -> Option<(u32, u32)> {
    if !HEAD_SIZES.contains(&d) || caps.max_invocations_per_workgroup < THREADS || caps.max_workgroup_size[0] < THREADS
    {
        return None;
    }
    // The last fits WebGPU's minimum of 16 KB for every head size of REWRITE_HEAD_SIZES.
    [(32, 32), (32, 16), (16, 16), (16, 8)]
        .into_iter()
        .find(|&(br, bc)| storage_bytes(br, bc, d as u32) <= caps.max_workgroup_storage_bytes)
}

/// Workgroup memory of a tiling: Q and K/V tiles (rows padded by a word), the score tile, row stats.
pub fn storage_bytes(br: u32, bc: u32, d: u32) -> u32 {
    4 * ((br + bc) * (d + 1) + br * (bc + 1) + 3 * br)
}

/// Why a head size or device cannot run the flash kernel (for decline reasons).
pub fn unsupported(d: u64, caps: &DeviceCaps) -> Option<String> {
    if !HEAD_SIZES.contains(&d) {
        let sizes: Vec<String> = HEAD_SIZES.iter().map(u64::to_string).collect();
        return Some(format!("head size {d} is not one of the fused kernel's {}", sizes.join(", ")));
    }
    plan_tiles(d, caps).is_none().then(|| {
        format!(
            "the flash kernel for head size {d} needs more workgroup memory than the device's {} bytes",
            caps.max_workgroup_storage_bytes
        )
    })
}

/// One flash kernel: what changes its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AttnSource {
    pub ty: ElemType,
    pub d: u32,
    pub br: u32,
    pub bc: u32,
    pub mask: MaskKind,
}

impl OpSource for AttnSource {
    fn name(&self) -> String {
        format!("attn_flash_{}_d{}_{}x{}_mask_{}", self.ty.name(), self.d, self.br, self.bc, self.mask.name())
    }

    fn emit(&self) -> Result<String, String> {
        render(
            "attn_flash.wgsl.j2",
            minijinja::context! {
                t => self.ty.name(),
                f16 => self.ty == ElemType::F16,
                d => self.d,
                br => self.br,
                bc => self.bc,
                mask => self.mask.name(),
            },
        )
    }

    fn capabilities(&self) -> naga::valid::Capabilities {
        crate::ops::capabilities_for(&[self.ty])
    }
}

/// Every flash variant on `caps` (both op definitions emit these; the fused one lists them).
pub fn variants(caps: &DeviceCaps) -> Vec<crate::shader::ShaderVariant> {
    use crate::shader::{OpShader, ShaderVariant};
    let mut out = Vec::new();
    for ty in crate::ops::norm::float_types(caps) {
        for d in HEAD_SIZES {
            let Some((br, bc)) = plan_tiles(d, caps) else { continue };
            for mask in MaskKind::ALL {
                out.push(ShaderVariant::Op(OpShader::new(AttnSource { ty, d: d as u32, br, bc, mask })));
            }
        }
    }
    out.extend(decode::variants(caps));
    out.extend(coop::variants(caps));
    out
}

/// Whether attention of `ty` (head size `d` where known) runs on the flash kernels: by default
/// (`attention=auto`) f16, and f32 of head size 64 split in three f16 products, on a device with
/// tensor cores; the SIMT kernel (other f32, or devices without them) only with
/// `attention=flash`, as it is still slower than the unfused products (`docs/PERFORMANCE.md`).
pub(crate) fn flash_enabled(opts: &crate::graph::PlacementOptions, ty: ElemType, d: Option<u64>) -> Result<(), String> {
    match d {
        Some(d) => opts.flash_attention.allows_head(ty, d),
        None => opts.flash_attention.allows(),
    }
}

/// What `attention=auto` means on `caps`: attention on the tensor-core kernel where it runs.
pub fn auto_mode(caps: &DeviceCaps) -> crate::graph::FlashMode {
    if coop::device_check(caps, caps.coop_emulated).is_ok() {
        crate::graph::FlashMode::TensorCores
    } else {
        crate::graph::FlashMode::Off
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::caps::profiles;

    #[test]
    fn tiles_fit_the_device() {
        let h200 = profiles::get("h200").unwrap();
        let llvmpipe = profiles::get("llvmpipe").unwrap();
        let mobile = profiles::get("mobile").unwrap();
        assert_eq!(plan_tiles(128, &h200), Some((32, 32)));
        assert_eq!(plan_tiles(128, &llvmpipe), Some((32, 16)));
        assert_eq!(plan_tiles(128, &mobile), Some((16, 8)));
        assert_eq!(plan_tiles(96, &mobile), Some((16, 16)));
        assert_eq!(plan_tiles(64, &mobile), Some((32, 16)));
        assert_eq!(plan_tiles(72, &h200), None);
        for d in HEAD_SIZES {
            let (br, bc) = plan_tiles(d, &llvmpipe).unwrap();
            assert!(storage_bytes(br, bc, d as u32) <= llvmpipe.max_workgroup_storage_bytes);
        }
        assert!(unsupported(72, &h200).unwrap().contains("head size 72"));
        assert!(REWRITE_HEAD_SIZES.iter().all(|&d| storage_bytes(16, 8, d as u32) <= 16384));
        assert!(REWRITE_HEAD_SIZES.iter().all(|d| HEAD_SIZES.contains(d)));
        // Gemma's 256: 16×16 tiles on the H200, 16×8 on llvmpipe, none within 16 KB.
        assert_eq!(plan_tiles(256, &h200), Some((16, 16)));
        assert_eq!(plan_tiles(256, &llvmpipe), Some((16, 8)));
        assert!(unsupported(256, &mobile).unwrap().contains("workgroup memory"));
        assert!(unsupported(32, &h200).unwrap().contains("64, 80, 96, 128, 256"));
        let tiny = DeviceCaps { max_workgroup_storage_bytes: 8192, ..mobile };
        assert!(unsupported(128, &tiny).unwrap().contains("workgroup memory"));
    }
    #[test]
    fn auto_fuses_f32_only_where_the_tensor_cores_take_it_split() {
        use crate::graph::FlashMode;
        let h200 = profiles::get("h200").unwrap();
        let llvmpipe = profiles::get("llvmpipe").unwrap();
        assert_eq!(auto_mode(&h200), FlashMode::TensorCores);
        assert_eq!(auto_mode(&llvmpipe), FlashMode::Off);
        let mode = FlashMode::TensorCores;
        assert!(mode.allows_head(ElemType::F16, 128).is_ok());
        assert!(mode.allows_head(ElemType::F32, 64).is_ok());
        let why = mode.allows_head(ElemType::F32, 128).unwrap_err();
        assert!(why.contains("head size 128 runs unfused"), "{why}");
        // attention=flash takes every head size (the SIMT kernel where the split form has none).
        assert!(FlashMode::All.allows_head(ElemType::F32, 128).is_ok());
        assert!(FlashMode::Off.allows_head(ElemType::F16, 64).is_err());
    }
}
