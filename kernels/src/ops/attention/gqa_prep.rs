//! GroupQueryAttention's preparation stage (`wgsl/gqa_prep.wgsl.j2`): its uniforms, programs and
//! dispatches (rows of Q, of the present K and V, and the mask words), before the flash kernels.

use bytemuck::{Pod, Zeroable};

use super::{GqaGeometry, GqaKernel};
use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::ops::planned::OpDispatch;
use crate::ops::{grid_for, to_u32};
use crate::shader::{render, OpShader, OpSource, ShaderVariant};

/// The uniforms of `gqa_prep.wgsl.j2`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
struct PrepParams {
    batch: u32,
    seq: u32,
    heads: u32,
    d: u32,
    rows: u32,
    past: u32,
    row: u32,
    offset: u32,
    half: u32,
    max_seq: u32,
    flags: u32,
    total: u32,
    window: i32,
    code: u32,
    eps: f32,
    pad: u32,
}

/// Which preparation kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PrepStage {
    /// Rows of Q or of a present cache.
    Rows,
    /// Q's rows, both present caches and the mask in one dispatch (see [`fuses_rows`]).
    Rows3,
    /// The boolean mask.
    Mask,
}

/// One preparation kernel: what changes its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GqaPrepSource {
    pub ty: ElemType,
    pub stage: PrepStage,
}

impl OpSource for GqaPrepSource {
    fn name(&self) -> String {
        match self.stage {
            PrepStage::Mask => "gqa_mask".into(),
            PrepStage::Rows => format!("gqa_rows_{}", self.ty.name()),
            PrepStage::Rows3 => format!("gqa_rows3_{}", self.ty.name()),
        }
    }

    fn emit(&self) -> Result<String, String> {
        let stage = match self.stage {
            PrepStage::Mask => "mask",
            PrepStage::Rows => "rows",
            PrepStage::Rows3 => "rows3",
        };
        render("gqa_prep.wgsl.j2", minijinja::context! { t => self.ty.name(), stage => stage })
    }

    fn capabilities(&self) -> naga::valid::Capabilities {
        crate::ops::capabilities_for(&[self.ty])
    }
}

/// Storage buffers the one-dispatch form binds (`PrepStage::Rows3`).
const ROWS3_STORAGE: u32 = 15;

/// Whether the preparation runs as one dispatch: where the device binds its fifteen storage
/// buffers (a present cache that is its past's own range binds a spare buffer as that past).
pub fn fuses_rows(caps: &DeviceCaps) -> bool {
    caps.max_storage_buffers_per_stage >= ROWS3_STORAGE
}

/// Every preparation variant on `caps`.
pub fn variants(caps: &DeviceCaps) -> Vec<ShaderVariant> {
    let op = |ty, stage| ShaderVariant::Op(OpShader::new(GqaPrepSource { ty, stage }));
    let mut out = vec![op(ElemType::F32, PrepStage::Mask)];
    for ty in crate::ops::norm::float_types(caps) {
        out.push(op(ty, PrepStage::Rows));
        if fuses_rows(caps) {
            out.push(op(ty, PrepStage::Rows3));
        }
    }
    out
}

