//! Pad (opset 2 to 21): constant, reflect, edge and wrap modes over any axes (opset 18's `axes`
//! input), negative pads cropping, for f32, f16 and i32 tensors of rank ≤ 8
//! (`wgsl/pad.wgsl.j2`). The pads, the constant value and the axes must be constants (they
//! decide the output shape); int64 tensors decline (they are shape computations the CPU runs).

use bytemuck::{Pod, Zeroable};

use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::graph::model::Node;
use crate::graph::support::PlacementOptions;
use crate::graph::ExecOptions;
use crate::ops::norm::{check_bindings, input_type, packed, MAX_DIMS};
use crate::ops::planned::{step_plan, OpDispatch};
use crate::ops::StepPlan;
use crate::ops::{
    check_f16, check_types, grid_for, normalize_axis, to_u32, Kernel, KernelIo, OpDef, PrepareCx, PreparedStep,
};
use crate::shader::{render, OpShader, OpSource, ShaderVariant};

/// The definitions of this family.
pub static OPS: &[&dyn OpDef] = &[&PadDef];

const TYPES: [ElemType; 3] = [ElemType::F32, ElemType::F16, ElemType::I32];

struct PadDef;

impl OpDef for PadDef {
    fn names(&self) -> &'static [&'static str] {
        &["Pad"]
    }

    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String> {
        check_types(node, &[ElemType::F32, ElemType::F16, ElemType::I32, ElemType::I64])?;
        check_f16(node, opts)?;
        let kernel = PadKernel::of(node)?;
        if let Some(x) = node.input(0).and_then(|v| v.fixed_shape()) {
            kernel.infer(&[Some(&x)])?;
        }
        Ok(())
    }

    fn gpu_inputs(&self, _node: &Node) -> Vec<usize> {
        vec![0]
    }

    fn build(&self, node: &Node) -> Result<Box<dyn Kernel>, String> {
        Ok(Box::new(PadKernel::of(node)?))
    }

    fn variants(&self, caps: &DeviceCaps) -> Vec<ShaderVariant> {
        TYPES
            .into_iter()
            .filter(|&t| t != ElemType::F16 || caps.shader_f16)
            .map(|ty| ShaderVariant::Op(OpShader::new(PadSource { ty })))
            .collect()
    }
}

/// How values outside the input are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PadMode {
    Constant = 0,
    Reflect = 1,
    Edge = 2,
    Wrap = 3,
}

/// One Pad node with its constant inputs read.
#[derive(Clone, Debug, PartialEq)]
pub struct PadKernel {
    pub name: String,
    pub ty: ElemType,
    pub mode: PadMode,
    /// `[begin…, end…]` over `axes`.
    pub pads: Vec<i64>,
    /// The padded axes (possibly negative); `None`: all, in order.
    pub axes: Option<Vec<i64>>,
    /// The constant's bits in the kernel's compute type (f32 or i32).
    pub value: u32,
}

fn constant_input<'a>(node: &'a Node, i: usize, what: &str) -> Result<Option<&'a crate::graph::ValueInfo>, String> {
    match node.input(i).filter(|v| !v.name.is_empty()) {
        None => Ok(None),
        Some(v) if v.constant && v.small_data.is_some() => Ok(Some(v)),
        Some(v) => Err(format!("Pad {what} '{}' is computed at run time; only a constant {what} runs here", v.name)),
    }
}

impl PadKernel {
    pub fn of(node: &Node) -> Result<PadKernel, String> {
        let ty = input_type(node, 0, "data")?;
        if !TYPES.contains(&ty) {
            return Err(format!("Pad of {} is not supported (f32, f16 and i32 run here)", ty.name()));
        }
        let mode = match node.string("mode").unwrap_or("constant") {
            "constant" => PadMode::Constant,
            "reflect" => PadMode::Reflect,
            "edge" => PadMode::Edge,
            "wrap" => PadMode::Wrap,
            other => return Err(format!("Pad mode '{other}' is not constant, reflect, edge or wrap")),
        };
        let (pads, value, axes) = if node.since_version < 11 {
            let pads = node.ints("pads").ok_or("Pad without its pads attribute")?.to_vec();
            (pads, Some(node.float("value").unwrap_or(0.0) as f64), None)
        } else {
            let pads = constant_input(node, 1, "pads")?.ok_or("Pad without pads")?;
            let pads = pads.ints().ok_or_else(|| format!("Pad pads '{}' is not an int64 constant", pads.name))?;
            let value = match constant_input(node, 2, "constant_value")? {
                None => Some(0.0),
                Some(v) if ty == ElemType::I32 => v
                    .small_data
                    .as_deref()
                    .and_then(|d| (d.len() == 4).then(|| f64::from(i32::from_le_bytes([d[0], d[1], d[2], d[3]])))),
                Some(v) => v.scalar_f32().map(f64::from),
            };
            let axes = match constant_input(node, 3, "axes")? {
                None => None,
                Some(v) => Some(v.ints().ok_or_else(|| format!("Pad axes '{}' is not an int64 constant", v.name))?),
            };
            (pads, value, axes)
        };
        let value = value.ok_or("Pad constant_value is not a scalar of the data's type")?;
        let value = if ty == ElemType::I32 { (value as i32) as u32 } else { (value as f32).to_bits() };
        Ok(PadKernel { name: node.name.clone(), ty, mode, pads, axes, value })
    }

