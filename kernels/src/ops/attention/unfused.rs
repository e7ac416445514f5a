//! The attention as two SIMT products and a softmax: `S = scale · Q·Kᵀ (+ mask)`, `P = softmax(S)`,
//! `O = P·V`, through two Sq×Skv scratch buffers (shared by the set's interim attentions,
//! `PrepareCx::scratch_buffer`). It is the interim plan of a tensor-core attention
//! step while that pipeline compiles (`graph/interim.rs`): the driver compiles the SIMT products
//! and the softmax faster than the tensor-core attention (about 0.2 s cold on an H100), and they
//! run Whisper-tiny's attention at GEMM speed, where the SIMT flash kernel took 45 times the tensor
//! cores' time. S and P are stored in the model's type, as the exported pattern's own MatMul and
//! Softmax store them (the fused kernels keep the scores in f32). Never planned outside interim
//! plans: fused attention allocates no Sq×Skv buffer.
//!
//! It takes what the products can express: no causal masking, no capped scores, no boolean or
//! `seqlens` mask (an additive mask is the scores' bias), and scratch within one binding and
//! [`MAX_SCRATCH_BYTES`]. Grouped-query heads are a batch dimension of their own, so K/V are read
//! in place; the output is written through its strides.

use super::kernel::{Causal, FlashKernel, Geometry, MaskKind};
use crate::caps::DeviceCaps;
use crate::error::{GpuError, PlanError};
use crate::gemm::{
    contiguous_layout, plan_gemm, CoopMode, Epilogue, GemmOptions, GemmPlan, GemmProblem, MatrixLayout, StepIo,
    TilingChoice,
};
use crate::ops::norm::broadcast_strides;
use crate::ops::norm::softmax::SoftmaxKernel;
use crate::ops::planned::OpDispatch;
use crate::ops::{to_u32, KernelIo, PrepareCx, PreparedStep};
use crate::runtime::{GemmBindings, GpuBuffer};

/// The largest scratch buffer (each of S and P) an interim plan allocates: Whisper-tiny's six
/// 1500×1500 heads take 27 MB in f16. Longer problems wait for their own pipeline.
pub const MAX_SCRATCH_BYTES: u64 = 256 << 20;

/// The three dispatches' plans and the bytes of each scratch buffer.
pub(super) struct Unfused {
    scores: GemmPlan,
    softmax: OpDispatch,
    values: GemmPlan,
    scratch_bytes: u64,
}

fn cannot(why: impl Into<String>) -> GpuError {
    GpuError::Plan(PlanError::Invalid(format!("no unfused attention: {}", why.into())))
}

