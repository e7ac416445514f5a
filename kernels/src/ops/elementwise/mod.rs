//! Elementwise ops and their fusion: each op is one row of the fused-kernel IR (an operation and
//! its WGSL expression); a chain of them runs as one generated kernel over numpy broadcasting.
//!
//! - `ir`: the operations' typing and WGSL expressions;
//! - `shape`: broadcasting, the per-input indexing modes and the uniform;
//! - `source`: the generated kernel as a shader variant;
//! - `defs`: the ONNX ops lowered to the IR; `variants`: what the goldens cover.

mod defs;
mod ir;
mod shape;
mod source;
mod variants;

use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::gemm::layout::check_binding;
use crate::graph::ExecOptions;
use crate::ops::{grid_for, to_u32, Kernel, KernelIo, OpDef, PrepareCx, PreparedStep, StepPlan};
use crate::runtime::GpuBuffer;
use crate::shader::{OpShader, ShaderVariant};

pub use ir::check_ir;
pub use shape::{Layout, Mode, MAX_RANK};
pub use source::ElemSource;

/// One operation of the fused-kernel IR. Float parameters (`LeakyRelu`'s alpha, `Scalar`'s
/// value) travel in the kernel's uniform, so they are not part of its variant.
#[derive(Clone, Debug, PartialEq)]
pub enum ElemOp {
    Abs,
    Neg,
    Exp,
    Log,
    Sqrt,
    Reciprocal,
    Erf,
    Tanh,
    Sigmoid,
    Relu,
    LeakyRelu(f32),
    /// Gelu with the exact erf form.
    Gelu,
    /// Gelu with the tanh approximation.
    GeluTanh,
    /// `x · clamp(x / 6 + 1/2, 0, 1)`.
    HardSwish,
    /// `log(1 + exp(x))`, without overflow.
    Softplus,
    /// `x · tanh(softplus(x))`.
    Mish,
    /// (x, alpha, beta): `clamp(alpha · x + beta, 0, 1)`; alpha and beta are `Scalar` nodes.
    HardSigmoid,
    /// (x, alpha): `alpha · (exp(x) - 1)` below 0, else x.
    Elu,
    /// (x, alpha, gamma): `gamma · (alpha · (exp(x) - 1))` at or below 0, else `gamma · x`.
    Selu,
    /// (x, slope): `slope · x` below 0, else x.
    PRelu,
    Sin,
    Cos,
    Floor,
    Ceil,
    /// Half to even.
    Round,
    Not,
    IsNaN,
    IsInf {
        positive: bool,
        negative: bool,
    },
    /// A float constant (no operands), e.g. a Clip bound given as an attribute.
    Scalar(f32),
    Add,
    Sub,
    Mul,
    /// Integers truncate toward zero.
    Div,
    /// Float base, float or integer exponent.
    Pow,
    /// NaN-propagating on floats.
    Max,
    Min,
    Equal,
    Less,
    Greater,
    LessOrEqual,
    GreaterOrEqual,
    And,
    Or,
    Xor,
    /// (condition, x, y).
    Where,
    /// To the node's type, from its operand's.
    Cast,
}

/// Where an IR node's operand comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arg {
    /// The fused kernel's external input `k` (broadcast onto the output shape).
    Input(usize),
    /// The value of node `j` of the same kernel (`j` < this node's index).
    Node(usize),
}

/// One node of a fused elementwise kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct ElemNode {
    pub op: ElemOp,
    pub args: Vec<Arg>,
    /// The element type of the node's value.
    pub ty: ElemType,
}

/// A fused elementwise kernel: `inputs` are the external inputs' element types; the last of
/// `nodes` is the output.
pub fn fused(inputs: Vec<ElemType>, nodes: Vec<ElemNode>) -> Result<Box<dyn Kernel>, String> {
    named(String::new(), inputs, nodes)
}

/// [`fused`] for one node, whose name its errors give.
fn named(name: String, inputs: Vec<ElemType>, nodes: Vec<ElemNode>) -> Result<Box<dyn Kernel>, String> {
    check_ir(&inputs, &nodes)?;
    Ok(Box::new(ElemKernel { name, inputs, nodes }))
}

/// The elementwise op definitions.
pub fn ops() -> Vec<&'static dyn OpDef> {
    defs::ops()
}

/// The step of a fused chain (or of one elementwise node).
#[derive(Clone, Debug)]
struct ElemKernel {
    /// The node's name (empty for a chain).
    name: String,
    inputs: Vec<ElemType>,
    nodes: Vec<ElemNode>,
}

impl ElemKernel {
    fn out_type(&self) -> ElemType {
        self.nodes.last().map_or(ElemType::F32, |n| n.ty)
    }

    fn label(&self) -> String {
        let ops: Vec<String> = self.nodes.iter().map(|n| n.op.tag()).collect();
        if self.name.is_empty() {
            format!("elementwise {}", ops.join("+"))
        } else {
            format!("'{}' ({})", self.name, ops.join("+"))
        }
    }
}

