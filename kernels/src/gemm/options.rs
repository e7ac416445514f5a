//! User-facing knobs of the GEMM planner (session options `tiling`, `cooperative_matrix`,
//! `f32_via_f16`, `f32_split`).

use super::tiling::TilingChoice;

/// Whether to run on cooperative matrices (tensor cores).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum CoopMode {
    /// Where the device offers a matching configuration and the problem suits it.
    #[default]
    Auto,
    /// Never: the SIMT kernels only.
    Off,
    /// For every problem the coop kernels can compute, thin ones too. A device without a
    /// matching configuration still falls back (with the reason in `GemmPlan::fallbacks`):
    /// the option states a preference, not a requirement.
    On,
}

impl std::str::FromStr for CoopMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "auto" | "" => Ok(CoopMode::Auto),
            "0" | "off" | "false" => Ok(CoopMode::Off),
            "1" | "on" | "true" => Ok(CoopMode::On),
            _ => Err(format!("'{s}' is not one of auto, 0, 1")),
        }
    }
}

/// How to plan a GEMM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct GemmOptions {
    pub tiling: TilingChoice,
    pub cooperative_matrix: CoopMode,
    /// Opt-in precision trade: f32 problems may run on the f16 tensor-core path (operands
    /// rounded to f16, f32 accumulation and output). Off by default.
    pub f32_via_f16: bool,
    /// Large f32 products on the tensor cores as three f16 products of operands split into
    /// high and low halves (`gemm::split`): about fp32's accuracy. `Auto`: where the coop
    /// kernels' 128-wide tiles fill the device; `On`: every product they can compute; `Off`:
    /// the SIMT kernels. Needs the coop path (`cooperative_matrix` not off).
    pub f32_split: CoopMode,
    /// How a split product runs: `On` fused (K once, the high and low parts staged side by side,
    /// three fragment products per step) wherever its staging fits, else serial (K three
    /// times); `Off` serial; `Auto` fused except where `gemm::split::keeps_serial` measured the
    /// serial form faster.
    pub f32_split_fused: CoopMode,
    /// Keep products with K below 1024 unsplit (the convs' products: the short-K split-K rule
    /// was measured on plain products only).
    pub unsplit_short_k: bool,
    /// The SIMT vec4 kernels with their stores in one loop (`_q`): the epilogue is compiled once
    /// instead of once per register block, which the NVIDIA driver compiles 1.5–2× faster cold.
    /// The interim plans of a cold start take them (`graph/interim.rs`).
    pub quick_compile: bool,
}

impl GemmOptions {
    /// Options forcing a tiling, everything else automatic.
    pub fn tiling(tiling: TilingChoice) -> Self {
        GemmOptions { tiling, ..Default::default() }
    }
}
