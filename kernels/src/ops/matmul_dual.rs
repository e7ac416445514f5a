//! SwiGLU's gate and up projections of an fp16 or fp32 decoder as one step
//! (`ProductKernel::up`): `MatMul(x, Wg) → SiLU → Mul ← MatMul(x, Wu)`, both weights constant
//! `[K, N]` (`graph/fusion.rs`). With the norm before them folded, one row runs the narrow
//! one-row GEMV over both weights (`_dual` programs, `ops/matmul_norm.rs`): one dispatch that
//! makes A once and stores SiLU(gate) · up, where two steps made A twice and the second waited
//! for the first. Elsewhere (more rows, other plans) the norm runs once into a scratch buffer,
//! the up projection into another, then the gate product multiplied by it, as the two steps did.
//!
//! The step's inputs: A (the norm's input where it folds), the gate's weights, the empty bias
//! and residual slots, the norm's skip and γ (empty without it), then the up projection's
//! weights ([`UP_B`]).

use super::{ProductKernel, NORM_GAMMA, NORM_SKIP};
use crate::caps::DeviceCaps;
use crate::error::GpuError;
use crate::gemm::Activation;
use crate::graph::ExecOptions;
use crate::ops::{Kernel, KernelIo, PrepareCx, PreparedStep, StepPlan, Tensor};

/// The step's input holding the up projection's weights.
pub const UP_B: usize = 6;

impl ProductKernel {
    /// The up projection alone: A by its weights (inputs 0 and 1), nothing folded.
    fn up_alone(&self) -> ProductKernel {
        let plain = ProductKernel { up: false, norm: None, activation: Activation::None, ..self.clone() };
        ProductKernel { residual: false, residual_mul: false, ..plain }
    }

    /// The gate product multiplied by the up projection's result (input 3, after its SiLU).
    fn gated_by_up(&self) -> ProductKernel {
        ProductKernel { up: false, norm: None, residual: true, residual_mul: true, ..self.clone() }
    }

    /// Checks the up projection's weights against the gate's, then the gate's shapes (with the
    /// norm's sum where it folds and keeps it).
    pub(super) fn infer_dual(&self, inputs: &[Option<&[u64]>]) -> Result<Vec<Vec<u64>>, String> {
        let get = |i: usize| inputs.get(i).copied().flatten();
        if get(UP_B).is_none() || get(UP_B) != get(1) {
            return Err(format!(
                "{} '{}': the up projection's weights {:?} are not the gate's {:?}",
                self.kind.name(),
                self.name,
                get(UP_B),
                get(1)
            ));
        }
        ProductKernel { up: false, ..self.clone() }.infer(&inputs[..UP_B.min(inputs.len())])
    }

    pub(super) fn prepare_dual(&self, cx: &PrepareCx<'_>, io: &KernelIo<'_>) -> Result<PreparedStep, GpuError> {
        let shapes: Vec<Option<&[u64]>> = io.inputs.iter().map(|t| t.map(|t| t.shape)).collect();
        self.infer_dual(&shapes).map_err(GpuError::Invalid)?;
        let (x, up_b) = (io.input(0)?, io.input(UP_B)?);
        let Some(norm) = self.norm.as_deref() else {
            return self.prepare_apart(cx, io, x, PreparedStep { dispatches: Vec::new(), plan: None });
        };
        let scratch = norm.sum_scratch(cx, &x)?;
        let sum = norm.sum_of(io, x, scratch.as_ref())?;
        let (skip, gamma) = (io.input(NORM_SKIP)?, io.input(NORM_GAMMA)?);
        let gate = ProductKernel { up: false, ..self.clone() };
        let (problem, plan) =
            gate.planned(&shapes[..NORM_SKIP], cx.caps(), &cx.options.gemm).map_err(GpuError::Invalid)?;
        if let Some(step) = Self::fused_step(&plan, &problem, [skip.elems(), gamma.elems()], cx.caps()) {
            return self.prepare_fused(cx, io, (step, problem.k), sum.buf, Some(up_b.buf));
        }
        let (first, normed) = norm.prepare_normed(cx, io, NORM_SKIP, sum)?;
        self.prepare_apart(cx, io, Tensor { buf: &normed, ..x }, first)
    }

    /// `before` (the norm, or nothing), the up projection of `a` into a scratch buffer of the
    /// output's shape, then the gate product of `a` gated by it.
    fn prepare_apart(
        &self,
        cx: &PrepareCx<'_>,
        io: &KernelIo<'_>,
        a: Tensor<'_>,
        mut before: PreparedStep,
    ) -> Result<PreparedStep, GpuError> {
        let y = io.output(0)?;
        let scratch = cx.gpu.storage_buffer(y.elems() * y.ty.size(), "SwiGLU up projection")?;
        let up_out = Tensor { buf: &scratch, ..y };
        let up_io = KernelIo { inputs: vec![Some(a), Some(io.input(UP_B)?)], outputs: vec![up_out] };
        let up = self.up_alone().prepare(cx, &up_io)?;
        let gate_io = KernelIo { inputs: vec![Some(a), Some(io.input(1)?), None, Some(up_out)], outputs: vec![y] };
        let gate = self.gated_by_up().prepare(cx, &gate_io)?;
        before.dispatches.extend(up.dispatches);
        before.dispatches.extend(gate.dispatches);
        before.plan = match (gate.plan, up.plan) {
            (Some(g), Some(u)) => Some(format!("{g} (after its up projection: {u})")),
            (g, u) => g.or(u),
        };
        Ok(before)
    }

    pub(super) fn plan_dual(
        &self,
        inputs: &[Option<&[u64]>],
        caps: &DeviceCaps,
        options: &ExecOptions,
    ) -> Result<Option<StepPlan>, String> {
        let out = self.infer_dual(inputs)?.remove(0);
        let get = |i: usize| inputs.get(i).copied().flatten();
        if let Some(norm) = self.norm.as_deref() {
            let gate = ProductKernel { up: false, ..self.clone() };
            let (problem, gemm) = gate.planned(&inputs[..NORM_SKIP.min(inputs.len())], caps, &options.gemm)?;
            let elems = |i: usize| get(i).map_or(0, |s| s.iter().product());
            if let Some(step) = Self::fused_step(&gemm, &problem, [elems(NORM_SKIP), elems(NORM_GAMMA)], caps) {
                let mut plan = gate.without_norm().plan(&inputs[..NORM_SKIP.min(inputs.len())], caps, options)?;
                if let Some(p) = plan.as_mut() {
                    p.line = format!("{} (with its up projection and its norm '{}' folded)", p.line, norm.name);
                    p.dispatches = vec![(self.fused_variant(step).name(), step.grid)];
                }
                return Ok(plan);
            }
        }
        let up = self.up_alone().plan(&[get(0), get(UP_B)], caps, options)?;
        let mut plan = self.gated_by_up().plan(&[get(0), get(1), None, Some(out.as_slice())], caps, options)?;
        if let (Some(p), Some(u)) = (plan.as_mut(), up) {
            p.line = format!("{} (after its up projection: {})", p.line, u.line);
            p.dispatches.splice(0..0, u.dispatches);
        }
        match self.norm.as_deref() {
            Some(norm) => norm.plan_before(plan, inputs, NORM_SKIP, caps, options),
            None => Ok(plan),
        }
    }
}
