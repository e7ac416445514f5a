//! Conv (1-D and 2-D; 1-D runs as 2-D with height 1): im2col + GEMM, implicit GEMM, the
//! pointwise GEMM or the direct kernel, chosen by the conv planner, with a fused activation.

use std::collections::BTreeMap;

use crate::caps::DeviceCaps;
use crate::conv::{plan_conv_with, resolve, AutoPad, ConvAlgo, ConvAttrs, ConvInputs, ConvSchedule, Residual};
use crate::dtype::DType;
use crate::error::GpuError;
use crate::gemm::TilingChoice;
use crate::gemm::{Activation, CoopMode, GemmOptions};
use crate::graph::model::{Node, ValueInfo};
use crate::graph::support::{common_dtype, required, PlacementOptions};
use crate::graph::ExecOptions;
use crate::ops::matmul::CHOICES;
use crate::ops::{Kernel, KernelIo, OpDef, PrepareCx, PreparedStep, StepPlan};
use crate::runtime::ConvBindings;
use crate::shader::ShaderVariant;

/// The definitions of this family.
pub static OPS: &[&dyn OpDef] = &[&ConvDef];

struct ConvDef;

impl OpDef for ConvDef {
    fn names(&self) -> &'static [&'static str] {
        &["Conv"]
    }

    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String> {
        check_conv(node, opts)
    }

    fn build(&self, node: &Node) -> Result<Box<dyn Kernel>, String> {
        Ok(Box::new(ConvKernel::of(node)?))
    }

    fn flops(&self, node: &Node) -> Option<f64> {
        let dtype = node.input(0)?.dtype()?;
        let (x, w) = (node.input(0)?.fixed_shape()?, node.input(1)?.fixed_shape()?);
        let inputs = ConvInputs { x: &x, w: &w, bias: None, dtype };
        Some(2.0 * resolve(&inputs, &conv_attrs(node).ok()?, true).ok()?.macs() as f64)
    }

    fn variants(&self, caps: &DeviceCaps) -> Vec<ShaderVariant> {
        conv_variants(caps).into_values().collect()
    }
}

/// One Conv with its fused activation and residual. Inputs: X, W, the optional bias B and,
/// with a residual, the operand R of the output's shape.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvKernel {
    pub name: String,
    pub dtype: DType,
    pub has_bias: bool,
    pub attrs: ConvAttrs,
    pub activation: Activation,
    pub residual: Residual,
    /// The output stored channels last (a Transpose absorbed: `graph/fusion.rs`); `Some(true)`:
    /// a 2-D conv's pixels merged too (`[N, H·W, M]`).
    pub channels_last: Option<bool>,
}

impl ConvKernel {
    pub fn of(node: &Node) -> Result<ConvKernel, String> {
        let dtype = node.input(0).and_then(ValueInfo::dtype).ok_or("Conv input of unsupported type")?;
        Ok(ConvKernel {
            name: node.name.clone(),
            dtype,
            has_bias: node.input(2).is_some_and(|v| !v.name.is_empty()),
            attrs: conv_attrs(node)?,
            activation: Activation::None,
            residual: Residual::None,
            channels_last: None,
        })
    }

    fn problem(&self, inputs: &[Option<&[u64]>], cx1d: bool) -> Result<crate::conv::ConvProblem, String> {
        let get = |i: usize| inputs.get(i).copied().flatten().ok_or_else(|| format!("Conv input {i} is missing"));
        let bias = if self.has_bias { Some(get(2)?) } else { None };
        let inputs = ConvInputs { x: get(0)?, w: get(1)?, bias, dtype: self.dtype };
        let mut problem = resolve(&inputs, &self.attrs, cx1d).map_err(|e| format!("Conv '{}': {e}", self.name))?;
        problem.activation = self.activation;
        problem.residual = self.residual;
        if let Some(flat) = self.channels_last {
            problem.set_channels_last(flat);
        }
        // The residual is read at the output's index: the same elements (leading 1s aside).
        if self.residual != Residual::None && !crate::ops::same_elements(get(3)?, &problem.output_shape) {
            return Err(format!(
                "Conv '{}': the fused residual has shape {:?}, the output {:?}",
                self.name,
                get(3)?,
                problem.output_shape
            ));
        }
        Ok(problem)
    }
}

