//! The shader sources of MatMulNBits: what changes their text.

use crate::dtype::ElemType;
use crate::shader::{render, OpSource};

/// How the zero points are given.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ZeroPoints {
    /// Absent: the middle of the range (2, 8 or 128 for 2, 4 or 8 bits).
    None,
    /// uint8, packed `8 / bits` to a byte, low bits first, each column starting at a byte.
    Packed,
    /// One per block, of A's type.
    Typed,
}

impl ZeroPoints {
    pub const ALL: [ZeroPoints; 3] = [ZeroPoints::None, ZeroPoints::Packed, ZeroPoints::Typed];

    fn name(self) -> &'static str {
        match self {
            ZeroPoints::None => "none",
            ZeroPoints::Packed => "u8",
            ZeroPoints::Typed => "typed",
        }
    }
}

/// Which kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NbitsKind {
    /// The product for few rows, dequantising on the fly.
    Gemv,
    /// The product for one row: a few invocations per column, whole 16-byte chunks of B, sums
    /// finished by subgroup shuffles (`quant_nbits_gemv_lanes.wgsl.j2`).
    Lanes,
    /// The product for many rows: 64×64 tiles, B's slices dequantised into workgroup memory.
    Tiled,
    /// B dequantised into a `[N, K]` buffer for the GEMM engine.
    Dequant,
}

/// Invocations per workgroup of the GEMV kernel (a multiple of 32).
pub const GEMV_THREADS: u32 = 256;
/// Output columns per workgroup of the GEMV kernel: each load of A serves all of them.
pub const GEMV_COLS: u32 = 8;
/// Rows of A per workgroup of the GEMV kernel.
pub const GEMV_WG_ROWS: u32 = 4;
/// The most rows of A the GEMV kernel is chosen for.
pub const GEMV_ROWS: u32 = 8;
/// Most invocations sharing a column in the one-row kernel (fewer where subgroups are smaller).
pub const LANES_MAX: u32 = 32;
/// Output columns per group of invocations in the one-row kernel (the planner takes the most
/// that still give the device a workgroup per unit of parallelism), and 16-byte chunks of B each
/// invocation has in flight.
pub const LANES_COLS: [u32; 2] = [4, 1];
pub const LANES_UNROLL: u32 = 2;

/// One MatMulNBits kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NbitsSource {
    pub kind: NbitsKind,
    /// A's (and the scales', bias', Y's) type.
    pub ty: ElemType,
    pub bits: u32,
    pub zp: ZeroPoints,
    /// Rows of A per workgroup of the GEMV kernel (1 or [`GEMV_WG_ROWS`]); 1 for the others.
    pub rows: u32,
    /// The dequantising kernel writes B as `[K, N]` (untransposed) rather than `[N, K]`; false
    /// for the others.
    pub kn: bool,
    /// The one-row kernel's invocations per column group, columns per group and chunks in
    /// flight ([`LanesShape`]); zero for the others.
    pub lanes: LanesShape,
    /// The one-row kernel also reads SwiGLU's up projection (its weights and scales after the
    /// node's own; no zero points) and multiplies each column by it; false for the others.
    pub dual: bool,
    /// The one-row kernel makes A as SkipSimplifiedLayerNormalization does from its input,
    /// skip and γ (also storing their sum); false for the others.
    pub norm: bool,
}

/// How the one-row kernel spreads a column over invocations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LanesShape {
    /// Invocations per group (a power of two, at most the subgroup size).
    pub lanes: u32,
    /// Output columns per group.
    pub cols: u32,
    /// 16-byte chunks of B each invocation loads before summing them.
    pub unroll: u32,
}

impl LanesShape {
    /// `lanes` invocations per group of `cols` columns, [`LANES_UNROLL`] chunks in flight.
    pub fn new(lanes: u32, cols: u32) -> LanesShape {
        LanesShape { lanes, cols, unroll: LANES_UNROLL }
    }

    /// Groups of invocations per workgroup.
    pub fn groups_per_workgroup(self) -> u32 {
        GEMV_THREADS / self.lanes.max(1)
    }
}

/// Values of `bits` bits in one 16-byte chunk of B.
pub fn chunk_values(bits: u32) -> u32 {
    128 / bits
}

impl NbitsSource {
    /// The row counts `kind` is generated for.
    pub fn rows_for(kind: NbitsKind) -> &'static [u32] {
        match kind {
            NbitsKind::Gemv => &[1, GEMV_WG_ROWS],
            NbitsKind::Lanes | NbitsKind::Tiled | NbitsKind::Dequant => &[1],
        }
    }

    /// The layouts of the dequantised B `kind` writes (only the dequantising kernel writes one).
    pub fn layouts_for(kind: NbitsKind) -> &'static [bool] {
        match kind {
            NbitsKind::Dequant => &[false, true],
            NbitsKind::Gemv | NbitsKind::Lanes | NbitsKind::Tiled => &[false],
        }
    }
}

