//! f32 products on the tensor cores at about fp32's accuracy: each operand x is scaled by a
//! power of two 2^s that brings its largest magnitude into [2^14, 2^15), then split into f16
//! parts: `hi`, the leading 11 significant bits of x·2^s (truncated, so f16 holds it exactly),
//! and `lo = f16(x·2^s − hi)` (together about 22 significant bits). The coop
//! kernel multiplies `A_hi·B_lo + A_lo·B_hi + A_hi·B_hi` as one f16 product over a K three
//! times as long (the small terms first), with f32 accumulation, and scales the result back by
//! 2^−(s_A + s_B) before the epilogue. Only `A_lo·B_lo` (≤ 2^−20 relative) is left out.
//!
//! The scales depend on the data, so a [`GemmVariant::AbsMax`] step runs first: per-workgroup
//! maxima of both operands' magnitudes (at most [`MAX_GROUPS`] per operand), which every workgroup
//! of the product reads and reduces itself (a second pass reducing them cost a dispatch per product:
//! 8 of Whisper-tiny fp32's 61). The maxima skip infinities and NaNs, which pass through the
//! product as in f32 (an infinity's hi part is f16's largest value and its lo part the infinity,
//! so it meets only the other operand's nonzero hi parts); an operand of zeros gets s = 0.

use super::coop;
use super::layout::wide_loads_ok;
use super::options::{CoopMode, GemmOptions};
use super::params::{fold_grid, GemmParams};
use super::plan::{tiles, GemmPlan, GemmStep, StepIo};
use super::problem::GemmProblem;
use super::tiling::{Tiling, TilingChoice};
use super::tuning::{Tuning, COOP_SPLIT_SHORT, SPLIT_SHORT_K};
use super::variant::{coop_device_check, GemmVariant};
use crate::caps::DeviceCaps;
use crate::dtype::DType;

/// vec4s each invocation of the max pass reads at least, before more workgroups join: one
/// round of its four loads in flight (16, four rounds, left Whisper-tiny's 2.3 MB activations
/// to 36 workgroups).
const PER_INVOCATION: u64 = 4;
/// Shortest K, and smallest M and N, the automatic choice splits.
const MIN_AUTO_K: u32 = 256;
const MIN_AUTO_MN: u32 = 512;
/// Workgroups per operand of the max pass, at most: every workgroup of the product reads all
/// their maxima (uniform loads, before its first slice).
pub const MAX_GROUPS: u64 = 256;
/// Where a split product's params keep the max pass's workgroups per operand (`flags` bits 16–31).
pub const FLAG_MAXIMA_SHIFT: u32 = 16;

/// Whether an f32 problem takes the split path: `Ok(None)` when the question does not arise
/// (f16 problems, or the opt-in `f32_via_f16`, which takes precedence), `Err` with the
/// recorded reason when it declines.
pub(crate) fn eligible(p: &GemmProblem, caps: &DeviceCaps, options: &GemmOptions) -> Result<bool, String> {
    if p.dtype != DType::F32 || options.f32_via_f16 {
        return Ok(false);
    }
    if options.f32_split == CoopMode::Off {
        return Err("disabled by option f32_split=0".into());
    }
    if options.cooperative_matrix == CoopMode::Off {
        return Err("runs on the coop kernels, disabled by cooperative_matrix=0".into());
    }
    if options.tiling == TilingChoice::Gemv || options.tiling == TilingChoice::SplitK {
        return Err(format!("tiling={:?} forced", options.tiling).to_lowercase());
    }
    coop_device_check(caps)?;
    if !wide_loads_ok(p, 4) {
        return Err("needs rows of a multiple of 4 elements (16-byte loads)".into());
    }
    if p.m.min(p.n) <= 8 || p.k < 16 {
        return Err("M or N ≤ 8 or K < 16: too thin for tensor cores".into());
    }
    // Measured on the H200 (docs/PERFORMANCE.md, "fp32 on tensor cores"): three f16 products
    // beat the SIMT kernel on products large in M, N and K that fill the device in 128×128
    // tiles (4096³: 57.7 against 31.4 TFLOP/s; 1500×1536×384: 20.8 against 15.9) and lose on
    // short K (six 1500×1500×64: 8.9 against 13.6) and on the narrow, batched products of
    // convs (32 × 128×784×512: 15.5 against 21.5; 64×100352×576: 12.7 against 16.6).
    let auto = options.f32_split == CoopMode::Auto;
    if auto && tiles(p, 128, 128) * 3 < caps.parallelism as u64 {
        return Err("fewer than a third of the device's parallelism in 128×128 tiles: SIMT is faster".into());
    }
    if auto && (p.k < MIN_AUTO_K || p.m.min(p.n) < MIN_AUTO_MN) {
        return Err(format!("K < {MIN_AUTO_K} or M or N < {MIN_AUTO_MN}: SIMT is as fast"));
    }
    if virtual_k(p.k, 64) > u32::MAX as u64 / 2 {
        return Err("K too long for three segments".into());
    }
    Ok(true)
}

