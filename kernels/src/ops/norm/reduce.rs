//! ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceSumSquare, ReduceL1, ReduceL2 and
//! ReduceProd: axes as an attribute (ReduceSum before opset 13, the others before 18) or a constant int64 input (a computed one declines),
//! `keepdims`, `noop_with_empty_axes` (empty axes: the input itself, a free alias, when set;
//! every axis when not). Floats accumulate in f32, i32 in i32 (wrapping, as ONNX Runtime).
//!
//! An empty reduction gives ONNX Runtime's values: 0 for sum, mean, sum of squares and the norms,
//! 1 for the product, the lowest value for max (-inf for floats) and the highest for min. The
//! sum of squares, the norms and the product run floats only.

use super::{check_bindings, float_types, input_type, packed, wide_walks, RowTuning, MAX_DIMS};
use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::graph::model::Node;
use crate::graph::support::PlacementOptions;
use crate::graph::ExecOptions;
use crate::ops::planned::{step_plan, OpDispatch};
use crate::ops::StepPlan;
use crate::ops::{check_f16, grid, grid_for, normalize_axis, to_u32, Kernel, KernelIo, OpDef, PrepareCx, PreparedStep};
use crate::shader::{OpShader, ShaderVariant};

pub use super::reduce_source::{ReduceForm, ReduceSource};
use super::reduce_source::{ReduceParams, WideParams};

/// The definitions of this family.
pub static OPS: &[&dyn OpDef] = &[&ReduceDef];

/// Invocations per output of the row variant: two subgroups on NVIDIA, enough loads in flight
/// for rows of a few thousand elements; on llvmpipe 64 ran rows of 384 and 1500 2-4x faster
/// than 128 or 256 (fewer idle invocations, cheaper barriers).
pub const ROW_THREADS: u32 = 64;
/// Shortest contiguous run the row variant takes.
const ROW_MIN: u64 = 32;

/// Which reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum,
    Mean,
    Max,
    Min,
    SumSquare,
    L1,
    L2,
    Prod,
}

impl ReduceOp {
    fn of(op_type: &str) -> Option<ReduceOp> {
        Some(match op_type {
            "ReduceSum" => ReduceOp::Sum,
            "ReduceMean" => ReduceOp::Mean,
            "ReduceMax" => ReduceOp::Max,
            "ReduceMin" => ReduceOp::Min,
            "ReduceSumSquare" => ReduceOp::SumSquare,
            "ReduceL1" => ReduceOp::L1,
            "ReduceL2" => ReduceOp::L2,
            "ReduceProd" => ReduceOp::Prod,
            _ => return None,
        })
    }

    /// The kernel's name part (mean is a sum divided afterwards).
    pub(super) fn text(self) -> &'static str {
        match self {
            ReduceOp::Sum | ReduceOp::Mean => "sum",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::SumSquare => "sumsquare",
            ReduceOp::L1 => "l1",
            ReduceOp::L2 => "l2",
            ReduceOp::Prod => "prod",
        }
    }

    /// The combining function in the template.
    pub(super) fn combine(self) -> &'static str {
        match self {
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::Prod => "prod",
            _ => "sum",
        }
    }

    /// What each element becomes before it is combined, and what the total becomes after.
    pub(super) fn map_post(self) -> (&'static str, &'static str) {
        match self {
            ReduceOp::SumSquare => ("square", ""),
            ReduceOp::L1 => ("abs", ""),
            ReduceOp::L2 => ("square", "sqrt"),
            _ => ("", ""),
        }
    }

    /// The reduction that combines chunks' partials of this one (in which each element already
    /// went through the map): the sum for the sums of squares and of magnitudes.
    fn last_pass(self) -> ReduceOp {
        match self {
            ReduceOp::Mean | ReduceOp::SumSquare | ReduceOp::L1 => ReduceOp::Sum,
            op => op,
        }
    }

    /// The first opset whose axes come as an input.
    fn axes_input_since(self) -> i32 {
        if self == ReduceOp::Sum {
            13
        } else {
            18
        }
    }

    /// The element types it runs: ReduceMean of integers rounds as ONNX Runtime's integer
    /// division does, which is left to it.
    fn types(self) -> &'static [ElemType] {
        match self {
            ReduceOp::Sum | ReduceOp::Max | ReduceOp::Min => &[ElemType::F32, ElemType::F16, ElemType::I32],
            _ => &[ElemType::F32, ElemType::F16],
        }
    }

    /// Bits of the accumulator's initial value (the result of an empty reduction).
    fn fill(self, ty: ElemType) -> u32 {
        match (self, ty) {
            (ReduceOp::Prod, _) => 1f32.to_bits(),
            (ReduceOp::Max, ElemType::I32) => i32::MIN as u32,
            (ReduceOp::Min, ElemType::I32) => i32::MAX as u32,
            (ReduceOp::Max, _) => f32::NEG_INFINITY.to_bits(),
            (ReduceOp::Min, _) => f32::INFINITY.to_bits(),
            _ => 0,
        }
    }
}

