//! SkipLayerNormalization and SkipSimplifiedLayerNormalization (com.microsoft): the row is
//! `s = input + skip (+ bias)`, normalised as LayerNormalization (`(s - mean) * inv * gamma +
//! beta`) or RMS (`s * inv * gamma`) over the last dimension, on the row kernel of `layer`
//! (`norm_row.wgsl.j2` with `skip`). As ONNX Runtime's CPU kernel: skip's elements repeat over
//! the input (a `[seq, hidden]` or `[1, seq, hidden]` skip for a `[batch, seq, hidden]` input),
//! gamma, beta and bias hold one row. Outputs: output, mean, inv_std_var (float; the CPU kernel
//! leaves these two unwritten, we write them) and input_skip_bias_sum, each optional but the
//! first; an omitted one binds a scratch buffer the kernel never writes.

use bytemuck::Zeroable;

use super::layer::{NormKind, NormParams, NormSource, THREADS};
use super::{check_bindings, float_types, input_type, RowTuning, WIDE_THREADS};
use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::graph::model::Node;
use crate::graph::support::PlacementOptions;
use crate::graph::ExecOptions;
use crate::ops::planned::{required, step_plan, OpDispatch};
use crate::ops::StepPlan;
use crate::ops::{check_f16, check_types, grid, to_u32, Kernel, KernelIo, OpDef, PrepareCx, PreparedStep, Tensor};
use crate::runtime::GpuBuffer;
use crate::shader::{OpShader, ShaderVariant};

/// The definitions of this file.
pub static OPS: &[&dyn OpDef] = &[&SkipDef(NormKind::Layer), &SkipDef(NormKind::Rms)];

/// ONNX Runtime's default epsilon of the skip norms.
const DEFAULT_EPSILON: f32 = 1e-12;

struct SkipDef(NormKind);

impl OpDef for SkipDef {
    fn names(&self) -> &'static [&'static str] {
        match self.0 {
            NormKind::Layer => &["SkipLayerNormalization"],
            NormKind::Rms => &["SkipSimplifiedLayerNormalization"],
        }
    }

    fn domain(&self) -> &'static str {
        "com.microsoft"
    }

    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String> {
        check_types(node, &[ElemType::F32, ElemType::F16])?;
        check_f16(node, opts)?;
        let kernel = SkipNormKernel::of(node, self.0)?;
        crate::ops::infer_declared(node, &kernel, kernel.slots().len())
    }

    fn gpu_inputs(&self, _node: &Node) -> Vec<usize> {
        (0..SkipNormKernel::slots_of(self.0).len()).collect()
    }

    fn build(&self, node: &Node) -> Result<Box<dyn Kernel>, String> {
        Ok(Box::new(SkipNormKernel::of(node, self.0)?))
    }

    fn flops(&self, node: &Node) -> Option<f64> {
        let elems: u64 = node.input(0)?.fixed_shape()?.iter().product();
        Some(10.0 * elems as f64)
    }

    fn variants(&self, caps: &DeviceCaps) -> Vec<ShaderVariant> {
        let betas: &[bool] = if self.0 == NormKind::Layer { &[false, true] } else { &[false] };
        let mut out = Vec::new();
        for ty in float_types(caps) {
            for v4 in [false, true] {
                for &bias in betas {
                    out.push(SkipNormKernel::source(self.0, ty, bias, v4, caps.subgroups, THREADS));
                    if caps.subgroups {
                        out.push(SkipNormKernel::source(self.0, ty, bias, v4, true, WIDE_THREADS));
                    }
                }
            }
        }
        out.into_iter().map(|s| ShaderVariant::Op(OpShader::new(s))).collect()
    }
}

/// What each input of the node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Input,
    Skip,
    Gamma,
    Beta,
    Bias,
}

/// One SkipLayerNormalization or SkipSimplifiedLayerNormalization node.
#[derive(Clone, Debug, PartialEq)]
pub struct SkipNormKernel {
    pub name: String,
    pub kind: NormKind,
    pub ty: ElemType,
    pub epsilon: f32,
    /// Whether beta (SkipLayerNormalization's input 3) is given.
    pub beta: bool,
    /// Whether the bias added to the sum is given.
    pub bias: bool,
    /// Which of output, mean, inv_std_var and input_skip_bias_sum the node lists.
    pub outputs: [bool; 4],
    pub tuning: RowTuning,
}

