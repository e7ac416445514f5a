//! A SkipSimplifiedLayerNormalization folded into the MatMul steps that read its output (an fp16
//! or fp32 decoder as onnxruntime-genai builds it: the packed QKV projection, SwiGLU's gate and up
//! projections, the LM head). One row on the narrow one-row GEMV makes A from the norm's input,
//! skip and γ on the way (`wgsl/gemv_vec.wgsl.j2` with `norm`, `_skiprms` programs): one dispatch
//! instead of two. Other rows, other plans, or a device with too few storage buffers run the norm
//! into a scratch buffer and then the product. Of several products reading one norm, one writes
//! the norm's sum (its `outputs[3]`).

use bytemuck::bytes_of;

use super::ProductKernel;
use crate::caps::DeviceCaps;
use crate::dtype::DType;
use crate::error::GpuError;
use crate::gemm::{GemmPlan, GemmProblem, GemmStep, GemmVariant, GemvVec, EXT_ACT_SHIFT, FLAG_RESIDUAL};
use crate::graph::ExecOptions;
use crate::ops::norm::skip::SkipNormKernel;
use crate::ops::{Kernel, KernelIo, PrepareCx, PreparedStep, StepPlan};
use crate::runtime::{Access, BindingLayout};
use crate::shader::{OpShader, OpSource, ShaderVariant};

/// Inputs of a product with its norm folded: A (the norm's input), B, the bias and residual
/// slots, then the norm's skip and γ.
pub const NORM_SKIP: usize = 4;
pub const NORM_GAMMA: usize = 5;

/// The folded GEMV's bindings: A, B, bias, the output, the uniforms, (the residual,) skip, γ,
/// the sum and ε.
const ENTRIES: [(u32, Access); 9] = [
    (0, Access::Read),
    (1, Access::Read),
    (2, Access::Read),
    (3, Access::ReadWrite),
    (4, Access::Uniform),
    (7, Access::Read),
    (8, Access::Read),
    (9, Access::ReadWrite),
    (10, Access::Read),
];
const ENTRIES_RESIDUAL: [(u32, Access); 10] = [
    (0, Access::Read),
    (1, Access::Read),
    (2, Access::Read),
    (3, Access::ReadWrite),
    (4, Access::Uniform),
    (6, Access::Read),
    (7, Access::Read),
    (8, Access::Read),
    (9, Access::ReadWrite),
    (10, Access::Read),
];

/// Storage buffers the folded GEMV binds at most.
const NORM_STORAGE: u32 = 9;

/// The one-row narrow GEMV with the norm folded: what changes its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GemvNormSource {
    pub dtype: DType,
    /// The narrow form's column lanes (one of [`GemvVec::NARROW_FORMS`]).
    pub columns: u32,
    /// Its invocations per workgroup (as the product's own plan has them).
    pub threads: u32,
    pub ext_act: bool,
    pub residual: bool,
    /// SwiGLU's gate and up projections in one (`ops/matmul_dual.rs`): the up projection's
    /// weights at binding 6, the result the gate's epilogue times the up projection's product.
    pub dual: bool,
}

impl GemvNormSource {
    fn base(&self) -> GemvVec {
        GemvVec { dtype: self.dtype, rows: 1, split_k: false, columns: self.columns, threads: self.threads }
    }
}

impl OpSource for GemvNormSource {
    fn name(&self) -> String {
        let ext = if self.ext_act { "_xact" } else { "" };
        let res = if self.residual { "_res" } else { "" };
        let dual = if self.dual { "_dual" } else { "" };
        format!("{}_skiprms{ext}{res}{dual}", GemmVariant::GemvVec(self.base()).name())
    }

    fn emit(&self) -> Result<String, String> {
        crate::shader::gemv_norm_text(self.base(), self.ext_act, self.residual, self.dual)
    }

    fn capabilities(&self) -> naga::valid::Capabilities {
        ShaderVariant::Gemm(GemmVariant::GemvVec(self.base())).capabilities()
    }

