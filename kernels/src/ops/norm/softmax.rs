//! Softmax and LogSoftmax. Before opset 13 the input is coerced to 2-D at `axis` (default 1):
//! each row is the flattened trailing dimensions; from opset 13 the op runs along the single
//! `axis` (default -1). Either way X is viewed as `[outer, n, inner]`.
//!
//! Rows along the last axis long enough to share (attention scores: Whisper's [1,6,1500,1500])
//! take one workgroup each; short rows and non-last axes one invocation per column, which reads
//! coalesced across the inner dimension.

use bytemuck::{Pod, Zeroable};

use super::{check_bindings, check_cpu_loops, float_types, input_type, wide_walks, RowTuning};
use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::graph::model::Node;
use crate::graph::support::PlacementOptions;
use crate::graph::ExecOptions;
use crate::ops::planned::{step_plan, OpDispatch};
use crate::ops::StepPlan;
use crate::ops::{
    check_f16, check_types, grid, grid_for, normalize_axis, to_u32, Kernel, KernelIo, OpDef, PrepareCx, PreparedStep,
    WORKGROUP,
};
use crate::shader::{render, OpShader, OpSource, ShaderVariant};

/// The definitions of this family.
pub static OPS: &[&dyn OpDef] = &[&SoftmaxDef];

/// Invocations per row of the row variant: two subgroups on NVIDIA, enough loads in flight
/// for rows of a few thousand elements; on llvmpipe 64 ran rows of 384 and 1500 2-4x faster
/// than 128 or 256 (fewer idle invocations, cheaper barriers).
pub const ROW_THREADS: u32 = 64;
/// Shortest row the row variant takes: shorter rows would leave most of a workgroup idle.
const ROW_MIN: u64 = 32;

struct SoftmaxDef;

impl OpDef for SoftmaxDef {
    fn names(&self) -> &'static [&'static str] {
        &["Softmax", "LogSoftmax"]
    }

    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String> {
        check_types(node, &[ElemType::F32, ElemType::F16])?;
        check_f16(node, opts)?;
        let kernel = SoftmaxKernel::of(node)?;
        if let Some(rank) = node.input(0).and_then(|v| v.rank()) {
            normalize_axis(kernel.axis, rank).map_err(|e| format!("{}: {e}", node.op_type))?;
        }
        Ok(())
    }

    fn gpu_inputs(&self, _node: &Node) -> Vec<usize> {
        vec![0]
    }

    fn build(&self, node: &Node) -> Result<Box<dyn Kernel>, String> {
        Ok(Box::new(SoftmaxKernel::of(node)?))
    }

    fn flops(&self, node: &Node) -> Option<f64> {
        let elems: u64 = node.input(0)?.fixed_shape()?.iter().product();
        Some(10.0 * elems as f64)
    }

    fn variants(&self, caps: &DeviceCaps) -> Vec<ShaderVariant> {
        let mut out = Vec::new();
        for ty in float_types(caps) {
            for log in [false, true] {
                let strided = SoftmaxSource { log, ty, threads: None, v4: false, sg: false, strided: false };
                let row = SoftmaxSource { threads: Some(ROW_THREADS), sg: caps.subgroups, ..strided };
                let row4 = SoftmaxSource { v4: true, ..row };
                let cols = SoftmaxSource { strided: true, ..row };
                out.extend([row, row4, strided, cols].map(|s| ShaderVariant::Op(OpShader::new(s))));
            }
        }
        out
    }
}

/// One Softmax or LogSoftmax node.
#[derive(Clone, Debug, PartialEq)]
pub struct SoftmaxKernel {
    pub name: String,
    pub log: bool,
    pub ty: ElemType,
    pub axis: i64,
    /// Opset < 13: the axis splits X into rows of its trailing dimensions.
    pub coerce_2d: bool,
    pub tuning: RowTuning,
}

