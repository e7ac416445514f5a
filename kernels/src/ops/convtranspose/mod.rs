//! ConvTranspose (1-D as 2-D of height 1, and 2-D) with groups, strides, dilations, pads (explicit,
//! VALID, SAME_UPPER/SAME_LOWER), output_padding and output_shape (pads then follow ONNX's
//! total-padding rule). Two schedules: with enough input channels per group, one GEMM through
//! the GEMM engine then a gather (`gemm.rs`, `convtranspose_col2im.wgsl.j2`); otherwise the
//! direct kernel (`convtranspose_direct.wgsl.j2`), one invocation per output element gathering
//! its taps. The session option `conv_algorithm` forces either.

mod gemm;

pub use gemm::{col_bytes, gemm_suits, GEMM_MIN_CHANNELS};

use bytemuck::{Pod, Zeroable};

use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::graph::model::Node;
use crate::graph::support::PlacementOptions;
use crate::graph::ExecOptions;
use crate::ops::norm::{check_bindings, float_types, input_type};
use crate::ops::planned::{step_plan, OpDispatch};
use crate::ops::StepPlan;
use crate::ops::{check_f16, check_types, grid_for, to_u32, Kernel, KernelIo, OpDef, PrepareCx, PreparedStep};
use crate::runtime::GemmBindings;
use crate::shader::{render, OpShader, OpSource, ShaderVariant};

/// The definitions of this family.
pub static OPS: &[&dyn OpDef] = &[&ConvTransposeDef];

struct ConvTransposeDef;

impl OpDef for ConvTransposeDef {
    fn names(&self) -> &'static [&'static str] {
        &["ConvTranspose"]
    }

    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String> {
        check_types(node, &[ElemType::F32, ElemType::F16])?;
        check_f16(node, opts)?;
        let kernel = ConvTransposeKernel::of(node)?;
        let shapes: Option<Vec<Vec<u64>>> = (0..2).map(|i| node.input(i).and_then(|v| v.fixed_shape())).collect();
        if let Some(s) = shapes {
            let b = [s[1].get(1).copied().unwrap_or(0) * kernel.group];
            kernel.geometry(&s[0], &s[1], kernel.has_bias.then_some(&b[..]))?;
        }
        Ok(())
    }

    fn build(&self, node: &Node) -> Result<Box<dyn Kernel>, String> {
        Ok(Box::new(ConvTransposeKernel::of(node)?))
    }

    fn flops(&self, node: &Node) -> Option<f64> {
        let (x, w) = (node.input(0)?.fixed_shape()?, node.input(1)?.fixed_shape()?);
        Some(2.0 * (x.iter().product::<u64>() * w[1..].iter().product::<u64>()) as f64)
    }

    fn variants(&self, caps: &DeviceCaps) -> Vec<ShaderVariant> {
        let sources = float_types(caps).into_iter().flat_map(|ty| [false, true].map(|col2im| (ty, col2im)));
        sources.map(|(ty, col2im)| ShaderVariant::Op(OpShader::new(ConvTransposeSource { ty, col2im }))).collect()
    }
}

/// One ConvTranspose node. Inputs: X, W `[C, M / group, k…]`, optional B `[M]`.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvTransposeKernel {
    pub name: String,
    pub ty: ElemType,
    pub has_bias: bool,
    pub group: u64,
    pub strides: Vec<i64>,
    pub dilations: Vec<i64>,
    pub pads: Vec<i64>,
    pub output_padding: Vec<i64>,
    pub kernel_shape: Option<Vec<i64>>,
    /// The spatial output size asked for (a full `[N, C, …]` shape is also taken).
    pub output_shape: Option<Vec<i64>>,
    /// `Some(upper)` for SAME_UPPER / SAME_LOWER.
    pub same: Option<bool>,
}

/// What the kernel reads: per axis (h, w) of the 2-D problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvTransposeGeometry {
    pub out_shape: Vec<u64>,
    pub kernel: [u32; 2],
    pub stride: [u32; 2],
    pub dilation: [u32; 2],
    pub pad: [u32; 2],
    pub x_dims: [u32; 3],
    pub y_dims: [u32; 3],
}

