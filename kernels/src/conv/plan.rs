//! The conv planner: a pure function from a [`ConvProblem`] and a device's caps to the
//! dispatches that compute it.
//!
//! A convolution over NCHW is a GEMM batched over (image, group):
//! `out[n, g] (M/G × OH·OW) = W[g] (M/G × C/G·kh·kw) · col[n, g] (C/G·kh·kw × OH·OW)`.
//! W in OIHW order is already `[G, M/G, C/G·kh·kw]` row-major, the im2col matrix
//! `[N, C·kh·kw, OH·OW]` is `[N, G, C/G·kh·kw, OH·OW]`, and the contiguous GEMM output
//! `[N, G, M/G, OH·OW]` is NCHW, so groups are only batch strides. A 1×1 kernel with unit
//! stride and no padding reads X itself as `col`. When a group has so few output channels that
//! its GEMM would be degenerate (depthwise), a direct kernel runs instead.
//!
//! A conv that absorbed the Transpose moving its channels last computes the same product and
//! stores it through transposed strides (`[N, OH·OW, M]`), reading a residual the same way.
//!
//! The implicit GEMM computes the same product without the im2col buffer: the vec4 SIMT GEMM
//! kernel gathers its B tiles from X on load (`implicit_b`), the conv geometry in a second
//! uniform. [`prefer_implicit`] is the one place `Auto` chooses between the two.

use super::problem::ConvProblem;
use super::variant::{ConvParams, ConvVariant, ImplicitConvParams};
use crate::caps::DeviceCaps;
use crate::dtype::DType;
use crate::error::PlanError;
use crate::gemm::layout::check_binding;
use crate::gemm::{
    fold_grid, plan_gemm, plan_gemm_implicit, Epilogue, GemmOptions, GemmPlan, GemmProblem, MatrixLayout,
};

/// A group with at most this many output channels makes a GEMM whose tile rows mostly idle
/// (even the GEMV computes 4 rows per workgroup); the direct kernel keeps every lane busy.
pub const DIRECT_MAX_M_PER_GROUP: u32 = 4;
/// Beyond this reduction length per output, the direct kernel's lack of operand reuse costs
/// more than the idle GEMM rows.
pub const DIRECT_MAX_K: u64 = 1024;
/// im2col rows one invocation writes at most; more only lengthens the tail.
const IM2COL_MAX_K_PER_THREAD: u64 = 16;

/// The algorithm for a conv: chosen by the planner (`Auto`) or forced (tests, tools).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ConvAlgo {
    #[default]
    Auto,
    /// im2col + GEMM (or the GEMM alone on X for a pointwise conv), batched over groups.
    Gemm,
    /// The direct kernel, any group count.
    Direct,
    /// Implicit GEMM: the GEMM gathers im2col tiles from X on load, no scratch buffer; any
    /// group count (groups are batch strides, as for `Gemm`).
    Implicit,
}

impl std::str::FromStr for ConvAlgo {
    type Err = String;
    /// The values of the session option `conv_algorithm`.
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "auto" | "" => Ok(ConvAlgo::Auto),
            "im2col" => Ok(ConvAlgo::Gemm),
            "implicit" => Ok(ConvAlgo::Implicit),
            "direct" => Ok(ConvAlgo::Direct),
            _ => Err(format!("'{s}' is not one of auto, im2col, implicit, direct")),
        }
    }
}

/// What a plan runs, for logs and decision tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConvPath {
    /// 1×1, stride 1, no padding: one GEMM reading X directly.
    Pointwise,
    /// im2col into a scratch buffer, then one GEMM batched over images and groups.
    Im2colGemm,
    /// The direct grouped kernel.
    Direct,
    /// One GEMM gathering its B operand from X (implicit im2col), batched over images and groups.
    Implicit,
}

/// One dispatch of a conv kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvStep {
    pub variant: ConvVariant,
    pub params: ConvParams,
    pub grid: [u32; 3],
}

impl ConvSchedule {
    /// Sets the residual's flag bits on the steps that store the result (the direct kernel,
    /// the GEMM products writing the output, the split-K reduction), not on split-K partials.
    fn add_residual(&mut self, residual: super::Residual) {
        let flags = residual.flags();
        match self {
            ConvSchedule::Direct { step } => step.params.flags |= flags,
            ConvSchedule::Pointwise { gemm }
            | ConvSchedule::Im2colGemm { gemm, .. }
            | ConvSchedule::Implicit { gemm, .. } => gemm.add_output_flags(flags),
        }
    }

