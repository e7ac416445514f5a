//! When and how a GEMM runs on cooperative matrices (tensor cores).
//!
//! Eligibility is decided by capability alone: a matching fragment configuration, shader-f16,
//! the subgroup size the kernels assume, and (per shape) workgroup storage and invocations.
//! Anything missing is a recorded fallback to the SIMT kernels, never an error.

use super::layout::{a_contig, b_contig, wide_loads_ok};
use super::options::{CoopMode, GemmOptions};
use super::plan::{split_count, tiled_step, tiles, GemmStep};
use super::problem::GemmProblem;
use super::tiling::{CoopShape, Tiling, TilingChoice};
use super::tuning::COOP_64;
use super::variant::{coop_device_check, CoopVariant, GemmVariant};
use crate::caps::DeviceCaps;
use crate::dtype::DType;

/// Whether this problem should try the coop path at all; the error is the recorded reason.
pub(crate) fn eligible(p: &GemmProblem, caps: &DeviceCaps, options: &GemmOptions) -> Result<(), String> {
    let mode = options.cooperative_matrix;
    if mode == CoopMode::Off {
        return Err("disabled by option cooperative_matrix=0".into());
    }
    if p.dtype == DType::F32 && !options.f32_via_f16 {
        return Err(
            "f32 runs there only split into f16 pairs (f32_split) or rounded to f16 (opt in with f32_via_f16)".into()
        );
    }
    if options.tiling == TilingChoice::Gemv {
        return Err("tiling=gemv forced".into());
    }
    if mode == CoopMode::Auto && options.tiling == TilingChoice::Auto && p.m.min(p.n) <= 8 {
        return Err("M or N ≤ 8: the GEMV kernel suits thin products better".into());
    }
    coop_device_check(caps)
}

/// Coop tilings to try, best first (the SIMT ones follow them).
pub(crate) fn candidates(p: &GemmProblem, caps: &DeviceCaps, options: &GemmOptions) -> Vec<Tiling> {
    // Short-K splits only for the thinnest problems (an eighth of `parallelism` in tiles): the
    // 48 tiles of ViT-base's 197×768×768 ran faster alone split but slower end to end.
    let split = Tiling::CoopSplitK { splits: split_count(p, caps, options, COOP_64.bk, 8) };
    match options.tiling {
        TilingChoice::Tile128 => vec![Tiling::Coop128, Tiling::Coop64],
        TilingChoice::Tile64 => vec![Tiling::Coop64],
        TilingChoice::SplitK => vec![split, Tiling::Coop64],
        TilingChoice::Gemv => Vec::new(),
        TilingChoice::Auto => {
            // Measured on the H200 (docs/PERFORMANCE.md, "GEMM occupancy"): the 128×128-class
            // kernels beat 64×64 from about a third of `parallelism` in 128×128 tiles up
            // (512×3072×1024: 79 against 56 TFLOP/s; 512×2048×2048 at a quarter: 63 against 81).
            // Their cold compile costs more (0.7–0.9 s against 0.4 s): Whisper-tiny's fc1 pays it
            // once per machine and saves 16 µs every run.
            let big = tiles(p, 128, 128);
            let enough = big * 3 >= caps.parallelism as u64;
            // ... unless 128-row or -column tiles pad much more than 64×64 ones (M = 64).
            let padded = big * 128 * 128 * 8 > tiles(p, 64, 64) * 64 * 64 * 9;
            if enough && !padded {
                vec![Tiling::Coop128, Tiling::Coop64]
            } else if matches!(split, Tiling::CoopSplitK { splits } if splits >= 2) {
                vec![split, Tiling::Coop64]
            } else {
                vec![Tiling::Coop64]
            }
        }
    }
}

/// Tiles larger than 128×128 (the 512-invocation kernels) only where they pay: 16-byte loads
/// (narrower ones need more prefetch registers than the 128 such a kernel gets), more than a
/// quarter of `parallelism` in tiles (measured: 72 tiles of 1500×1536×384 run at 56 against
/// 41 TFLOP/s, 64 of 1024×2048×2048 at 82 against 124), and at most 1/8 more padded work than
/// 128×128 tiles (N = 384 would compute 512 columns).
fn suits_wide(p: &GemmProblem, caps: &DeviceCaps, shape: CoopShape, width: u32) -> bool {
    let area = u64::from(shape.bm * shape.bn);
    if area <= 128 * 128 {
        return true;
    }
    let wide = tiles(p, shape.bm, shape.bn);
    width == CoopVariant::widths(p.dtype)[0]
        && wide * 4 > caps.parallelism as u64
        && wide * area * 8 <= tiles(p, 128, 128) * 128 * 128 * 9
}

/// The most of K one pass of an emulated coop kernel (`emulate_tensor_cores`) takes; longer
/// products plan as on a device without tensor cores. On llvmpipe, 128×128 tiles (eight
/// fragments per subgroup) and split f32 operands summed wrongly from 15–48 slices of 32 on,
/// every shape passed at 256 (`gemm_variants_gpu.rs::coop_emulated_at_the_longest_k_matches_reference`).
pub const EMULATED_MAX_K: u32 = 256;

/// The first of `shapes` the device can run, as a product step (split-K partial with `splits`;
/// f32 operands split into f16 pairs with `split`, `Some(fused)`, see `gemm::split`).
pub(crate) fn step(
    p: &GemmProblem,
    caps: &DeviceCaps,
    shapes: &[CoopShape],
    splits: Option<u32>,
    split: Option<bool>,
) -> Result<GemmStep, String> {
    if caps.coop_emulated && p.k.div_ceil(splits.unwrap_or(1).max(1)) > EMULATED_MAX_K {
        return Err(format!(
            "the emulated coop kernels take at most {EMULATED_MAX_K} of K per pass (llvmpipe returned wrong sums \
             for longer loops with eight accumulators or more, or split operands)"
        ));
    }
    // The widest load the operands' alignment allows.
    let width = CoopVariant::widths(p.dtype).iter().copied().find(|&w| w == 1 || wide_loads_ok(p, w)).unwrap_or(1);
    let mut last = "no cooperative-matrix shape in the tuning table".to_string();
    // A one-shape table (a kernel sweep's candidate) runs its shape wherever it fits.
    let choosing = shapes.len() > 1;
    for &shape in shapes.iter().filter(|s| !choosing || suits_wide(p, caps, **s, width)) {
        let variant = CoopVariant {
            dtype: p.dtype,
            shape,
            split_k: splits.is_some(),
            a: a_contig(p),
            b: b_contig(p),
            width,
            emulate: caps.coop_emulated,
            split: split.is_some(),
            fused: split == Some(true),
            subgroup_sync: caps.subgroup_barrier && !caps.coop_emulated,
        };
        match GemmVariant::Coop(variant).fits(caps) {
            Ok(()) => {
                return tiled_step(p, caps, GemmVariant::Coop(variant), [shape.bm, shape.bn, shape.bk], splits);
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}
