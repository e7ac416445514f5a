//! The GEMM kernel variants and the device limits each one needs.
//!
//! A [`GemmVariant`] is everything that changes the WGSL text; shapes, strides and the epilogue
//! travel in uniforms, so one compiled pipeline serves every shape of its variant.

use super::tiling::{Contig, CoopShape, GemvShape, TileShape, COOP_SUBGROUP, FRAG};
use super::tuning::{COOP_128, COOP_64, SIMT_VEC_128, SIMT_VEC_64};
use crate::caps::{CoopMatrixConfig, CoopScalar, DeviceCaps};
use crate::dtype::DType;

/// The cooperative-matrix configuration every coop kernel multiplies with.
pub const COOP_CONFIG: CoopMatrixConfig =
    CoopMatrixConfig { m: FRAG, n: FRAG, k: FRAG, ab: CoopScalar::F16, cr: CoopScalar::F32 };

/// A tensor-core GEMM: f16 operands staged in workgroup memory, f32 accumulators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CoopVariant {
    /// Storage type of A, B, bias and output. f32 operands are rounded to f16 while staged
    /// (the opt-in `f32_via_f16` precision).
    pub dtype: DType,
    pub shape: CoopShape,
    /// Writes f32 partial sums of one K slice instead of the epilogue.
    pub split_k: bool,
    pub a: Contig,
    pub b: Contig,
    /// Elements per global load along each operand's contiguous dimension: 16 bytes (8 f16 or
    /// 4 f32), 8 bytes (4 f16), or 1. For more than 1 the planner proved that every chunk is
    /// aligned and lies wholly inside or outside the matrix.
    pub width: u32,
    /// Cooperative-matrix operations replaced by plain WGSL with the same semantics (each
    /// invocation computes its subgroup's whole fragment), so the staging, indexing and epilogue
    /// of a coop kernel can be tested on adapters without tensor cores. Never planned.
    pub emulate: bool,
    /// f32 operands split into f16 high and low parts, multiplied as three f16 products over a
    /// K three times as long (`gemm::split`); the scales come from the maxima of the
    /// [`GemmVariant::AbsMax`] step before it. Only f32 with 16-byte loads.
    pub split: bool,
    /// With `split`: K runs once; each slice stages the high and the low parts side by side
    /// (twice the staging memory) and every fragment pair takes its three products in turn.
    pub fused: bool,
    /// The epilogue syncs each subgroup's scratch with subgroup barriers (device cap
    /// `subgroup_barrier`) instead of workgroup ones, so subgroups write out their fragments
    /// without waiting for the others. Not with `emulate` (its subgroups are not the hardware's).
    pub subgroup_sync: bool,
}

impl CoopVariant {
    /// The widths the kernels load with, widest first: 16 bytes, then (f16) 8 bytes, then 1.
    pub fn widths(dtype: DType) -> &'static [u32] {
        match dtype {
            DType::F16 => &[8, 4, 1],
            DType::F32 => &[4, 1],
        }
    }

    /// How A is staged: K-contiguous (fragments load row-major) or M-contiguous.
    pub fn a_staged(self) -> Contig {
        if self.shape.stage_k {
            Contig::K
        } else {
            self.a
        }
    }

    /// How B is staged: N-contiguous (fragments load row-major) or K-contiguous.
    pub fn b_staged(self) -> Contig {
        if self.shape.stage_k {
            Contig::K
        } else {
            self.b
        }
    }

    pub fn storage_bytes(self) -> u32 {
        let (a, b) = (self.a_staged(), self.b_staged());
        let low_parts = if self.split && self.fused { self.shape.staging_bytes(a, b) } else { 0 };
        self.shape.storage_bytes(a, b) + low_parts
    }
}