impl Kernel for ConvKernel {
    fn infer(&self, inputs: &[Option<&[u64]>]) -> Result<Vec<Vec<u64>>, String> {
        Ok(vec![self.problem(inputs, true)?.output_shape.clone()])
    }

    fn prepare(&self, cx: &PrepareCx<'_>, io: &KernelIo<'_>) -> Result<PreparedStep, GpuError> {
        let shapes: Vec<Option<&[u64]>> = io.inputs.iter().map(|t| t.map(|t| t.shape)).collect();
        let problem = self.problem(&shapes, cx.options.conv1d_as_conv2d).map_err(GpuError::Invalid)?;
        let plan = plan_conv_with(&problem, cx.caps(), &cx.options.gemm, cx.options.conv_algo)
            .map_err(|e| GpuError::Invalid(format!("Conv '{}': {e}", self.name)))?;
        let fallbacks = if plan.fallbacks.is_empty() {
            String::new()
        } else {
            format!(" (fell back: {})", plan.fallbacks.join("; "))
        };
        let line = format!("Conv '{}': {}{fallbacks}", self.name, plan.describe());
        let bias = if self.has_bias { Some(io.input(2)?.buf) } else { None };
        let residual = if self.residual != Residual::None { Some(io.input(3)?.buf) } else { None };
        let bindings =
            ConvBindings { x: io.input(0)?.buf, w: io.input(1)?.buf, bias, out: io.output(0)?.buf, residual };
        let dispatches = cx.gpu.prepare_conv(&plan, bindings)?;
        Ok(PreparedStep { dispatches, plan: Some(line) })
    }

    fn plan(
        &self,
        inputs: &[Option<&[u64]>],
        caps: &DeviceCaps,
        options: &ExecOptions,
    ) -> Result<Option<StepPlan>, String> {
        let problem = self.problem(inputs, options.conv1d_as_conv2d)?;
        let plan = plan_conv_with(&problem, caps, &options.gemm, options.conv_algo)
            .map_err(|e| format!("Conv '{}': {e}", self.name))?;
        let fallbacks = if plan.fallbacks.is_empty() {
            String::new()
        } else {
            format!(" (fell back: {})", plan.fallbacks.join("; "))
        };
        let conv_steps: Vec<(String, [u32; 3])> = match &plan.schedule {
            ConvSchedule::Im2colGemm { im2col: s, .. } | ConvSchedule::Direct { step: s } => {
                vec![(s.shader().name(), s.grid)]
            }
            _ => Vec::new(),
        };
        let gemm_steps = plan.gemm().into_iter().flat_map(|g| g.steps.iter().map(|s| (s.shader().name(), s.grid)));
        Ok(Some(StepPlan {
            line: format!("Conv '{}': {}{fallbacks}", self.name, plan.describe()),
            tiling: format!("{:?}{}", plan.path(), plan.gemm().map(|g| format!(" {:?}", g.tiling)).unwrap_or_default()),
            dispatches: conv_steps.into_iter().chain(gemm_steps).collect(),
        }))
    }
}

/// The Conv attributes of a node (ONNX defaults where absent).
pub fn conv_attrs(node: &Node) -> Result<ConvAttrs, String> {
    let auto_pad: AutoPad =
        node.string("auto_pad").unwrap_or("NOTSET").parse().map_err(|e: crate::PlanError| e.to_string())?;
    let ints = |name: &str| node.ints(name).map(<[i64]>::to_vec).unwrap_or_default();
    Ok(ConvAttrs {
        auto_pad,
        pads: ints("pads"),
        strides: ints("strides"),
        dilations: ints("dilations"),
        group: node.int("group").unwrap_or(1),
        kernel_shape: node.ints("kernel_shape").map(<[i64]>::to_vec),
    })
}

