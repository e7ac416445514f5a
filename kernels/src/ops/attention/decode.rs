//! Split-KV attention for a few query rows (decode: one new token against a long cache). The
//! flash kernel's 32-row query tiles would mostly idle there, and one workgroup per head would
//! leave most of a large GPU idle; instead each (row, key chunk) gets a workgroup
//! (`wgsl/attn_decode.wgsl.j2`) writing a partial (acc, max, sum) to a workspace of
//! rows × splits × (D + 2) floats, which `attn_decode_reduce` combines into the output.

use bytemuck::{Pod, Zeroable};

use super::kernel::{AttnPlan, Causal, FlashKernel, Geometry, MaskKind, SharedParams};
use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::ops::planned::OpDispatch;
use crate::ops::{grid, grid_for, to_u32};
use crate::shader::{render, OpShader, OpSource, ShaderVariant};

/// Query rows up to which the split-KV kernel runs instead of the flash kernel.
pub const DECODE_MAX_ROWS: u64 = 4;
/// Keys a workgroup scores per step.
const STEP: u64 = 64;
/// Fewest keys per chunk: one step. A chunk's partial is D + 2 floats, far less than its keys'
/// K and V rows, and decode on the H200 is latency-bound, so short chunks pay.
const MIN_CHUNK: u64 = 64;

/// (splits, keys per chunk) for `rows` query rows over `skv` keys: enough workgroups for the
/// device (4 per unit of its parallelism), chunks of at least [`MIN_CHUNK`] keys.
pub fn plan_splits(rows: u64, skv: u64, caps: &DeviceCaps) -> (u64, u64) {
    let target = 4 * u64::from(caps.parallelism.max(1));
    let max_splits = skv.div_ceil(MIN_CHUNK).max(1);
    let splits = target.div_ceil(rows.max(1)).clamp(1, max_splits);
    let chunk = skv.div_ceil(splits).div_ceil(STEP).max(1) * STEP;
    (skv.div_ceil(chunk).max(1), chunk)
}

/// The partial kernel: what changes its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DecodeSource {
    pub ty: ElemType,
    pub d: u32,
    pub mask: MaskKind,
}

impl OpSource for DecodeSource {
    fn name(&self) -> String {
        format!("attn_decode_{}_d{}_mask_{}", self.ty.name(), self.d, self.mask.name())
    }

    fn emit(&self) -> Result<String, String> {
        let ctx = minijinja::context! {
            t => self.ty.name(), f16 => self.ty == ElemType::F16, d => self.d, mask => self.mask.name(),
        };
        render("attn_decode.wgsl.j2", ctx)
    }

    fn capabilities(&self) -> naga::valid::Capabilities {
        crate::ops::capabilities_for(&[self.ty])
    }
}

/// The reduction of the partials into the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DecodeReduceSource {
    pub ty: ElemType,
}

impl OpSource for DecodeReduceSource {
    fn name(&self) -> String {
        format!("attn_decode_reduce_{}", self.ty.name())
    }

    fn emit(&self) -> Result<String, String> {
        render(
            "attn_decode_reduce.wgsl.j2",
            minijinja::context! { t => self.ty.name(), f16 => self.ty == ElemType::F16 },
        )
    }

    fn capabilities(&self) -> naga::valid::Capabilities {
        crate::ops::capabilities_for(&[self.ty])
    }
}

/// Every split-KV variant on `caps`.
pub fn variants(caps: &DeviceCaps) -> Vec<ShaderVariant> {
    let mut out = Vec::new();
    for ty in crate::ops::norm::float_types(caps) {
        for d in super::HEAD_SIZES {
            for mask in [MaskKind::None, MaskKind::Add, MaskKind::Bool] {
                out.push(ShaderVariant::Op(OpShader::new(DecodeSource { ty, d: d as u32, mask })));
            }
        }
        out.push(ShaderVariant::Op(OpShader::new(DecodeReduceSource { ty })));
    }
    out
}