struct ReduceDef;

impl OpDef for ReduceDef {
    fn names(&self) -> &'static [&'static str] {
        &["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceProd"]
    }

    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String> {
        let kernel = ReduceKernel::of(node)?;
        let out = node.output(0).ok_or_else(|| format!("{} without an output", node.op_type))?;
        if out.elem_type != kernel.ty.onnx() {
            return Err(format!("{} output '{}' is not of its input's type", node.op_type, out.name));
        }
        check_f16(node, opts)?;
        if let Some(shape) = node.input(0).and_then(|v| v.shape.as_ref()) {
            let mask = kernel.mask(shape.len())?;
            let fixed: Option<Vec<u64>> = shape.iter().map(|d| d.fixed()).collect();
            if let (Some(mask), Some(fixed)) = (mask, fixed) {
                ReducePlan::new(&fixed, &mask).map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    }

    fn gpu_inputs(&self, _node: &Node) -> Vec<usize> {
        vec![0]
    }

    fn build(&self, node: &Node) -> Result<Box<dyn Kernel>, String> {
        Ok(Box::new(ReduceKernel::of(node)?))
    }

    fn flops(&self, node: &Node) -> Option<f64> {
        let elems: u64 = node.input(0)?.fixed_shape()?.iter().product();
        Some(elems as f64)
    }

    fn variants(&self, caps: &DeviceCaps) -> Vec<ShaderVariant> {
        let mut types = float_types(caps);
        types.push(ElemType::I32);
        let mut out = Vec::new();
        let ops = [
            ReduceOp::Sum,
            ReduceOp::Max,
            ReduceOp::Min,
            ReduceOp::SumSquare,
            ReduceOp::L1,
            ReduceOp::L2,
            ReduceOp::Prod,
        ];
        for op in ops {
            for &ty in types.iter().filter(|t| op.types().contains(t)) {
                let general = ReduceSource { op, ty, form: ReduceForm::General, v4: false, sg: false };
                let row = ReduceSource { form: ReduceForm::Row(ROW_THREADS), sg: caps.subgroups, ..general };
                let row4 = ReduceSource { v4: true, ..row };
                out.extend([row, row4, general].map(|s| ShaderVariant::Op(OpShader::new(s))));
                for (partial, v4) in [(false, false), (true, false), (false, true), (true, true)] {
                    let form = ReduceForm::Wide { threads: ROW_THREADS, partial };
                    out.push(ShaderVariant::Op(OpShader::new(ReduceSource { form, v4, ..row })));
                }
                if op == op.last_pass() {
                    let form = ReduceForm::Final(ROW_THREADS);
                    out.push(ShaderVariant::Op(OpShader::new(ReduceSource { form, ..row })));
                }
            }
        }
        out
    }
}

/// One reduction node.
#[derive(Clone, Debug, PartialEq)]
pub struct ReduceKernel {
    pub name: String,
    pub op: ReduceOp,
    pub ty: ElemType,
    /// As given (possibly negative); empty means all axes, or none when `noop`.
    pub axes: Vec<i64>,
    pub keepdims: bool,
    pub noop: bool,
    pub tuning: RowTuning,
}

impl ReduceKernel {
    pub fn of(node: &Node) -> Result<ReduceKernel, String> {
        let op = ReduceOp::of(&node.op_type).ok_or_else(|| format!("{} is not a reduction", node.op_type))?;
        let ty = input_type(node, 0, "data")?;
        if !op.types().contains(&ty) {
            let why = match (op, ty) {
                (_, ElemType::I64) => "WGSL has no 64-bit integers (shape arithmetic stays on the CPU EP)",
                (ReduceOp::Mean, ElemType::I32) => "integer means round as ONNX Runtime's integer division",
                _ => "no kernel of this type",
            };
            return Err(format!("{} of {} is not supported: {why}", node.op_type, ty.name()));
        }
        let axes = if node.since_version < op.axes_input_since() {
            node.ints("axes").map(<[i64]>::to_vec).unwrap_or_default()
        } else {
            match node.input(1).filter(|v| !v.name.is_empty()) {
                None => Vec::new(),
                Some(v) if v.constant => {
                    v.ints().ok_or_else(|| format!("axes '{}' is not a small int64 constant", v.name))?
                }
                Some(v) => {
                    return Err(format!("axes '{}' is computed at run time; only constant axes run here", v.name))
                }
            }
        };
        Ok(ReduceKernel {
            name: node.name.clone(),
            op,
            ty,
            axes,
            keepdims: node.int("keepdims").unwrap_or(1) != 0,
            noop: node.int("noop_with_empty_axes").unwrap_or(0) != 0,
            tuning: RowTuning::new(ROW_THREADS),
        })
    }

    fn identity(&self) -> bool {
        self.axes.is_empty() && self.noop
    }

    /// Which of `rank` dimensions are reduced; `None` for the identity.
    pub fn mask(&self, rank: usize) -> Result<Option<Vec<bool>>, String> {
        if self.identity() {
            return Ok(None);
        }
        if self.axes.is_empty() {
            return Ok(Some(vec![true; rank]));
        }
        let mut mask = vec![false; rank];
        for &a in &self.axes {
            let d = normalize_axis(a, rank)?;
            if std::mem::replace(&mut mask[d], true) {
                return Err(format!("axis {a} is repeated in {:?}", self.axes));
            }
        }
        Ok(Some(mask))
    }
}

impl Kernel for ReduceKernel {
    fn infer(&self, inputs: &[Option<&[u64]>]) -> Result<Vec<Vec<u64>>, String> {
        let op = format!("{:?} '{}'", self.op, self.name);
        let x = inputs.first().copied().flatten().ok_or_else(|| format!("Reduce{op} has no input"))?;
        let Some(mask) = self.mask(x.len()).map_err(|e| format!("Reduce{op}: {e}"))? else {
            return Ok(vec![x.to_vec()]);
        };
        let out = x
            .iter()
            .zip(&mask)
            .filter_map(|(&d, &r)| match (r, self.keepdims) {
                (false, _) => Some(d),
                (true, true) => Some(1),
                (true, false) => None,
            })
            .collect();
        Ok(vec![out])
    }

    fn alias(&self, _output: usize) -> Option<usize> {
        self.identity().then_some(0)
    }

    fn prepare(&self, cx: &PrepareCx<'_>, io: &KernelIo<'_>) -> Result<PreparedStep, GpuError> {
        let (x, y) = (io.input(0)?, io.output(0)?);
        let Some(mask) = self.mask(x.shape.len()).map_err(GpuError::Invalid)? else {
            return Ok(PreparedStep::default());
        };
        check_bindings(&[x, y], cx.caps())?;
        let dispatches = match self.dispatch(x.shape, &mask, cx.caps())? {
            Planned::One(d, _) => vec![d.bind(cx.gpu, &[x.buf], &[y.buf])?],
            Planned::Split { partials, last, bytes, .. } => {
                let part = cx.gpu.storage_buffer(bytes, "reduction partials")?;
                vec![partials.bind(cx.gpu, &[x.buf], &[&part])?, last.bind(cx.gpu, &[&part], &[y.buf])?]
            }
        };
        Ok(PreparedStep { dispatches, plan: None })
    }

    fn plan(&self, inputs: &[Option<&[u64]>], caps: &DeviceCaps, _: &ExecOptions) -> Result<Option<StepPlan>, String> {
        let op = format!("Reduce{:?} '{}'", self.op, self.name);
        let out = self.infer(inputs)?.remove(0);
        let x = inputs.first().copied().flatten().unwrap_or_default();
        let Some(mask) = self.mask(x.len()).map_err(|e| format!("{op}: {e}"))? else { return Ok(None) };
        let what = format!("{op}: {x:?} -> {out:?}");
        Ok(Some(match self.dispatch(x, &mask, caps).map_err(|e| format!("{op}: {e}"))? {
            Planned::One(d, layout) => step_plan(what, layout.describe(), &[d]),
            Planned::Split { partials, last, chunks, .. } => {
                step_plan(what, format!("{chunks} workgroups per output, then one combining them"), &[partials, last])
            }
        }))
    }
}

/// The dispatches of one reduction.
enum Planned {
    One(OpDispatch, Layout),
    /// Each output's chunks into partials (a buffer of `bytes`), then one workgroup per output
    /// combining them.
    Split {
        partials: OpDispatch,
        last: OpDispatch,
        bytes: u64,
        chunks: u64,
    },
}

impl ReduceKernel {
    /// The kernels reducing X of `shape` over `mask`: what `prepare` binds and `plan` reports.
    fn dispatch(&self, shape: &[u64], mask: &[bool], caps: &DeviceCaps) -> Result<Planned, GpuError> {
        let plan = ReducePlan::new(shape, mask)?;
        let params = plan.params(self.op, self.ty)?;
        let (t, sg) = self.tuning.on(caps)?;
        let source =
            |op, form, v4, sg| ShaderVariant::Op(OpShader::new(ReduceSource { op, ty: self.ty, form, v4, sg }));
        let layout = plan.layout();
        let (chunks, chunk) = match layout {
            Layout::Row => {
                let v4 = plan.reduced[0].0 % 4 == 0;
                let row = source(self.op, ReduceForm::Row(t), v4, sg);
                return Ok(Planned::One(OpDispatch::new(row, &params, grid(plan.outputs, caps)?), layout));
            }
            Layout::General => {
                let general = source(self.op, ReduceForm::General, false, false);
                return Ok(Planned::One(OpDispatch::new(general, &params, grid_for(plan.outputs, caps)?), layout));
            }
            Layout::Wide { chunks, chunk } => (chunks, chunk),
        };
        let wide = WideParams {
            base: params,
            chunks: to_u32("reduction chunks", chunks)?,
            chunk: to_u32("a reduction chunk", chunk)?,
            pad: [0; 2],
        };
        let partial = chunks > 1;
        // A contiguous run in chunks of whole vec4s (`layout` rounds a row's chunk up to them).
        let v4 = plan.row() && plan.count() % 4 == 0 && chunk % 4 == 0;
        let first = source(self.op, ReduceForm::Wide { threads: t, partial }, v4, sg);
        let first = OpDispatch::new(first, &wide, grid(plan.outputs * chunks, caps)?);
        if !partial {
            return Ok(Planned::One(first, layout));
        }
        // Each output's partials are a contiguous row, which the last pass combines (then
        // divides by the whole count, or takes the root).
        let op = self.op.last_pass();
        let rows = ReducePlan { outputs: plan.outputs, kept: vec![(plan.outputs, chunks)], reduced: vec![(chunks, 1)] };
        let last_params = ReduceParams { divisor: params.divisor, ..rows.params(op, self.ty)? };
        let last =
            OpDispatch::new(source(op, ReduceForm::Final(t), false, sg), &last_params, grid(plan.outputs, caps)?);
        Ok(Planned::Split { partials: first, last, bytes: plan.outputs * chunks * 4, chunks })
    }
}

/// Outputs below which reductions of more than [`SPLIT_MIN`] elements split over several
/// workgroups each (they must outweigh the extra dispatch), the fewest elements per chunk once
/// split, the workgroups a spread aims at (with [`MAX_CHUNKS`] at most per output): a device's
/// worth of memory traffic in flight, where 32 outputs over 262 400 f16 elements in 4 chunks each
/// streamed 0.06 TB/s on an H100 (fiftieth session).
const SPLIT_OUTPUTS: u64 = 256;
const SPLIT_MIN: u64 = 65536;
const MIN_CHUNK: u64 = 8192;
const SPREAD: u64 = 1024;
const MAX_CHUNKS: u64 = 256;
/// Most elements one workgroup of the wide kernel walks: 16384 per invocation.
const WIDE_SPAN: u64 = ROW_THREADS as u64 * 16384;

/// How a reduction runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// A workgroup per output over its contiguous run.
    Row,
    /// An invocation per output.
    General,
    /// `chunks` workgroups per output of `chunk` elements each; with more than one chunk, a
    /// last pass combines their partials.
    Wide { chunks: u64, chunk: u64 },
}