/// The bandwidth GEMV: B is `[K, N]` with N contiguous and every row, batch and band start a
/// multiple of [`GemvVec::vec`] elements, so each invocation loads 16 bytes of a B row at once.
/// A workgroup covers [`GemvVec::column_lanes`] × `vec` columns with [`GemvVec::k_lanes`] lanes
/// along K; `rows` output rows share each B load. The narrow forms (2, 4 or 8 column lanes, 128,
/// 64 or 32 along K: row segments of 32, 64 or 128 bytes) have 8×, 4× or 2× the workgroups of the
/// wide one (16 × 16), so products with few column bands fill the device without splitting K;
/// the planner takes the widest segments that still leave enough bands (`plan.rs`). One row on a
/// narrow form takes [`GemvVec::ROW_INVOCATIONS`] where the device allows it (twice the K lanes,
/// so twice the loads in flight on each compute unit).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GemvVec {
    pub dtype: DType,
    pub rows: u32,
    pub split_k: bool,
    /// Invocations side by side along N: [`GemvVec::WIDE`], or 2, 4 or 8 (the narrow forms).
    pub columns: u32,
    /// Invocations per workgroup: [`GemvVec::INVOCATIONS`] or [`GemvVec::ROW_INVOCATIONS`].
    pub threads: u32,
}

/// Experiment builds (`wgsl-override`) only: `EXP_GEMV_CT` (the narrow form's column lanes, a
/// power of two from 1 to 256), `EXP_GEMV_LOADS` (its loads in flight, 1 to 64) and
/// `EXP_GEMV_NARROW` (1: the narrow form wherever K allows it, 0: never) and `EXP_GEMV_THREADS` (the
/// narrow forms' invocations per workgroup: 256, 512 or 1024); release builds never read them.
pub(crate) fn exp_gemv(name: &str) -> Option<u32> {
    if !cfg!(feature = "wgsl-override") {
        return None;
    }
    let v: u32 = std::env::var(name).ok()?.trim().parse().ok()?;
    let ok = match name {
        "EXP_GEMV_CT" => v.is_power_of_two() && v <= 256,
        "EXP_GEMV_LOADS" => (1..=64).contains(&v),
        "EXP_GEMV_THREADS" => matches!(v, 256 | 512 | 1024),
        _ => v <= 1,
    };
    ok.then_some(v)
}

impl GemvVec {
    pub const INVOCATIONS: u32 = 256;
    /// One row's narrow forms where the device allows it: a Llama-3.2-1B fp16 token 6–8% faster
    /// on the H100 (1.72–1.73 → 1.59–1.60 ms back to back at a past of 512, 1.85 → 1.73 at 2048;
    /// 1024 lost: 1.75; sixty-first session).
    pub const ROW_INVOCATIONS: u32 = 512;
    /// Loads issued back to back before their multiply-adds.
    pub const UNROLL: u32 = 4;
    /// The wide form's column lanes (each half-subgroup reads 256 contiguous bytes of a row).
    pub const WIDE: u32 = 16;
    /// The narrowest form's column lanes (32-byte row segments, a whole sector).
    pub const NARROW: u32 = 2;
    /// Every narrow form's column lanes, narrowest first.
    pub const NARROW_FORMS: [u32; 3] = [2, 4, 8];

    /// Whether this is one of the narrow forms (fewer column lanes than the wide one).
    pub fn narrow(self) -> bool {
        self.columns < Self::WIDE
    }

    /// Loads each invocation issues back to back in the kernel's main loop: 16 in the one-row
    /// narrow form (a decode step's products, whose few hundred workgroups keep too few bytes in
    /// flight at 4: 2–4% more bandwidth on the H200's decode shapes), else [`GemvVec::UNROLL`].
    pub fn loads_in_flight(self) -> u32 {
        if self.narrow() && self.rows == 1 {
            exp_gemv("EXP_GEMV_LOADS").unwrap_or(16)
        } else {
            Self::UNROLL
        }
    }

    /// Invocations side by side along N.
    pub fn column_lanes(self) -> u32 {
        match exp_gemv("EXP_GEMV_CT") {
            Some(forced) if self.narrow() => forced,
            _ => self.columns,
        }
    }

    /// Invocations per workgroup: `threads` (experiment builds: `EXP_GEMV_THREADS` for the narrow
    /// forms).
    pub fn invocations(self) -> u32 {
        match exp_gemv("EXP_GEMV_THREADS") {
            Some(forced) if self.narrow() => forced,
            _ => self.threads,
        }
    }