/// The uniforms of `attn_decode.wgsl.j2`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct DecodeParams {
    shared: SharedParams,
    chunk: u32,
    count: u32,
    splits: u32,
    pad: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct ReduceParams {
    rows: u32,
    d: u32,
    splits: u32,
    sq: u32,
    heads: u32,
    pad: [u32; 3],
    o_stride: [u32; 4],
}

/// The two dispatches of a split-KV run.
pub(super) fn plan(
    k: &FlashKernel,
    caps: &DeviceCaps,
    g: &Geometry,
    shared: SharedParams,
) -> Result<AttnPlan, GpuError> {
    let rows = g.batch * g.heads * g.sq;
    let (splits, chunk) = plan_splits(rows, g.skv, caps);
    let count = rows * splits;
    let params = DecodeParams {
        shared,
        chunk: to_u32("keys per chunk", chunk)?,
        count: to_u32("attention workgroups", count)?,
        splits: to_u32("key splits", splits)?,
        pad: 0,
    };
    let part = ShaderVariant::Op(OpShader::new(DecodeSource { ty: k.ty, d: g.d as u32, mask: k.mask }));
    let main = OpDispatch::new(part, &params, grid(count, caps)?);
    let reduce = reduce(k, caps, g, params.splits, &shared)?;
    let causal = if k.causal == Causal::None { "" } else { ", causal" };
    let tiling = format!("{splits} chunks of {chunk} keys");
    let line = format!(
        "{} '{}': split-KV attention B={} H={}/{} Sq={} Skv={} D={}: {tiling}, mask {}{causal}",
        k.op,
        k.name,
        g.batch,
        g.heads,
        g.kv_heads,
        g.sq,
        g.skv,
        g.d,
        k.mask.name()
    );
    Ok(AttnPlan { line, tiling: format!("split-KV, {tiling}"), main, reduce: Some((reduce, count * (g.d + 2) * 4)) })
}

/// The dispatch that combines `splits` partials per row into the output (what the split-KV
/// kernels write: per (row, split) `d` accumulator columns, the max and the sum); it binds the
/// partials, then the output.
pub(super) fn reduce(
    k: &FlashKernel,
    caps: &DeviceCaps,
    g: &Geometry,
    splits: u32,
    shared: &SharedParams,
) -> Result<OpDispatch, GpuError> {
    let rows = g.batch * g.heads * g.sq;
    let params = ReduceParams {
        rows: to_u32("attention rows", rows)?,
        d: g.d as u32,
        splits,
        sq: shared.sq,
        heads: shared.heads,
        pad: [0; 3],
        o_stride: shared.strides[3],
    };
    let red = ShaderVariant::Op(OpShader::new(DecodeReduceSource { ty: k.ty }));
    Ok(OpDispatch::new(red, &params, grid_for(rows * g.d, caps)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::caps::profiles;

    #[test]
    fn uniforms_match_the_templates() {
        assert_eq!(std::mem::size_of::<DecodeParams>(), 128);
        assert_eq!(std::mem::size_of::<ReduceParams>(), 48);
    }

    #[test]
    fn splits_fill_the_device_in_whole_steps() {
        let h200 = profiles::get("h200").unwrap();
        // Llama decode: 32 rows over 4096 keys: 32 chunks of 128.
        assert_eq!(plan_splits(32, 4096, &h200), (32, 128));
        // ... over 513 keys: chunks of one step.
        assert_eq!(plan_splits(32, 513, &h200), (9, 64));
        // Many rows: no split.
        assert_eq!(plan_splits(4096, 4096, &h200), (1, 4096));
        // Short sequences: chunks of one step.
        assert_eq!(plan_splits(1, 100, &h200), (2, 64));
        let llvmpipe = profiles::get("llvmpipe").unwrap();
        let (splits, chunk) = plan_splits(2, 1000, &llvmpipe);
        assert!(splits > 1 && chunk % STEP == 0 && splits * chunk >= 1000 && (splits - 1) * chunk < 1000);
    }
}
