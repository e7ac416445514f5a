//! The GEMM planner: a pure function from a problem, a device's caps and the user's options
//! to the dispatches that compute it. All tile arithmetic lives here; templates only
//! substitute the numbers.

use super::coop;
use super::layout::{
    a_contig, a_wide_loads_ok, b_contig, check_bindings, check_operand_bindings, fold_batch_into_rows, transposed,
    wide_loads_ok,
};
use super::options::GemmOptions;
use super::params::{base_params, fold_grid, GemmParams, FLAG_GEMV_N_WIDE};
use super::problem::GemmProblem;
use super::split;
use super::tiling::Contig;
use super::tiling::{GemvShape, TileShape, Tiling, TilingChoice};
use super::tuning::Tuning;
use super::variant::{GemmVariant, GemvVec};
use crate::caps::DeviceCaps;
use crate::dtype::DType;
use crate::error::PlanError;

/// Which buffers a step binds, in binding order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepIo {
    /// `a, b, bias, out` (out is the workspace for a split-K partial step).
    Product { to_workspace: bool },
    /// `workspace, bias, out`.
    Reduce,
    /// The max pass of a split f32 product: `a, b → workspace` (the per-workgroup maxima, which
    /// the product reads at binding 5).
    AbsMax,
}

impl StepIo {
    /// Whether the step writes the plan's output (the epilogue runs there).
    pub fn writes_output(self) -> bool {
        matches!(self, StepIo::Product { to_workspace: false } | StepIo::Reduce)
    }
}

/// One dispatch of a plan.
#[derive(Clone, Debug, PartialEq)]
pub struct GemmStep {
    pub variant: GemmVariant,
    pub params: GemmParams,
    pub grid: [u32; 3],
    pub io: StepIo,
}

impl GemmStep {
    /// The program this step runs.
    pub fn shader(&self) -> crate::shader::ShaderVariant {
        if self.variant == GemmVariant::AbsMax {
            return self.variant.into();
        }
        crate::shader::ShaderVariant::with_epilogue(self.variant.into(), self.params.flags)
    }
}

/// How a problem runs on a device.
#[derive(Clone, Debug, PartialEq)]
pub struct GemmPlan {
    pub tiling: Tiling,
    pub steps: Vec<GemmStep>,
    /// A binds to B's buffer and B to A's (the planner computed Cᵀ = Bᵀ·Aᵀ).
    pub swap_operands: bool,
    /// Bytes of f32 scratch the split-K partial sums need (of u32 maxima for a split f32
    /// product, which also binds an 8-byte scales buffer).
    pub workspace_bytes: u64,
    /// Why paths preferred over the chosen one were rejected (the cooperative-matrix path as
    /// `coop: …`, tilings as `<tiling>: …`).
    pub fallbacks: Vec<String>,
}

impl GemmPlan {
    /// Sets epilogue flag bits (a residual's) on the steps that store the result (the products
    /// writing the output, the split-K reduction), not on split-K partials.
    pub fn add_output_flags(&mut self, flags: u32) {
        for step in self.steps.iter_mut().filter(|s| s.io.writes_output()) {
            step.params.flags |= flags;
        }
    }

    /// Stores the output through `row_stride` and `col_stride` instead of the contiguous
    /// `[M, N]` (a conv writing its `[M, pixels]` product channels last): the steps that store
    /// the result, as [`GemmPlan::add_output_flags`]; a residual is read through them too. A
    /// swapped GEMV computes the transposed product, so its strides swap as well.
    pub fn set_output_strides(&mut self, row_stride: u32, col_stride: u32) {
        let (rs, cs) = if self.swap_operands { (col_stride, row_stride) } else { (row_stride, col_stride) };
        for step in self.steps.iter_mut().filter(|s| s.io.writes_output()) {
            step.params.c_rs = rs;
            step.params.c_cs = cs;
        }
    }