impl GqaKernel {
    /// The uniforms of the rows stage for one output: `query` (Q) or a present cache whose new
    /// rows start at element `offset` of a source row of `row` elements.
    fn rows_params(
        &self,
        g: &GqaGeometry,
        query: bool,
        heads: u64,
        offset: u64,
        rotate: bool,
    ) -> Result<PrepParams, GpuError> {
        let row = if g.packed { g.d * (self.heads + 2 * self.kv_heads) } else { g.d * heads };
        let rows = if query { g.seq } else { g.present };
        let flags = u32::from(self.interleaved) | (u32::from(query) << 3);
        Ok(PrepParams {
            batch: to_u32("GroupQueryAttention batch", g.batch)?,
            seq: to_u32("GroupQueryAttention sequence", g.seq)?,
            heads: to_u32("GroupQueryAttention heads", heads)?,
            d: to_u32("GroupQueryAttention head size", g.d)?,
            rows: to_u32("GroupQueryAttention rows", rows)?,
            past: to_u32("GroupQueryAttention past rows", g.past)?,
            row: to_u32("GroupQueryAttention row", row)?,
            offset: to_u32("GroupQueryAttention offset", offset)?,
            half: if rotate { to_u32("GroupQueryAttention rotation", g.half)? } else { 0 },
            max_seq: to_u32("GroupQueryAttention cache rows", g.max_seq)?,
            flags,
            total: to_u32("GroupQueryAttention elements", g.batch * heads * rows * g.d)?,
            window: i32::try_from(self.window.max(-1)).unwrap_or(i32::MAX),
            code: 0,
            eps: 0.0,
            pad: 0,
        })
    }
}

impl GqaKernel {
    /// The preparation dispatches at `g`: rows of Q, of the present K and V (whose past rows are
    /// already in place where `shared`), and the mask words where the flash step reads a mask;
    /// all as one dispatch where [`fuses_rows`].
    pub(super) fn prep_dispatches(
        &self,
        g: &GqaGeometry,
        caps: &DeviceCaps,
        code: u32,
        shared: [bool; 2],
    ) -> Result<Vec<OpDispatch>, GpuError> {
        let (qd, kd) = (self.heads * g.d, self.kv_heads * g.d);
        let (k_off, v_off) = if g.packed { (qd, qd + kd) } else { (0, 0) };
        // Four elements per invocation: every supported head size is a multiple of 4.
        if g.d % 4 != 0 {
            return Err(GpuError::Internal(self.err(format!("head size {} is not a multiple of 4", g.d))));
        }
        let stage = |query: bool, heads: u64, offset: u64, rotate: bool, norm: Option<f32>, in_place: bool| {
            let mut params = self.rows_params(g, query, heads, offset, rotate)?;
            params.code = code;
            if in_place {
                // The past rows are in place: visit only the new ones ([B, H, S, D]).
                params.flags |= 32 | 64;
                params.total = to_u32("GroupQueryAttention elements", g.batch * heads * g.seq * g.d)?;
            }
            if let Some(eps) = norm {
                params.flags |= 16;
                params.eps = eps;
            }
            Ok::<_, GpuError>(params)
        };
        let stages = [
            stage(true, self.heads, 0, self.rotary, self.q_norm, false)?,
            stage(false, self.kv_heads, k_off, self.rotary, self.k_norm, shared[0])?,
            stage(false, self.kv_heads, v_off, false, None, shared[1])?,
        ];
        // The mask only where the flash kernels read it (a local window): else none at all.
        let words = match self.mask_kind() {
            super::MaskKind::Bool => (g.batch * g.seq * g.present).div_ceil(4),
            _ => 0,
        };
        let mut params = self.rows_params(g, false, self.kv_heads, 0, false)?;
        params.total = to_u32("GroupQueryAttention mask words", words)?;
        let op = |ty, stage| ShaderVariant::Op(OpShader::new(GqaPrepSource { ty, stage }));
        let quads = |p: &PrepParams| u64::from(p.total) / 4;
        if fuses_rows(caps) {
            let all = stages.iter().map(quads).sum::<u64>() + words;
            let four = [stages[0], stages[1], stages[2], params];
            return Ok(vec![OpDispatch::new(op(self.ty, PrepStage::Rows3), &four, grid_for(all, caps)?)]);
        }
        let rows = |p: &PrepParams| Ok(OpDispatch::new(op(self.ty, PrepStage::Rows), p, grid_for(quads(p), caps)?));
        let mut out = stages.iter().map(rows).collect::<Result<Vec<_>, GpuError>>()?;
        if words > 0 {
            out.push(OpDispatch::new(op(ElemType::F32, PrepStage::Mask), &params, grid_for(words, caps)?));
        }
        Ok(out)
    }
}