impl Kernel for ElemKernel {
    fn infer(&self, inputs: &[Option<&[u64]>]) -> Result<Vec<Vec<u64>>, String> {
        let shapes = (0..self.inputs.len())
            .map(|k| inputs.get(k).copied().flatten().ok_or_else(|| format!("{}: input {k} is missing", self.label())))
            .collect::<Result<Vec<_>, _>>()?;
        let out = shape::broadcast_all(&shapes).map_err(|e| format!("{}: {e}", self.label()))?;
        Layout::of(&shapes, &out).map_err(|e| format!("{}: {e}", self.label()))?;
        Ok(vec![out])
    }

    fn prepare(&self, cx: &PrepareCx<'_>, io: &KernelIo<'_>) -> Result<PreparedStep, GpuError> {
        let inputs = (0..self.inputs.len()).map(|k| io.input(k)).collect::<Result<Vec<_>, _>>()?;
        let out = io.output(0)?;
        let bound = inputs.iter().map(|t| t.ty).chain([out.ty]);
        if !bound.eq(self.inputs.iter().copied().chain([self.out_type()])) {
            return Err(GpuError::Internal(format!("{}: tensors bound with other element types", self.label())));
        }
        let shapes: Vec<&[u64]> = inputs.iter().map(|t| t.shape).collect();
        let Some((variant, params, grid, _)) = self.dispatch(&shapes, out.shape, cx.caps())? else {
            return Ok(PreparedStep::default());
        };
        let buffers: Vec<&GpuBuffer> = inputs.iter().map(|t| t.buf).collect();
        let dispatch = cx.gpu.prepare_op(&variant, &buffers, &[out.buf], &params, grid)?;
        Ok(PreparedStep::one(dispatch))
    }

    fn plan(&self, inputs: &[Option<&[u64]>], caps: &DeviceCaps, _: &ExecOptions) -> Result<Option<StepPlan>, String> {
        let out = self.infer(inputs)?.remove(0);
        let shapes: Vec<&[u64]> = inputs.iter().take(self.inputs.len()).flatten().copied().collect();
        let planned = self.dispatch(&shapes, &out, caps).map_err(|e| format!("{}: {e}", self.label()))?;
        Ok(planned.map(|(variant, _, grid, width)| StepPlan {
            line: format!("{}: output {out:?}", self.label()),
            tiling: match width {
                1 => "one invocation per element".into(),
                w => format!("one invocation per {w} elements"),
            },
            dispatches: vec![(variant.name(), grid)],
        }))
    }
}

/// A generated kernel, its uniform bytes, its grid and its elements per invocation.
type Planned = (ShaderVariant, Vec<u8>, [u32; 3], u32);

impl ElemKernel {
    /// The kernel, its uniform and its grid for these shapes (`None` for an empty output): what
    /// `prepare` binds and `plan` reports.
    fn dispatch(&self, shapes: &[&[u64]], out_shape: &[u64], caps: &DeviceCaps) -> Result<Option<Planned>, GpuError> {
        let out_ty = self.out_type();
        let elements = |s: &[u64]| s.iter().fold(1u64, |a, &d| a.saturating_mul(d));
        let total = elements(out_shape);
        if total == 0 {
            return Ok(None);
        }
        let layout = Layout::of(shapes, out_shape).map_err(GpuError::Invalid)?;
        let operands = shapes.iter().zip(&self.inputs).map(|(s, &t)| (*s, t)).chain([(out_shape, out_ty)]);
        for (shape, ty) in operands {
            check_binding("an elementwise operand", elements(shape).saturating_mul(ty.size()), caps)?;
        }
        let mut source = ElemSource {
            inputs: self.inputs.iter().copied().zip(layout.modes.iter().copied()).collect(),
            nodes: self.nodes.clone(),
            width: 1,
        };
        source.width = vector_width(&source, &layout, total);
        // A bool output is written a word (four elements) per invocation.
        let count = if out_ty == ElemType::Bool { total.div_ceil(4) } else { total / u64::from(source.width) };
        let total = to_u32("elementwise output elements", total)?;
        let params = shape::params(&layout, count as u32, total, &source.floats());
        let width = source.width;
        Ok(Some((ShaderVariant::Op(OpShader::new(source)), params, grid_for(count, caps)?, width)))
    }
}

/// The elements per invocation for these shapes: the source's vector width where the output
/// and the innermost walked dimension (which broadcast inputs index alone within a group) are
/// whole multiples of it, else 1.
fn vector_width(source: &ElemSource, layout: &Layout, total: u64) -> u32 {
    match source.vector_width() {
        Some(w) if total % u64::from(w) == 0 && layout.dims.first().is_none_or(|&d| d % u64::from(w) == 0) => w,
        _ => 1,
    }
}