    /// Pipelines this plan needs.
    pub fn variants(&self) -> impl Iterator<Item = GemmVariant> + '_ {
        self.steps.iter().map(|s| s.variant)
    }

    /// The program of each step (with the extended activations where its flags ask for them).
    pub fn shaders(&self) -> impl Iterator<Item = crate::shader::ShaderVariant> + '_ {
        self.steps.iter().map(GemmStep::shader)
    }

    /// `" (fell back: …)"` with the recorded fallbacks, or nothing: the tail of a step's description.
    pub fn fallback_note(&self) -> String {
        if self.fallbacks.is_empty() {
            String::new()
        } else {
            format!(" (fell back: {})", self.fallbacks.join("; "))
        }
    }

    /// Whether the product runs on cooperative matrices (tensor cores).
    pub fn uses_coop(&self) -> bool {
        self.tiling.is_coop()
    }

    /// Whether this is a split f32 product (`gemm::split`): a max pass, then a product reading
    /// its maxima.
    pub fn splits_f32(&self) -> bool {
        self.steps.iter().any(|s| s.io == StepIo::AbsMax)
    }
}

/// Plans `problem` on `caps` with the tuned shapes for that device.
pub fn plan_gemm(problem: &GemmProblem, caps: &DeviceCaps, options: &GemmOptions) -> Result<GemmPlan, PlanError> {
    plan_gemm_tuned(problem, caps, options, &Tuning::for_caps(caps))
}

/// Plans with an explicit shape table: the coop path first where it is eligible, then the SIMT
/// path, each honouring a forced tiling where the device allows it and falling back along
/// 128×128 → 64×64 → GEMV otherwise.
pub fn plan_gemm_tuned(
    problem: &GemmProblem,
    caps: &DeviceCaps,
    options: &GemmOptions,
    tuning: &Tuning,
) -> Result<GemmPlan, PlanError> {
    if problem.dtype == DType::F16 && !caps.shader_f16 {
        return Err(PlanError::F16Unsupported);
    }
    check_bindings(problem, caps)?;
    let problem = fold_batch_into_rows(problem);
    let mut fallbacks = Vec::new();
    match split::eligible(&problem, caps, options) {
        Ok(false) => {}
        Ok(true) => match split::plan(&problem, caps, options, tuning) {
            Ok(plan) => return Ok(plan),
            Err(reason) => fallbacks.push(format!("split: {reason}")),
        },
        Err(reason) => fallbacks.push(format!("split: {reason}")),
    }
    let mut tilings = Vec::new();
    match coop::eligible(&problem, caps, options) {
        Ok(()) => tilings.extend(coop::candidates(&problem, caps, options)),
        Err(reason) => fallbacks.push(format!("coop: {reason}")),
    }
    tilings.extend(simt_candidates(&problem, caps, options));
    let planned = first_fit(tilings, fallbacks, |t| build(&problem, caps, t, tuning, simt_step));
    planned.map(|plan| quicken(plan, options)).map_err(|mut fallbacks| {
        fallbacks
            .pop()
            .map(|last| PlanError::Invalid(format!("no GEMM kernel fits this device ({last})")))
            .unwrap_or_else(|| PlanError::Invalid("no GEMM kernel fits this device".into()))
    })
}

/// With `options.quick_compile`, the plan's SIMT vec4 products (not split-K partials) take the
/// variant whose stores are one loop.
fn quicken(mut plan: GemmPlan, options: &GemmOptions) -> GemmPlan {
    if options.quick_compile {
        for step in &mut plan.steps {
            if let GemmVariant::TiledVec { split_k: false, quick, .. } = &mut step.variant {
                *quick = true;
            }
        }
    }
    plan
}

/// The plan of the first tiling that builds, carrying the reasons the earlier ones (and
/// `fallbacks`) were rejected; all the reasons when none builds.
fn first_fit(
    tilings: Vec<Tiling>,
    mut fallbacks: Vec<String>,
    build: impl Fn(Tiling) -> Result<GemmPlan, String>,
) -> Result<GemmPlan, Vec<String>> {
    for tiling in tilings {
        match build(tiling) {
            Ok(mut plan) => {
                plan.fallbacks = fallbacks;
                return Ok(plan);
            }
            Err(e) => fallbacks.push(format!("{}: {e}", tiling.name())),
        }
    }
    Err(fallbacks)
}

