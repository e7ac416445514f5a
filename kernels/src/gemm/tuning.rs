//! Which kernel shapes the planner prefers, per shape class, with the alternatives it tries
//! when a device limit rules the preferred one out.
//!
//! The numbers come from measurements on the H200 (docs/PERFORMANCE.md, "GEMM kernels on the
//! H200"); a device is matched by capability (workgroup storage, coop configurations), never by
//! name. `kernel_bench --sweep` measures alternatives through [`plan_gemm_tuned`] with a
//! one-candidate table.
//!
//! [`plan_gemm_tuned`]: super::plan::plan_gemm_tuned

use super::tiling::{CoopShape, TileShape};

/// The coop kernel for large problems where the device runs 512 invocations and 45.5 KB of
/// workgroup storage: 128×256 tile, 4×4 subgroups of 2×4 fragments, double-buffered 16-deep K
/// slices with two register sets in flight. 512 invocations make the driver fit 128 registers
/// per invocation (COOP_128 compiles to 189 on the H200, one workgroup of 8 warps per SM), so
/// 16 warps share an SM and hide the global loads: 170–178 TFLOP/s at 2048–8192 against
/// COOP_128's 107–112 (docs/PERFORMANCE.md, "GEMM occupancy").
pub const COOP_WIDE: CoopShape =
    CoopShape { bm: 128, bn: 256, bk: 16, sg_m: 4, sg_n: 4, stages: 2, depth: 2, stage_k: false };
/// The coop kernel for large problems on smaller devices: 128×128 tile, 2×4 subgroups of 4×2 fragments (64×32
/// outputs each), double-buffered 32-deep K slices with two register sets in flight: 46 KB of workgroup
/// storage. Measured on the H200 (`kernel_bench --sweep coop`, docs/PERFORMANCE.md, twenty-third session):
/// the second register set runs LLM prefill products 15–34% faster than one (512×3072×2048 0.050 against
/// 0.059 ms, 1024×2048×8192 0.183 against 0.274).
pub const COOP_128: CoopShape =
    CoopShape { bm: 128, bn: 128, bk: 32, sg_m: 2, sg_n: 4, stages: 2, depth: 2, stage_k: false };
/// The fused split f32 kernel's tile for K up to [`SPLIT_SHORT_K`]: COOP_128 single-buffered
/// over 16-deep K slices, half the unrolled code per slice of the 32-deep form (113 KB of machine
/// code on the H200). Measured on an H100 in Whisper-tiny fp32 (docs/PERFORMANCE.md,
/// thirty-eighth session): its 1500×1152×384 Q/K/V product takes 52 µs alone in either form,
/// but in a run, eight other kernels after its last dispatch, the 32-deep form took 19–30 µs more
/// and this one 5–9; back to back 2.17 against 2.23 ms.
pub const COOP_SPLIT_SHORT: CoopShape = CoopShape { bk: 16, stages: 1, depth: 1, ..COOP_128 };
/// K up to which the fused split product takes [`COOP_SPLIT_SHORT`] first: few slices per
/// workgroup, whose code is fetched afresh each run (longer K was not measured).
pub const SPLIT_SHORT_K: u32 = 1024;
/// The coop kernel for medium problems and split-K: 64×64 tile, 2×2 subgroups of 2×2
/// fragments, double-buffered 32-deep K slices with two register sets in flight: 23 KB (one set:
/// 512×2048×8192 0.216 against 0.141 ms, 512×2048×2048 0.044 against 0.041).
pub const COOP_64: CoopShape =
    CoopShape { bm: 64, bn: 64, bk: 32, sg_m: 2, sg_n: 2, stages: 2, depth: 2, stage_k: false };