    /// Stores each image's `[M, pixels]` product channels last (`[pixels, M]`): both operands
    /// keep their layouts (a transposed-operand product compiled 1.4× slower cold on an H100,
    /// issue 15) and the output, with the residual, goes through transposed strides.
    fn store_channels_last(&mut self, m: u32) {
        match self {
            ConvSchedule::Pointwise { gemm } | ConvSchedule::Im2colGemm { gemm, .. } => gemm.set_output_strides(1, m),
            ConvSchedule::Implicit { .. } | ConvSchedule::Direct { .. } => {}
        }
    }
}

impl ConvStep {
    /// The program this step runs (the im2col gather has no epilogue).
    pub fn shader(&self) -> crate::shader::ShaderVariant {
        match self.variant {
            ConvVariant::Im2col { .. } => self.variant.into(),
            ConvVariant::Direct { .. } => {
                crate::shader::ShaderVariant::with_epilogue(self.variant.into(), self.params.flags)
            }
        }
    }
}

/// The dispatches of a plan, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum ConvSchedule {
    /// `gemm` binds A = W, B = X.
    Pointwise { gemm: GemmPlan },
    /// `im2col` writes the scratch buffer (`ConvPlan::col_bytes`); `gemm` binds A = W, B = it.
    Im2colGemm { im2col: ConvStep, gemm: GemmPlan },
    /// Binds X, W, the bias and the output.
    Direct { step: ConvStep },
    /// `gemm` binds A = W, B = X (gathered) and `geometry` as the second uniform.
    Implicit { gemm: GemmPlan, geometry: ImplicitConvParams },
}

/// How a conv runs on a device.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvPlan {
    pub problem: ConvProblem,
    pub schedule: ConvSchedule,
    /// Bytes of the im2col scratch buffer (0 when there is none).
    pub col_bytes: u64,
    /// Why algorithms preferred over the chosen one were rejected on this device.
    pub fallbacks: Vec<String>,
}

impl ConvPlan {
    pub fn path(&self) -> ConvPath {
        match self.schedule {
            ConvSchedule::Pointwise { .. } => ConvPath::Pointwise,
            ConvSchedule::Im2colGemm { .. } => ConvPath::Im2colGemm,
            ConvSchedule::Direct { .. } => ConvPath::Direct,
            ConvSchedule::Implicit { .. } => ConvPath::Implicit,
        }
    }

    /// The GEMM of the plan, if it has one.
    pub fn gemm(&self) -> Option<&GemmPlan> {
        match &self.schedule {
            ConvSchedule::Pointwise { gemm }
            | ConvSchedule::Im2colGemm { gemm, .. }
            | ConvSchedule::Implicit { gemm, .. } => Some(gemm),
            ConvSchedule::Direct { .. } => None,
        }
    }

    /// The conv-specific dispatches of the plan (im2col or direct), in order.
    pub fn conv_steps(&self) -> Vec<&ConvStep> {
        match &self.schedule {
            ConvSchedule::Pointwise { .. } | ConvSchedule::Implicit { .. } => Vec::new(),
            ConvSchedule::Im2colGemm { im2col, .. } => vec![im2col],
            ConvSchedule::Direct { step } => vec![step],
        }
    }

    /// Every shader the plan needs.
    pub fn variants(&self) -> Vec<crate::shader::ShaderVariant> {
        let conv = self.conv_steps().into_iter().map(ConvStep::shader);
        let gemm = self.gemm().into_iter().flat_map(GemmPlan::shaders);
        conv.chain(gemm).collect()
    }

    /// One-line summary for logs and decision tables.
    pub fn describe(&self) -> String {
        let names: Vec<String> = self.variants().iter().map(|v| v.name()).collect();
        let tiling = self.gemm().map(|g| format!(" {:?}", g.tiling)).unwrap_or_default();
        let layout = if self.problem.channels_last { ", channels last" } else { "" };
        format!("{:?}{tiling}{layout} [{}]", self.path(), names.join(" + "))
    }
}

/// Plans `problem` on `caps`; `gemm` (tiling, tensor cores, precision) applies to the GEMM, if
/// the plan has one.
pub fn plan_conv(problem: &ConvProblem, caps: &DeviceCaps, gemm: &GemmOptions) -> Result<ConvPlan, PlanError> {
    plan_conv_with(problem, caps, gemm, ConvAlgo::Auto)
}