    /// This form at [`GemvVec::ROW_INVOCATIONS`] where it is one row's narrow form, `caps` runs it
    /// and K gives each lane at least [`GemvVec::UNROLL`] loads; else itself.
    pub fn for_one_row(self, k: u32, caps: &crate::caps::DeviceCaps) -> GemvVec {
        let wide = GemvVec { threads: Self::ROW_INVOCATIONS, ..self };
        let fits = GemmVariant::GemvVec(wide).fits(caps).is_ok();
        if self.narrow() && self.rows == 1 && fits && k >= wide.k_lanes() * Self::UNROLL {
            wide
        } else {
            self
        }
    }

    /// Invocations along K.
    pub fn k_lanes(self) -> u32 {
        self.invocations() / self.column_lanes()
    }

    /// Elements per 16-byte load.
    pub fn vec(self) -> u32 {
        16 / self.dtype.size() as u32
    }

    /// Columns one workgroup covers.
    pub fn band(self) -> u32 {
        self.column_lanes() * self.vec()
    }

    /// The vec4<f32> partial sums of every invocation, for one row at a time (and of the
    /// first summing stage of the narrow form), and a folded norm's squares per K lane (and
    /// their sums of eight) where one row may fold one.
    pub fn storage_bytes(self) -> u32 {
        let partial = self.invocations() * self.vec() / 4 * 16;
        // Lanes beyond 16 along K are summed in two stages (8 at a time first).
        let parts =
            if self.k_lanes() > 16 { self.column_lanes() * self.vec() / 4 * self.k_lanes() / 8 * 16 } else { 0 };
        let squares = if self.rows == 1 && self.narrow() { (self.k_lanes() + self.k_lanes() / 8) * 4 } else { 0 };
        partial + parts + squares
    }
}

/// Which WGSL program a dispatch runs: the pipeline-cache key and the golden file name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GemmVariant {
    /// SIMT tiled GEMM with scalar loads (any strides); with `split_k` it writes f32 partial
    /// sums instead of the epilogue.
    Tiled {
        dtype: DType,
        shape: TileShape,
        split_k: bool,
    },
    /// SIMT tiled GEMM with vec4 global and workgroup loads and double-buffered K slices; the
    /// planner proved 4-element alignment of both operands (of A alone with `implicit_b`).
    TiledVec {
        dtype: DType,
        shape: TileShape,
        split_k: bool,
        a: Contig,
        b: Contig,
        /// Implicit-GEMM conv: B is not a `[K, N]` matrix but gathered from the NCHW conv input
        /// (im2col on load, geometry in a second uniform); `b` is then `Contig::Mn`.
        implicit_b: bool,
        /// A is loaded as 4 scalars per chunk, each bounds-checked along K (rows whose length
        /// is not a multiple of 4); only with `implicit_b`, whose conv weights are not padded.
        a_scalar: bool,
        /// The stores in one loop whose trip count the driver cannot see (`_q`,
        /// `GemmOptions::quick_compile`); never with `split_k`.
        quick: bool,
    },
    /// Cooperative-matrix GEMM.
    Coop(CoopVariant),
    Gemv {
        dtype: DType,
        shape: GemvShape,
    },
    /// GEMV with 16-byte loads along N ([`GemvVec`]); with `split_k` it writes f32 partials.
    GemvVec(GemvVec),
    /// Sums split-K partials and applies the epilogue.
    SplitKReduce {
        dtype: DType,
        threads: u32,
    },
    /// The largest magnitude of each operand of a split product, as f32 bits: one pass of
    /// per-workgroup maxima, then one over those (the same program twice).
    AbsMax,
}

fn layout_suffix(a: Contig, b: Contig) -> String {
    let mut s = String::new();
    if a == Contig::Mn {
        s.push_str("_at");
    }
    if b == Contig::K {
        s.push_str("_bt");
    }
    s
}

impl GemmVariant {
    pub fn dtype(self) -> DType {
        match self {
            GemmVariant::Tiled { dtype, .. }
            | GemmVariant::TiledVec { dtype, .. }
            | GemmVariant::Gemv { dtype, .. }
            | GemmVariant::GemvVec(GemvVec { dtype, .. })
            | GemmVariant::SplitKReduce { dtype, .. } => dtype,
            GemmVariant::Coop(c) => c.dtype,
            GemmVariant::AbsMax => DType::F32,
        }
    }

