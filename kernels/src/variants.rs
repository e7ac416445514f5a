//! The set of shader variants the planners can emit on a device: what the goldens cover and
//! what a warm-up may precompile.

use std::collections::BTreeMap;

use crate::caps::DeviceCaps;
use crate::conv::{plan_conv_with, resolve, ConvAlgo, ConvAttrs, ConvInputs};
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
    out.extend(conv_variants(caps));
    out
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
            for &algo in ALGOS {
                for &choice in CHOICES {
                    if let Ok(plan) = plan_conv_with(&problem, caps, &GemmOptions::tiling(choice), algo) {
                        out.extend(plan.variants().into_iter().map(|v| (v.name(), v)));
                    }
                }
            }
        }
    }
    out
}
