//! Tilings and the shapes of the kernels that implement them.
//!
//! Shapes are plain numbers: the planner picks them (from [`super::tuning::Tuning`]) and the
//! templates only substitute them.

use crate::caps::DeviceCaps;
use crate::dtype::DType;

/// The tilings the planner chooses between.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tiling {
    /// 128×128 output tile per workgroup on the SIMT (plain FMA) kernels.
    Tile128,
    /// 64×64 output tile per workgroup on the SIMT kernels.
    Tile64,
    /// 64×64 SIMT tiles over slices of K, summed by a second dispatch; fills the device when
    /// M·N is small and K long.
    SplitK { splits: u32 },
    /// A few rows per workgroup, invocations split between columns and K; for M or N ≤ 8 and
    /// the universal fallback (it needs the least of every limit).
    Gemv,
    /// 128×128 output tile on cooperative matrices (tensor cores), for large problems.
    Coop128,
    /// 64×64 output tile on cooperative matrices, for problems with few 128×128 tiles.
    Coop64,
    /// 64×64 cooperative-matrix tiles over slices of K plus the split-K reduction.
    CoopSplitK { splits: u32 },
}

impl Tiling {
    pub fn name(self) -> &'static str {
        match self {
            Tiling::Tile128 => "128x128",
            Tiling::Tile64 => "64x64",
            Tiling::SplitK { .. } => "splitk",
            Tiling::Gemv => "gemv",
            Tiling::Coop128 => "coop128x128",
            Tiling::Coop64 => "coop64x64",
            Tiling::CoopSplitK { .. } => "coop_splitk",
        }
    }

    /// Whether the tiling runs on cooperative matrices.
    pub fn is_coop(self) -> bool {
        matches!(self, Tiling::Coop128 | Tiling::Coop64 | Tiling::CoopSplitK { .. })
    }
}

/// A tiling forced by the user (option `tiling`), or `Auto`. The tile sizes apply to the
/// cooperative-matrix path and to the SIMT path alike.
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

/// Shape of the register-blocked SIMT kernels.
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

    /// Workgroup memory of the scalar kernel: one A slice and one B slice in the storage type.
    pub const fn storage_bytes(self, dtype: DType) -> u32 {
        (self.bm + self.bn) * self.bk * dtype.size() as u32
    }

    /// Workgroup memory of the vec4 kernel: two f32 stages of both slices, each row of a stage
    /// padded by one vec4 so transposing stores hit distinct banks.
    pub const fn vec_storage_bytes(self) -> u32 {
        2 * self.bk * (self.bm + 4 + self.bn + 4) * 4
    }

    /// Whether the vec4 kernel can run this shape: 4×4 register blocks, and every invocation
    /// loads a whole number of vec4 chunks of each slice.
    pub const fn vec_compatible(self) -> bool {
        let threads = self.invocations();
        self.tm % 4 == 0
            && self.tn % 4 == 0
            && self.bk % 4 == 0
            && (self.bm * self.bk / 4) % threads == 0
            && (self.bn * self.bk / 4) % threads == 0
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

/// Edge of the cooperative-matrix fragment every coop kernel uses (16×16×16, f16 → f32).
pub const FRAG: u32 = 16;
/// Subgroup size the coop kernels assume: subgroup `s` is invocations `32s .. 32s+31` of the
/// one-dimensional workgroup, so the device must run exactly this size.
pub const COOP_SUBGROUP: u32 = 32;

/// Shape of a cooperative-matrix kernel: a `bm×bn` output tile computed by a `sg_m×sg_n`
/// grid of subgroups, each accumulating `(bm/16/sg_m) × (bn/16/sg_n)` 16×16 fragments, over K
/// slices `bk` deep staged in workgroup memory (`stages` = 2: double-buffered).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CoopShape {
    pub bm: u32,
    pub bn: u32,
    pub bk: u32,
    pub sg_m: u32,
    pub sg_n: u32,
    pub stages: u32,
    /// Slices in flight between global load and staging store: 1 loads the next slice while
    /// the current one is multiplied; 2 keeps two register sets, so a load has two slices of
    /// work to arrive (needs `stages` = 2).
    pub depth: u32,
    /// Stage both operands with K contiguous (transposing an operand whose other dimension is
    /// contiguous in memory while storing it), so fragments of A load row-major and fragments
    /// of B column-major, whatever the operands' layouts.
    pub stage_k: bool,
}

/// Padding (f16 elements) after every staged row: keeps fragment rows 16-byte aligned, as
/// cooperative loads require, while shifting successive rows by four banks.
pub const COOP_PAD: u32 = 8;

impl CoopShape {
    /// Fragments per subgroup along M and N.
    pub const fn frags(self) -> [u32; 2] {
        [self.bm / FRAG / self.sg_m, self.bn / FRAG / self.sg_n]
    }

    pub const fn subgroups(self) -> u32 {
        self.sg_m * self.sg_n
    }

    pub const fn invocations(self) -> u32 {
        self.subgroups() * COOP_SUBGROUP
    }

    /// Row stride and row count of one staged slice of an operand whose contiguous dimension
    /// is `contig` (`outer` is the operand's M or N tile size).
    pub const fn staged(self, outer: u32, contig: Contig) -> (u32, u32) {
        match contig {
            Contig::K => (self.bk + COOP_PAD, outer),
            Contig::Mn => (outer + COOP_PAD, self.bk),
        }
    }

    /// f16 elements of one stage of A and of B.
    pub const fn stage_elems(self, a: Contig, b: Contig) -> (u32, u32) {
        let (sa, ra) = self.staged(self.bm, a);
        let (sb, rb) = self.staged(self.bn, b);
        (sa * ra, sb * rb)
    }

    /// Workgroup memory: `stages` f16 slices of A and B plus one 16×16 f32 scratch fragment
    /// per subgroup for the epilogue.
    pub const fn storage_bytes(self, a: Contig, b: Contig) -> u32 {
        self.staging_bytes(a, b) + self.subgroups() * FRAG * FRAG * 4
    }

    /// Workgroup memory of the `stages` f16 slices of A and B alone.
    pub const fn staging_bytes(self, a: Contig, b: Contig) -> u32 {
        let (ea, eb) = self.stage_elems(a, b);
        self.stages * (ea + eb) * 2
    }

    /// Whether `chunks` loads of a slice spread evenly: a whole number per invocation, or one
    /// each for the first `chunks` invocations.
    const fn loads_split(chunks: u32, threads: u32) -> bool {
        chunks > 0 && (chunks % threads == 0 || threads % chunks == 0)
    }

    /// Whether the numbers describe a kernel the template can emit with `vw`-wide loads.
    pub const fn is_consistent(self, vw: u32) -> bool {
        let [fm, fn_] = self.frags();
        let threads = self.invocations();
        fm >= 1
            && fn_ >= 1
            && fm * FRAG * self.sg_m == self.bm
            && fn_ * FRAG * self.sg_n == self.bn
            && self.bk % FRAG == 0
            && self.bk > 0
            && (self.stages == 1 || self.stages == 2)
            && (self.depth == 1 || (self.depth == 2 && self.stages == 2))
            && Self::loads_split(self.bm * self.bk / vw, threads)
            && Self::loads_split(self.bn * self.bk / vw, threads)
    }
}

/// Which dimension of an operand is contiguous in memory: K, or the other one (M for A, N
/// for B). Decides how a slice is staged so that global loads coalesce and, on the coop path,
/// whether fragments load row-major (`coopLoadT`) or column-major (`coopLoad`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Contig {
    K,
    Mn,
}