    pub fn is_coop(self) -> bool {
        matches!(self, GemmVariant::Coop(_))
    }

    /// Whether the kernel reads the operands' maxima at binding 5 (a split f32 product).
    pub fn reads_scales(self) -> bool {
        matches!(self, GemmVariant::Coop(CoopVariant { split: true, .. }))
    }

    /// Whether the kernel gathers B from a conv input (and binds the conv geometry uniform).
    pub fn is_implicit(self) -> bool {
        matches!(self, GemmVariant::TiledVec { implicit_b: true, .. })
    }

    /// Stable name: the golden file stem and the label of the pipeline. Shapes other than the
    /// tuned defaults carry their parameters, so every distinct program has its own name.
    pub fn name(self) -> String {
        match self {
            GemmVariant::Tiled { dtype, shape, split_k } => {
                let suffix = if split_k { "_splitk" } else { "" };
                format!("gemm_{dtype}_{}x{}{suffix}", shape.bm, shape.bn)
            }
            GemmVariant::TiledVec { dtype, shape, split_k, a, b, implicit_b, a_scalar, quick } => {
                let split = if split_k { "_splitk" } else { "" };
                let quick = if quick { "_q" } else { "" };
                let tuned = [SIMT_VEC_128, SIMT_VEC_64].contains(&shape);
                let params = if tuned { String::new() } else { format!("_k{}_r{}x{}", shape.bk, shape.tm, shape.tn) };
                let implicit = match (implicit_b, a_scalar) {
                    (false, false) => "",
                    (true, false) => "_implicit",
                    (true, true) => "_implicit_a1",
                    (false, true) => "_a1",
                };
                format!(
                    "gemm_{dtype}_{}x{}_v4{}{implicit}{split}{params}{quick}",
                    shape.bm,
                    shape.bn,
                    layout_suffix(a, b)
                )
            }
            GemmVariant::Coop(c) => {
                let s = c.shape;
                let split = if c.split_k { "_splitk" } else { "" };
                let tuned = [COOP_128, COOP_64].contains(&s);
                let params = if tuned {
                    String::new()
                } else {
                    let kstage = if s.stage_k { "_kst" } else { "" };
                    format!("_k{}_w{}x{}_s{}_p{}{kstage}", s.bk, s.sg_m, s.sg_n, s.stages, s.depth)
                };
                let scalar = match c.width {
                    1 => "_scalar".to_string(),
                    w if w * c.dtype.size() as u32 == 16 => String::new(),
                    w => format!("_w{w}"),
                };
                let emu = if c.emulate { "_emu" } else { "" };
                let sync = if c.subgroup_sync { "_ss" } else { "" };
                let x3 = match (c.split, c.fused) {
                    (true, true) => "_x3f",
                    (true, false) => "_x3",
                    _ => "",
                };
                format!(
                    "gemm_{}_coop_{}x{}{split}{}{scalar}{params}{x3}{sync}{emu}",
                    c.dtype,
                    s.bm,
                    s.bn,
                    layout_suffix(c.a, c.b)
                )
            }
            GemmVariant::Gemv { dtype, shape } => {
                format!("gemv_{dtype}_r{}_t{}", shape.rows, shape.threads)
            }
            GemmVariant::GemvVec(g) => {
                let split = if g.split_k { "_splitk" } else { "" };
                let lanes = match g.columns {
                    GemvVec::NARROW => "_narrow".to_string(),
                    GemvVec::WIDE => String::new(),
                    c => format!("_c{c}"),
                };
                let threads =
                    if g.threads == GemvVec::INVOCATIONS { String::new() } else { format!("_t{}", g.threads) };
                format!("gemv_{}_vec_r{}{lanes}{threads}{split}", g.dtype, g.rows)
            }
            GemmVariant::SplitKReduce { dtype, threads } => {
                format!("splitk_reduce_{dtype}_t{threads}")
            }
            GemmVariant::AbsMax => format!("absmax_t{}", Self::ABSMAX_THREADS),
        }
    }

    /// Invocations of the [`GemmVariant::AbsMax`] program.
    pub const ABSMAX_THREADS: u32 = 256;

