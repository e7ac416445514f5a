//! The GEMM planner: a pure function from a problem and a device's caps to the dispatches
//! that compute it. All tile arithmetic lives here; templates only substitute the numbers.

use bytemuck::{Pod, Zeroable};

use super::problem::{Activation, GemmProblem, MatrixLayout, MAX_BATCH_DIMS};
use super::tiling::{GemmVariant, GemvShape, TileShape, Tiling, TilingChoice};
use crate::caps::DeviceCaps;
use crate::dtype::DType;
use crate::error::PlanError;

/// Uniforms shared by every GEMM-family shader (`wgsl/gemm_params.wgsl` mirrors it).
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
    /// spreads its wide lanes along N (B contiguous in N) rather than along K.
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

/// Which buffers a step binds, in binding order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepIo {
    /// `a, b, bias, out` (out is the workspace for a split-K partial step).
    Product { to_workspace: bool },
    /// `workspace, bias, out`.
    Reduce,
}

/// One dispatch of a plan.
#[derive(Clone, Debug, PartialEq)]
pub struct GemmStep {
    pub variant: GemmVariant,
    pub params: GemmParams,
    pub grid: [u32; 3],
    pub io: StepIo,
}

/// How a problem runs on a device.
#[derive(Clone, Debug, PartialEq)]
pub struct GemmPlan {
    pub tiling: Tiling,
    pub steps: Vec<GemmStep>,
    /// A binds to B's buffer and B to A's (the planner computed Cᵀ = Bᵀ·Aᵀ).
    pub swap_operands: bool,
    /// Bytes of f32 scratch the split-K partial sums need.
    pub workspace_bytes: u64,
    /// Why tilings preferred over the chosen one were rejected on this device.
    pub fallbacks: Vec<String>,
}

impl GemmPlan {
    /// Pipelines this plan needs.
    pub fn variants(&self) -> impl Iterator<Item = GemmVariant> + '_ {
        self.steps.iter().map(|s| s.variant)
    }
}

/// Plans `problem` on `caps`, honouring a forced tiling where the device allows it and falling
/// back along 128×128 → 64×64 → GEMV otherwise.
pub fn plan_gemm(problem: &GemmProblem, caps: &DeviceCaps, choice: TilingChoice) -> Result<GemmPlan, PlanError> {
    if problem.dtype == DType::F16 && !caps.shader_f16 {
        return Err(PlanError::F16Unsupported);
    }
    check_bindings(problem, caps)?;
    let problem = fold_batch_into_rows(problem);
    let mut fallbacks = Vec::new();
    for tiling in candidates(&problem, caps, choice) {
        match build(&problem, caps, tiling) {
            Ok(mut plan) => {
                plan.fallbacks = fallbacks;
                return Ok(plan);
            }
            Err(e) => fallbacks.push(format!("{}: {e}", tiling.name())),
        }
    }
    Err(fallbacks
        .pop()
        .map(|last| PlanError::Invalid(format!("no GEMM kernel fits this device ({last})")))
        .unwrap_or_else(|| PlanError::Invalid("no GEMM kernel fits this device".into())))
}

/// Tilings to try, best first.
fn candidates(p: &GemmProblem, caps: &DeviceCaps, choice: TilingChoice) -> Vec<Tiling> {
    let split = Tiling::SplitK { splits: split_count(p, caps, choice == TilingChoice::SplitK) };
    match choice {
        TilingChoice::Tile128 => vec![Tiling::Tile128, Tiling::Tile64, Tiling::Gemv],
        TilingChoice::Tile64 => vec![Tiling::Tile64, Tiling::Gemv],
        TilingChoice::SplitK => vec![split, Tiling::Tile64, Tiling::Gemv],
        TilingChoice::Gemv => vec![Tiling::Gemv],
        TilingChoice::Auto if p.m.min(p.n) <= 8 => vec![Tiling::Gemv],
        TilingChoice::Auto => {
            let tiles128 = tiles(p, TileShape::T128);
            if tiles128 >= caps.parallelism as u64 {
                vec![Tiling::Tile128, Tiling::Tile64, Tiling::Gemv]
            } else if matches!(split, Tiling::SplitK { splits } if splits >= 2) {
                vec![split, Tiling::Tile64, Tiling::Gemv]
            } else {
                vec![Tiling::Tile64, Tiling::Gemv]
            }
        }
    }
}

fn tiles(p: &GemmProblem, shape: TileShape) -> u64 {
    p.m.div_ceil(shape.bm) as u64 * p.n.div_ceil(shape.bn) as u64 * p.batch_count()
}

