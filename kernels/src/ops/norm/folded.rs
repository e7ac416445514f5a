//! What the folds of a SkipSimplifiedLayerNormalization into the product reading its output
//! (MatMulNBits, `ops/quant/nbits_norm.rs`; MatMul, `ops/matmul_norm.rs`) share where their folded
//! kernel does not take the shapes: the norm runs into a scratch buffer, then the product reads it
//! as A. The step's inputs are the product's (A the norm's input) with the norm's skip and γ at
//! `at` and `at + 1`.

use super::skip::SkipNormKernel;
use crate::caps::DeviceCaps;
use crate::error::GpuError;
use crate::graph::ExecOptions;
use crate::ops::{Kernel, KernelIo, PrepareCx, PreparedStep, StepPlan, Tensor};
use crate::runtime::GpuBuffer;

impl SkipNormKernel {
    /// A buffer for the sum the folded step makes where the node does not list it (the kernel
    /// writes it anyway): `None` where it does.
    pub fn sum_scratch(&self, cx: &PrepareCx<'_>, x: &Tensor<'_>) -> Result<Option<GpuBuffer>, GpuError> {
        (!self.outputs[3]).then(|| cx.gpu.storage_buffer(x.elems() * x.ty.size(), "folded norm sum")).transpose()
    }

    /// Where the folded step writes the sum: its output 1, or `scratch`.
    pub fn sum_of<'a>(
        &self,
        io: &KernelIo<'a>,
        x: Tensor<'a>,
        scratch: Option<&'a GpuBuffer>,
    ) -> Result<Tensor<'a>, GpuError> {
        match scratch {
            Some(buf) => Ok(Tensor { buf, ..x }),
            None => io.output(1),
        }
    }

    /// The norm's inputs as its kernel takes them (input, skip, γ, no bias).
    pub fn folded_inputs<'s>(inputs: &[Option<&'s [u64]>], at: usize) -> [Option<&'s [u64]>; 4] {
        let get = |i: usize| inputs.get(i).copied().flatten();
        [get(0), get(at), get(at + 1), None]
    }

    /// `product` (the step's first `at` inputs, A replaced) after this norm, which writes its
    /// output into a scratch buffer and, where it keeps it (`outputs[3]`), its sum into `sum`.
    pub fn prepare_before(
        &self,
        cx: &PrepareCx<'_>,
        io: &KernelIo<'_>,
        at: usize,
        sum: Tensor<'_>,
        product: &dyn Kernel,
    ) -> Result<PreparedStep, GpuError> {
        let (mut first, normed) = self.prepare_normed(cx, io, at, sum)?;
        let a = Tensor { buf: &normed, ..io.input(0)? };
        let mut inputs: Vec<Option<Tensor<'_>>> = io.inputs.iter().take(at).copied().collect();
        inputs[0] = Some(a);
        let second = product.prepare(cx, &KernelIo { inputs, outputs: vec![io.output(0)?] })?;
        first.dispatches.extend(second.dispatches);
        first.plan = second.plan.map(|p| format!("{p} (after its norm '{}')", self.name));
        Ok(first)
    }

    /// This norm alone, into a scratch buffer of its input's shape (returned) and, where it keeps
    /// it, its sum into `sum`: the step's input 0 and its skip and γ at `at` and `at + 1`.
    pub fn prepare_normed(
        &self,
        cx: &PrepareCx<'_>,
        io: &KernelIo<'_>,
        at: usize,
        sum: Tensor<'_>,
    ) -> Result<(PreparedStep, GpuBuffer), GpuError> {
        let (x, skip, gamma) = (io.input(0)?, io.input(at)?, io.input(at + 1)?);
        let normed = cx.gpu.storage_buffer(x.elems() * x.ty.size(), "folded norm output")?;
        let mut outputs = vec![Tensor { buf: &normed, ..x }];
        if self.outputs[3] {
            outputs.push(sum);
        }
        let step = self.prepare(cx, &KernelIo { inputs: vec![Some(x), Some(skip), Some(gamma), None], outputs })?;
        Ok((step, normed))
    }

    /// The product's `plan` with this norm's dispatch first.
    pub fn plan_before(
        &self,
        mut plan: Option<StepPlan>,
        inputs: &[Option<&[u64]>],
        at: usize,
        caps: &DeviceCaps,
        options: &ExecOptions,
    ) -> Result<Option<StepPlan>, String> {
        let norm_plan = self.plan(&Self::folded_inputs(inputs, at), caps, options)?;
        if let (Some(p), Some(n)) = (plan.as_mut(), norm_plan) {
            p.line = format!("{} (after its norm: {})", p.line, n.line);
            p.dispatches.splice(0..0, n.dispatches);
        }
        Ok(plan)
    }
}