    /// Invocations per workgroup.
    pub fn invocations(self) -> u32 {
        let [x, y, z] = self.workgroup_size();
        x * y * z
    }

    /// Workgroup memory the variant declares.
    pub fn storage_bytes(self) -> u32 {
        match self {
            GemmVariant::Tiled { dtype, shape, .. } => shape.storage_bytes(dtype),
            GemmVariant::TiledVec { shape, .. } => shape.vec_storage_bytes(),
            GemmVariant::Coop(c) => c.storage_bytes(),
            GemmVariant::Gemv { shape, .. } => shape.storage_bytes(),
            GemmVariant::GemvVec(g) => g.storage_bytes(),
            GemmVariant::SplitKReduce { .. } => 0,
            GemmVariant::AbsMax => Self::ABSMAX_THREADS * 4,
        }
    }

    /// `@workgroup_size` of the variant.
    pub fn workgroup_size(self) -> [u32; 3] {
        match self {
            GemmVariant::Tiled { shape, .. } | GemmVariant::TiledVec { shape, .. } => {
                let [x, y] = shape.workgroup();
                [x, y, 1]
            }
            GemmVariant::Coop(c) => [c.shape.invocations(), 1, 1],
            GemmVariant::Gemv { shape, .. } => [shape.threads, 1, 1],
            GemmVariant::GemvVec(g) => [g.invocations(), 1, 1],
            GemmVariant::SplitKReduce { threads, .. } => [threads, 1, 1],
            GemmVariant::AbsMax => [Self::ABSMAX_THREADS, 1, 1],
        }
    }

    /// Whether the device can run this variant at all (features, subgroup size, workgroup
    /// limits). The message names the missing capability; plans record it as a fallback reason.
    pub fn fits(self, caps: &DeviceCaps) -> Result<(), String> {
        let needs_f16 = self.dtype() == DType::F16 || self.is_coop();
        if needs_f16 && !caps.shader_f16 {
            return Err("f16 needs shader-f16".into());
        }
        if let GemmVariant::Coop(c) = self {
            coop_fits(c, caps)?;
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

/// Capabilities only the coop kernels need: shape consistency, then (unless emulated) the
/// device's fragment configuration and subgroup size.
fn coop_fits(c: CoopVariant, caps: &DeviceCaps) -> Result<(), String> {
    if !c.shape.is_consistent(c.width) {
        return Err(format!("inconsistent cooperative-matrix shape {:?}", c.shape));
    }
    if c.split && (c.dtype != DType::F32 || c.width != 4 || c.split_k) {
        return Err("the split f32 kernel loads f32 16 bytes at a time and does not split K".into());
    }
    if c.fused && !c.split {
        return Err("only a split kernel stages fused low parts".into());
    }
    if c.emulate {
        return match c.subgroup_sync {
            true => Err("emulated coop kernels sync with workgroup barriers".into()),
            false => Ok(()),
        };
    }
    if caps.coop_emulated {
        return Err("the device runs the coop kernels emulated (emulate_tensor_cores)".into());
    }
    if c.subgroup_sync && !caps.subgroup_barrier {
        return Err("subgroup barriers need the device's subgroup_barrier".into());
    }
    coop_device_check(caps)
}

/// Whether the device can run any coop kernel: shader-f16, the 16×16×16 f16→f32 fragment
/// configuration, and subgroups of exactly the size the invocation-to-subgroup mapping assumes.
pub fn coop_device_check(caps: &DeviceCaps) -> Result<(), String> {
    if !caps.shader_f16 {
        return Err("the coop kernels stage operands in f16, which needs shader-f16".into());
    }
    if caps.coop_emulated {
        // The emulated form needs neither fragments nor a subgroup size.
        return Ok(());
    }
    if !caps.has_coop(COOP_CONFIG) {
        return Err("the adapter reports no 16×16×16 f16→f32 cooperative-matrix configuration".into());
    }
    if caps.subgroup_min_size != COOP_SUBGROUP || caps.subgroup_max_size != COOP_SUBGROUP {
        return Err(format!(
            "coop kernels assume subgroups of exactly {COOP_SUBGROUP}; the adapter runs {}..{}",
            caps.subgroup_min_size, caps.subgroup_max_size
        ));
    }
    Ok(())
}