    /// As the GEMV it extends: skip, γ and the sum are read and written at k < K, and the plan
    /// checks they hold K elements.
    fn guards_every_access(&self) -> bool {
        true
    }
}

/// Every folded GEMV program on `caps`.
pub fn variants(caps: &DeviceCaps) -> Vec<ShaderVariant> {
    let mut out = Vec::new();
    for dtype in [DType::F32, DType::F16] {
        for (columns, threads) in
            GemvVec::NARROW_FORMS.into_iter().flat_map(|c| [(c, GemvVec::INVOCATIONS), (c, GemvVec::ROW_INVOCATIONS)])
        {
            let source = GemvNormSource { dtype, columns, threads, ext_act: false, residual: false, dual: false };
            if GemmVariant::GemvVec(source.base()).fits(caps).is_err() {
                continue;
            }
            for (ext_act, residual) in [(false, false), (true, false), (false, true), (true, true)] {
                out.push(ShaderVariant::Op(OpShader::new(GemvNormSource { ext_act, residual, ..source })));
            }
            // SwiGLU's gate (its SiLU) with its up projection.
            out.push(ShaderVariant::Op(OpShader::new(GemvNormSource { ext_act: true, dual: true, ..source })));
        }
    }
    out
}

impl ProductKernel {
    /// The product alone (A read as given).
    pub(super) fn without_norm(&self) -> ProductKernel {
        ProductKernel { norm: None, ..self.clone() }
    }

    fn folded(&self) -> Result<&SkipNormKernel, GpuError> {
        self.norm.as_deref().ok_or_else(|| GpuError::Internal("no norm folded into this product".into()))
    }