impl Layout {
    fn describe(self) -> &'static str {
        match self {
            Layout::Row => "one workgroup per output",
            Layout::General => "one invocation per output",
            Layout::Wide { .. } => "one workgroup per output, its elements strided",
        }
    }
}

/// X's dimensions collapsed into kept and reduced runs: `(size, stride)` in elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReducePlan {
    pub outputs: u64,
    pub kept: Vec<(u64, u64)>,
    /// Never empty: a reduction over nothing walks one element.
    pub reduced: Vec<(u64, u64)>,
}

impl ReducePlan {
    pub fn new(shape: &[u64], mask: &[bool]) -> Result<ReducePlan, GpuError> {
        to_u32("reduction input elements", shape.iter().product())?;
        let mut stride = 1u64;
        let mut dims: Vec<(u64, u64, bool)> = Vec::new();
        for (&d, &r) in shape.iter().zip(mask).rev() {
            match dims.last_mut() {
                _ if d == 1 => {}
                Some(last) if last.2 == r => last.0 *= d,
                _ => dims.push((d, stride, r)),
            }
            stride *= d;
        }
        dims.reverse();
        let pick = |r: bool| dims.iter().filter(|d| d.2 == r).map(|d| (d.0, d.1)).collect::<Vec<_>>();
        let (kept, mut reduced) = (pick(false), pick(true));
        if reduced.is_empty() {
            reduced.push((1, 0));
        }
        if kept.len() > MAX_DIMS || reduced.len() > MAX_DIMS + 1 {
            return Err(GpuError::Invalid(format!(
                "the reduction of {shape:?} alternates kept and reduced axes more than {MAX_DIMS} times"
            )));
        }
        Ok(ReducePlan { outputs: kept.iter().map(|k| k.0).product(), kept, reduced })
    }