impl FlashKernel {
    /// The unfused form for geometry `g`, the mask's shape and the output's (batch, head, seq,
    /// dim) strides, on SIMT products of 64×64 tiles.
    pub(super) fn unfused(
        &self,
        g: &Geometry,
        mask: Option<&[u64]>,
        o_stride: [u64; 4],
        caps: &DeviceCaps,
        options: &GemmOptions,
    ) -> Result<Unfused, GpuError> {
        if self.causal != Causal::None || self.softcap != 0.0 || self.prep.is_some() {
            return Err(cannot("causal masking or capped scores"));
        }
        if !matches!(self.mask, MaskKind::None | MaskKind::Add) {
            return Err(cannot(format!("a {} mask", self.mask.name())));
        }
        let dtype = self.ty.float().ok_or_else(|| cannot(format!("attention of {}", self.ty.name())))?;
        let elems = g.batch * g.heads * g.sq * g.skv;
        let scratch_bytes = elems * self.ty.size();
        if scratch_bytes > MAX_SCRATCH_BYTES.min(caps.binding_limit()) {
            return Err(cannot(format!("{scratch_bytes} bytes of scores")));
        }
        let group = g.heads / g.kv_heads;
        let u = |what: &'static str, x: u64| to_u32(what, x).map_err(GpuError::from);
        // Batch dimensions (1, B, H_kv, group): K and V step over the K/V heads, Q, S and O over
        // the query heads (head h = kv · group + i).
        let batch = [1, u("batch", g.batch)?, u("K/V heads", g.kv_heads)?, u("query heads per K/V head", group)?];
        let per_query_head = |s: [u64; 4]| -> Result<[u32; 4], GpuError> {
            Ok([0, u("stride", s[0])?, u("stride", s[1] * group)?, u("stride", s[1])?])
        };
        let per_kv_head =
            |s: [u64; 4]| -> Result<[u32; 4], GpuError> { Ok([0, u("stride", s[0])?, u("stride", s[1])?, 0]) };
        let [qs, ks, vs] = g.strides;
        let bias = match mask {
            Some(m) => {
                let s = broadcast_strides(m, &[g.batch, g.heads, g.sq, g.skv]);
                let s = [s[0], s[1], s[2], s[3]];
                Some(MatrixLayout {
                    row_stride: u("mask stride", s[2])?,
                    col_stride: u("mask stride", s[3])?,
                    batch_strides: per_query_head(s)?,
                })
            }
            None => None,
        };
        let (sq, skv, d) = (u("query length", g.sq)?, u("key length", g.skv)?, u("head size", g.d)?);
        let scores = GemmProblem {
            dtype,
            m: sq,
            n: skv,
            k: d,
            batch,
            a: MatrixLayout {
                row_stride: u("stride", qs[2])?,
                col_stride: u("stride", qs[3])?,
                batch_strides: per_query_head(qs)?,
            },
            // Kᵀ: row i of B is dimension i of every key.
            b: MatrixLayout {
                row_stride: u("stride", ks[3])?,
                col_stride: u("stride", ks[2])?,
                batch_strides: per_kv_head(ks)?,
            },
            epilogue: Epilogue { alpha: self.scale.unwrap_or(1.0 / (g.d as f32).sqrt()), bias, ..Epilogue::default() },
        };
        let values = GemmProblem {
            dtype,
            m: sq,
            n: d,
            k: skv,
            batch,
            a: contiguous_layout(&batch, sq, skv),
            b: MatrixLayout {
                row_stride: u("stride", vs[2])?,
                col_stride: u("stride", vs[3])?,
                batch_strides: per_kv_head(vs)?,
            },
            epilogue: Epilogue::default(),
        };
        let simt = GemmOptions { tiling: TilingChoice::Tile64, cooperative_matrix: CoopMode::Off, ..*options };
        let scores = one_product(plan_gemm(&scores, caps, &simt)?, &scores)?;
        let mut values_plan = one_product(plan_gemm(&values, caps, &simt)?, &values)?;
        // O through its own strides (packed `[B, S, H·D]` outputs too).
        let params = &mut values_plan.steps[0].params;
        params.c_rs = u("output stride", o_stride[2])?;
        params.c_cs = u("output stride", o_stride[3])?;
        params.c_bs = per_query_head(o_stride)?;
        let softmax = SoftmaxKernel::rows(&self.name, self.ty);
        let (softmax, _) = softmax.dispatch(&[g.batch * g.heads * g.sq, g.skv], caps)?;
        Ok(Unfused { scores, softmax, values: values_plan, scratch_bytes })
    }

    /// Binds the unfused form (`unfused`) over the step's tensors and two new scratch buffers.
    pub(super) fn prepare_unfused(&self, cx: &PrepareCx<'_>, io: &KernelIo<'_>) -> Result<PreparedStep, GpuError> {
        let (q, k, v, o) = (io.input(0)?, io.input(1)?, io.input(2)?, io.output(0)?);
        let g = self.geometry(q.shape, k.shape, v.shape).map_err(GpuError::Invalid)?;
        let mask = if self.mask != MaskKind::None { Some(io.input(3)?) } else { None };
        let (_, o_stride) = self.output(&g).map_err(GpuError::Invalid)?;
        let plan = self.unfused(&g, mask.map(|m| m.shape), o_stride, cx.caps(), &cx.options.gemm)?;
        let view = |t: &GpuBuffer, offset: u64| match offset {
            0 => Ok(t.clone()),
            o => t.from_offset(o * self.ty.size()),
        };
        let (q_buf, k_buf, v_buf) =
            (view(q.buf, self.q.offset())?, view(k.buf, self.k.offset())?, view(v.buf, self.v.offset())?);
        // Shared by the set's interim attentions (`PrepareCx::scratch_buffer`).
        let scores = cx.scratch_buffer(plan.scratch_bytes, "interim attention scores")?;
        let probabilities = cx.scratch_buffer(plan.scratch_bytes, "interim attention probabilities")?;
        let bias = mask.map(|m| m.buf);
        let mut dispatches =
            cx.gpu.prepare_gemm(&plan.scores, GemmBindings { a: &q_buf, b: &k_buf, bias, out: &scores })?;
        dispatches.push(plan.softmax.bind(cx.gpu, &[&scores], &[&probabilities])?);
        dispatches.extend(
            cx.gpu.prepare_gemm(&plan.values, GemmBindings { a: &probabilities, b: &v_buf, bias: None, out: o.buf })?,
        );
        let line = self.describe(&g, "unfused attention (interim)", "two SIMT products and a softmax");
        Ok(PreparedStep { dispatches, plan: Some(line) })
    }
}