/// The vec4 SIMT kernel for large problems: 128×128 tile, 8×8 outputs per invocation, 8-deep
/// double-buffered K slices: 17 KB.
pub const SIMT_VEC_128: TileShape = TileShape { bm: 128, bn: 128, bk: 8, tm: 8, tn: 8 };
/// The vec4 SIMT kernel for medium problems and split-K: 64×64 tile, 4×4 per invocation.
pub const SIMT_VEC_64: TileShape = TileShape::T64;
/// The vec4 SIMT kernel for problems of at most 3/4 of `parallelism` in 64×64 tiles: 32×64
/// tile, 4×4 per invocation, 128 invocations. Measured on the H200 (`kernel_bench --sweep
/// simt`, f32): twice the workgroups run Whisper-tiny's 1500×384×384 (144 tiles of 64×64) in
/// 0.028 against 0.033 ms, its fc2 (K = 1536) 0.095 against 0.112, its attention's
/// 6 × 1500×64×1500 0.111 against 0.134, ViT's 197×3072×768 (192 tiles) 0.051 against 0.060; but
/// 1024³ (256 tiles) 0.128 against 0.080 and UNet's convs lose. 8×4 or 8×8 per invocation and
/// 64×128 or 128×64 tiles lose everywhere.
pub const SIMT_VEC_32X64: TileShape = TileShape { bm: 32, bn: 64, bk: 16, tm: 4, tn: 4 };

/// Shapes the planner tries, best first, per tiling.
#[derive(Clone, Debug, PartialEq)]
pub struct Tuning {
    pub coop_128: Vec<CoopShape>,
    pub coop_64: Vec<CoopShape>,
    /// vec4 SIMT shapes; the scalar kernel ([`TileShape::T128`], [`TileShape::T64`]) is the
    /// fallback when alignment is not proven or none of these fits.
    pub simt_128: Vec<TileShape>,
    pub simt_64: Vec<TileShape>,
    /// vec4 SIMT shapes of the 64×64 class for problems of few tiles (`plan::simt_64_shapes`).
    pub simt_thin: Vec<TileShape>,
}

impl Tuning {
    /// The table for a device. One table serves every device today; the alternatives after
    /// the first of each list are what a device with less workgroup storage or fewer
    /// invocations still runs.
    pub fn for_caps(_caps: &crate::caps::DeviceCaps) -> Tuning {
        let table = Tuning {
            coop_128: vec![
                COOP_WIDE,
                COOP_128,
                // 35 KB: single-buffered (one register set), for 32–44 KB of workgroup storage.
                CoopShape { stages: 1, depth: 1, ..COOP_128 },
                // 4 subgroups of 4×4 fragments, 128 invocations.
                CoopShape { sg_m: 2, sg_n: 2, stages: 1, depth: 1, ..COOP_128 },
            ],
            coop_64: vec![COOP_64, CoopShape { stages: 1, depth: 1, ..COOP_64 }],
            simt_128: vec![SIMT_VEC_128],
            simt_64: vec![SIMT_VEC_64],
            simt_thin: vec![SIMT_VEC_32X64, SIMT_VEC_64],
        };
        #[cfg(feature = "wgsl-override")]
        if std::env::var("EXP_COOP_DEPTH").is_ok_and(|v| v.trim() == "1") {
            return table.one_register_set();
        }
        table
    }

    /// An experiment build's table with `EXP_COOP_DEPTH=1` (`bench/README.md`): the double-buffered
    /// coop shapes with one register set in flight, as before the twenty-third session.
    #[cfg(feature = "wgsl-override")]
    fn one_register_set(mut self) -> Tuning {
        for shape in self.coop_128.iter_mut().chain(self.coop_64.iter_mut()) {
            shape.depth = 1;
        }
        self
    }

    /// A table with exactly one shape per tiling (kernel sweeps).
    pub fn single(coop_128: CoopShape, coop_64: CoopShape, simt_128: TileShape, simt_64: TileShape) -> Tuning {
        Tuning {
            coop_128: vec![coop_128],
            coop_64: vec![coop_64],
            simt_128: vec![simt_128],
            simt_64: vec![simt_64],
            simt_thin: vec![simt_64],
        }
    }
}