    /// Whether each output's reduced elements are one contiguous run long enough for a
    /// workgroup (the kept dimensions then all come first).
    pub fn row(&self) -> bool {
        matches!(self.reduced.as_slice(), [(n, 1)] if *n >= ROW_MIN)
    }

    /// Reduced elements per output.
    pub fn count(&self) -> u64 {
        self.reduced.iter().map(|r| r.0).product()
    }

    /// How the reduction runs: a contiguous run on the row kernel unless it is long and the
    /// outputs few; strided elements on an invocation each where they are few and the outputs
    /// many; else on workgroups of the wide kernel, several per output where the outputs alone
    /// leave the device idle or one workgroup's share would pass [`WIDE_SPAN`].
    pub fn layout(&self) -> Layout {
        let count = self.count();
        let nred = self.reduced.len() as u64 - 1;
        let spread = if self.outputs >= SPLIT_OUTPUTS || count < SPLIT_MIN {
            1
        } else {
            (count / MIN_CHUNK).min(SPREAD / self.outputs.max(1)).clamp(1, MAX_CHUNKS)
        };
        // Each element of the wide kernel also walks the outer reduced dimensions.
        let chunks = spread.max(count.div_ceil(WIDE_SPAN / (1 + nred)));
        if self.row() && chunks == 1 {
            return Layout::Row;
        }
        if !self.row() && !wide_walks(self.outputs, count) {
            return Layout::General;
        }
        let mut chunk = count.div_ceil(chunks).max(1);
        if self.row() {
            chunk = chunk.next_multiple_of(4);
        }
        Layout::Wide { chunks: count.div_ceil(chunk).max(1), chunk }
    }