impl ConvTransposeKernel {
    pub fn of(node: &Node) -> Result<ConvTransposeKernel, String> {
        let ty = input_type(node, 0, "X")?;
        if input_type(node, 1, "W")? != ty {
            return Err(format!("ConvTranspose '{}': W has another element type than X", node.name));
        }
        let auto_pad = node.string("auto_pad").unwrap_or("NOTSET").to_string();
        if !matches!(auto_pad.as_str(), "NOTSET" | "VALID" | "SAME_UPPER" | "SAME_LOWER" | "") {
            return Err(format!("ConvTranspose auto_pad '{auto_pad}' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER"));
        }
        let valid = auto_pad == "VALID";
        let ints = |name: &str| node.ints(name).map(<[i64]>::to_vec).unwrap_or_default();
        let group = node.int("group").unwrap_or(1);
        Ok(ConvTransposeKernel {
            name: node.name.clone(),
            ty,
            has_bias: node.input(2).is_some_and(|v| !v.name.is_empty()),
            group: u64::try_from(group).ok().filter(|&g| g > 0).ok_or(format!("group {group} is not positive"))?,
            strides: ints("strides"),
            dilations: ints("dilations"),
            pads: if valid { Vec::new() } else { ints("pads") },
            output_padding: ints("output_padding"),
            kernel_shape: node.ints("kernel_shape").map(<[i64]>::to_vec),
            output_shape: node.ints("output_shape").map(<[i64]>::to_vec),
            same: match auto_pad.as_str() {
                "SAME_UPPER" => Some(true),
                "SAME_LOWER" => Some(false),
                _ => None,
            },
        })
    }

    pub fn geometry(&self, x: &[u64], w: &[u64], bias: Option<&[u64]>) -> Result<ConvTransposeGeometry, String> {
        let err = |e: String| format!("ConvTranspose '{}': {e}", self.name);
        let spatial = match (x.len(), w.len()) {
            (3, 3) => 1,
            (4, 4) => 2,
            _ => return Err(err(format!("X {x:?} and W {w:?} must both be 1-D or 2-D convolutions"))),
        };
        if x[1] != w[0] || x[1] % self.group != 0 {
            return Err(err(format!("X {x:?} has {} channels; W {w:?} with group {} disagrees", x[1], self.group)));
        }
        let m = w[1] * self.group;
        if let Some(b) = bias {
            if b != [m] {
                return Err(err(format!("bias {b:?} must be [{m}]")));
            }
        }
        if let Some(ks) = &self.kernel_shape {
            if ks.len() != spatial || ks.iter().zip(&w[2..]).any(|(&k, &d)| k < 0 || k as u64 != d) {
                return Err(err(format!("kernel_shape {ks:?} does not match W {w:?}")));
            }
        }
        let per_axis = |v: &[i64], name: &str, default: i64, min: i64| -> Result<Vec<i64>, String> {
            if v.is_empty() {
                return Ok(vec![default; spatial]);
            }
            if v.len() != spatial || v.iter().any(|&d| d < min) {
                return Err(err(format!("{name} {v:?} must be {spatial} values of at least {min}")));
            }
            Ok(v.to_vec())
        };
        let strides = per_axis(&self.strides, "strides", 1, 1)?;
        let dilations = per_axis(&self.dilations, "dilations", 1, 1)?;
        let out_pad = per_axis(&self.output_padding, "output_padding", 0, 0)?;
        let pads = if self.pads.is_empty() { vec![0; 2 * spatial] } else { self.pads.clone() };
        if pads.len() != 2 * spatial || pads.iter().any(|&p| p < 0) {
            return Err(err(format!("pads {pads:?} must be {} values of at least 0", 2 * spatial)));
        }
        let mut g = ConvTransposeGeometry {
            out_shape: vec![x[0], m],
            kernel: [1; 2],
            stride: [1; 2],
            dilation: [1; 2],
            pad: [0; 2],
            x_dims: [to_u32("channels", x[1]).map_err(|e| err(e.to_string()))?, 1, 1],
            y_dims: [to_u32("channels", m).map_err(|e| err(e.to_string()))?, 1, 1],
        };
        for i in 0..spatial {
            let a = 2 - spatial + i;
            let (input, k) = (x[2 + i] as i64, w[2 + i] as i64);
            if out_pad[i] >= strides[i].max(dilations[i]) {
                return Err(err(format!("output_padding {out_pad:?} must be below the stride or dilation")));
            }
            let full = strides[i] * (input - 1) + out_pad[i] + (k - 1) * dilations[i] + 1;
            let target = match (&self.output_shape, self.same) {
                (Some(s), _) if s.len() >= spatial => Some(s[s.len() - spatial + i]),
                (Some(s), _) => return Err(err(format!("output_shape {s:?} has fewer than {spatial} values"))),
                (None, Some(_)) => Some(input * strides[i]),
                (None, None) => None,
            };
            let (head, tail) = match target {
                // ONNX: the total padding splits with the odd pixel at the end for SAME_UPPER,
                // at the start otherwise.
                // A larger output than the full one pads the end (a negative trailing pad).
                Some(t) => {
                    let (total, half) = (full - t, (full - t).div_euclid(2));
                    let (head, tail) =
                        if self.same == Some(true) { (half, total - half) } else { (total - half, half) };
                    if head < 0 || t < 1 {
                        return Err(err(format!("output size {t} of axis {i} is out of reach (full size {full})")));
                    }
                    (head, tail)
                }
                None => (pads[i], pads[spatial + i]),
            };
            let out = full - head - tail;
            if out < 1 || input < 1 || k < 1 {
                return Err(err(format!("the output of axis {i} would be empty ({out})")));
            }
            let u = |v: i64| u32::try_from(v).map_err(|_| err(format!("{v} is too large")));
            g.out_shape.push(out as u64);
            (g.kernel[a], g.stride[a], g.dilation[a], g.pad[a]) =
                (u(k)?, u(strides[i])?, u(dilations[i])?, u(pads[i])?);
            (g.x_dims[1 + a], g.y_dims[1 + a]) = (u(input)?, u(out)?);
        }
        Ok(g)
    }
}

