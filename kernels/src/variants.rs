//! The set of shader variants the planners can emit on a device: what the goldens cover and
//! what a warm-up may precompile.

use std::collections::BTreeMap;

use crate::caps::DeviceCaps;
use crate::dtype::DType;
use crate::gemm::{plan_gemm, CoopMode, GemmOptions, GemmProblem, TilingChoice};
use crate::shader::ShaderVariant;

/// Sizes that reach every branch of the planners' decisions (aligned and unaligned, thin,
/// small and large; 1500 is a multiple of 4 but not of 8).
const SIZES: &[u32] = &[1, 7, 129, 1000, 1500, 4096];
const CHOICES: &[TilingChoice] =
    &[TilingChoice::Auto, TilingChoice::Tile128, TilingChoice::Tile64, TilingChoice::SplitK, TilingChoice::Gemv];
/// Transposed operands change how slices are staged and how fragments load.
const TRANSPOSES: &[(bool, bool)] = &[(false, false), (true, false), (false, true), (true, true)];

/// Every variant the planners produce for `caps` over a grid of problems and options, by name.
pub fn reachable_variants(caps: &DeviceCaps) -> BTreeMap<String, ShaderVariant> {
    let mut out = BTreeMap::new();
    let options = CHOICES.iter().flat_map(|&tiling| {
        [(CoopMode::Auto, false), (CoopMode::Off, false), (CoopMode::Auto, true)]
            .map(move |(cooperative_matrix, f32_via_f16)| GemmOptions { tiling, cooperative_matrix, f32_via_f16 })
    });
    for options in options {
        for dtype in [DType::F32, DType::F16] {
            for &(ta, tb) in TRANSPOSES {
                for &m in SIZES {
                    for &n in SIZES {
                        for &k in SIZES {
                            let p = GemmProblem::simple(dtype, m, n, k, ta, tb);
                            if let Ok(plan) = plan_gemm(&p, caps, &options) {
                                for v in plan.variants() {
                                    out.insert(v.name(), ShaderVariant::Gemm(v));
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    out
}