/// Three K segments, each rounded up to whole slices of `bk`.
fn virtual_k(k: u32, bk: u32) -> u64 {
    3 * u64::from(k.next_multiple_of(bk))
}

/// The max pass and the product: fused or serial as `f32_split_fused` and
/// [`keeps_serial`] decide, each on the first coop tiling (without K splits) that builds.
pub(crate) fn plan(
    p: &GemmProblem,
    caps: &DeviceCaps,
    options: &GemmOptions,
    tuning: &Tuning,
) -> Result<GemmPlan, String> {
    let form = |fused| product(p, caps, options, tuning, fused);
    let (tiling, step) = match options.f32_split_fused {
        CoopMode::Off => form(false)?,
        CoopMode::On => form(true).or_else(|_| form(false))?,
        CoopMode::Auto => match form(false) {
            Ok(serial) if keeps_serial(p, &serial.1) => serial,
            serial => form(true).or(serial)?,
        },
    };
    let (mut steps, workspace, groups) = max_steps(p, caps)?;
    let mut step = step;
    step.params.flags |= groups << FLAG_MAXIMA_SHIFT;
    steps.push(step);
    Ok(GemmPlan { tiling, steps, swap_operands: false, workspace_bytes: workspace, fallbacks: Vec::new() })
}

/// Where the automatic choice keeps the serial form: measured on the H200 (docs/PERFORMANCE.md,
/// "The fused split"), the fused one runs at the serial one's error and faster (4096³ 55.6
/// against 48.0 TFLOP/s, 8192³ 59.7 against 47.9, 512×3072×1024 0.099 against 0.174 ms), except
/// where a short K lets the serial form take 128×256 tiles over its three segments, which the
/// fused form's doubled staging does not fit (1500×1536×384: 0.087 serial, 0.103 fused).
fn keeps_serial(p: &GemmProblem, serial: &GemmStep) -> bool {
    matches!(serial.variant, GemmVariant::Coop(c) if c.shape.bm * c.shape.bn > 128 * 128) && p.k < 1024
}

/// The split product in one form: the tile classes are chosen for the product as the kernel
/// runs it (a serial one walks K three times), and the kernel reads the real K.
fn product(
    p: &GemmProblem,
    caps: &DeviceCaps,
    options: &GemmOptions,
    tuning: &Tuning,
    fused: bool,
) -> Result<(Tiling, GemmStep), String> {
    let mut q = *p;
    if !fused {
        q.k = virtual_k(p.k, 64) as u32;
    }
    let short = (fused && p.k <= SPLIT_SHORT_K).then(|| {
        let mut t = tuning.clone();
        t.coop_128.insert(0, COOP_SPLIT_SHORT);
        t
    });
    let tuning = short.as_ref().unwrap_or(tuning);
    #[cfg(feature = "wgsl-override")]
    let experiment = fused.then(|| experiment_fused_shapes(tuning)).flatten();
    #[cfg(feature = "wgsl-override")]
    let tuning = experiment.as_ref().unwrap_or(tuning);
    let mut last = String::from("no coop tiling without K splits");
    for tiling in coop::candidates(&q, caps, options) {
        let shapes = match tiling {
            Tiling::Coop128 => &tuning.coop_128,
            Tiling::Coop64 => &tuning.coop_64,
            _ => continue,
        };
        match coop::step(&q, caps, shapes, None, Some(fused)) {
            Ok(mut step) => {
                let GemmVariant::Coop(c) = step.variant else { continue };
                step.params.k = p.k;
                // A serial kernel walks three segments of K, each rounded to its slices.
                step.params.k_chunk = if fused { p.k } else { virtual_k(p.k, c.shape.bk) as u32 };
                return Ok((tiling, step));
            }
            Err(e) => last = format!("{}: {e}", tiling.name()),
        }
    }
    Err(last)
}

