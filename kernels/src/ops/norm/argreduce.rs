//! ArgMax and ArgMin: the index (int64) of the largest or smallest element along one `axis`
//! (negative counts from the end), `keepdims`, `select_last_index` (the last of equal extremes
//! instead of the first). Floats and int32; the comparison follows IEEE order, so where NaN is
//! among the elements the index is that of the extreme of the others, as the comparisons meet
//! them (ONNX leaves NaN unspecified). An empty axis is the user's error.

use bytemuck::{Pod, Zeroable};

use super::{check_bindings, check_cpu_loops, float_types, input_type, wide_walks};
use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::graph::model::Node;
use crate::graph::support::PlacementOptions;
use crate::graph::ExecOptions;
use crate::ops::planned::{step_plan, OpDispatch};
use crate::ops::{
    check_f16, grid, grid_for, normalize_axis, to_u32, Kernel, KernelIo, OpDef, PrepareCx, PreparedStep, StepPlan,
    WORKGROUP,
};
use crate::shader::{render, OpShader, OpSource, ShaderVariant};

/// The definitions of this family.
pub static OPS: &[&dyn OpDef] = &[&ArgReduceDef];

/// Invocations per output of the row variant.
const ROW_THREADS: u32 = 64;
/// Shortest contiguous axis the row variant takes.
const ROW_MIN: u64 = 32;

struct ArgReduceDef;

impl OpDef for ArgReduceDef {
    fn names(&self) -> &'static [&'static str] {
        &["ArgMax", "ArgMin"]
    }

    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String> {
        let k = ArgKernel::of(node)?;
        let out = node.output(0).ok_or_else(|| format!("{} without an output", node.op_type))?;
        if out.elem_type != ElemType::I64.onnx() {
            return Err(format!("{} output '{}' is not int64", node.op_type, out.name));
        }
        check_f16(node, opts)?;
        if let Some(shape) = node.input(0).and_then(|v| v.fixed_shape()) {
            k.infer(&[Some(&shape)])?;
        }
        Ok(())
    }

    fn gpu_inputs(&self, _node: &Node) -> Vec<usize> {
        vec![0]
    }

    fn build(&self, node: &Node) -> Result<Box<dyn Kernel>, String> {
        Ok(Box::new(ArgKernel::of(node)?))
    }

    fn flops(&self, node: &Node) -> Option<f64> {
        Some(node.input(0)?.fixed_shape()?.iter().product::<u64>() as f64)
    }

    fn variants(&self, caps: &DeviceCaps) -> Vec<ShaderVariant> {
        let mut types = float_types(caps);
        types.push(ElemType::I32);
        let mut out = Vec::new();
        for max in [true, false] {
            for &ty in &types {
                for (row, strided) in [(true, false), (true, true), (false, false)] {
                    out.push(ShaderVariant::Op(OpShader::new(ArgSource { max, ty, row, strided })));
                }
            }
        }
        out
    }
}

/// One ArgMax or ArgMin node.
#[derive(Clone, Debug, PartialEq)]
pub struct ArgKernel {
    pub name: String,
    pub max: bool,
    pub ty: ElemType,
    pub axis: i64,
    pub keepdims: bool,
    pub last: bool,
}

impl ArgKernel {
    pub fn of(node: &Node) -> Result<ArgKernel, String> {
        let ty = input_type(node, 0, "data")?;
        if ![ElemType::F32, ElemType::F16, ElemType::I32].contains(&ty) {
            return Err(format!("{} of {} is not supported: floats and int32 run here", node.op_type, ty.name()));
        }
        Ok(ArgKernel {
            name: node.name.clone(),
            max: node.op_type == "ArgMax",
            ty,
            axis: node.int("axis").unwrap_or(0),
            keepdims: node.int("keepdims").unwrap_or(1) != 0,
            last: node.int("select_last_index").unwrap_or(0) != 0,
        })
    }

    fn op(&self) -> &'static str {
        if self.max {
            "ArgMax"
        } else {
            "ArgMin"
        }
    }

    /// X of `shape` as (outer, n, inner) around the axis.
    fn view(&self, shape: &[u64]) -> Result<(u64, u64, u64), String> {
        let d = normalize_axis(self.axis, shape.len()).map_err(|e| format!("{} '{}': {e}", self.op(), self.name))?;
        let n = shape[d];
        if n == 0 {
            return Err(format!(
                "{} '{}' over axis {} of size 0 has no index to give",
                self.op(),
                self.name,
                self.axis
            ));
        }
        Ok((shape[..d].iter().product(), n, shape[d + 1..].iter().product()))
    }

    fn dispatch(&self, shape: &[u64], caps: &DeviceCaps) -> Result<(OpDispatch, bool), GpuError> {
        let (outer, n, inner) = self.view(shape).map_err(GpuError::Invalid)?;
        to_u32("arg reduction input elements", shape.iter().product())?;
        let outputs = outer * inner;
        let wide = if inner == 1 { n >= ROW_MIN } else { wide_walks(outputs, n) };
        let row = wide && caps.max_invocations_per_workgroup >= ROW_THREADS;
        let params = ArgParams {
            outputs: to_u32("arg reduction outputs", outputs)?,
            n: to_u32("a dimension", n)?,
            inner: to_u32("a dimension", inner)?,
            flags: u32::from(self.last),
        };
        let grid = if row { grid(outputs, caps)? } else { grid_for(outputs, caps)? };
        let strided = row && inner > 1;
        let walk = if row { n.div_ceil(u64::from(ROW_THREADS)) } else { n };
        check_cpu_loops(caps, || format!("{} '{}' over an axis of {n}", self.op(), self.name), walk)?;
        let variant = ShaderVariant::Op(OpShader::new(ArgSource { max: self.max, ty: self.ty, row, strided }));
        Ok((OpDispatch::new(variant, &params, grid), row))
    }
}

