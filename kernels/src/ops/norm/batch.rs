//! BatchNormalization in inference mode (`training_mode` 0, one output): a per-channel affine
//! map of X `[N, C, …]` by its four `[C]` operands, one invocation per element
//! (`batchnorm.wgsl.j2`). ONNX Runtime folds a BatchNormalization after a Conv into the Conv's
//! weights before partitioning; this kernel runs the ones it cannot fold.

use bytemuck::{Pod, Zeroable};

use super::{check_bindings, float_types, input_type};
use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::graph::model::Node;
use crate::graph::support::PlacementOptions;
use crate::graph::ExecOptions;
use crate::ops::planned::{step_plan, OpDispatch};
use crate::ops::StepPlan;
use crate::ops::{check_f16, check_types, grid_for, to_u32, Kernel, KernelIo, OpDef, PrepareCx, PreparedStep};
use crate::shader::{render, OpShader, OpSource, ShaderVariant};

/// The definitions of this family.
pub static OPS: &[&dyn OpDef] = &[&BatchNormDef];

struct BatchNormDef;

impl OpDef for BatchNormDef {
    fn names(&self) -> &'static [&'static str] {
        &["BatchNormalization"]
    }

    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String> {
        if node.int("training_mode").unwrap_or(0) != 0 {
            return Err("BatchNormalization with training_mode=1 is not supported (inference only)".into());
        }
        if node.outputs.iter().skip(1).flatten().any(|v| !v.name.is_empty()) {
            return Err("BatchNormalization's running mean/variance outputs are not supported".into());
        }
        if node.since_version < 9 && node.int("spatial").unwrap_or(1) == 0 {
            return Err("BatchNormalization with spatial=0 is not supported".into());
        }
        check_types(node, &[ElemType::F32, ElemType::F16])?;
        check_f16(node, opts)?;
        let kernel = BatchNormKernel::of(node)?;
        let shapes: Option<Vec<Vec<u64>>> = (0..5).map(|i| node.input(i).and_then(|v| v.fixed_shape())).collect();
        if let Some(shapes) = shapes {
            let refs: Vec<Option<&[u64]>> = shapes.iter().map(|s| Some(s.as_slice())).collect();
            kernel.infer(&refs)?;
        }
        Ok(())
    }

    fn build(&self, node: &Node) -> Result<Box<dyn Kernel>, String> {
        Ok(Box::new(BatchNormKernel::of(node)?))
    }

    fn flops(&self, node: &Node) -> Option<f64> {
        let elems: u64 = node.input(0)?.fixed_shape()?.iter().product();
        Some(4.0 * elems as f64)
    }

    fn variants(&self, caps: &DeviceCaps) -> Vec<ShaderVariant> {
        float_types(caps).into_iter().map(|ty| ShaderVariant::Op(OpShader::new(BatchNormSource { ty }))).collect()
    }
}

/// One BatchNormalization node. Inputs: X, scale, B, mean, var.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchNormKernel {
    pub name: String,
    pub ty: ElemType,
    pub epsilon: f32,
}

impl BatchNormKernel {
    pub fn of(node: &Node) -> Result<BatchNormKernel, String> {
        let ty = input_type(node, 0, "X")?;
        for (i, what) in [(1, "scale"), (2, "B"), (3, "mean"), (4, "var")] {
            if input_type(node, i, what)? != ty {
                return Err(format!("BatchNormalization '{}': {what} has another element type than X", node.name));
            }
        }
        Ok(BatchNormKernel { name: node.name.clone(), ty, epsilon: node.float("epsilon").unwrap_or(1e-5) })
    }
}

impl Kernel for BatchNormKernel {
    fn infer(&self, inputs: &[Option<&[u64]>]) -> Result<Vec<Vec<u64>>, String> {
        let name = &self.name;
        let get = |i: usize| {
            inputs.get(i).copied().flatten().ok_or_else(|| format!("BatchNormalization '{name}': input {i} is missing"))
        };
        let x = get(0)?;
        if x.len() < 2 {
            return Err(format!("BatchNormalization '{name}': X {x:?} has no channel axis"));
        }
        for i in 1..5 {
            if get(i)? != [x[1]] {
                return Err(format!("BatchNormalization '{name}': input {i} {:?} must have shape [{}]", get(i)?, x[1]));
            }
        }
        Ok(vec![x.to_vec()])
    }

    fn prepare(&self, cx: &PrepareCx<'_>, io: &KernelIo<'_>) -> Result<PreparedStep, GpuError> {
        let tensors = (0..5).map(|i| io.input(i)).collect::<Result<Vec<_>, _>>()?;
        let y = io.output(0)?;
        check_bindings(&tensors, cx.caps())?;
        let Some(planned) = self.dispatch(tensors[0].shape, cx.caps())? else {
            return Ok(PreparedStep::default());
        };
        let bufs: Vec<_> = tensors.iter().map(|t| t.buf).collect();
        Ok(PreparedStep::one(planned.bind(cx.gpu, &bufs, &[y.buf])?))
    }

    fn plan(&self, inputs: &[Option<&[u64]>], caps: &DeviceCaps, _: &ExecOptions) -> Result<Option<StepPlan>, String> {
        let x = self.infer(inputs)?.remove(0);
        let planned = self.dispatch(&x, caps).map_err(|e| format!("BatchNormalization '{}': {e}", self.name))?;
        let line = format!("BatchNormalization '{}': {x:?}", self.name);
        Ok(planned.map(|d| step_plan(line, "one invocation per element", &[d])))
    }
}

impl BatchNormKernel {
    /// The kernel over X of `shape` (`None` when empty): what `prepare` binds and `plan` reports.
    fn dispatch(&self, shape: &[u64], caps: &DeviceCaps) -> Result<Option<OpDispatch>, GpuError> {
        let count: u64 = shape.iter().product();
        if count == 0 {
            return Ok(None);
        }
        let params = BatchNormParams {
            count: to_u32("BatchNormalization elements", count)?,
            channels: to_u32("BatchNormalization channels", shape[1])?,
            inner: to_u32("BatchNormalization spatial size", shape[2..].iter().product())?,
            epsilon: self.epsilon,
        };
        let variant = ShaderVariant::Op(OpShader::new(BatchNormSource { ty: self.ty }));
        Ok(Some(OpDispatch::new(variant, &params, grid_for(count, caps)?)))
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct BatchNormParams {
    count: u32,
    channels: u32,
    inner: u32,
    epsilon: f32,
}

/// The BatchNormalization kernel of one element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BatchNormSource {
    pub ty: ElemType,
}

impl OpSource for BatchNormSource {
    fn name(&self) -> String {
        format!("batchnorm_{}", self.ty.name())
    }

    fn emit(&self) -> Result<String, String> {
        render("batchnorm.wgsl.j2", minijinja::context! { t => self.ty.name(), f16 => self.ty == ElemType::F16 })
    }

    fn capabilities(&self) -> naga::valid::Capabilities {
        crate::ops::capabilities_for(&[self.ty])
    }
}
