//! The GEMM kernel variants and the device limits each one needs.
//!
//! A [`GemmVariant`] is everything that changes the WGSL text; shapes, strides and the epilogue
//! travel in uniforms, so one compiled pipeline serves every shape of its variant.

use crate::caps::DeviceCaps;
use crate::dtype::DType;

/// The tilings the planner chooses between.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tiling {
    /// 128×128 output tile per workgroup, 8×8 outputs per invocation.
    Tile128,
    /// 64×64 output tile per workgroup, 4×4 outputs per invocation.
    Tile64,
    /// 64×64 tiles over slices of K, summed by a second dispatch; fills the device when M·N is
    /// small and K long.
    SplitK { splits: u32 },
    /// A few rows per workgroup, invocations split between columns and K; for M or N ≤ 8 and
    /// the universal fallback (it needs the least of every limit).
    Gemv,
}

impl Tiling {
    pub fn name(self) -> &'static str {
        match self {
            Tiling::Tile128 => "128x128",
            Tiling::Tile64 => "64x64",
            Tiling::SplitK { .. } => "splitk",
            Tiling::Gemv => "gemv",
        }
    }
}

/// A tiling forced by the user (option `tiling`), or `Auto`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum TilingChoice {
    #[default]
    Auto,
    Tile128,
    Tile64,
    SplitK,
    Gemv,
}

impl std::str::FromStr for TilingChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(TilingChoice::Auto),
            "128x128" => Ok(TilingChoice::Tile128),
            "64x64" => Ok(TilingChoice::Tile64),
            "splitk" => Ok(TilingChoice::SplitK),
            "gemv" => Ok(TilingChoice::Gemv),
            _ => Err(format!("'{s}' is not one of auto, 128x128, 64x64, splitk, gemv")),
        }
    }
}

/// Shape of the register-blocked tiled kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TileShape {
    /// Output rows and columns per workgroup.
    pub bm: u32,
    pub bn: u32,
    /// Depth of the K slice staged in workgroup memory per step.
    pub bk: u32,
    /// Outputs per invocation (rows, columns).
    pub tm: u32,
    pub tn: u32,
}

impl TileShape {
    pub const T128: TileShape = TileShape { bm: 128, bn: 128, bk: 16, tm: 8, tn: 8 };
    pub const T64: TileShape = TileShape { bm: 64, bn: 64, bk: 16, tm: 4, tn: 4 };

    pub const fn workgroup(self) -> [u32; 2] {
        [self.bn / self.tn, self.bm / self.tm]
    }

    pub const fn invocations(self) -> u32 {
        (self.bn / self.tn) * (self.bm / self.tm)
    }

    /// Workgroup memory for one A slice and one B slice.
    pub const fn storage_bytes(self, dtype: DType) -> u32 {
        (self.bm + self.bn) * self.bk * dtype.size() as u32
    }
}

/// Shape of the GEMV kernel: `rows` output rows per workgroup, `threads` invocations of which
/// `wide` run along the contiguous dimension of B.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GemvShape {
    pub rows: u32,
    pub threads: u32,
    pub wide: u32,
}

impl GemvShape {
    /// Partial sums of every invocation, reduced across K lanes in workgroup memory.
    pub const fn storage_bytes(self) -> u32 {
        self.rows * self.threads * 4
    }

    /// The largest GEMV workgroup the device allows (256 invocations where possible).
    pub fn for_caps(caps: &DeviceCaps) -> Option<GemvShape> {
        [256u32, 128, 64, 32].into_iter().find_map(|threads| {
            let shape = GemvShape { rows: 4, threads, wide: 32 };
            (caps.allows_workgroup(threads, 1, 1) && shape.storage_bytes() <= caps.max_workgroup_storage_bytes)
                .then_some(shape)
        })
    }
}

/// Which WGSL program a dispatch runs: the pipeline-cache key and the golden file name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GemmVariant {
    /// Tiled GEMM; with `split_k` it writes f32 partial sums instead of the epilogue.
    Tiled {
        dtype: DType,
        shape: TileShape,
        split_k: bool,
    },
    Gemv {
        dtype: DType,
        shape: GemvShape,
    },
    /// Sums split-K partials and applies the epilogue.
    SplitKReduce {
        dtype: DType,
        threads: u32,
    },
}

impl GemmVariant {
    pub fn dtype(self) -> DType {
        match self {
            GemmVariant::Tiled { dtype, .. }
            | GemmVariant::Gemv { dtype, .. }
            | GemmVariant::SplitKReduce { dtype, .. } => dtype,
        }
    }

    /// Stable name: the golden file stem and the label of the pipeline.
    pub fn name(self) -> String {
        match self {
            GemmVariant::Tiled { dtype, shape, split_k } => {
                let suffix = if split_k { "_splitk" } else { "" };
                format!("gemm_{dtype}_{}x{}{suffix}", shape.bm, shape.bn)
            }
            GemmVariant::Gemv { dtype, shape } => {
                format!("gemv_{dtype}_r{}_t{}", shape.rows, shape.threads)
            }
            GemmVariant::SplitKReduce { dtype, threads } => {
                format!("splitk_reduce_{dtype}_t{threads}")
            }
        }
    }

    /// Invocations per workgroup.
    pub fn invocations(self) -> u32 {
        match self {
            GemmVariant::Tiled { shape, .. } => shape.invocations(),
            GemmVariant::Gemv { shape, .. } => shape.threads,
            GemmVariant::SplitKReduce { threads, .. } => threads,
        }
    }

    /// Workgroup memory the variant declares.
    pub fn storage_bytes(self) -> u32 {
        match self {
            GemmVariant::Tiled { dtype, shape, .. } => shape.storage_bytes(dtype),
            GemmVariant::Gemv { shape, .. } => shape.storage_bytes(),
            GemmVariant::SplitKReduce { .. } => 0,
        }
    }

    /// `@workgroup_size` of the variant.
    pub fn workgroup_size(self) -> [u32; 3] {
        match self {
            GemmVariant::Tiled { shape, .. } => {
                let [x, y] = shape.workgroup();
                [x, y, 1]
            }
            GemmVariant::Gemv { shape, .. } => [shape.threads, 1, 1],
            GemmVariant::SplitKReduce { threads, .. } => [threads, 1, 1],
        }
    }

    /// Whether the device can run this variant at all (dtype support, workgroup limits).
    pub fn fits(self, caps: &DeviceCaps) -> Result<(), String> {
        if self.dtype() == DType::F16 && !caps.shader_f16 {
            return Err("f16 needs shader-f16".into());
        }
        let [x, y, z] = self.workgroup_size();
        if !caps.allows_workgroup(x, y, z) {
            return Err(format!(
                "workgroup {x}×{y}×{z} exceeds the device's {} invocations / {:?}",
                caps.max_invocations_per_workgroup, caps.max_workgroup_size
            ));
        }
        if self.storage_bytes() > caps.max_workgroup_storage_bytes {
            return Err(format!(
                "needs {} bytes of workgroup storage; the device has {}",
                self.storage_bytes(),
                caps.max_workgroup_storage_bytes
            ));
        }
        Ok(())
    }
}