impl SoftmaxKernel {
    pub fn of(node: &Node) -> Result<SoftmaxKernel, String> {
        let ty = input_type(node, 0, "input")?;
        if !ty.is_float() {
            return Err(format!("{} of {} is not supported", node.op_type, ty.name()));
        }
        let coerce_2d = node.since_version < 13;
        Ok(SoftmaxKernel {
            name: node.name.clone(),
            log: node.op_type == "LogSoftmax",
            ty,
            axis: node.int("axis").unwrap_or(if coerce_2d { 1 } else { -1 }),
            coerce_2d,
            tuning: RowTuning::new(ROW_THREADS),
        })
    }

    /// Softmax along the last axis (the unfused attention's rows).
    pub fn rows(name: &str, ty: ElemType) -> SoftmaxKernel {
        SoftmaxKernel {
            name: name.to_string(),
            log: false,
            ty,
            axis: -1,
            coerce_2d: false,
            tuning: RowTuning::new(ROW_THREADS),
        }
    }

    fn op(&self) -> &'static str {
        if self.log {
            "LogSoftmax"
        } else {
            "Softmax"
        }
    }

    /// `[outer, n, inner]` of X at `shape`.
    pub fn geometry(&self, shape: &[u64]) -> Result<[u64; 3], String> {
        let axis = normalize_axis(self.axis, shape.len()).map_err(|e| format!("{} '{}': {e}", self.op(), self.name))?;
        let outer = shape[..axis].iter().product();
        Ok(if self.coerce_2d {
            [outer, shape[axis..].iter().product(), 1]
        } else {
            [outer, shape[axis], shape[axis + 1..].iter().product()]
        })
    }
}

impl Kernel for SoftmaxKernel {
    fn infer(&self, inputs: &[Option<&[u64]>]) -> Result<Vec<Vec<u64>>, String> {
        let x =
            inputs.first().copied().flatten().ok_or_else(|| format!("{} '{}' has no input", self.op(), self.name))?;
        self.geometry(x)?;
        Ok(vec![x.to_vec()])
    }

    fn prepare(&self, cx: &PrepareCx<'_>, io: &KernelIo<'_>) -> Result<PreparedStep, GpuError> {
        let (x, y) = (io.input(0)?, io.output(0)?);
        check_bindings(&[x, y], cx.caps())?;
        let (planned, _) = self.dispatch(x.shape, cx.caps())?;
        Ok(PreparedStep::one(planned.bind(cx.gpu, &[x.buf], &[y.buf])?))
    }

    fn plan(&self, inputs: &[Option<&[u64]>], caps: &DeviceCaps, _: &ExecOptions) -> Result<Option<StepPlan>, String> {
        let x = self.infer(inputs)?.remove(0);
        let (planned, row) = self.dispatch(&x, caps).map_err(|e| format!("{} '{}': {e}", self.op(), self.name))?;
        let tiling = if row { "one workgroup per row" } else { "one invocation per row" };
        Ok(Some(step_plan(format!("{} '{}': {x:?}", self.op(), self.name), tiling, &[planned])))
    }
}