/// Plans the GEMM of an implicit-GEMM conv: `problem` describes A (the weights), the output,
/// the bias and the batch; B is gathered from the conv input by the vec4 SIMT kernel
/// (`implicit_b`), so its layout in `problem` is not read and not bound-checked here. Only
/// the SIMT tilings that kernel implements apply (128×128, 64×64, split-K; neither the GEMV
/// nor the coop kernels gather); a forced or automatic GEMV becomes 64×64. The tiling choice
/// and the device-limit checks are those of [`plan_gemm`].
pub fn plan_gemm_implicit(
    problem: &GemmProblem,
    caps: &DeviceCaps,
    options: &GemmOptions,
) -> Result<GemmPlan, PlanError> {
    if problem.dtype == DType::F16 && !caps.shader_f16 {
        return Err(PlanError::F16Unsupported);
    }
    check_operand_bindings(problem, caps, false)?;
    let tuning = Tuning::for_caps(caps);
    let mut tilings: Vec<Tiling> = Vec::new();
    for t in simt_candidates(problem, caps, options) {
        let t = if t == Tiling::Gemv { Tiling::Tile64 } else { t };
        if !tilings.contains(&t) {
            tilings.push(t);
        }
    }
    let mut fallbacks = Vec::new();
    if coop::eligible(problem, caps, options).is_ok() {
        fallbacks.push("coop: only the SIMT kernel gathers an implicit B operand".to_string());
    }
    let implicit: SimtStep = |p, caps, shapes, _, splits| implicit_step(p, caps, shapes, splits);
    let planned = first_fit(tilings, fallbacks, |t| build(problem, caps, t, &tuning, implicit));
    planned.map(|plan| quicken(plan, options)).map_err(|fallbacks| {
        PlanError::Invalid(format!("no implicit-GEMM kernel fits this device ({})", fallbacks.join("; ")))
    })
}