impl OpSource for NbitsSource {
    fn name(&self) -> String {
        let kind = match self.kind {
            NbitsKind::Gemv => format!("gemv_r{}_c{GEMV_COLS}_t{GEMV_THREADS}", self.rows),
            NbitsKind::Lanes => {
                let l = self.lanes;
                let dual = if self.dual { "_dual" } else { "" };
                let norm = if self.norm { "_skiprms" } else { "" };
                format!("gemv_l{}_c{}_u{}{dual}{norm}", l.lanes, l.cols, l.unroll)
            }
            NbitsKind::Tiled => "tiled_64x64".into(),
            NbitsKind::Dequant if self.kn => "dequant_kn".into(),
            NbitsKind::Dequant => "dequant".into(),
        };
        format!("quant_nbits_{kind}_{}_b{}_zp_{}", self.ty.name(), self.bits, self.zp.name())
    }

    fn emit(&self) -> Result<String, String> {
        let zp = u32::from(self.zp != ZeroPoints::None);
        let ctx = minijinja::context! {
            t => self.ty.name(),
            bits => self.bits,
            vals => 32 / self.bits,
            zp => self.zp.name(),
            threads => GEMV_THREADS,
            cols => GEMV_COLS,
            rows => self.rows,
            kn => self.kn,
            b_bias => 3 + zp + 2 * u32::from(self.dual),
            dual => self.dual,
            norm => self.norm,
            b_w => 2 + zp,
            l => self.lanes.lanes,
            cl => self.lanes.cols,
            un => self.lanes.unroll,
            cv => chunk_values(self.bits),
            // The butterfly across a group's invocations: xor by half of them, a quarter, ... 1.
            shuffles => (0..self.lanes.lanes.trailing_zeros()).rev().map(|i| 1u32 << i).collect::<Vec<_>>(),
        };
        match self.kind {
            NbitsKind::Gemv => render("quant_nbits_gemv.wgsl.j2", ctx),
            NbitsKind::Lanes => render("quant_nbits_gemv_lanes.wgsl.j2", ctx),
            NbitsKind::Tiled => render("quant_nbits_tiled.wgsl.j2", ctx),
            NbitsKind::Dequant => render("quant_nbits_dequant.wgsl.j2", ctx),
        }
    }

    fn capabilities(&self) -> naga::valid::Capabilities {
        let caps = crate::ops::capabilities_for(&[self.ty]);
        match self.kind {
            NbitsKind::Lanes if self.ty == ElemType::F16 => {
                caps | naga::valid::Capabilities::SUBGROUP | crate::shader::F16X8_CAPS
            }
            NbitsKind::Lanes => caps | naga::valid::Capabilities::SUBGROUP,
            _ => caps,
        }
    }

    /// The GEMV kernel clamps its columns to N − 1, its A reads to K and its rows to M, and
    /// stores only in-range outputs; its workgroup arrays are indexed below their sizes. The
    /// one-row kernel clamps its columns likewise and reads only chunks below K (a multiple of
    /// its chunk, checked by the planner, as is its single row).
    fn guards_every_access(&self) -> bool {
        matches!(self.kind, NbitsKind::Gemv | NbitsKind::Lanes)
    }
}

/// The GatherBlockQuantized kernel: rows of a uint8-packed table gathered and dequantised.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GatherBlockSource {
    /// The scales' (and the output's) type.
    pub ty: ElemType,
    pub bits: u32,
    /// Packed uint8 zero points are given (else the middle of the range).
    pub zp: bool,
    /// int64 indices (else int32).
    pub i64: bool,
}

impl OpSource for GatherBlockSource {
    fn name(&self) -> String {
        let zp = if self.zp { "u8" } else { "none" };
        let index = if self.i64 { "i64" } else { "i32" };
        format!("quant_gather_block_{}_b{}_zp_{zp}_{index}", self.ty.name(), self.bits)
    }

    fn emit(&self) -> Result<String, String> {
        let ctx = minijinja::context! {
            t => self.ty.name(),
            bits => self.bits,
            zp => self.zp,
            i64 => self.i64,
            b_out => 3 + u32::from(self.zp),
        };
        render("quant_gather_block.wgsl.j2", ctx)
    }

    fn capabilities(&self) -> naga::valid::Capabilities {
        crate::ops::capabilities_for(&[self.ty])
    }
}