/// [`plan_conv`] with the algorithm forced (`Auto` lets the planner choose).
pub fn plan_conv_with(
    problem: &ConvProblem,
    caps: &DeviceCaps,
    gemm: &GemmOptions,
    algo: ConvAlgo,
) -> Result<ConvPlan, PlanError> {
    if problem.dtype == DType::F16 && !caps.shader_f16 {
        return Err(PlanError::F16Unsupported);
    }
    check_bindings(problem, caps)?;
    // The short-K split-K rule was measured on plain products; convs keep their products unsplit.
    let gemm = &GemmOptions { unsplit_short_k: true, ..*gemm };
    let mut fallbacks = Vec::new();
    if problem.channels_last {
        // Only the explicit GEMMs (im2col or pointwise) store through transposed strides.
        if problem.group != 1 {
            return Err(PlanError::Invalid("a channels-last output needs group 1".into()));
        }
        if !matches!(algo, ConvAlgo::Auto | ConvAlgo::Gemm) {
            fallbacks.push(format!("{algo:?}: a channels-last output runs im2col + GEMM"));
        }
        let (mut schedule, col_bytes) = gemm_path(problem, caps, gemm)?;
        schedule.store_channels_last(problem.m);
        schedule.add_residual(problem.residual);
        return Ok(ConvPlan { problem: problem.clone(), schedule, col_bytes, fallbacks });
    }
    let candidates = match algo {
        ConvAlgo::Auto if prefers_direct(problem) => vec![ConvAlgo::Direct, ConvAlgo::Gemm],
        ConvAlgo::Auto if prefer_implicit(problem, caps) => {
            let limit = caps.binding_limit();
            fallbacks.push(format!(
                "Gemm: the im2col buffer would need {} bytes; one binding holds at most {limit}",
                im2col_bytes(problem)
            ));
            vec![ConvAlgo::Implicit]
        }
        ConvAlgo::Auto | ConvAlgo::Gemm => vec![ConvAlgo::Gemm],
        ConvAlgo::Direct => vec![ConvAlgo::Direct],
        // A forced implicit GEMM that cannot run here (no vec4 SIMT kernel fits the device)
        // falls back to what `Auto` would run, with the reason in `fallbacks`.
        ConvAlgo::Implicit if prefers_direct(problem) => vec![ConvAlgo::Implicit, ConvAlgo::Direct, ConvAlgo::Gemm],
        ConvAlgo::Implicit => vec![ConvAlgo::Implicit, ConvAlgo::Gemm],
    };
    let mut first_error = None;
    for candidate in candidates {
        let built = match candidate {
            ConvAlgo::Direct => direct(problem, caps),
            ConvAlgo::Implicit => implicit(problem, caps, gemm),
            _ => gemm_path(problem, caps, gemm),
        };
        match built {
            Ok((mut schedule, col_bytes)) => {
                schedule.add_residual(problem.residual);
                return Ok(ConvPlan { problem: problem.clone(), schedule, col_bytes, fallbacks });
            }
            Err(e) => {
                fallbacks.push(format!("{candidate:?}: {e}"));
                first_error.get_or_insert(e);
            }
        }
    }
    Err(first_error.unwrap_or_else(|| PlanError::Invalid("no conv algorithm was tried".into())))
}

/// Whether `Auto` runs a conv with `group == 1` (and not pointwise) as an implicit GEMM rather
/// than im2col + GEMM: today only when the im2col buffer cannot exist on this device (larger
/// than one storage binding or buffer). This is the one place to change once both paths are
/// measured (`kernel_bench --conv` prints them side by side).
pub fn prefer_implicit(p: &ConvProblem, caps: &DeviceCaps) -> bool {
    p.group == 1 && !p.is_pointwise() && im2col_bytes(p) > caps.binding_limit()
}

/// Bytes of the im2col buffer `[N, C·kh·kw, OH·OW]` the explicit path would allocate.
pub fn im2col_bytes(p: &ConvProblem) -> u64 {
    p.n as u64 * p.c as u64 * p.kh as u64 * p.kw as u64 * p.pixels() * p.dtype.size()
}

/// Depthwise-like: few output channels per group and a short reduction. Grouped convs only;
/// `group == 1` always takes a GEMM (im2col or implicit).
fn prefers_direct(p: &ConvProblem) -> bool {
    p.group > 1 && p.m_per_group() <= DIRECT_MAX_M_PER_GROUP && p.k_per_group() <= DIRECT_MAX_K
}