/// An experiment build's fused split shapes, tried before the table's 128×128 ones:
/// `EXP_SPLIT_FUSED=16x2x1,16x1x1` (K slice × stages × register sets of a 128×128 tile of 2×4
/// subgroups; `bench/KERNELS.md`). Release builds never read it.
#[cfg(feature = "wgsl-override")]
fn experiment_fused_shapes(tuning: &Tuning) -> Option<Tuning> {
    let spec = std::env::var("EXP_SPLIT_FUSED").ok()?;
    let mut shapes = Vec::new();
    for item in spec.split(',') {
        let v: Vec<u32> = item.split('x').filter_map(|x| x.trim().parse().ok()).collect();
        let &[bk, stages, depth] = v.as_slice() else { continue };
        shapes.push(super::tiling::CoopShape { bk, stages, depth, ..super::tuning::COOP_128 });
    }
    let mut t = tuning.clone();
    shapes.extend(t.coop_128.iter().copied());
    t.coop_128 = shapes;
    Some(t)
}

/// The max pass: per-workgroup maxima of A and B into the workspace (A's, then B's), 16 bytes
/// read at a time. Returns the step, the workspace bytes and the workgroups per operand.
fn max_steps(p: &GemmProblem, caps: &DeviceCaps) -> Result<(Vec<GemmStep>, u64, u32), String> {
    let len_a = p.a.extent(p.m, p.k, &p.batch);
    let len_b = p.b.extent(p.k, p.n, &p.batch);
    if len_a % 4 != 0 || len_b % 4 != 0 {
        return Err("an operand's extent is not a multiple of 4 elements".into());
    }
    let (vec_a, vec_b) = (len_a / 4, len_b / 4);
    if vec_a.max(vec_b) > u32::MAX as u64 {
        return Err("an operand has more than 2^34 elements".into());
    }
    let threads = u64::from(GemmVariant::ABSMAX_THREADS);
    GemmVariant::AbsMax.fits(caps)?;
    let groups = vec_a.max(vec_b).div_ceil(threads * PER_INVOCATION).clamp(1, MAX_GROUPS) as u32;
    let pass = max_step(caps, [vec_a as u32, vec_b as u32], groups)?;
    Ok((vec![pass], u64::from(2 * groups) * 4, groups))
}

/// The max pass `step` over operand A alone: B is a constant whose maxima the full pass left in
/// the workspace when the product was prepared (`Gpu::prepare_gemm_constant_b`). Its first
/// `tiles_n` workgroups are A's.
pub fn max_pass_of_a(step: &GemmStep, caps: &DeviceCaps) -> Result<GemmStep, String> {
    if step.io != StepIo::AbsMax {
        return Err(format!("{} is not a max pass", step.variant.name()));
    }
    let total = step.params.tiles_n;
    let grid = fold_grid(u64::from(total), caps.max_workgroups_per_dimension).map_err(|e| e.to_string())?;
    let params = GemmParams { grid_x: grid[0], grid_y: grid[1], total_workgroups: total, ..step.params };
    Ok(GemmStep { params, grid, ..step.clone() })
}

/// The max pass over two operands of `lens` vec4s, `groups` workgroups each. The program reads
/// `m`, `n`, `k` (where b starts in its binding: 0) and `tiles_n`.
fn max_step(caps: &DeviceCaps, lens: [u32; 2], groups: u32) -> Result<GemmStep, String> {
    let total = 2 * u64::from(groups);
    let grid = fold_grid(total, caps.max_workgroups_per_dimension).map_err(|e| e.to_string())?;
    let params = GemmParams {
        m: lens[0],
        n: lens[1],
        k: 0,
        tiles_n: groups,
        grid_x: grid[0],
        grid_y: grid[1],
        total_workgroups: total as u32,
        ..bytemuck::Zeroable::zeroed()
    };
    Ok(GemmStep { variant: GemmVariant::AbsMax, params, grid, io: StepIo::AbsMax })
}