impl Kernel for ArgKernel {
    fn infer(&self, inputs: &[Option<&[u64]>]) -> Result<Vec<Vec<u64>>, String> {
        let x =
            inputs.first().copied().flatten().ok_or_else(|| format!("{} '{}' has no input", self.op(), self.name))?;
        self.view(x)?;
        let d = normalize_axis(self.axis, x.len())?;
        let mut out = x.to_vec();
        if self.keepdims {
            out[d] = 1;
        } else {
            out.remove(d);
        }
        Ok(vec![out])
    }

    fn prepare(&self, cx: &PrepareCx<'_>, io: &KernelIo<'_>) -> Result<PreparedStep, GpuError> {
        let (x, y) = (io.input(0)?, io.output(0)?);
        check_bindings(&[x, y], cx.caps())?;
        let (planned, _) = self.dispatch(x.shape, cx.caps())?;
        Ok(PreparedStep::one(planned.bind(cx.gpu, &[x.buf], &[y.buf])?))
    }

    fn plan(&self, inputs: &[Option<&[u64]>], caps: &DeviceCaps, _: &ExecOptions) -> Result<Option<StepPlan>, String> {
        let op = format!("{} '{}'", self.op(), self.name);
        let out = self.infer(inputs)?.remove(0);
        let x = inputs.first().copied().flatten().unwrap_or_default();
        let (planned, row) = self.dispatch(x, caps).map_err(|e| format!("{op}: {e}"))?;
        let tiling = if row { "one workgroup per output" } else { "one invocation per output" };
        Ok(Some(step_plan(format!("{op}: {x:?} -> {out:?}"), tiling, &[planned])))
    }
}

/// The uniforms of `argreduce.wgsl.j2`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct ArgParams {
    outputs: u32,
    n: u32,
    inner: u32,
    flags: u32,
}

/// One ArgMax/ArgMin kernel: what changes its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ArgSource {
    pub max: bool,
    pub ty: ElemType,
    /// A workgroup per output (the axis is contiguous, or long); else an invocation per output.
    pub row: bool,
    /// The workgroup's elements are `inner` apart.
    pub strided: bool,
}

impl OpSource for ArgSource {
    fn name(&self) -> String {
        let op = if self.max { "argmax" } else { "argmin" };
        let form = match (self.row, self.strided) {
            (true, false) => format!("row_t{ROW_THREADS}"),
            (true, true) => format!("strided_t{ROW_THREADS}"),
            _ => "general".into(),
        };
        format!("{op}_{}_{form}", self.ty.name())
    }

    fn emit(&self) -> Result<String, String> {
        render(
            "argreduce.wgsl.j2",
            minijinja::context! {
                t => self.ty.name(),
                f16 => self.ty == ElemType::F16,
                acc => if self.ty == ElemType::I32 { "i32" } else { "f32" },
                max => self.max,
                row => self.row,
                strided => self.strided,
                threads => if self.row { ROW_THREADS } else { WORKGROUP },
            },
        )
    }

    fn capabilities(&self) -> naga::valid::Capabilities {
        crate::ops::capabilities_for(&[self.ty])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(axis: i64, keepdims: bool) -> ArgKernel {
        ArgKernel { name: "a".into(), max: true, ty: ElemType::F32, axis, keepdims, last: false }
    }

    #[test]
    fn shapes_and_views() {
        assert_eq!(kernel(1, true).infer(&[Some(&[2, 5, 3])]).unwrap(), vec![vec![2, 1, 3]]);
        assert_eq!(kernel(-1, false).infer(&[Some(&[2, 5, 3])]).unwrap(), vec![vec![2, 5]]);
        assert_eq!(kernel(1, true).view(&[2, 5, 3]).unwrap(), (2, 5, 3));
        assert!(kernel(1, true).infer(&[Some(&[2, 0, 3])]).unwrap_err().contains("size 0"));
        assert!(kernel(3, true).infer(&[Some(&[2, 5, 3])]).is_err());
    }
}