/// Split-K pays when 64×64 tiles cannot fill the device and K is long; a forced split-K always
/// splits where K allows.
fn split_count(p: &GemmProblem, caps: &DeviceCaps, forced: bool) -> u32 {
    let t = tiles(p, TileShape::T64).max(1);
    let bk = TileShape::T64.bk;
    let max_by_k = p.k.div_ceil(bk).max(1);
    if forced {
        let want = (caps.parallelism as u64).div_ceil(t).clamp(2, 16) as u32;
        return want.min(max_by_k);
    }
    if t * 2 > caps.parallelism as u64 || p.k < 1024 {
        return 1;
    }
    let want = (caps.parallelism as u64).div_ceil(t).clamp(2, 16) as u32;
    want.min(p.k / 256)
}

fn build(p: &GemmProblem, caps: &DeviceCaps, tiling: Tiling) -> Result<GemmPlan, String> {
    match tiling {
        Tiling::Tile128 => tiled(p, caps, TileShape::T128, None).map(|s| plan(tiling, vec![s], false, 0)),
        Tiling::Tile64 => tiled(p, caps, TileShape::T64, None).map(|s| plan(tiling, vec![s], false, 0)),
        Tiling::SplitK { splits } => split_k(p, caps, splits),
        Tiling::Gemv => gemv(p, caps),
    }
}

fn plan(tiling: Tiling, steps: Vec<GemmStep>, swap_operands: bool, workspace_bytes: u64) -> GemmPlan {
    GemmPlan { tiling, steps, swap_operands, workspace_bytes, fallbacks: Vec::new() }
}

/// The tiled kernel; with `splits` it is the split-K partial kernel over that many K slices.
fn tiled(p: &GemmProblem, caps: &DeviceCaps, shape: TileShape, splits: Option<u32>) -> Result<GemmStep, String> {
    let variant = GemmVariant::Tiled { dtype: p.dtype, shape, split_k: splits.is_some() };
    variant.fits(caps)?;
    let mut splits = splits.unwrap_or(1).max(1);
    let k_chunk = p.k.div_ceil(splits).next_multiple_of(shape.bk);
    if p.k > 0 {
        // Rounding the chunk up to whole K slices can leave trailing splits empty: drop them.
        splits = p.k.div_ceil(k_chunk);
    }
    let (tiles_n, tiles_m) = (p.n.div_ceil(shape.bn), p.m.div_ceil(shape.bm));
    let total = tiles_n as u64 * tiles_m as u64 * p.batch_count() * splits as u64;
    let grid = fold_grid(total, caps.max_workgroups_per_dimension).map_err(|e| e.to_string())?;
    let mut params = base_params(p, grid, total);
    params.tiles_n = tiles_n;
    params.tiles_m = tiles_m;
    params.splits = splits;
    params.k_chunk = k_chunk;
    let io = StepIo::Product { to_workspace: variant_is_split(variant) };
    Ok(GemmStep { variant, params, grid, io })
}

fn variant_is_split(v: GemmVariant) -> bool {
    matches!(v, GemmVariant::Tiled { split_k: true, .. })
}

fn split_k(p: &GemmProblem, caps: &DeviceCaps, splits: u32) -> Result<GemmPlan, String> {
    let workspace = splits as u64 * p.output_len() * 4;
    if workspace > caps.max_storage_binding_size {
        return Err(format!("split-K workspace of {workspace} bytes exceeds one storage binding"));
    }
    let partial = tiled(p, caps, TileShape::T64, Some(splits))?;
    let threads =
        [256u32, 128, 64, 32, 16, 8, 4, 2, 1].into_iter().find(|&t| caps.allows_workgroup(t, 1, 1)).unwrap_or(1);
    let variant = GemmVariant::SplitKReduce { dtype: p.dtype, threads };
    variant.fits(caps)?;
    let total = p.output_len().div_ceil(threads as u64);
    let grid = fold_grid(total, caps.max_workgroups_per_dimension).map_err(|e| e.to_string())?;
    let mut params = base_params(p, grid, total);
    params.splits = partial.params.splits;
    let reduce = GemmStep { variant, params, grid, io: StepIo::Reduce };
    Ok(plan(Tiling::SplitK { splits: partial.params.splits }, vec![partial, reduce], false, workspace))
}

