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

fn coop(label: String, tiling: TilingChoice, shape: CoopShape) -> Candidate {
    Candidate { label, tiling, tuning: Tuning::single(shape, shape, SIMT_VEC_128, SIMT_VEC_64) }
}

fn coop_label(s: &CoopShape) -> String {
    format!("coop {}x{} k{} w{}x{} s{}", s.bm, s.bn, s.bk, s.sg_m, s.sg_n, s.stages)
}

/// Cooperative-matrix shapes: tile size, subgroup grid (fragments per subgroup), K depth and
/// buffering, each within 48 KB of workgroup storage.
pub fn coop_candidates() -> Vec<Candidate> {
    let large = [
        COOP_128,
        CoopShape { stages: 1, ..COOP_128 },
        CoopShape { bk: 16, ..COOP_128 },
        CoopShape { bk: 64, stages: 1, ..COOP_128 },
        CoopShape { sg_m: 4, sg_n: 4, stages: 1, ..COOP_128 },
        CoopShape { sg_m: 2, sg_n: 2, ..COOP_128 },
        CoopShape { sg_m: 4, sg_n: 2, ..COOP_128 },
        CoopShape { bn: 64, sg_m: 2, sg_n: 2, ..COOP_128 },
        CoopShape { bm: 256, sg_m: 4, sg_n: 4, stages: 1, ..COOP_128 },
    ];
    let medium = [
        COOP_64,
        CoopShape { bk: 64, ..COOP_64 },
        CoopShape { stages: 1, ..COOP_64 },
        CoopShape { sg_m: 1, sg_n: 2, ..COOP_64 },
    ];
    let mut out: Vec<Candidate> = large.iter().map(|s| coop(coop_label(s), TilingChoice::Tile128, *s)).collect();
    out.extend(medium.iter().map(|s| coop(coop_label(s), TilingChoice::Tile64, *s)));
    out
}

fn simt_label(s: &TileShape) -> String {
    format!("simt {}x{} k{} {}x{}", s.bm, s.bn, s.bk, s.tm, s.tn)
}

/// vec4 SIMT shapes, and the scalar kernel for reference (an empty vec4 list).
pub fn simt_candidates() -> Vec<Candidate> {
    let shapes = [
        SIMT_VEC_128,
        TileShape { bk: 16, ..SIMT_VEC_128 },
        TileShape { bn: 64, tn: 4, bk: 16, ..SIMT_VEC_128 },
        TileShape { bm: 64, tm: 4, bk: 16, ..SIMT_VEC_128 },
        SIMT_VEC_64,
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