/// The weights in the layout the plan reads. Every current schedule reads OIHW (already the
/// `[G, M/G, C/G·kh·kw]` row-major A of the GEMM), so this checks the length and copies; it is
/// the single place to change when a schedule wants another layout.
pub fn prepack_weights(plan: &ConvPlan, weights: &[u8]) -> Result<Vec<u8>, PlanError> {
    let want = plan.problem.weight_len() * plan.problem.dtype.size();
    if weights.len() as u64 != want {
        return Err(PlanError::Invalid(format!("the weights have {} bytes; the plan needs {want}", weights.len())));
    }
    Ok(weights.to_vec())
}

type Built = Result<(ConvSchedule, u64), PlanError>;

fn gemm_path(p: &ConvProblem, caps: &DeviceCaps, options: &GemmOptions) -> Built {
    let pix = p.pixels();
    if p.is_pointwise() {
        // X[n] is [C, H·W] = [C, OH·OW]: exactly the col matrix.
        let gemm = plan_gemm(&gemm_problem(p, p.c as u64 * pix)?, caps, options)?;
        return Ok((ConvSchedule::Pointwise { gemm }, 0));
    }
    let col_k = p.c as u64 * p.kh as u64 * p.kw as u64;
    let col_bytes = im2col_bytes(p);
    check_binding("the im2col buffer", col_bytes, caps)?;
    let im2col = im2col_step(p, caps, col_k)?;
    let gemm = plan_gemm(&gemm_problem(p, col_k * pix)?, caps, options)?;
    Ok((ConvSchedule::Im2colGemm { im2col, gemm }, col_bytes))
}

/// The implicit GEMM: the GEMM of [`gemm_problem`] whose B batch strides step through X
/// (an image is `C·H·W` elements, a group `C/G·H·W`), gathered with `geometry`.
fn implicit(p: &ConvProblem, caps: &DeviceCaps, options: &GemmOptions) -> Built {
    let plane = p.h as u64 * p.w as u64;
    // B is never read through its matrix layout, which describes the `[K, pixels]` it stands for.
    let problem = gemm_problem(p, p.c as u64 * plane)?;
    let gemm = plan_gemm_implicit(&problem, caps, options)?;
    let geometry = ImplicitConvParams {
        c: p.c_per_group(),
        h: p.h,
        w: p.w,
        ow: p.ow,
        kh: p.kh,
        kw: p.kw,
        taps: p.kh * p.kw,
        plane: to_u32("input plane", plane)?,
        stride_h: p.strides[0],
        stride_w: p.strides[1],
        dil_h: p.dilations[0],
        dil_w: p.dilations[1],
        pad_top: p.pads[0],
        pad_left: p.pads[1],
        reserved: [0; 2],
    };
    Ok((ConvSchedule::Implicit { gemm, geometry }, 0))
}

/// The batched GEMM over (image, group). `image_elems` are the B elements of one image
/// (`C·OH·OW` for X itself, `C·kh·kw·OH·OW` for im2col, `C·H·W` gathered); a group is one
/// `group`-th of them.
fn gemm_problem(p: &ConvProblem, image_elems: u64) -> Result<GemmProblem, PlanError> {
    let (mg, kg, pix) = (p.m_per_group() as u64, p.k_per_group(), p.pixels());
    let group_stride = |s: u64| if p.group > 1 { to_u32("group stride", s) } else { Ok(0) };
    let image_stride = |s: u64| if p.n > 1 { to_u32("image stride", s) } else { Ok(0) };
    let batch = [1, 1, p.n, p.group];
    let a = MatrixLayout { batch_strides: [0, 0, 0, group_stride(mg * kg)?], ..MatrixLayout::row_major(kg as u32) };
    let b = MatrixLayout {
        batch_strides: [0, 0, image_stride(image_elems)?, group_stride(image_elems / p.group as u64)?],
        ..MatrixLayout::row_major(to_u32("output pixels", pix)?)
    };
    // One bias value per output channel: down the rows, constant along pixels.
    let bias = MatrixLayout { row_stride: 1, col_stride: 0, batch_strides: [0, 0, 0, group_stride(mg)?] };
    Ok(GemmProblem {
        dtype: p.dtype,
        m: mg as u32,
        n: pix as u32,
        k: to_u32("reduction length", kg)?,
        batch,
        a,
        b,
        epilogue: Epilogue { alpha: 1.0, beta: 1.0, bias: p.has_bias.then_some(bias), activation: p.activation },
    })
}