impl Kernel for ConvTransposeKernel {
    fn infer(&self, inputs: &[Option<&[u64]>]) -> Result<Vec<Vec<u64>>, String> {
        let get = |i: usize| inputs.get(i).copied().flatten();
        let (x, w) = (get(0), get(1));
        let (x, w) = x.zip(w).ok_or_else(|| format!("ConvTranspose '{}': X or W is missing", self.name))?;
        let bias = if self.has_bias { get(2) } else { None };
        Ok(vec![self.geometry(x, w, bias)?.out_shape])
    }

    fn prepare(&self, cx: &PrepareCx<'_>, io: &KernelIo<'_>) -> Result<PreparedStep, GpuError> {
        let (x, w, y) = (io.input(0)?, io.input(1)?, io.output(0)?);
        let bias = if self.has_bias { Some(io.input(2)?) } else { None };
        check_bindings(&[x, w, y], cx.caps())?;
        let schedule = self.schedule(x.shape, w.shape, bias.map(|b| b.shape), cx.caps(), cx.options)?;
        // Without a bias W stands in for it (never read: has_bias is 0).
        let b = bias.map_or(w.buf, |b| b.buf);
        match schedule {
            Schedule::Direct(planned) => Ok(PreparedStep::one(planned.bind(cx.gpu, &[x.buf, w.buf, b], &[y.buf])?)),
            Schedule::Gemm(s) => {
                let cols = cx.gpu.storage_buffer(s.col_bytes, "ConvTranspose cols")?;
                let io = GemmBindings { a: w.buf, b: x.buf, bias: None, out: &cols };
                let mut dispatches = cx.gpu.prepare_gemm(&s.gemm, io)?;
                dispatches.push(s.col2im.bind(cx.gpu, &[&cols, b], &[y.buf])?);
                Ok(PreparedStep { dispatches, plan: Some(self.describe(x.shape, w.shape, &s)) })
            }
        }
    }