/// `plan` when it is one product writing the output as `problem` describes it (the output
/// strides are then set by the caller); a split, swapped or folded plan is declined.
fn one_product(plan: GemmPlan, problem: &GemmProblem) -> Result<GemmPlan, GpuError> {
    let simple = match plan.steps.as_slice() {
        [step] => {
            step.io == StepIo::Product { to_workspace: false }
                && step.params.batch_shape == problem.batch
                && (step.params.m, step.params.n) == (problem.m, problem.n)
        }
        _ => false,
    };
    if !simple || plan.swap_operands || plan.workspace_bytes > 0 {
        return Err(cannot(format!("the product was planned as {:?}", plan.tiling)));
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::ElemType;
    use crate::ops::attention::kernel::{Layout, OutLayout};

    fn packed(ty: ElemType, heads: u64, kv_heads: u64, mask: MaskKind, causal: Causal) -> FlashKernel {
        let layouts = [Layout::packed(heads), Layout::packed(kv_heads), Layout::packed(kv_heads)];
        FlashKernel { causal, mask, ..FlashKernel::new("a", "MultiHeadAttention", ty, layouts, OutLayout::Packed) }
    }

    fn caps() -> DeviceCaps {
        DeviceCaps { shader_f16: true, ..DeviceCaps::default() }
    }

    #[test]
    fn grouped_heads_and_a_packed_output_are_strides_of_the_products() {
        // Q [2, 37, 8·64], K/V [2, 45, 2·64]: four query heads per K/V head.
        let kernel = packed(ElemType::F16, 8, 2, MaskKind::Add, Causal::None);
        let g = kernel.geometry(&[2, 37, 512], &[2, 45, 128], &[2, 45, 128]).unwrap();
        let (_, o_stride) = kernel.output(&g).unwrap();
        let plan = kernel.unfused(&g, Some(&[2, 1, 37, 45]), o_stride, &caps(), &GemmOptions::default()).unwrap();
        assert_eq!(plan.scratch_bytes, 2 * 8 * 37 * 45 * 2);
        let s = &plan.scores.steps[0].params;
        assert_eq!((s.m, s.n, s.k, s.batch_shape), (37, 45, 64, [1, 2, 2, 4]));
        // Q steps over its query heads, K over its K/V heads, the mask over batches only.
        assert_eq!((s.a_rs, s.a_cs, s.a_bs), (512, 1, [0, 37 * 512, 4 * 64, 64]));
        assert_eq!((s.b_rs, s.b_cs, s.b_bs), (1, 128, [0, 45 * 128, 64, 0]));
        assert_eq!((s.bias_rs, s.bias_cs, s.bias_bs), (45, 1, [0, 37 * 45, 0, 0]));
        assert_eq!((s.alpha, s.flags & 1), (0.125, 1));
        let o = &plan.values.steps[0].params;
        assert_eq!((o.m, o.n, o.k), (37, 64, 45));
        assert_eq!((o.c_rs, o.c_cs, o.c_bs), (512, 1, [0, 37 * 512, 4 * 64, 64]));
        assert_eq!((o.b_rs, o.b_cs, o.b_bs), (128, 1, [0, 45 * 128, 64, 0]));
    }

    #[test]
    fn what_the_products_cannot_express_has_no_unfused_form() {
        let shapes = ([1, 40, 128], [1, 40, 128]);
        for (mask, causal) in [(MaskKind::None, Causal::BottomRight), (MaskKind::Bool, Causal::None)] {
            let kernel = packed(ElemType::F32, 2, 2, mask, causal);
            let g = kernel.geometry(&shapes.0, &shapes.1, &shapes.1).unwrap();
            let (_, o) = kernel.output(&g).unwrap();
            let m = (mask != MaskKind::None).then_some([40u64, 40].as_slice());
            let e = kernel.unfused(&g, m, o, &caps(), &GemmOptions::default()).err().unwrap().to_string();
            assert!(e.contains("no unfused attention"), "{e}");
        }
        // 16 heads of 4096² f32 scores: 1 GiB of scratch.
        let kernel = packed(ElemType::F32, 16, 16, MaskKind::None, Causal::None);
        let g = kernel.geometry(&[1, 4096, 1024], &[1, 4096, 1024], &[1, 4096, 1024]).unwrap();
        let (_, o) = kernel.output(&g).unwrap();
        let e = kernel.unfused(&g, None, o, &caps(), &GemmOptions::default()).err().unwrap().to_string();
        assert!(e.contains("bytes of scores"), "{e}");
    }
}
