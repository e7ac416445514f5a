//! The set of shader variants the planners can emit on a device: what the goldens cover and
//! what a warm-up may precompile.

use std::collections::BTreeMap;

use crate::caps::DeviceCaps;
use crate::dtype::DType;
use crate::gemm::{plan_gemm, GemmProblem, TilingChoice};
use crate::shader::ShaderVariant;

/// Sizes that reach every branch of the planners' decisions.
const SIZES: &[u32] = &[1, 7, 129, 1000, 4096];
const CHOICES: &[TilingChoice] =
    &[TilingChoice::Auto, TilingChoice::Tile128, TilingChoice::Tile64, TilingChoice::SplitK, TilingChoice::Gemv];

/// Every variant the planners produce for `caps` over a grid of problems, by name.
pub fn reachable_variants(caps: &DeviceCaps) -> BTreeMap<String, ShaderVariant> {
    let mut out = BTreeMap::new();
    for dtype in [DType::F32, DType::F16] {
        for &m in SIZES {
            for &n in SIZES {
                for &k in SIZES {
                    for &choice in CHOICES {
                        let p = GemmProblem::simple(dtype, m, n, k, false, false);
                        if let Ok(plan) = plan_gemm(&p, caps, choice) {
                            for v in plan.variants() {
                                out.insert(v.name(), ShaderVariant::Gemm(v));
                            }
                        }
                    }
                }
            }
        }
    }
    out
}