    /// `(begin, end)` per axis of an input of rank `rank`.
    fn per_axis(&self, rank: usize) -> Result<(Vec<i64>, Vec<i64>), String> {
        let axes: Vec<usize> = match &self.axes {
            None => (0..rank).collect(),
            Some(a) => a.iter().map(|&a| normalize_axis(a, rank)).collect::<Result<_, _>>()?,
        };
        if self.pads.len() != 2 * axes.len() {
            return Err(format!("{} pads for {} axes (want {})", self.pads.len(), axes.len(), 2 * axes.len()));
        }
        let (mut begin, mut end) = (vec![0; rank], vec![0; rank]);
        for (k, &a) in axes.iter().enumerate() {
            begin[a] = self.pads[k];
            end[a] = self.pads[axes.len() + k];
        }
        Ok((begin, end))
    }
}

impl Kernel for PadKernel {
    fn infer(&self, inputs: &[Option<&[u64]>]) -> Result<Vec<Vec<u64>>, String> {
        let err = |e: String| format!("Pad '{}': {e}", self.name);
        let x = inputs.first().copied().flatten().ok_or_else(|| err("no input".into()))?;
        if x.len() > MAX_DIMS {
            return Err(err(format!("rank {} exceeds {MAX_DIMS}", x.len())));
        }
        let (begin, end) = self.per_axis(x.len()).map_err(err)?;
        let mut out = Vec::new();
        for (d, &n) in x.iter().enumerate() {
            let o = n as i64 + begin[d] + end[d];
            if o < 0 {
                return Err(err(format!("pads {:?} crop axis {d} of {x:?} below 0", self.pads)));
            }
            if n == 0 && o > 0 && self.mode != PadMode::Constant {
                return Err(err(format!("axis {d} is empty: nothing to {:?}-pad from", self.mode)));
            }
            out.push(o as u64);
        }
        Ok(vec![out])
    }

    fn prepare(&self, cx: &PrepareCx<'_>, io: &KernelIo<'_>) -> Result<PreparedStep, GpuError> {
        let (x, y) = (io.input(0)?, io.output(0)?);
        check_bindings(&[x, y], cx.caps())?;
        let Some(planned) = self.dispatch(x.shape, y.shape, cx.caps())? else {
            return Ok(PreparedStep::default());
        };
        Ok(PreparedStep::one(planned.bind(cx.gpu, &[x.buf], &[y.buf])?))
    }

    fn plan(&self, inputs: &[Option<&[u64]>], caps: &DeviceCaps, _: &ExecOptions) -> Result<Option<StepPlan>, String> {
        let y = self.infer(inputs)?.remove(0);
        let x = inputs.first().copied().flatten().unwrap_or_default();
        let planned = self.dispatch(x, &y, caps).map_err(|e| format!("Pad '{}': {e}", self.name))?;
        let line = format!("Pad '{}' ({:?}): {x:?} -> {y:?}", self.name, self.mode);
        Ok(planned.map(|d| step_plan(line, "one invocation per output element", &[d])))
    }
}

impl PadKernel {
    /// The kernel padding X of `x` into Y of `y` (`None` when Y is empty): what `prepare`
    /// binds and `plan` reports.
    fn dispatch(&self, x: &[u64], y: &[u64], caps: &DeviceCaps) -> Result<Option<OpDispatch>, GpuError> {
        let count: u64 = y.iter().product();
        if count == 0 {
            return Ok(None);
        }
        let (begin, _) = self.per_axis(x.len()).map_err(GpuError::Invalid)?;
        let dims = |s: &[u64]| s.iter().map(|&d| to_u32("Pad dimension", d)).collect::<Result<Vec<_>, _>>();
        let begin: Vec<u32> = begin
            .iter()
            .map(|&b| {
                i32::try_from(b)
                    .map(|b| b as u32)
                    .map_err(|_| GpuError::Invalid(format!("Pad '{}': pad {b} is too large", self.name)))
            })
            .collect::<Result<_, _>>()?;
        let params = PadParams {
            head: [to_u32("Pad output elements", count)?, x.len() as u32, self.mode as u32, self.value],
            out_shape: packed(&dims(y)?)?,
            in_shape: packed(&dims(x)?)?,
            begin: packed(&begin)?,
        };
        let variant = ShaderVariant::Op(OpShader::new(PadSource { ty: self.ty }));
        Ok(Some(OpDispatch::new(variant, &params, grid_for(count, caps)?)))
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct PadParams {
    head: [u32; 4],
    out_shape: [[u32; 4]; 2],
    in_shape: [[u32; 4]; 2],
    begin: [[u32; 4]; 2],
}

/// The Pad kernel of one element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PadSource {
    pub ty: ElemType,
}

impl OpSource for PadSource {
    fn name(&self) -> String {
        format!("pad_{}", self.ty.name())
    }

    fn emit(&self) -> Result<String, String> {
        render(
            "pad.wgsl.j2",
            minijinja::context! {
                t => self.ty.name(), f16 => self.ty == ElemType::F16, int => self.ty == ElemType::I32,
            },
        )
    }

    fn capabilities(&self) -> naga::valid::Capabilities {
        crate::ops::capabilities_for(&[self.ty])
    }
}