/// The vec4 SIMT kernel with B gathered from a conv input: the first shape that fits. A loads
/// 4-wide when its rows allow it, else as bounds-checked scalars.
fn implicit_step(
    p: &GemmProblem,
    caps: &DeviceCaps,
    vec_shapes: &[TileShape],
    splits: Option<u32>,
) -> Result<GemmStep, String> {
    if a_contig(p) != Contig::K {
        return Err("the implicit-GEMM kernel reads A (the weights) K-contiguous".into());
    }
    let a_scalar = !a_wide_loads_ok(p, 4);
    let mut last = String::from("no vec4-compatible tile shape");
    for &shape in vec_shapes.iter().filter(|s| s.vec_compatible()) {
        let variant = GemmVariant::TiledVec {
            dtype: p.dtype,
            shape,
            split_k: splits.is_some(),
            a: Contig::K,
            b: Contig::Mn,
            implicit_b: true,
            a_scalar,
            quick: false,
        };
        match variant.fits(caps) {
            Ok(()) => return tiled_step(p, caps, variant, [shape.bm, shape.bn, shape.bk], splits),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// SIMT tilings to try, best first.
fn simt_candidates(p: &GemmProblem, caps: &DeviceCaps, options: &GemmOptions) -> Vec<Tiling> {
    let split = Tiling::SplitK { splits: split_count(p, caps, options, TileShape::T64.bk, 2) };
    match options.tiling {
        TilingChoice::Tile128 => vec![Tiling::Tile128, Tiling::Tile64, Tiling::Gemv],
        TilingChoice::Tile64 => vec![Tiling::Tile64, Tiling::Gemv],
        TilingChoice::SplitK => vec![split, Tiling::Tile64, Tiling::Gemv],
        TilingChoice::Gemv => vec![Tiling::Gemv],
        TilingChoice::Auto if p.m.min(p.n) <= 8 => vec![Tiling::Gemv],
        TilingChoice::Auto => {
            if let Some(splits) = experiment_simt_splits(p) {
                return vec![Tiling::SplitK { splits }, Tiling::Tile64, Tiling::Gemv];
            }
            // Measured on the H200: the 128×128 SIMT kernel beats 64×64 from about half a
            // wave of its tiles up (1500×1536×384: 14.3 against 12.7 TFLOP/s).
            if tiles(p, 128, 128) * 2 >= caps.parallelism as u64 {
                vec![Tiling::Tile128, Tiling::Tile64, Tiling::Gemv]
            } else if matches!(split, Tiling::SplitK { splits } if splits >= 2) {
                vec![split, Tiling::Tile64, Tiling::Gemv]
            } else {
                vec![Tiling::Tile64, Tiling::Gemv]
            }
        }
    }
}

/// An experiment build's `EXP_SIMT_SPLIT=N` (or `N@K`): N K splits for every SIMT product of K ≥ 1024 (or ≥ K).
/// Whisper fp32's fc2, 1500×384×1536, runs unsplit on 282 thin tiles (the eighth session's kernel_bench timed it
/// 0.112 → 0.089 ms with three splits); `2@384` also splits its out projection, 1500×384×384. Release builds never
/// read the variable.
fn experiment_simt_splits(p: &GemmProblem) -> Option<u32> {
    if !cfg!(feature = "wgsl-override") {
        return None;
    }
    let spec = std::env::var("EXP_SIMT_SPLIT").ok()?;
    let (splits, min_k) = spec.trim().split_once('@').unwrap_or((spec.trim(), "1024"));
    let (splits, min_k): (u32, u32) = (splits.parse().ok()?, min_k.parse().ok()?);
    (splits >= 2 && p.k >= min_k).then_some(splits)
}

/// The vec4 shapes of the 64×64 SIMT class: the thin ones (32×64 first) for problems of at most
/// 3/4 of `parallelism` in 64×64 tiles, where twice the workgroups pay (measured on the H200:
/// `tuning::SIMT_VEC_32X64`).
fn simt_64_shapes<'a>(p: &GemmProblem, caps: &DeviceCaps, tuning: &'a Tuning) -> &'a [TileShape] {
    if tiles(p, 64, 64) * 4 <= caps.parallelism as u64 * 3 {
        &tuning.simt_thin
    } else {
        &tuning.simt_64
    }
}

/// Output tiles of `bm×bn` over the whole batch.
pub(crate) fn tiles(p: &GemmProblem, bm: u32, bn: u32) -> u64 {
    p.m.div_ceil(bm) as u64 * p.n.div_ceil(bn) as u64 * p.batch_count()
}

/// Split-K pays when 64×64 tiles cannot fill the device and K is not short. From K = 1024 the
/// splits bring the workgroups to `parallelism`, each split at least 256 deep; below (K from
/// 512), for problems of at most `parallelism / short_k_share` tiles, to about 5/8 of it, each split at least
/// 96 deep. Measured on the H200 (`kernel_bench --parallelism …`, docs/PERFORMANCE.md "Split-K
/// for short K"): 128×768×768 runs in 13 µs with 7 splits against 20 µs unsplit (SIMT f32: 17
/// against 41) and 197×768×768 in SIMT f32 in 23 µs with 4 against 41; the tensor-core kernel
/// there (48 tiles: 14 against 20 µs alone) lost end to end in ViT-base, so the coop planner
/// passes a smaller share. With K ≥ 1024 the fuller split stays ahead (128×768×3072: 17 µs
/// with 11 splits, 20 with 7). `options.unsplit_short_k` (the convs') keeps short K unsplit. A
/// forced split-K always splits where K allows (slices of `bk`).
pub(crate) fn split_count(
    p: &GemmProblem,
    caps: &DeviceCaps,
    options: &GemmOptions,
    bk: u32,
    short_k_share: u64,
) -> u32 {
    let t = tiles(p, 64, 64).max(1);
    let parallelism = caps.parallelism as u64;
    let short_k_tiles = if options.unsplit_short_k { 0 } else { parallelism / short_k_share };
    let fill = |workgroups: u64| workgroups.div_ceil(t).clamp(2, 16) as u32;
    if options.tiling == TilingChoice::SplitK {
        return fill(parallelism).min(p.k.div_ceil(bk).max(1));
    }
    if t * 2 > parallelism || p.k < 512 {
        return 1;
    }
    if p.k >= 1024 {
        fill(parallelism).min(p.k / 256)
    } else if t <= short_k_tiles {
        fill((parallelism * 5).div_ceil(8)).min(p.k / 96)
    } else {
        1
    }
}

/// Makes a SIMT product step from the vec4 shapes to try, the scalar fallback shape and the
/// K splits: [`simt_step`], or the implicit-GEMM conv's gathering kernel.
type SimtStep = fn(&GemmProblem, &DeviceCaps, &[TileShape], TileShape, Option<u32>) -> Result<GemmStep, String>;

fn build(
    p: &GemmProblem,
    caps: &DeviceCaps,
    tiling: Tiling,
    tuning: &Tuning,
    simt: SimtStep,
) -> Result<GemmPlan, String> {
    let single = |step: GemmStep| plan(tiling, vec![step], false, 0);
    match tiling {
        Tiling::Tile128 => simt(p, caps, &tuning.simt_128, TileShape::T128, None).map(single),
        Tiling::Tile64 => simt(p, caps, simt_64_shapes(p, caps, tuning), TileShape::T64, None).map(single),
        Tiling::SplitK { splits } => {
            let partial = simt(p, caps, &tuning.simt_64, TileShape::T64, Some(splits))?;
            split_k(p, caps, partial).map(|(steps, ws, s)| plan(Tiling::SplitK { splits: s }, steps, false, ws))
        }
        Tiling::Gemv => gemv(p, caps),
        Tiling::Coop128 => coop::step(p, caps, &tuning.coop_128, None, None).map(single),
        Tiling::Coop64 => coop::step(p, caps, &tuning.coop_64, None, None).map(single),
        Tiling::CoopSplitK { splits } => {
            let partial = coop::step(p, caps, &tuning.coop_64, Some(splits), None)?;
            split_k(p, caps, partial).map(|(steps, ws, s)| plan(Tiling::CoopSplitK { splits: s }, steps, false, ws))
        }
    }
}

fn plan(tiling: Tiling, steps: Vec<GemmStep>, swap_operands: bool, workspace_bytes: u64) -> GemmPlan {
    GemmPlan { tiling, steps, swap_operands, workspace_bytes, fallbacks: Vec::new() }
}

/// The SIMT tiled kernel: the first vec4 shape that fits when both operands allow 4-wide
/// loads, else the scalar kernel of `scalar` shape.
fn simt_step(
    p: &GemmProblem,
    caps: &DeviceCaps,
    vec_shapes: &[TileShape],
    scalar: TileShape,
    splits: Option<u32>,
) -> Result<GemmStep, String> {
    let split_k = splits.is_some();
    if wide_loads_ok(p, 4) {
        for &shape in vec_shapes.iter().filter(|s| s.vec_compatible()) {
            let variant = GemmVariant::TiledVec {
                dtype: p.dtype,
                shape,
                split_k,
                a: a_contig(p),
                b: b_contig(p),
                implicit_b: false,
                a_scalar: false,
                quick: false,
            };
            if variant.fits(caps).is_ok() {
                return tiled_step(p, caps, variant, [shape.bm, shape.bn, shape.bk], splits);
            }
        }
    }
    let variant = GemmVariant::Tiled { dtype: p.dtype, shape: scalar, split_k };
    variant.fits(caps)?;
    tiled_step(p, caps, variant, [scalar.bm, scalar.bn, scalar.bk], splits)
}

/// A tiled product step (SIMT or coop): the grid over output tiles (and K splits).
pub(crate) fn tiled_step(
    p: &GemmProblem,
    caps: &DeviceCaps,
    variant: GemmVariant,
    [bm, bn, bk]: [u32; 3],
    splits: Option<u32>,
) -> Result<GemmStep, String> {
    // Every caller builds its variant with `split_k: splits.is_some()`.
    let to_workspace = splits.is_some();
    let mut splits = splits.unwrap_or(1).max(1);
    let k_chunk = p.k.div_ceil(splits).next_multiple_of(bk);
    if p.k > 0 {
        // Rounding the chunk up to whole K slices can leave trailing splits empty: drop them.
        splits = p.k.div_ceil(k_chunk);
    }
    let (tiles_n, tiles_m) = (p.n.div_ceil(bn), p.m.div_ceil(bm));
    let total = tiles_n as u64 * tiles_m as u64 * p.batch_count() * splits as u64;
    let grid = fold_grid(total, caps.max_workgroups_per_dimension).map_err(|e| e.to_string())?;
    let mut params = base_params(p, grid, total);
    params.tiles_n = tiles_n;
    params.tiles_m = tiles_m;
    params.splits = splits;
    params.k_chunk = k_chunk;
    Ok(GemmStep { variant, params, grid, io: StepIo::Product { to_workspace } })
}

/// The reduction after a split-K `partial` step: the steps, the workspace bytes and the
/// number of splits actually used.
fn split_k(p: &GemmProblem, caps: &DeviceCaps, partial: GemmStep) -> Result<(Vec<GemmStep>, u64, u32), String> {
    let splits = partial.params.splits;
    let workspace = splits as u64 * p.output_len() * 4;
    if workspace > caps.max_storage_binding_size {
        return Err(format!("split-K workspace of {workspace} bytes exceeds one storage binding"));
    }
    let threads =
        [256u32, 128, 64, 32, 16, 8, 4, 2, 1].into_iter().find(|&t| caps.allows_workgroup(t, 1, 1)).unwrap_or(1);
    let variant = GemmVariant::SplitKReduce { dtype: p.dtype, threads };
    variant.fits(caps)?;
    let total = p.output_len().div_ceil(threads as u64);
    let grid = fold_grid(total, caps.max_workgroups_per_dimension).map_err(|e| e.to_string())?;
    let mut params = base_params(p, grid, total);
    params.splits = splits;
    let reduce = GemmStep { variant, params, grid, io: StepIo::Reduce };
    Ok((vec![partial, reduce], workspace, splits))
}

fn gemv(p: &GemmProblem, caps: &DeviceCaps) -> Result<GemmPlan, String> {
    // Few columns and many rows: compute Cᵀ = Bᵀ·Aᵀ so the short side is the row side.
    let swap = p.n <= 8 && p.m > p.n;
    let q = if swap { transposed(p) } else { *p };
    let (steps, workspace) = match gemv_vec(&q, caps)? {
        Some(vec) => vec,
        None => (vec![gemv_scalar(&q, caps)?], 0),
    };
    let steps = steps
        .into_iter()
        .map(|mut step| {
            // The output (not the split-K workspace) is written through the transposed strides.
            if swap && step.io != (StepIo::Product { to_workspace: true }) {
                let out = p.output_layout().transposed();
                step.params.c_rs = out.row_stride;
                step.params.c_cs = out.col_stride;
                step.params.c_bs = out.batch_strides;
            }
            step
        })
        .collect();
    Ok(plan(Tiling::Gemv, steps, swap, workspace))
}

/// The bandwidth GEMV where B's rows are contiguous and 16-byte aligned: `None` otherwise.
/// K splits across workgroups (then a reduce) when the bands alone cannot fill the device.
/// The steps and the bytes of their split-K workspace.
fn gemv_vec(q: &GemmProblem, caps: &DeviceCaps) -> Result<Option<(Vec<GemmStep>, u64)>, String> {
    let probe =
        GemvVec { dtype: q.dtype, rows: 1, split_k: false, columns: GemvVec::WIDE, threads: GemvVec::INVOCATIONS };
    let aligned = q.b.col_stride == 1 && wide_b_ok(q, probe.vec());
    if !aligned || q.m > 8 || GemmVariant::GemvVec(probe).fits(caps).is_err() {
        return Ok(None);
    }
    let rows = if q.m == 1 { 1 } else { 4 };
    let bands_of = |g: GemvVec| q.n.div_ceil(g.band()) as u64 * q.m.div_ceil(rows) as u64 * q.batch_count();
    // Enough workgroups for several per compute unit, each lane at least UNROLL loads deep.
    let want = |g: GemvVec| -> u32 {
        let deep = u64::from(q.k / (g.k_lanes() * GemvVec::UNROLL)).max(1);
        (4 * caps.parallelism as u64).div_ceil(bands_of(g).max(1)).min(deep).min(256) as u32
    };
    // Where the wide bands would split K, narrow bands that reach a quarter of the device's
    // parallelism with every lane of the 2-lane form UNROLL loads deep run unsplit: one
    // dispatch, no reduce.
    // The narrow forms with more column lanes take over where they fill the device too.
    let two = GemvVec { columns: GemvVec::NARROW, ..probe };
    let narrow = GemvVec { columns: narrow_columns(q, caps, rows, &bands_of), ..probe };
    let use_narrow = match crate::gemm::variant::exp_gemv("EXP_GEMV_NARROW") {
        Some(forced) => forced == 1 && q.k >= narrow.k_lanes() * GemvVec::UNROLL,
        None => {
            want(probe) > 1
                && bands_of(two) >= u64::from(caps.parallelism / 4).max(1)
                && q.k >= two.k_lanes() * GemvVec::UNROLL
        }
    };
    let shape = if use_narrow { GemvVec { rows, ..narrow }.for_one_row(q.k, caps) } else { probe };
    let mut splits = if use_narrow { 1 } else { want(shape).max(1) };
    let lanes = shape.k_lanes();
    let k_chunk = q.k.div_ceil(splits).next_multiple_of(lanes).max(lanes);
    if q.k > 0 {
        splits = q.k.div_ceil(k_chunk);
    }
    let variant = GemmVariant::GemvVec(GemvVec { rows, split_k: splits > 1, ..shape });
    variant.fits(caps)?;
    let (tiles_n, tiles_m) = (q.n.div_ceil(shape.band()), q.m.div_ceil(rows));
    let total = bands_of(shape) * splits as u64;
    let grid = fold_grid(total, caps.max_workgroups_per_dimension).map_err(|e| e.to_string())?;
    let mut params = base_params(q, grid, total);
    params.tiles_n = tiles_n;
    params.tiles_m = tiles_m;
    params.splits = splits;
    params.k_chunk = if q.k > 0 { k_chunk } else { 0 };
    let step = GemmStep { variant, params, grid, io: StepIo::Product { to_workspace: splits > 1 } };
    if splits == 1 {
        return Ok(Some((vec![step], 0)));
    }
    // A workspace too large for one binding leaves the product to the scalar kernel.
    Ok(split_k(q, caps, step).ok().map(|(steps, workspace, _)| (steps, workspace)))
}

/// The narrow form's column lanes. One row reads longer row segments where they still leave
/// bands for the device (H100, `kernel_bench`, fp16, against the 2-lane form, one product
/// repeated, so all but the LM head's weights stayed in L2; the fifty-eighth session in
/// `docs/performance/sessions-58-61.md`, with a decode token's time):
/// - 8 lanes (128-byte segments) where that leaves four bands per unit of parallelism: an LM
///   head's 2048 → 128256 ran 1.64 → 3.07 TB/s (its rows lie 256 KB apart, so a 32-byte segment
///   is all a DRAM page gives each visit);
/// - else 4 lanes (64-byte segments) where that leaves a fifth of the parallelism (64 bands on
///   the H100's 264) and K is at most 4096: 2048 → 8192 ran 2.52 → 3.66 TB/s, 2048 → 3072
///   1.40 → 1.81, 2048 → 2048 1.23 → 1.36, 1024 → 4096 1.21 → 1.50; with 32 bands (1024
///   outputs) it lost (0.76 → 0.73), and so did K = 8192, whose workgroups each ran twice as long
///   (2048 ← 8192: 2.36 → 2.10);
/// - else 2 (32-byte segments, a whole sector).
///
/// Rows of four keep 2 lanes (not measured).
fn narrow_columns(q: &GemmProblem, caps: &DeviceCaps, rows: u32, bands_of: &dyn Fn(GemvVec) -> u64) -> u32 {
    let form = |columns| GemvVec { dtype: q.dtype, rows, split_k: false, columns, threads: GemvVec::INVOCATIONS };
    let parallelism = u64::from(caps.parallelism.max(5));
    if rows == 1 && bands_of(form(8)) >= 4 * parallelism {
        8
    } else if rows == 1 && q.k <= 4096 && 5 * bands_of(form(4)) >= parallelism {
        4
    } else {
        GemvVec::NARROW
    }
}

/// Whether B's rows, batch starts and row length are multiples of `width` elements.
fn wide_b_ok(q: &GemmProblem, width: u32) -> bool {
    q.n % width == 0 && q.b.row_stride % width == 0 && q.b.batch_strides.iter().all(|s| s % width == 0)
}

/// The scalar GEMV: any strides.
fn gemv_scalar(q: &GemmProblem, caps: &DeviceCaps) -> Result<GemmStep, String> {
    let shape = GemvShape::for_caps(caps).ok_or_else(|| {
        PlanError::WorkgroupTooSmall { invocations: caps.max_invocations_per_workgroup, needed: 32 }.to_string()
    })?;
    let variant = GemmVariant::Gemv { dtype: q.dtype, shape };
    variant.fits(caps)?;
    // Spread the wide lanes along whichever dimension of B is contiguous, so loads coalesce.
    let n_wide = q.b.col_stride == 1 && q.n > 1;
    let cols = if n_wide { shape.wide } else { shape.threads / shape.wide };
    let (tiles_n, tiles_m) = (q.n.div_ceil(cols), q.m.div_ceil(shape.rows));
    let total = tiles_n as u64 * tiles_m as u64 * q.batch_count();
    let grid = fold_grid(total, caps.max_workgroups_per_dimension).map_err(|e| e.to_string())?;
    let mut params = base_params(q, grid, total);
    params.tiles_n = tiles_n;
    params.tiles_m = tiles_m;
    if n_wide {
        params.flags |= FLAG_GEMV_N_WIDE;
    }
    Ok(GemmStep { variant, params, grid, io: StepIo::Product { to_workspace: false } })
}
