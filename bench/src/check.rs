//! Correctness of a GEMM output on a deterministic sample of elements against float64.

use ep_kernels::gemm::{GemmProblem, MatrixLayout, MAX_BATCH_DIMS};
use rand::{Rng, SeedableRng};

/// An output element: batch, row, column.
pub type Element = (u32, u32, u32);

/// Every element of the first, middle and last row and column (first and last batch), and
/// 4096 more drawn at random: edge tiles and tile boundaries are where indexing goes wrong.
pub fn sample(p: &GemmProblem) -> Vec<Element> {
    let batches = p.batch_count() as u32;
    let mut out = Vec::new();
    if p.m == 0 || p.n == 0 || batches == 0 {
        return out;
    }
    for b in [0, batches - 1] {
        for i in [0, p.m / 2, p.m - 1] {
            out.extend((0..p.n).map(|j| (b, i, j)));
        }
        for j in [0, p.n / 2, p.n - 1] {
            out.extend((0..p.m).map(|i| (b, i, j)));
        }
    }
    let mut rng = rand::rngs::SmallRng::seed_from_u64(0x5eed);
    out.extend((0..4096).map(|_| (rng.random_range(0..batches), rng.random_range(0..p.m), rng.random_range(0..p.n))));
    out.sort_unstable();
    out.dedup();
    out
}

fn batch_offset(b: u32, p: &GemmProblem, l: &MatrixLayout) -> u64 {
    let mut rest = b as u64;
    let mut off = 0u64;
    for i in (0..MAX_BATCH_DIMS).rev() {
        let d = p.batch[i] as u64;
        off += (rest % d) * l.batch_strides[i] as u64;
        rest /= d;
    }
    off
}

/// Float64 `A·B` at each sampled element (no epilogue: the benchmark runs plain products),
/// spread over the host's cores.
pub fn reference(p: &GemmProblem, a: &[f32], b: &[f32], elements: &[Element]) -> Vec<f64> {
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let chunk = elements.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let parts: Vec<_> = elements
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(|&e| dot(p, a, b, e)).collect::<Vec<f64>>()))
            .collect();
        parts.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
    })
}

fn dot(p: &GemmProblem, a: &[f32], b: &[f32], (bi, i, j): Element) -> f64 {
    let (ao, bo) = (batch_offset(bi, p, &p.a), batch_offset(bi, p, &p.b));
    let (ars, acs) = (p.a.row_stride as u64, p.a.col_stride as u64);
    let (brs, bcs) = (p.b.row_stride as u64, p.b.col_stride as u64);
    (0..p.k as u64)
        .map(|k| {
            a[(ao + i as u64 * ars + k * acs) as usize] as f64 * b[(bo + k * brs + j as u64 * bcs) as usize] as f64
        })
        .sum()
}

/// Largest |got − want| over the sample, relative to the root mean square of `want`; infinite
/// when an element is NaN (never written: outputs are poisoned before the run).
pub fn max_rel_err(p: &GemmProblem, out: &[f32], elements: &[Element], want: &[f64]) -> f64 {
    let rms = (want.iter().map(|w| w * w).sum::<f64>() / want.len().max(1) as f64).sqrt().max(1e-30);
    let per_batch = p.m as u64 * p.n as u64;
    let mut worst = 0f64;
    for (&(b, i, j), &w) in elements.iter().zip(want) {
        let got = out[(b as u64 * per_batch + i as u64 * p.n as u64 + j as u64) as usize] as f64;
        let err = (got - w).abs() / rms;
        if !err.is_finite() {
            return f64::INFINITY;
        }
        worst = worst.max(err);
    }
    worst
}