fn im2col_step(p: &ConvProblem, caps: &DeviceCaps, col_k: u64) -> Result<ConvStep, PlanError> {
    let variant = ConvVariant::Im2col { dtype: p.dtype, threads: threads(caps)? };
    variant.fits(caps).map_err(PlanError::Invalid)?;
    // Enough invocations to fill the device a few times over; beyond that each one writes
    // several rows, so its index arithmetic is amortised.
    let elements = p.n as u64 * col_k * p.pixels();
    let target = (caps.parallelism.max(1) as u64) * variant.threads() as u64 * 4;
    let k_per_thread = (elements / target).clamp(1, IM2COL_MAX_K_PER_THREAD.min(col_k));
    let tiles_k = col_k.div_ceil(k_per_thread);
    let invocations = p.n as u64 * tiles_k * p.pixels();
    let (mut params, grid) = base_params(p, variant, invocations, caps)?;
    params.k_per_thread = k_per_thread as u32;
    params.tiles_k = to_u32("im2col row blocks", tiles_k)?;
    Ok(ConvStep { variant, params, grid })
}

fn direct(p: &ConvProblem, caps: &DeviceCaps) -> Built {
    let variant = ConvVariant::Direct { dtype: p.dtype, threads: threads(caps)? };
    variant.fits(caps).map_err(PlanError::Invalid)?;
    let (params, grid) = base_params(p, variant, p.output_len(), caps)?;
    Ok((ConvSchedule::Direct { step: ConvStep { variant, params, grid } }, 0))
}

fn threads(caps: &DeviceCaps) -> Result<u32, PlanError> {
    ConvVariant::threads_for(caps)
        .ok_or(PlanError::WorkgroupTooSmall { invocations: caps.max_invocations_per_workgroup, needed: 32 })
}

/// Shape, padding and epilogue uniforms, and the grid that spreads `invocations` over
/// workgroups.
fn base_params(
    p: &ConvProblem,
    v: ConvVariant,
    invocations: u64,
    caps: &DeviceCaps,
) -> Result<(ConvParams, [u32; 3]), PlanError> {
    let threads = v.threads() as u64;
    // The kernels compute `workgroup · threads + lane` in 32 bits.
    if invocations + threads > u32::MAX as u64 {
        return Err(PlanError::IndexOverflow { what: "conv invocations", value: invocations });
    }
    let workgroups = invocations.div_ceil(threads);
    let grid = fold_grid(workgroups, caps.max_workgroups_per_dimension)?;
    let (act, clip_min, clip_max) = p.activation.uniform();
    let params = ConvParams {
        n: p.n,
        c: p.c,
        h: p.h,
        w: p.w,
        m: p.m,
        oh: p.oh,
        ow: p.ow,
        pixels: to_u32("output pixels", p.pixels())?,
        kh: p.kh,
        kw: p.kw,
        stride_h: p.strides[0],
        stride_w: p.strides[1],
        dil_h: p.dilations[0],
        dil_w: p.dilations[1],
        pad_top: p.pads[0],
        pad_left: p.pads[1],
        c_per_group: p.c_per_group(),
        m_per_group: p.m_per_group(),
        col_k: to_u32("im2col rows", p.c as u64 * p.kh as u64 * p.kw as u64)?,
        k_per_thread: 1,
        tiles_k: 1,
        invocations: invocations as u32,
        grid_x: grid[0],
        grid_y: grid[1],
        total_workgroups: workgroups as u32,
        flags: p.has_bias as u32 | act,
        clip_min,
        clip_max,
    };
    Ok((params, grid))
}

/// X, W, the bias and the output must each fit one storage binding (32-bit indexing).
fn check_bindings(p: &ConvProblem, caps: &DeviceCaps) -> Result<(), PlanError> {
    let size = p.dtype.size();
    check_binding("the conv input", p.input_len().saturating_mul(size), caps)?;
    check_binding("the conv weights", p.weight_len().saturating_mul(size), caps)?;
    check_binding("the conv output", p.output_len().saturating_mul(size), caps)?;
    check_binding("the conv bias", p.m as u64 * size, caps)
}

fn to_u32(what: &'static str, v: u64) -> Result<u32, PlanError> {
    u32::try_from(v).map_err(|_| PlanError::IndexOverflow { what, value: v })
}