    fn params(&self, op: ReduceOp, ty: ElemType) -> Result<ReduceParams, GpuError> {
        let (outer, last) = self.reduced.split_at(self.reduced.len() - 1);
        let (r_last, r_stride) = last[0];
        let count: u64 = self.reduced.iter().map(|r| r.0).product();
        let u32s = |v: Vec<u64>| v.into_iter().map(|x| to_u32("a dimension", x)).collect::<Result<Vec<u32>, _>>();
        Ok(ReduceParams {
            outputs: to_u32("reduction outputs", self.outputs)?,
            r_last: to_u32("a dimension", r_last)?,
            r_stride: to_u32("a stride", r_stride)?,
            r_outer: to_u32("a dimension", outer.iter().map(|r| r.0).product())?,
            nkept: self.kept.len() as u32,
            nred: outer.len() as u32,
            divisor: if op == ReduceOp::Mean { count.max(1) as f32 } else { 1.0 },
            fill: op.fill(ty),
            kept_size: packed(&u32s(self.kept.iter().map(|k| k.0).collect())?)?,
            kept_stride: packed(&u32s(self.kept.iter().map(|k| k.1).collect())?)?,
            red_size: packed(&u32s(outer.iter().map(|r| r.0).collect())?)?,
            red_stride: packed(&u32s(outer.iter().map(|r| r.1).collect())?)?,
        })
    }
}

#[cfg(test)]
#[path = "reduce_tests.rs"]
mod tests;