impl SoftmaxKernel {
    /// The kernel for X of `shape` and whether it runs a workgroup per row: what `prepare`
    /// binds and `plan` reports.
    pub(crate) fn dispatch(&self, shape: &[u64], caps: &DeviceCaps) -> Result<(OpDispatch, bool), GpuError> {
        let [outer, n, inner] = self.geometry(shape).map_err(GpuError::Invalid)?;
        to_u32("Softmax elements", shape.iter().product())?;
        // Contiguous rows, or long strided ones where they are few (a workgroup per row); else
        // an invocation per (outer, inner) column.
        let row = if inner == 1 { n >= ROW_MIN } else { wide_walks(outer * inner, n) };
        let strided = row && inner > 1;
        let count = if row && !strided { outer } else { outer * inner };
        let params = SoftmaxParams {
            outer: to_u32("Softmax rows", outer)?,
            n: to_u32("Softmax row length", n)?,
            inner: to_u32("Softmax inner size", inner)?,
            count: to_u32("Softmax rows", count)?,
        };
        let (t, sg) = self.tuning.on(caps)?;
        let (threads, grid) = if row { (Some(t), grid(count, caps)?) } else { (None, grid_for(count, caps)?) };
        let (v4, sg) = (row && !strided && n % 4 == 0, row && sg);
        // Two passes over the row: a workgroup's invocation takes every `t`th element, a strided
        // one all of its column.
        let per_pass = if !row {
            n
        } else if v4 {
            (n / 4).div_ceil(u64::from(t))
        } else {
            n.div_ceil(u64::from(t))
        };
        check_cpu_loops(caps, || format!("{} '{}' over rows of {n}", self.op(), self.name), 2 * per_pass)?;
        let source = SoftmaxSource { log: self.log, ty: self.ty, threads, v4, sg, strided };
        let variant = ShaderVariant::Op(OpShader::new(source));
        Ok((OpDispatch::new(variant, &params, grid), row))
    }
}

/// The uniforms of `softmax.wgsl.j2`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct SoftmaxParams {
    outer: u32,
    n: u32,
    inner: u32,
    count: u32,
}

/// One softmax kernel: what changes its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SoftmaxSource {
    pub log: bool,
    pub ty: ElemType,
    /// `Some(threads per row)`: the row variant; `None`: one invocation per column.
    pub threads: Option<u32>,
    /// Rows are whole vec4s, loaded and stored as such (row variant).
    pub v4: bool,
    /// The row variant reduces through subgroup operations.
    pub sg: bool,
    /// The row variant's elements are `inner` apart (a long axis that is not the last).
    pub strided: bool,
}

impl OpSource for SoftmaxSource {
    fn name(&self) -> String {
        let op = if self.log { "logsoftmax" } else { "softmax" };
        match self.threads {
            Some(t) => {
                let v4 = if self.v4 { "_v4" } else { "" };
                let sg = if self.sg { "_sg" } else { "" };
                let form = if self.strided { "cols" } else { "row" };
                format!("{op}_{}_{form}{v4}{sg}_t{t}", self.ty.name())
            }
            None => format!("{op}_{}_strided", self.ty.name()),
        }
    }

    fn emit(&self) -> Result<String, String> {
        render(
            "softmax.wgsl.j2",
            minijinja::context! {
                t => self.ty.name(),
                f16 => self.ty == ElemType::F16,
                log => self.log,
                row => self.threads.is_some(),
                strided => self.strided,
                v4 => self.v4,
                sg => self.sg,
                threads => self.threads.unwrap_or(WORKGROUP),
            },
        )
    }

    fn capabilities(&self) -> naga::valid::Capabilities {
        super::row_capabilities(&[self.ty], self.sg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(axis: i64, coerce_2d: bool) -> SoftmaxKernel {
        let tuning = RowTuning::new(ROW_THREADS);
        SoftmaxKernel { name: "s".into(), log: false, ty: ElemType::F32, axis, coerce_2d, tuning }
    }

    #[test]
    fn geometry_by_opset() {
        assert_eq!(kernel(1, true).geometry(&[2, 3, 4, 5]).unwrap(), [2, 60, 1]);
        assert_eq!(kernel(-1, true).geometry(&[2, 3, 4, 5]).unwrap(), [24, 5, 1]);
        assert_eq!(kernel(1, false).geometry(&[2, 3, 4, 5]).unwrap(), [2, 3, 20]);
        assert_eq!(kernel(-1, false).geometry(&[1, 6, 1500, 1500]).unwrap(), [9000, 1500, 1]);
        assert_eq!(kernel(0, false).geometry(&[7]).unwrap(), [1, 7, 1]);
        assert!(kernel(4, false).geometry(&[2, 3, 4, 5]).is_err());
        assert!(kernel(-1, false).geometry(&[]).is_err());
    }
}