fn gemv(p: &GemmProblem, caps: &DeviceCaps) -> Result<GemmPlan, String> {
    let shape = GemvShape::for_caps(caps).ok_or_else(|| {
        PlanError::WorkgroupTooSmall { invocations: caps.max_invocations_per_workgroup, needed: 32 }.to_string()
    })?;
    let variant = GemmVariant::Gemv { dtype: p.dtype, shape };
    variant.fits(caps)?;
    // Few columns and many rows: compute Cᵀ = Bᵀ·Aᵀ so the short side is the row side.
    let swap = p.n <= 8 && p.m > p.n;
    let q = if swap { transposed(p) } else { *p };
    // Spread the wide lanes along whichever dimension of B is contiguous, so loads coalesce.
    let n_wide = q.b.col_stride == 1 && q.n > 1;
    let cols = if n_wide { shape.wide } else { shape.threads / shape.wide };
    let (tiles_n, tiles_m) = (q.n.div_ceil(cols), q.m.div_ceil(shape.rows));
    let total = tiles_n as u64 * tiles_m as u64 * q.batch_count();
    let grid = fold_grid(total, caps.max_workgroups_per_dimension).map_err(|e| e.to_string())?;
    let mut params = base_params(&q, grid, total);
    params.tiles_n = tiles_n;
    params.tiles_m = tiles_m;
    if n_wide {
        params.flags |= FLAG_GEMV_N_WIDE;
    }
    if swap {
        let out = p.output_layout().transposed();
        params.c_rs = out.row_stride;
        params.c_cs = out.col_stride;
        params.c_bs = out.batch_strides;
    }
    let step = GemmStep { variant, params, grid, io: StepIo::Product { to_workspace: false } };
    Ok(plan(Tiling::Gemv, vec![step], swap, 0))
}

/// `Cᵀ = Bᵀ·Aᵀ`: the same output written through transposed strides.
fn transposed(p: &GemmProblem) -> GemmProblem {
    let mut q = *p;
    q.m = p.n;
    q.n = p.m;
    q.a = p.b.transposed();
    q.b = p.a.transposed();
    q.epilogue.bias = p.epilogue.bias.map(MatrixLayout::transposed);
    q
}

fn base_params(p: &GemmProblem, grid: [u32; 3], total: u64) -> GemmParams {
    let out = p.output_layout();
    let bias = p.epilogue.bias.unwrap_or(MatrixLayout { row_stride: 0, col_stride: 0, batch_strides: [0; 4] });
    let (act, clip_min, clip_max) = match p.epilogue.activation {
        Activation::None => (0, f32::NEG_INFINITY, f32::INFINITY),
        Activation::Relu => (1, 0.0, f32::INFINITY),
        Activation::Clip { min, max } => (2, min, max),
    };
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
        flags: bias_flag | (act << 1),
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

/// Every operand must fit one storage binding (the kernels index with 32 bits).
fn check_bindings(p: &GemmProblem, caps: &DeviceCaps) -> Result<(), PlanError> {
    let size = p.dtype.size();
    let limit = caps.max_storage_binding_size.min(caps.max_buffer_size);
    let mut operands = vec![
        ("A", p.a.extent(p.m, p.k, &p.batch)),
        ("B", p.b.extent(p.k, p.n, &p.batch)),
        ("the output", p.output_len()),
    ];
    if let Some(bias) = p.epilogue.bias {
        operands.push(("the bias", bias.extent(p.m, p.n, &p.batch)));
    }
    for (what, elems) in operands {
        let needed = elems * size;
        if needed > limit {
            return Err(PlanError::BindingTooLarge { what, needed, limit });
        }
    }
    Ok(())
}

/// When B is shared by every batch and A, the output and the bias continue row after row
/// across batches, the batch is just more rows: one tall GEMM fills the device better.
fn fold_batch_into_rows(p: &GemmProblem) -> GemmProblem {
    let count = p.batch_count();
    if count <= 1 || p.b.batch_strides.iter().any(|&s| s != 0) || count * p.m as u64 > u32::MAX as u64 {
        return *p;
    }
    let rows_continue = |l: &MatrixLayout| {
        let mut inner = p.m as u64;
        (0..MAX_BATCH_DIMS).rev().all(|i| {
            let ok = p.batch[i] == 1 || l.batch_strides[i] as u64 == l.row_stride as u64 * inner;
            inner *= p.batch[i] as u64;
            ok
        })
    };
    let bias_ok = match p.epilogue.bias {
        None => true,
        Some(b) => (b.row_stride == 0 && b.batch_strides == [0; 4]) || rows_continue(&b),
    };
    if !rows_continue(&p.a) || !bias_ok {
        return *p;
    }
    let mut q = *p;
    q.m = (count * p.m as u64) as u32;
    q.batch = [1; MAX_BATCH_DIMS];
    q.a.batch_strides = [0; MAX_BATCH_DIMS];
    if let Some(b) = q.epilogue.bias.as_mut() {
        b.batch_strides = [0; MAX_BATCH_DIMS];
    }
    q
}
