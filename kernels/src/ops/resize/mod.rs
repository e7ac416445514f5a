//! Resize (opsets 10 to 19) and Upsample (7, 9): nearest (every rounding mode) over any axes and
//! linear over the last two axes, with every coordinate transformation mode but
//! tf_crop_and_resize, scales or sizes (constants: they decide the output shape), `axes` and
//! `keep_aspect_ratio_policy`; f32 and f16 (`wgsl/resize.wgsl.j2`). Cubic, antialias and
//! tf_crop_and_resize decline with the reason.

use bytemuck::{Pod, Zeroable};

use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::graph::model::{Node, ValueInfo};
use crate::graph::support::PlacementOptions;
use crate::graph::ExecOptions;
use crate::ops::norm::{check_bindings, float_types, input_type, packed, MAX_DIMS};
use crate::ops::planned::{step_plan, OpDispatch};
use crate::ops::StepPlan;
use crate::ops::{
    check_f16, check_types, grid_for, normalize_axis, to_u32, Kernel, KernelIo, OpDef, PrepareCx, PreparedStep,
};
use crate::shader::{render, OpShader, OpSource, ShaderVariant};

mod table;

/// The definitions of this family.
pub static OPS: &[&dyn OpDef] = &[&ResizeDef];

struct ResizeDef;

impl OpDef for ResizeDef {
    fn names(&self) -> &'static [&'static str] {
        &["Resize", "Upsample"]
    }

    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String> {
        check_types(node, &[ElemType::F32, ElemType::F16, ElemType::I64])?;
        check_f16(node, opts)?;
        let kernel = ResizeKernel::of(node)?;
        if let Some(x) = node.input(0).and_then(|v| v.fixed_shape()) {
            kernel.geometry(&x)?;
        }
        Ok(())
    }

    fn gpu_inputs(&self, _node: &Node) -> Vec<usize> {
        vec![0]
    }

    fn build(&self, node: &Node) -> Result<Box<dyn Kernel>, String> {
        Ok(Box::new(ResizeKernel::of(node)?))
    }

    fn flops(&self, node: &Node) -> Option<f64> {
        let x = node.input(0)?.fixed_shape()?;
        let (out, _) = ResizeKernel::of(node).ok()?.geometry(&x).ok()?;
        Some(8.0 * out.iter().product::<u64>() as f64)
    }

    fn variants(&self, caps: &DeviceCaps) -> Vec<ShaderVariant> {
        float_types(caps).into_iter().map(|ty| ShaderVariant::Op(OpShader::new(ResizeSource { ty }))).collect()
    }
}

/// How the output size is given.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    Scales(Vec<f32>),
    Sizes(Vec<i64>),
}

/// One Resize or Upsample node with its constant inputs read.
#[derive(Clone, Debug, PartialEq)]
pub struct ResizeKernel {
    pub name: String,
    pub ty: ElemType,
    pub linear: bool,
    /// Index of the coordinate transformation mode (see `table.rs`).
    pub coordinates: u32,
    /// Index of the nearest mode (see `table.rs`).
    pub nearest: u32,
    pub target: Target,
    pub axes: Option<Vec<i64>>,
    /// `keep_aspect_ratio_policy`: 0 stretch, 1 not_larger, 2 not_smaller.
    pub keep_aspect: u32,
}