pub fn check_conv(node: &Node, opts: &PlacementOptions) -> Result<(), String> {
    let (x, w) = (required(node, 0, "X")?, required(node, 1, "W")?);
    let mut values = vec![x, w];
    let b = node.input(2).filter(|v| !v.name.is_empty());
    values.extend(b);
    let dtype = common_dtype(node, &values, opts)?;
    let attrs = conv_attrs(node)?;
    match x.rank().or(w.rank()) {
        Some(3) if !opts.conv1d_as_conv2d => return Err("1-D Conv needs conv1d_as_conv2d=1".into()),
        Some(3 | 4) | None => {}
        Some(r) => return Err(format!("{}-D Conv is not supported (only 1-D and 2-D)", r.saturating_sub(2))),
    }
    if let (Some(xs), Some(ws)) = (x.fixed_shape(), w.fixed_shape()) {
        let bs = b.map(ValueInfo::fixed_shape);
        if bs != Some(None) {
            let bs = bs.flatten();
            let inputs = ConvInputs { x: &xs, w: &ws, bias: bs.as_deref(), dtype };
            let problem = resolve(&inputs, &attrs, opts.conv1d_as_conv2d).map_err(|e| e.to_string())?;
            plan_conv_with(&problem, &opts.caps, &opts.gemm, opts.conv_algo).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// Conv shapes reaching every conv path: 3×3 (im2col + GEMM or implicit GEMM), 1×1 (GEMM on
/// X), depthwise (direct), a grouped conv with wide groups (per-group GEMMs), a 1-D conv, and
/// an RGB input (a reduction length of 27, not a multiple of 4).
const CONV_SHAPES: &[(&[u64], &[u64], i64)] = &[
    (&[1, 8, 16, 16], &[16, 8, 3, 3], 1),
    (&[2, 8, 16, 16], &[16, 8, 1, 1], 1),
    (&[1, 32, 16, 16], &[32, 1, 3, 3], 32),
    (&[1, 32, 16, 16], &[64, 8, 3, 3], 4),
    (&[1, 80, 300], &[384, 80, 3], 1),
    (&[1, 3, 16, 16], &[16, 3, 3, 3], 1),
];
const ALGOS: &[ConvAlgo] = &[ConvAlgo::Auto, ConvAlgo::Gemm, ConvAlgo::Direct, ConvAlgo::Implicit];

fn conv_variants(caps: &DeviceCaps) -> BTreeMap<String, ShaderVariant> {
    let mut out = BTreeMap::new();
    for dtype in [DType::F32, DType::F16] {
        for &(x, w, group) in CONV_SHAPES {
            let attrs = ConvAttrs { group, ..ConvAttrs::new() };
            let Ok(problem) = resolve(&ConvInputs { x, w, bias: Some(&[w[0]]), dtype }, &attrs, true) else {
                continue;
            };
            // Relu and Clip are uniforms of the base programs; the others need their `_xact` form,
            // a residual the `_res` one.
            let epilogues = [Residual::None, Residual::BeforeActivation]
                .into_iter()
                .flat_map(|r| [(Activation::None, r), (Activation::Silu, r)]);
            // Group-1 convs also store channels last (a Transpose absorbed).
            let layouts: &[bool] = if group == 1 { &[false, true] } else { &[false] };
            for ((activation, residual), &channels_last) in epilogues.flat_map(|e| layouts.iter().map(move |l| (e, l)))
            {
                let mut problem = problem.clone();
                problem.activation = activation;
                problem.residual = residual;
                if channels_last {
                    problem.set_channels_last(false);
                }
                for &algo in ALGOS {
                    for &choice in CHOICES {
                        // `f32_split=1` splits the f32 products the automatic rule leaves to SIMT,
                        // fused or (`f32_split_fused=0`) serial.
                        let split = GemmOptions { f32_split: CoopMode::On, ..GemmOptions::tiling(choice) };
                        let serial = GemmOptions { f32_split_fused: CoopMode::Off, ..split };
                        let mut all = vec![GemmOptions::tiling(choice), split, serial];
                        if choice == TilingChoice::Tile64 {
                            // The interim plans' (`graph/interim.rs`): stores in one loop.
                            all.push(GemmOptions { cooperative_matrix: CoopMode::Off, quick_compile: true, ..all[0] });
                        }
                        for options in all {
                            if let Ok(plan) = plan_conv_with(&problem, caps, &options, algo) {
                                out.extend(plan.variants().into_iter().map(|v| (v.name(), v)));
                            }
                        }
                    }
                }
            }
        }
    }
    out
}