impl SkipNormKernel {
    fn slots_of(kind: NormKind) -> &'static [Slot] {
        match kind {
            NormKind::Layer => &[Slot::Input, Slot::Skip, Slot::Gamma, Slot::Beta, Slot::Bias],
            NormKind::Rms => &[Slot::Input, Slot::Skip, Slot::Gamma, Slot::Bias],
        }
    }

    fn slots(&self) -> &'static [Slot] {
        Self::slots_of(self.kind)
    }

    pub fn of(node: &Node, kind: NormKind) -> Result<SkipNormKernel, String> {
        let ty = input_type(node, 0, "input")?;
        if !ty.is_float() {
            return Err(format!("{} of {} is not supported", node.op_type, ty.name()));
        }
        let given = |i: usize| node.input(i).is_some_and(|v| !v.name.is_empty());
        let slots = Self::slots_of(kind);
        if node.inputs.len() > slots.len() {
            return Err(format!("{} with {} inputs (it has at most {})", node.op_type, node.inputs.len(), slots.len()));
        }
        for i in (1..slots.len()).filter(|&i| i < 3 || given(i)) {
            if input_type(node, i, "skip or gamma")? != ty {
                return Err(format!(
                    "{} with mixed element types (input is {}) is not supported",
                    node.op_type,
                    ty.name()
                ));
            }
        }
        let listed = |i: usize| node.output(i).filter(|v| !v.name.is_empty());
        if node.outputs.len() > 4 {
            return Err(format!("{} with {} outputs (it has at most 4)", node.op_type, node.outputs.len()));
        }
        for (i, want) in [(0, ty), (1, ElemType::F32), (2, ElemType::F32), (3, ty)] {
            if let Some(v) = listed(i) {
                if ElemType::from_onnx(v.elem_type) != Some(want) {
                    return Err(format!(
                        "output {i} of {} of element type {} is not supported",
                        node.op_type, v.elem_type
                    ));
                }
            }
        }
        if listed(0).is_none() {
            return Err(format!("{} '{}' without its output", node.op_type, node.name));
        }
        Ok(SkipNormKernel {
            name: node.name.clone(),
            kind,
            ty,
            epsilon: node.float("epsilon").unwrap_or(DEFAULT_EPSILON),
            beta: kind == NormKind::Layer && given(3),
            bias: given(slots.len() - 1),
            outputs: [0, 1, 2, 3].map(|i| listed(i).is_some()),
            tuning: RowTuning::new(THREADS),
        })
    }

    fn source(kind: NormKind, ty: ElemType, bias: bool, v4: bool, sg: bool, threads: u32) -> NormSource {
        let stats = Some(ElemType::F32);
        NormSource { kind, ty, bias, stats, bcast: false, v4, sg, threads, skip: true }
    }

    fn op(&self) -> &'static str {
        match self.kind {
            NormKind::Layer => "SkipLayerNormalization",
            NormKind::Rms => "SkipSimplifiedLayerNormalization",
        }
    }

    /// The hidden size (the last dimension of input), after checking skip, gamma, beta and bias.
    fn hidden(&self, inputs: &[Option<&[u64]>]) -> Result<u64, String> {
        let err = |what: String| format!("{} '{}': {what}", self.op(), self.name);
        let x = inputs.first().copied().flatten().ok_or_else(|| err("lacks its input".into()))?;
        if x.len() != 2 && x.len() != 3 {
            return Err(err(format!("input {x:?} must have 2 or 3 dimensions")));
        }
        let hidden = x[x.len() - 1];
        for (&slot, s) in self.slots().iter().zip(inputs).skip(1) {
            let Some(s) = s else {
                if matches!(slot, Slot::Skip | Slot::Gamma) {
                    return Err(err(format!("lacks its {slot:?} input")));
                }
                continue;
            };
            // As ONNX Runtime checks: skip [S, H], [1, S, H] or [B', S, H] (its elements repeat
            // over the input's), the others [H].
            let ok = match slot {
                Slot::Skip => {
                    (s.len() == 2 || s.len() == 3)
                        && s[s.len() - 2..] == x[x.len() - 2..]
                        && (*s == x || x.len() == 3 || (s.len() == 2 && s[0] == 1))
                }
                _ => *s == [hidden],
            };
            if !ok {
                return Err(err(format!("{slot:?} {s:?} does not fit input {x:?}")));
            }
        }
        Ok(hidden)
    }
}

impl Kernel for SkipNormKernel {
    fn infer(&self, inputs: &[Option<&[u64]>]) -> Result<Vec<Vec<u64>>, String> {
        self.hidden(inputs)?;
        let x = inputs[0].unwrap_or_default();
        let mut stats = x.to_vec();
        if let Some(last) = stats.last_mut() {
            *last = 1;
        }
        let shapes = [x.to_vec(), stats.clone(), stats, x.to_vec()];
        Ok(shapes.into_iter().zip(self.outputs).filter(|(_, listed)| *listed).map(|(s, _)| s).collect())
    }

