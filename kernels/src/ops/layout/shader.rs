//! The layout kernels' WGSL: one template per access pattern, instantiated per element size
//! (the kernels move bytes, so f32 and i32 share a program, and no variant needs f16).

use minijinja::context;

use crate::caps::{DeviceCaps, DeviceKind};
use crate::shader::{render, OpShader, OpSource, ShaderVariant};

/// Element sizes in bytes: bool, f16, f32/i32, i64.
pub const SIZES: [u64; 4] = [1, 2, 4, 8];

/// Inputs one Concat dispatch binds: with the output, within WebGPU's minimum of 8 storage
/// buffers per stage.
pub const CONCAT_INPUTS: usize = 4;

/// The access pattern of a layout kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pattern {
    /// Output element → input offset through per-dim strides (Transpose, Slice, Split, Expand).
    Strided,
    /// A batched 2-D transpose through a workgroup tile.
    Tiled,
    /// Up to [`CONCAT_INPUTS`] inputs along one axis.
    Concat,
    /// Gather along one axis with int32 (`false`) or int64 (`true`) indices.
    Gather { i64: bool },
}

/// One layout kernel: a pattern at an element size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LayoutSource {
    pub pattern: Pattern,
    /// Bytes per element: 1, 2, 4 or 8.
    pub size: u64,
}

impl LayoutSource {
    pub fn variant(pattern: Pattern, size: u64) -> ShaderVariant {
        ShaderVariant::Op(OpShader::new(LayoutSource { pattern, size }))
    }

    /// Elements per u32 word (1 for 4- and 8-byte elements).
    pub fn per_word(size: u64) -> u64 {
        if size < 4 {
            4 / size.max(1)
        } else {
            1
        }
    }

    /// The u32 words of `count` output elements, counting an 8-byte element as one (the
    /// kernels' unit of work).
    pub fn words(size: u64, count: u64) -> u64 {
        count.div_ceil(Self::per_word(size))
    }

    /// Output words (8-byte elements: elements) one invocation writes. A CPU adapter runs an
    /// invocation at a cost worth many copies (llvmpipe copies a tensor 4x faster in runs of
    /// 16 than of 1); a GPU wants one word per invocation, so neighbours write neighbours.
    pub fn run(caps: &DeviceCaps) -> u64 {
        if caps.kind == DeviceKind::Cpu {
            16
        } else {
            1
        }
    }
}

impl OpSource for LayoutSource {
    fn name(&self) -> String {
        let size = self.size;
        match self.pattern {
            Pattern::Strided => format!("layout_strided_b{size}"),
            Pattern::Tiled => format!("layout_transpose_tiled_b{size}"),
            Pattern::Concat => format!("layout_concat_b{size}"),
            Pattern::Gather { i64 } => format!("layout_gather_{}_b{size}", if i64 { "i64" } else { "i32" }),
        }
    }

    fn emit(&self) -> Result<String, String> {
        if !SIZES.contains(&self.size) {
            return Err(format!("no layout kernel for {}-byte elements", self.size));
        }
        let size = self.size;
        match self.pattern {
            Pattern::Strided => render("layout_strided.wgsl.j2", context! { size }),
            Pattern::Tiled => render("layout_transpose_tiled.wgsl.j2", context! { size }),
            Pattern::Concat => render("layout_concat.wgsl.j2", context! { size, inputs => CONCAT_INPUTS }),
            Pattern::Gather { i64 } => render("layout_gather.wgsl.j2", context! { size, i64 }),
        }
    }
}

/// Every variant of `patterns` at every element size.
pub fn variants(patterns: &[Pattern]) -> Vec<ShaderVariant> {
    patterns.iter().flat_map(|&p| SIZES.iter().map(move |&s| LayoutSource::variant(p, s))).collect()
}
