//! The uniforms every GEMM-family shader reads, and the grid arithmetic.

use bytemuck::{Pod, Zeroable};

use super::problem::{GemmProblem, MatrixLayout};
use crate::error::PlanError;

/// Uniforms shared by every GEMM-family shader (`wgsl/gemm_common.wgsl.j2` mirrors it).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GemmParams {
    pub m: u32,
    pub n: u32,
    pub k: u32,
    /// K elements per split (split-K), else K rounded up.
    pub k_chunk: u32,
    pub a_rs: u32,
    pub a_cs: u32,
    pub b_rs: u32,
    pub b_cs: u32,
    pub c_rs: u32,
    pub c_cs: u32,
    pub bias_rs: u32,
    pub bias_cs: u32,
    pub tiles_n: u32,
    pub tiles_m: u32,
    pub splits: u32,
    pub batch_count: u32,
    pub grid_x: u32,
    pub grid_y: u32,
    pub total_workgroups: u32,
    /// Bit 0: bias present; bits 1–2: activation (0 none, 1 relu, 2 clip); bit 3: the GEMV
    /// spreads its wide lanes along N (B contiguous in N) rather than along K; bits 4–7: an
    /// extended activation (`Activation::uniform`).
    pub flags: u32,
    pub alpha: f32,
    pub beta: f32,
    pub clip_min: f32,
    pub clip_max: f32,
    pub batch_shape: [u32; 4],
    pub a_bs: [u32; 4],
    pub b_bs: [u32; 4],
    pub c_bs: [u32; 4],
    pub bias_bs: [u32; 4],
}

pub const FLAG_BIAS: u32 = 1;
pub const FLAG_GEMV_N_WIDE: u32 = 8;

pub(crate) fn base_params(p: &GemmProblem, grid: [u32; 3], total: u64) -> GemmParams {
    let out = p.output_layout();
    let bias = p.epilogue.bias.unwrap_or(MatrixLayout { row_stride: 0, col_stride: 0, batch_strides: [0; 4] });
    let (act, clip_min, clip_max) = p.epilogue.activation.uniform();
    let bias_flag = if p.epilogue.bias.is_some() { FLAG_BIAS } else { 0 };
    GemmParams {
        m: p.m,
        n: p.n,
        k: p.k,
        k_chunk: p.k,
        a_rs: p.a.row_stride,
        a_cs: p.a.col_stride,
        b_rs: p.b.row_stride,
        b_cs: p.b.col_stride,
        c_rs: out.row_stride,
        c_cs: out.col_stride,
        bias_rs: bias.row_stride,
        bias_cs: bias.col_stride,
        tiles_n: 1,
        tiles_m: 1,
        splits: 1,
        batch_count: p.batch_count() as u32,
        grid_x: grid[0],
        grid_y: grid[1],
        total_workgroups: total as u32,
        flags: bias_flag | act,
        alpha: p.epilogue.alpha,
        beta: p.epilogue.beta,
        clip_min,
        clip_max,
        batch_shape: p.batch,
        a_bs: p.a.batch_strides,
        b_bs: p.b.batch_strides,
        c_bs: out.batch_strides,
        bias_bs: bias.batch_strides,
    }
}

/// Spreads `total` workgroups over up to three grid dimensions of at most `max` each; the
/// shaders linearise the workgroup id and skip ids past `total`.
pub fn fold_grid(total: u64, max: u32) -> Result<[u32; 3], PlanError> {
    let max = max.max(1) as u64;
    let x = total.clamp(1, max);
    let y = total.div_ceil(x).clamp(1, max);
    let z = total.div_ceil(x * y).max(1);
    if z > max || total > u32::MAX as u64 {
        return Err(PlanError::GridTooLarge { workgroups: total, limit: max as u32 });
    }
    Ok([x as u32, y as u32, z as u32])
}