    fn plan(
        &self,
        inputs: &[Option<&[u64]>],
        caps: &DeviceCaps,
        options: &ExecOptions,
    ) -> Result<Option<StepPlan>, String> {
        let out = self.infer(inputs)?.remove(0);
        let get = |i: usize| inputs.get(i).copied().flatten().unwrap_or_default();
        let bias = if self.has_bias { inputs.get(2).copied().flatten() } else { None };
        let what = format!("ConvTranspose '{}'", self.name);
        let schedule = self.schedule(get(0), get(1), bias, caps, options).map_err(|e| format!("{what}: {e}"))?;
        let line = format!("{what}: X {:?} W {:?} -> {out:?}", get(0), get(1));
        Ok(Some(match schedule {
            Schedule::Direct(planned) => {
                step_plan(line, "direct gather, one invocation per output element", &[planned])
            }
            Schedule::Gemm(s) => {
                let mut dispatches: Vec<_> = s.gemm.steps.iter().map(|st| (st.shader().name(), st.grid)).collect();
                dispatches.push(s.col2im.entry());
                StepPlan { line: self.describe(get(0), get(1), &s), tiling: format!("{:?}", s.gemm.tiling), dispatches }
            }
        }))
    }
}

/// How one ConvTranspose runs at its shapes.
enum Schedule {
    Direct(OpDispatch),
    Gemm(Box<gemm::GemmSchedule>),
}

impl ConvTransposeKernel {
    /// The schedule at these shapes: what `prepare` binds and `plan` reports.
    fn schedule(
        &self,
        x: &[u64],
        w: &[u64],
        bias: Option<&[u64]>,
        caps: &DeviceCaps,
        options: &ExecOptions,
    ) -> Result<Schedule, GpuError> {
        let g = self.geometry(x, w, bias).map_err(GpuError::Invalid)?;
        let count: u64 = g.out_shape.iter().product();
        let params = ConvTransposeParams {
            head: [
                to_u32("ConvTranspose output elements", count)?,
                to_u32("output channels per group", w[1])?,
                to_u32("input channels per group", x[1] / self.group)?,
                u32::from(bias.is_some()),
            ],
            x_dims: [g.x_dims[0], g.x_dims[1], g.x_dims[2], 0],
            y_dims: [g.y_dims[0], g.y_dims[1], g.y_dims[2], 0],
            geometry: [g.kernel, g.stride, g.dilation, g.pad],
        };
        let grid = grid_for(count, caps)?;
        let cols = col_bytes(x, w, self.group, self.ty);
        let col2im = gemm_suits(x[1] / self.group, cols, options.conv_algo, caps);
        let variant = ShaderVariant::Op(OpShader::new(ConvTransposeSource { ty: self.ty, col2im }));
        let planned = OpDispatch::new(variant, &params, grid);
        if !col2im {
            return Ok(Schedule::Direct(planned));
        }
        let s = gemm::schedule(x, w, self.group, self.ty, planned, caps, &options.gemm)?;
        Ok(Schedule::Gemm(Box::new(s)))
    }

    /// The plan log's line of the GEMM schedule.
    fn describe(&self, x: &[u64], w: &[u64], s: &gemm::GemmSchedule) -> String {
        let p = &s.problem;
        let fallbacks = s.gemm.fallback_note();
        format!(
            "ConvTranspose '{}': X {x:?} W {w:?}: GEMM M={} N={} K={} batch={} {:?} + col2im{fallbacks}",
            self.name,
            p.m,
            p.n,
            p.k,
            p.batch_count(),
            s.gemm.tiling
        )
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct ConvTransposeParams {
    head: [u32; 4],
    x_dims: [u32; 4],
    y_dims: [u32; 4],
    geometry: [[u32; 2]; 4],
}

/// A ConvTranspose kernel of one element type: the direct one, or the gather after the GEMM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConvTransposeSource {
    pub ty: ElemType,
    pub col2im: bool,
}

impl OpSource for ConvTransposeSource {
    fn name(&self) -> String {
        let kind = if self.col2im { "col2im" } else { "direct" };
        format!("convtranspose_{kind}_{}", self.ty.name())
    }

    fn emit(&self) -> Result<String, String> {
        let context = minijinja::context! { t => self.ty.name(), f16 => self.ty == ElemType::F16 };
        render(if self.col2im { "convtranspose_col2im.wgsl.j2" } else { "convtranspose_direct.wgsl.j2" }, context)
    }

    fn capabilities(&self) -> naga::valid::Capabilities {
        crate::ops::capabilities_for(&[self.ty])
    }
}
