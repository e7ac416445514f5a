//! GroupQueryAttention's decode with its preparation folded into the K/V-head kernel
//! (`wgsl/attn_decode_kv.wgsl.j2`, `_prep` variants): one new token per batch, no local window.
//! The kernel reads Q from the node's query (rotating and normalising it as it loads), writes the
//! new K and V rows into the present caches itself and, where the present is not the past's own
//! range, copies the past rows as its loop reads them. That is the kernel (and its combine where
//! its last workgroups do not combine the key chunks): the preparation's dispatch (and its Q buffer)
//! is gone.

use super::super::decode::{prep_runs, PrepFields};
use super::super::kernel::{AttnPlan, FlashKernel, MaskKind, Tail};
use super::{GqaGeometry, GqaKernel};
use crate::caps::DeviceCaps;
use crate::error::GpuError;
use crate::graph::ExecOptions;
use crate::ops::planned::step_plan;
use crate::ops::{to_u32, KernelIo, PrepareCx, PreparedStep, StepPlan};

impl GqaKernel {
    /// Whether the step at `g` runs with its preparation folded into the decode kernel: asked for
    /// (`decode_attention_fold`: the H200 ran a Llama token 0.4 ms slower with it, the H100
    /// 0.27–0.39 ms on the wide form in the sixty-first session), one new token
    /// per batch, no local window (the kernels read `seqlens_k`), and the K/V-head kernel for
    /// this head size on `caps`.
    pub(super) fn folds_prep(&self, g: &GqaGeometry, caps: &DeviceCaps, options: &ExecOptions) -> bool {
        options.fold_decode_attention
            && g.seq == 1
            && self.mask_kind() == MaskKind::SeqLens
            && prep_runs(self.ty, g.d, caps)
    }

    /// The folded preparation's uniforms at `g`; `in_place`: the present K, V is its past's range.
    fn prep_fields(&self, g: &GqaGeometry, code: u32, in_place: [bool; 2]) -> Result<PrepFields, GpuError> {
        let (qd, kd) = (self.heads * g.d, self.kv_heads * g.d);
        let (q_row, kv_row, k_off, v_off) =
            if g.packed { (qd + 2 * kd, qd + 2 * kd, qd, qd + kd) } else { (qd, kd, 0, 0) };
        let bit = |on: bool, b: u32| u32::from(on) << b;
        let flags = bit(self.interleaved, 0)
            | bit(self.q_norm.is_some(), 1)
            | bit(self.k_norm.is_some(), 2)
            | bit(in_place[0], 3)
            | bit(in_place[1], 4);
        let what = "GroupQueryAttention";
        Ok(PrepFields {
            q_row: to_u32(what, q_row)?,
            kv_row: to_u32(what, kv_row)?,
            q_off: 0,
            k_off: to_u32(what, k_off)?,
            v_off: to_u32(what, v_off)?,
            half: if self.rotary { to_u32(what, g.half)? } else { 0 },
            max_seq: to_u32(what, g.max_seq)?,
            flags,
            past: to_u32(what, g.past)?,
            code,
            q_eps: self.q_norm.unwrap_or(0.0),
            k_eps: self.k_norm.unwrap_or(0.0),
        })
    }

    /// The decode kernel with the preparation folded in (and any combine) at `g`.
    fn folded(&self, g: &GqaGeometry, caps: &DeviceCaps, prep: PrepFields) -> Result<AttnPlan, GpuError> {
        let flash = FlashKernel { prep: Some(prep), ..self.flash() };
        let q = [g.batch, 1, self.heads * g.d];
        let kv = [g.batch, self.kv_heads, g.present, g.d];
        flash.dispatches(&q, &kv, &kv, Some(&[g.batch]), caps)
    }

    /// The folded step's plan (as `plan` reports it).
    pub(super) fn plan_folded(&self, g: &GqaGeometry, caps: &DeviceCaps) -> Result<StepPlan, String> {
        let planned = self.folded(g, caps, self.prep_fields(g, 0, [false; 2]).map_err(|e| self.err(e))?);
        let planned = planned.map_err(|e| self.err(e))?;
        let dispatches: Vec<_> = std::iter::once(planned.main).chain(planned.tail.dispatch()).collect();
        let line = format!("{}, preparation folded in (present length {})", planned.line, g.present);
        Ok(step_plan(line, planned.tiling, &dispatches))
    }

    /// Binds the folded step: the kernel reads the query, the new K/V rows, the past caches (a
    /// spare buffer where the present is the past's range), `seqlens_k`, the cos/sin caches and
    /// the norm weights, and writes the present caches, its partials, the status word, the output
    /// and its chunk counters (a combine dispatch writes the output where the kernel does not).
    pub(super) fn prepare_folded(
        &self,
        cx: &PrepareCx<'_>,
        io: &KernelIo<'_>,
        g: &GqaGeometry,
        in_place: [bool; 2],
    ) -> Result<PreparedStep, GpuError> {
        let planned = self.folded(g, cx.caps(), self.prep_fields(g, cx.status_code, in_place)?)?;
        let spare = cx.gpu.unused_input()?;
        let buf = |i: usize| io.inputs.get(i).copied().flatten().map_or(spare, |t| t.buf);
        let query = io.input(0)?.buf;
        let (key_src, value_src) = if g.packed { (query, query) } else { (buf(1), buf(2)) };
        let k_past = if in_place[0] { spare } else { buf(3) };
        let v_past = if in_place[1] { spare } else { buf(4) };
        let reads = [query, key_src, value_src, k_past, v_past, io.input(5)?.buf, buf(7), buf(8), buf(14), buf(15)];
        let Tail::Counted(counted) = planned.tail else {
            return Err(GpuError::Internal(self.err("the folded decode kernel writes no partials")));
        };
        let (work, done) = counted.buffers(cx.gpu)?;
        let (out, present_k, present_v) = (io.output(0)?.buf, io.output(1)?.buf, io.output(2)?.buf);
        let mut dispatches =
            vec![planned.main.bind(cx.gpu, &reads, &[present_k, present_v, &work, cx.status, out, &done])?];
        if let Some(combine) = counted.combine {
            dispatches.push(combine.bind(cx.gpu, &[&work], &[out])?);
        }
        Ok(PreparedStep { dispatches, plan: Some(format!("{}, preparation folded in", planned.line)) })
    }
}