    /// The plan's step that takes the norm: its only one, a narrow one-row GEMV (operands not
    /// swapped) over one row of K, skip and γ of K elements, on a device that binds the buffers.
    pub(super) fn fused_step<'p>(
        plan: &'p GemmPlan,
        problem: &GemmProblem,
        sizes: [u64; 2],
        caps: &DeviceCaps,
    ) -> Option<&'p GemmStep> {
        let [step] = plan.steps.as_slice() else { return None };
        let narrow = matches!(step.variant, GemmVariant::GemvVec(g) if g.narrow() && g.rows == 1 && !g.split_k);
        let one_row = problem.m == 1 && problem.batch_count() == 1 && sizes == [u64::from(problem.k); 2];
        (narrow && one_row && !plan.swap_operands && caps.max_storage_buffers_per_stage >= NORM_STORAGE).then_some(step)
    }

    pub(super) fn fused_variant(&self, step: &GemmStep) -> ShaderVariant {
        let ext_act = step.params.flags >> EXT_ACT_SHIFT & 15 != 0;
        let residual = step.params.flags & FLAG_RESIDUAL != 0;
        let (columns, threads) = match step.variant {
            GemmVariant::GemvVec(g) => (g.columns, g.threads),
            _ => (GemvVec::NARROW, GemvVec::INVOCATIONS),
        };
        let dual = self.up;
        let source = GemvNormSource { dtype: self.dtype, columns, threads, ext_act, residual, dual };
        ShaderVariant::Op(OpShader::new(source))
    }

    fn elems(inputs: &[Option<&[u64]>], i: usize) -> u64 {
        inputs.get(i).copied().flatten().map_or(0, |s| s.iter().product())
    }

    pub(super) fn infer_norm(&self, inputs: &[Option<&[u64]>]) -> Result<Vec<Vec<u64>>, String> {
        let norm = self.folded().map_err(|e| e.to_string())?;
        let mut sums = norm.infer(&SkipNormKernel::folded_inputs(inputs, NORM_SKIP))?;
        let mut shapes = self.without_norm().infer(&inputs[..NORM_SKIP.min(inputs.len())])?;
        if norm.outputs[3] {
            shapes.push(sums.pop().ok_or("the folded norm's sum has no shape")?);
        }
        Ok(shapes)
    }

    pub(super) fn prepare_norm(&self, cx: &PrepareCx<'_>, io: &KernelIo<'_>) -> Result<PreparedStep, GpuError> {
        let norm = self.folded()?;
        let (x, skip, gamma) = (io.input(0)?, io.input(NORM_SKIP)?, io.input(NORM_GAMMA)?);
        let scratch = norm.sum_scratch(cx, &x)?;
        let sum = norm.sum_of(io, x, scratch.as_ref())?;
        let shapes: Vec<Option<&[u64]>> = io.inputs.iter().map(|t| t.map(|t| t.shape)).collect();
        let (problem, plan) = self.planned(&shapes, cx.caps(), &cx.options.gemm).map_err(GpuError::Invalid)?;
        if let Some(step) = Self::fused_step(&plan, &problem, [skip.elems(), gamma.elems()], cx.caps()) {
            let sixth = if self.residual { Some(io.input(3)?.buf) } else { None };
            return self.prepare_fused(cx, io, (step, problem.k), sum.buf, sixth);
        }
        norm.prepare_before(cx, io, NORM_SKIP, sum, &self.without_norm())
    }

    /// The one-row GEMV of `step` (over K) with the norm folded, writing the norm's sum into
    /// `sum`; `sixth` its binding 6 (the residual, or the dual form's up weights).
    pub(super) fn prepare_fused(
        &self,
        cx: &PrepareCx<'_>,
        io: &KernelIo<'_>,
        (step, k): (&GemmStep, u32),
        sum: &crate::runtime::GpuBuffer,
        sixth: Option<&crate::runtime::GpuBuffer>,
    ) -> Result<PreparedStep, GpuError> {
        let norm = self.folded()?;
        let (x, skip, gamma) = (io.input(0)?, io.input(NORM_SKIP)?, io.input(NORM_GAMMA)?);
        let eps = [norm.epsilon, 0.0, 0.0, 0.0];
        let eps = cx.gpu.upload(bytemuck::cast_slice(&eps), "MatMul norm epsilon")?;
        let spare = cx.gpu.unused_input()?;
        let bias = if self.has_bias { io.input(2)?.buf } else { spare };
        let mut buffers = vec![(0, x.buf), (1, io.input(1)?.buf), (2, bias), (3, io.output(0)?.buf)];
        buffers.extend(sixth.map(|b| (6, b)));
        buffers.extend([(7, skip.buf), (8, gamma.buf), (9, sum), (10, &eps)]);
        let layout = BindingLayout::Fixed(if sixth.is_some() { &ENTRIES_RESIDUAL } else { &ENTRIES });
        let variant = self.fused_variant(step);
        let d = cx.gpu.prepare(variant, layout, bytes_of(&step.params), &buffers, step.grid)?;
        let up = if self.up { " and its up projection" } else { "" };
        let line = format!("{} '{}'{up} with its norm '{}' folded: M 1 K {k}", self.kind.name(), self.name, norm.name);
        Ok(PreparedStep { dispatches: vec![d], plan: Some(line) })
    }

    pub(super) fn plan_norm(
        &self,
        inputs: &[Option<&[u64]>],
        caps: &DeviceCaps,
        options: &ExecOptions,
    ) -> Result<Option<StepPlan>, String> {
        let norm = self.folded().map_err(|e| e.to_string())?;
        let product_inputs = &inputs[..NORM_SKIP.min(inputs.len())];
        let mut plan = self.without_norm().plan(product_inputs, caps, options)?;
        let (problem, gemm) = self.planned(product_inputs, caps, &options.gemm)?;
        let sizes = [Self::elems(inputs, NORM_SKIP), Self::elems(inputs, NORM_GAMMA)];
        if let Some(step) = Self::fused_step(&gemm, &problem, sizes, caps) {
            if let Some(p) = plan.as_mut() {
                p.line = format!("{} (its norm '{}' folded: A made on the way)", p.line, norm.name);
                p.dispatches = vec![(self.fused_variant(step).name(), step.grid)];
            }
            return Ok(plan);
        }
        norm.plan_before(plan, inputs, NORM_SKIP, caps, options)
    }
}
