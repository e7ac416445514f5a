//! Candidate kernel shapes measured side by side (`--sweep`), so one device call can pick the
//! tuning table's entries.

use ep_kernels::gemm::tuning::{COOP_128, COOP_64, SIMT_VEC_128, SIMT_VEC_64};
use ep_kernels::gemm::{CoopShape, TileShape, TilingChoice, Tuning};

/// A candidate: the tiling it is planned with and a one-shape tuning table.
pub struct Candidate {
    pub label: String,
    pub tiling: TilingChoice,
    pub tuning: Tuning,
}

fn coop_label(s: &CoopShape) -> String {
    let kst = if s.stage_k { " kst" } else { "" };
    format!("coop {}x{} k{} w{}x{} s{} p{}{kst}", s.bm, s.bn, s.bk, s.sg_m, s.sg_n, s.stages, s.depth)
}

/// Cooperative-matrix shapes: tile size, subgroup grid (fragments per subgroup), K depth,
/// buffering, prefetch depth and staging layout, each within 48 KB of workgroup storage. Each
/// is planned with `Auto` and fills every slot of the table, so a problem runs it the way the
/// planner would (128×128-class tiles, 64×64 tiles or split-K).
pub fn coop_candidates() -> Vec<Candidate> {
    let kst = |s: CoopShape| CoopShape { stage_k: true, ..s };
    let p2 = |s: CoopShape| CoopShape { depth: 2, ..s };
    let p1 = |s: CoopShape| CoopShape { depth: 1, ..s };
    // The tuned shapes' one-register-set forms, and variations of them (as before the tuned
    // shapes took two).
    let (c128, c64) = (p1(COOP_128), p1(COOP_64));
    let shapes = [
        c128,
        kst(c128),
        p2(c128),
        kst(p2(c128)),
        kst(CoopShape { sg_m: 4, sg_n: 2, ..c128 }),
        kst(p2(CoopShape { sg_m: 2, sg_n: 2, ..c128 })),
        kst(p2(CoopShape { bk: 16, ..c128 })),
        kst(CoopShape { bm: 256, sg_m: 4, sg_n: 4, stages: 1, ..c128 }),
        kst(p2(CoopShape { bn: 64, sg_m: 2, sg_n: 2, ..c128 })),
        // 512 invocations: the driver must then fit 128 registers per invocation (2×2 or 2×4
        // fragments per subgroup), so 16 warps share an SM where COOP_128's 189 allow 8.
        CoopShape { sg_m: 4, sg_n: 4, stages: 1, ..c128 },
        CoopShape { bn: 256, sg_m: 4, sg_n: 4, stages: 1, ..c128 },
        CoopShape { bm: 256, sg_m: 4, sg_n: 4, stages: 1, ..c128 },
        CoopShape { bk: 16, sg_m: 4, sg_n: 4, ..c128 },
        CoopShape { bn: 256, bk: 16, sg_m: 4, sg_n: 4, ..c128 },
        CoopShape { bn: 256, bk: 16, sg_m: 4, sg_n: 4, depth: 2, ..c128 },
        CoopShape { bn: 256, bk: 16, sg_m: 2, sg_n: 8, depth: 2, ..c128 },
        c64,
        kst(c64),
        kst(p2(c64)),
        kst(CoopShape { bk: 64, ..c64 }),
        kst(p2(CoopShape { sg_m: 1, sg_n: 2, ..c64 })),
        // Two register sets for the medium tiles, staged as loaded.
        p2(c64),
        p2(CoopShape { bk: 16, ..c64 }),
        p2(CoopShape { bk: 16, ..c128 }),
    ];
    shapes
        .iter()
        .map(|s| Candidate {
            label: coop_label(s),
            tiling: TilingChoice::Auto,
            tuning: Tuning::single(*s, *s, SIMT_VEC_128, SIMT_VEC_64),
        })
        .collect()
}

fn simt_label(s: &TileShape) -> String {
    format!("simt {}x{} k{} {}x{}", s.bm, s.bn, s.bk, s.tm, s.tn)
}

/// vec4 SIMT shapes, and the scalar kernel for reference (an empty vec4 list).
pub fn simt_candidates() -> Vec<Candidate> {
    let shapes = [
        SIMT_VEC_128,
        TileShape { bk: 16, ..SIMT_VEC_128 },
        SIMT_VEC_64,
        // Medium problems (M = 1500, N = 384): more outputs per invocation or smaller tiles.
        TileShape { bm: 64, bn: 64, bk: 16, tm: 8, tn: 4 },
        TileShape { bm: 64, bn: 64, bk: 16, tm: 8, tn: 8 },
        TileShape { bm: 32, bn: 64, bk: 16, tm: 4, tn: 4 },
        TileShape { bm: 64, bn: 32, bk: 16, tm: 4, tn: 4 },
        TileShape { bm: 128, bn: 64, bk: 8, tm: 8, tn: 8 },
        TileShape { bm: 64, bn: 128, bk: 16, tm: 8, tn: 8 },
    ];
    let mut out: Vec<Candidate> = shapes
        .iter()
        .map(|s| Candidate {
            label: simt_label(s),
            tiling: TilingChoice::Tile128,
            tuning: Tuning::single(COOP_128, COOP_64, *s, *s),
        })
        .collect();
    out.push(Candidate {
        label: "simt scalar 128x128".into(),
        tiling: TilingChoice::Tile128,
        tuning: Tuning {
            simt_128: Vec::new(),
            simt_64: Vec::new(),
            ..Tuning::single(COOP_128, COOP_64, SIMT_VEC_128, SIMT_VEC_64)
        },
    });
    out
}