/// A constant input's values, or why it cannot be read.
fn floats_of(v: &ValueInfo) -> Option<Vec<f32>> {
    let data = v.small_data.as_ref()?;
    (v.elem_type == ElemType::F32.onnx())
        .then(|| data.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

fn constant(node: &Node, i: usize) -> Result<Option<&ValueInfo>, String> {
    match node.input(i).filter(|v| !v.name.is_empty()) {
        None => Ok(None),
        Some(v) if v.constant && v.small_data.is_some() => Ok(Some(v)),
        Some(v) => Err(format!("{} input '{}' is computed at run time; only constants run here", node.op_type, v.name)),
    }
}

impl ResizeKernel {
    pub fn of(node: &Node) -> Result<ResizeKernel, String> {
        let ty = input_type(node, 0, "X")?;
        if !ty.is_float() {
            return Err(format!("{} of {} is not supported (f32 and f16 run here)", node.op_type, ty.name()));
        }
        let op = node.op_type.as_str();
        let linear = match node.string("mode").unwrap_or("nearest") {
            "nearest" => false,
            "linear" | "bilinear" => true,
            other => return Err(format!("{op} mode '{other}' is not supported (nearest and linear run here)")),
        };
        if node.int("antialias").unwrap_or(0) != 0 {
            return Err(format!("{op} with antialias=1 is not supported"));
        }
        let legacy = op == "Upsample" || node.since_version < 11;
        let default_coords = if legacy { "asymmetric" } else { "half_pixel" };
        let coordinates = match node.string("coordinate_transformation_mode").unwrap_or(default_coords) {
            "half_pixel" => 0,
            "asymmetric" => 1,
            "pytorch_half_pixel" => 2,
            "align_corners" => 3,
            "tf_half_pixel_for_nn" => 4,
            "half_pixel_symmetric" => 5,
            other => return Err(format!("{op} coordinate_transformation_mode '{other}' is not supported")),
        };
        let nearest = if legacy {
            4
        } else {
            match node.string("nearest_mode").unwrap_or("round_prefer_floor") {
                "round_prefer_floor" => 0,
                "round_prefer_ceil" => 1,
                "floor" => 2,
                "ceil" => 3,
                other => return Err(format!("{op} nearest_mode '{other}' is not supported")),
            }
        };
        let keep_aspect = match node.string("keep_aspect_ratio_policy").unwrap_or("stretch") {
            "stretch" => 0,
            "not_larger" => 1,
            "not_smaller" => 2,
            other => return Err(format!("{op} keep_aspect_ratio_policy '{other}' is not supported")),
        };
        let target = Self::target(node, legacy)?;
        let axes = node.ints("axes").map(<[i64]>::to_vec);
        Ok(ResizeKernel { name: node.name.clone(), ty, linear, coordinates, nearest, target, axes, keep_aspect })
    }

    fn target(node: &Node, legacy: bool) -> Result<Target, String> {
        if node.op_type == "Upsample" && node.since_version < 9 {
            let scales = match node.attrs.get("scales") {
                Some(crate::graph::Attr::Floats(v)) => v.clone(),
                _ => return Err("Upsample without its scales attribute".into()),
            };
            return Ok(Target::Scales(scales));
        }
        let (scales_at, sizes_at) = if legacy { (1, None) } else { (2, Some(3)) };
        if !legacy && constant(node, 1)?.is_some_and(|v| v.small_data.as_ref().is_some_and(|d| !d.is_empty())) {
            return Err("Resize roi is only used by tf_crop_and_resize, which is not supported".into());
        }
        if let Some(v) = constant(node, scales_at)?.filter(|v| v.small_data.as_ref().is_some_and(|d| !d.is_empty())) {
            return floats_of(v).map(Target::Scales).ok_or_else(|| format!("scales '{}' is not float32", v.name));
        }
        if let Some(v) = sizes_at.map(|i| constant(node, i)).transpose()?.flatten() {
            return v.ints().map(Target::Sizes).ok_or_else(|| format!("sizes '{}' is not int64", v.name));
        }
        Err(format!("{} without scales or sizes", node.op_type))
    }

    /// The output shape and the scale of each axis for input `x`.
    pub fn geometry(&self, x: &[u64]) -> Result<(Vec<u64>, Vec<f32>), String> {
        let err = |e: String| format!("Resize '{}': {e}", self.name);
        let rank = x.len();
        if rank == 0 || rank > MAX_DIMS {
            return Err(err(format!("rank {rank} is not supported (1 to {MAX_DIMS})")));
        }
        let axes: Vec<usize> = match &self.axes {
            None => (0..rank).collect(),
            Some(a) => a.iter().map(|&a| normalize_axis(a, rank)).collect::<Result<_, _>>().map_err(err)?,
        };
        let (mut out, mut scales) = (x.to_vec(), vec![1.0f32; rank]);
        match &self.target {
            Target::Scales(s) => {
                if s.len() != axes.len() || s.iter().any(|&v| v.is_nan() || v <= 0.0 || !v.is_finite()) {
                    return Err(err(format!("scales {s:?} must be {} positive values", axes.len())));
                }
                for (k, &a) in axes.iter().enumerate() {
                    scales[a] = s[k];
                    out[a] = (s[k] * x[a] as f32) as u64;
                }
            }
            Target::Sizes(s) => {
                if s.len() != axes.len() || s.iter().any(|&v| v < 1) {
                    return Err(err(format!("sizes {s:?} must be {} positive values", axes.len())));
                }
                let ratios: Vec<f32> = axes.iter().zip(s).map(|(&a, &n)| n as f32 / x[a] as f32).collect();
                let pick = match self.keep_aspect {
                    1 => ratios.iter().copied().reduce(f32::min),
                    2 => ratios.iter().copied().reduce(f32::max),
                    _ => None,
                };
                for (k, &a) in axes.iter().enumerate() {
                    scales[a] = pick.unwrap_or(ratios[k]);
                    out[a] = if pick.is_some() { (scales[a] * x[a] as f32).round() as u64 } else { s[k] as u64 };
                }
            }
        }
        if out.contains(&0) || x.contains(&0) {
            return Err(err(format!("an empty input or output ({x:?} to {out:?})")));
        }
        if self.linear && (0..rank.saturating_sub(2)).any(|d| out[d] != x[d]) {
            return Err(err(format!("linear resize of {x:?} to {out:?}: only the last two axes may be resized")));
        }
        Ok((out, scales))
    }
}

impl Kernel for ResizeKernel {
    fn infer(&self, inputs: &[Option<&[u64]>]) -> Result<Vec<Vec<u64>>, String> {
        let x = inputs.first().copied().flatten().ok_or_else(|| format!("Resize '{}' has no input", self.name))?;
        Ok(vec![self.geometry(x)?.0])
    }

    fn prepare(&self, cx: &PrepareCx<'_>, io: &KernelIo<'_>) -> Result<PreparedStep, GpuError> {
        let (x, y) = (io.input(0)?, io.output(0)?);
        check_bindings(&[x, y], cx.caps())?;
        let (dispatch, table) = self.dispatch(x.shape, cx.caps())?;
        let table = cx.gpu.upload(bytemuck::cast_slice(&table), "Resize positions")?;
        Ok(PreparedStep::one(dispatch.bind(cx.gpu, &[x.buf, &table], &[y.buf])?))
    }

    fn plan(&self, inputs: &[Option<&[u64]>], caps: &DeviceCaps, _: &ExecOptions) -> Result<Option<StepPlan>, String> {
        let out = self.infer(inputs)?.remove(0);
        let x = inputs.first().copied().flatten().unwrap_or_default();
        let (planned, _) = self.dispatch(x, caps).map_err(|e| format!("Resize '{}': {e}", self.name))?;
        let mode = if self.linear { "linear" } else { "nearest" };
        let line = format!("Resize '{}' ({mode}): {x:?} -> {out:?}", self.name);
        Ok(Some(step_plan(line, "one invocation per output element", &[planned])))
    }
}

impl ResizeKernel {
    /// The kernel resizing X of `x`, and the table of input positions it reads: what `prepare`
    /// binds and `plan` reports.
    fn dispatch(&self, x: &[u64], caps: &DeviceCaps) -> Result<(OpDispatch, Vec<u32>), GpuError> {
        let (out, scales) = self.geometry(x).map_err(GpuError::Invalid)?;
        let dims = |s: &[u64]| s.iter().map(|&d| to_u32("Resize dimension", d)).collect::<Result<Vec<_>, _>>();
        let count: u64 = out.iter().product();
        let (in_shape, out_shape) = (packed(&dims(x)?)?, packed(&dims(&out)?)?);
        let (table, offsets) = table::build(self, x, &out, &scales);
        let head = [to_u32("Resize output elements", count)?, x.len() as u32, u32::from(self.linear), 0];
        let params = ResizeParams { head, in_shape, out_shape, offsets };
        let variant = ShaderVariant::Op(OpShader::new(ResizeSource { ty: self.ty }));
        Ok((OpDispatch::new(variant, &params, grid_for(count, caps)?), table))
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct ResizeParams {
    head: [u32; 4],
    in_shape: [[u32; 4]; 2],
    out_shape: [[u32; 4]; 2],
    offsets: [[u32; 4]; 2],
}

/// The Resize kernel of one element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ResizeSource {
    pub ty: ElemType,
}

impl OpSource for ResizeSource {
    fn name(&self) -> String {
        format!("resize_{}", self.ty.name())
    }

    fn emit(&self) -> Result<String, String> {
        render("resize.wgsl.j2", minijinja::context! { t => self.ty.name(), f16 => self.ty == ElemType::F16 })
    }

    fn capabilities(&self) -> naga::valid::Capabilities {
        crate::ops::capabilities_for(&[self.ty])
    }
}