    fn prepare(&self, cx: &PrepareCx<'_>, io: &KernelIo<'_>) -> Result<PreparedStep, GpuError> {
        let shapes: Vec<Option<&[u64]>> = io.inputs.iter().map(|t| t.map(|t| t.shape)).collect();
        let (x, skip) = (io.input(0)?, io.input(1)?);
        let given: Vec<Tensor<'_>> = io.inputs.iter().flatten().copied().collect();
        check_bindings(&given, cx.caps())?;
        check_bindings(&io.outputs, cx.caps())?;
        let planned = self.dispatch(&shapes, cx.caps())?;
        // Stand-ins for an omitted bias and omitted outputs: each its own buffer (no binding
        // aliases another), never read or written.
        let spare: Vec<GpuBuffer> =
            (0..4).map(|_| cx.gpu.storage_buffer(16, "unused")).collect::<Result<_, GpuError>>()?;
        let mut inputs: Vec<&GpuBuffer> = vec![x.buf, skip.buf, io.input(2)?.buf];
        if self.beta {
            inputs.push(io.input(3)?.buf);
        }
        let bias_slot = self.slots().len() - 1;
        inputs.push(if self.bias { io.input(bias_slot)?.buf } else { &spare[0] });
        let mut listed = io.outputs.iter().map(|t| t.buf);
        let mut outs = Vec::with_capacity(4);
        for k in 0..4 {
            let buf = if self.outputs[k] { listed.next() } else { Some(&spare[k.max(1)]) };
            outs.push(buf.ok_or_else(|| GpuError::Internal(format!("output {k} is not bound")))?);
        }
        Ok(PreparedStep::one(planned.bind(cx.gpu, &inputs, &outs)?))
    }

    fn plan(&self, inputs: &[Option<&[u64]>], caps: &DeviceCaps, _: &ExecOptions) -> Result<Option<StepPlan>, String> {
        let x = self.infer(inputs)?.remove(0);
        let what = format!("{} '{}'", self.op(), self.name);
        let planned = self.dispatch(inputs, caps).map_err(|e| format!("{what}: {e}"))?;
        Ok(Some(step_plan(format!("{what}: {x:?}"), "one workgroup per row", &[planned])))
    }
}

impl SkipNormKernel {
    /// The row kernel (x + skip + bias in its loads) at these input shapes: what `prepare`
    /// binds and `plan` reports.
    fn dispatch(&self, shapes: &[Option<&[u64]>], caps: &DeviceCaps) -> Result<OpDispatch, GpuError> {
        let hidden = self.hidden(shapes).map_err(GpuError::Invalid)?;
        let elems: u64 = required(shapes, 0)?.iter().product();
        let skip_elems: u64 = required(shapes, 1)?.iter().product();
        let n = to_u32("SkipLayerNormalization row length", hidden)?;
        let rows = to_u32("SkipLayerNormalization rows", elems / hidden.max(1))?;
        to_u32("SkipLayerNormalization elements", elems)?;
        let v4 = n % 4 == 0;
        let (threads, sg) = self.tuning.for_rows(rows, if v4 { n / 4 } else { n }, caps)?;
        let source = Self::source(self.kind, self.ty, self.beta, v4, sg, threads);
        let flags = u32::from(self.outputs[1])
            | (u32::from(self.outputs[2]) << 1)
            | (u32::from(self.outputs[3]) << 2)
            | (u32::from(self.bias) << 3);
        let skip_len = to_u32("skip elements", skip_elems)? / if v4 { 4 } else { 1 };
        let mut params = NormParams::zeroed();
        (params.rows, params.n, params.eps, params.flags) = (rows, n, self.epsilon, flags);
        params.pad[0] = skip_len;
        let variant = ShaderVariant::Op(OpShader::new(source));
        Ok(OpDispatch::new(variant, &params, grid(u64::from(rows), caps)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(kind: NormKind) -> SkipNormKernel {
        SkipNormKernel {
            name: "sln".into(),
            kind,
            ty: ElemType::F32,
            epsilon: 1e-6,
            beta: false,
            bias: true,
            outputs: [true, false, false, true],
            tuning: RowTuning::new(THREADS),
        }
    }

    #[test]
    fn shapes() {
        let k = kernel(NormKind::Rms);
        let x: &[u64] = &[2, 3, 8];
        let got = k.infer(&[Some(x), Some(&[3, 8]), Some(&[8]), Some(&[8])]).unwrap();
        assert_eq!(got, vec![vec![2, 3, 8], vec![2, 3, 8]]);
        assert!(k.infer(&[Some(x), Some(&[2, 8]), Some(&[8]), None]).is_err());
        assert!(k.infer(&[Some(x), Some(&[2, 3, 8]), Some(&[7]), None]).is_err());
        assert!(k.infer(&[Some(x), None, Some(&[8]), None]).is_err());
        let k = SkipNormKernel { outputs: [true, true, true, false], ..kernel(NormKind::Layer) };
        let got = k.infer(&[Some(x), Some(x), Some(&[8]), Some(&[8]), None]).unwrap();
        assert_eq!(got, vec![vec![2, 3, 8], vec![2, 3, 1], vec![2, 3, 1]]);
    }
}
