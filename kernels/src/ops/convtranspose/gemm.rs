//! ConvTranspose through the GEMM engine: one GEMM batched over images and groups writes
//! `cols[n, m, kh, kw, ih, iw] = Σ_c W[c, m, kh, kw] · X[n, c, ih, iw]` (A is W read transposed
//! through its strides, B is X as it lies), then `convtranspose_col2im.wgsl.j2` gathers each
//! output element's taps from it and adds the bias. The GEMM takes the planner's tiling (tensor
//! cores where the device has them); the gather reads `cols` once per tap.

use crate::caps::DeviceCaps;
use crate::conv::ConvAlgo;
use crate::dtype::{DType, ElemType};
use crate::error::PlanError;
use crate::gemm::{plan_gemm, Epilogue, GemmOptions, GemmPlan, GemmProblem, MatrixLayout};
use crate::ops::planned::OpDispatch;
use crate::ops::to_u32;

/// Input channels per group from which `Auto` takes the GEMM: below it the direct kernel's
/// per-output loop over channels is short, and the `cols` round trip costs more than it saves.
pub const GEMM_MIN_CHANNELS: u64 = 16;

/// The GEMM, its `cols` scratch and the gather after it.
#[derive(Clone, Debug)]
pub struct GemmSchedule {
    pub problem: GemmProblem,
    pub gemm: GemmPlan,
    pub col_bytes: u64,
    pub col2im: OpDispatch,
}

/// Bytes of `cols`: `N · M · kh · kw · H · W` elements.
pub fn col_bytes(x: &[u64], w: &[u64], group: u64, ty: ElemType) -> u64 {
    let taps: u64 = w[2..].iter().product();
    x[0] * w[1] * group * taps * x[2..].iter().product::<u64>() * ty.size()
}

/// Whether this ConvTranspose runs as GEMM + gather: forced by `conv_algorithm` (`im2col` or
/// `implicit`; `direct` forces the direct kernel), else from [`GEMM_MIN_CHANNELS`] channels per
/// group. Never when `cols` (`cols` bytes, [`col_bytes`]) would not fit one binding.
pub fn gemm_suits(channels_per_group: u64, cols: u64, algo: ConvAlgo, caps: &DeviceCaps) -> bool {
    let fits = cols <= caps.binding_limit();
    let chosen = match algo {
        ConvAlgo::Direct => false,
        ConvAlgo::Gemm | ConvAlgo::Implicit => true,
        ConvAlgo::Auto => channels_per_group >= GEMM_MIN_CHANNELS,
    };
    fits && chosen
}

/// The batched GEMM writing `cols` for X `[N, C, H, W]` (or `[N, C, L]`) and W `[C, M/G, k…]`.
pub fn problem(x: &[u64], w: &[u64], group: u64, dtype: DType) -> Result<GemmProblem, PlanError> {
    let (cg, taps, pixels) = (x[1] / group, w[2..].iter().product::<u64>(), x[2..].iter().product::<u64>());
    let rows = w[1] * taps;
    let per_group = |s: u64| if group > 1 { to_u32("ConvTranspose group stride", s) } else { Ok(0) };
    let per_image = |s: u64| if x[0] > 1 { to_u32("ConvTranspose image stride", s) } else { Ok(0) };
    // A = Wᵀ: row r of group g's `[C/G, M/G·kh·kw]` block, column c, at `c · rows + r`.
    let a = MatrixLayout {
        row_stride: 1,
        col_stride: to_u32("ConvTranspose weight row", rows)?,
        batch_strides: [0, 0, 0, per_group(cg * rows)?],
    };
    let b = MatrixLayout {
        batch_strides: [0, 0, per_image(x[1] * pixels)?, per_group(cg * pixels)?],
        ..MatrixLayout::row_major(to_u32("ConvTranspose input pixels", pixels)?)
    };
    Ok(GemmProblem {
        dtype,
        m: to_u32("ConvTranspose GEMM rows", rows)?,
        n: to_u32("ConvTranspose input pixels", pixels)?,
        k: to_u32("ConvTranspose input channels per group", cg)?,
        batch: [1, 1, to_u32("ConvTranspose images", x[0])?, to_u32("ConvTranspose groups", group)?],
        a,
        b,
        epilogue: Epilogue::default(),
    })
}

/// The GEMM plan and the gather (`col2im`, already built by the caller from the same uniforms
/// as the direct kernel).
pub fn schedule(
    x: &[u64],
    w: &[u64],
    group: u64,
    ty: ElemType,
    col2im: OpDispatch,
    caps: &DeviceCaps,
    options: &GemmOptions,
) -> Result<GemmSchedule, PlanError> {
    let dtype = ty.float().ok_or_else(|| PlanError::Invalid(format!("ConvTranspose of {}", ty.name())))?;
    let problem = problem(x, w, group, dtype)?;
    // Like the convs' products, kept out of the short-K split-K rule (measured on plain products).
    let gemm = plan_gemm(&problem, caps, &GemmOptions { unsplit_short_k: true, ..*options })?;
    // `cols` is the GEMM's output.
    let col_bytes = problem.output_len() * ty.size();
    Ok(GemmSchedule { problem, gemm, col_bytes, col2im })
}
