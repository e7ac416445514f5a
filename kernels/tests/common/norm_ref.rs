//! The float64 reference of a SkipSimplifiedLayerNormalization folded into the products reading
//! it (`fusion_nbits_norm.rs`, `fusion_matmul_norm.rs`).
#![allow(dead_code)]

use ep_kernels::graph::{Attr, Node};
use ep_kernels::ElemType;

use super::graph::{node, val};

/// One row's norm input, skip, γ and ε.
pub struct NormRow<'a> {
    pub x: &'a [f64],
    pub skip: &'a [f64],
    pub gamma: &'a [f64],
    pub eps: f32,
}

impl NormRow<'_> {
    /// x + skip, and the normalised row (x + skip)·γ / √(mean((x + skip)²) + ε).
    pub fn reference(&self) -> (Vec<f64>, Vec<f64>) {
        let s: Vec<f64> = self.x.iter().zip(self.skip).map(|(a, b)| a + b).collect();
        let rstd = 1.0 / (s.iter().map(|v| v * v).sum::<f64>() / s.len() as f64 + f64::from(self.eps)).sqrt();
        let h = s.iter().zip(self.gamma).map(|(v, g)| v * rstd * g).collect();
        (s, h)
    }
}

/// Checks row `row` of a folded step: `y` (its `n` columns) against the normalised row times
/// `weight(k, col)` (with `up`, SwiGLU's SiLU(gate)·up), and `sum` against x + skip.
#[allow(clippy::too_many_arguments)]
pub fn check_row(
    norm: &NormRow<'_>,
    weight: &dyn Fn(usize, usize) -> f64,
    up: Option<&dyn Fn(usize, usize) -> f64>,
    (row, n): (usize, usize),
    y: &[f64],
    sum: Option<&[f64]>,
    tol: f64,
    what: &str,
) {
    let (s, h) = norm.reference();
    let k = s.len();
    let dot = |w: &dyn Fn(usize, usize) -> f64, col: usize| (0..k).map(|i| h[i] * w(i, col)).sum::<f64>();
    for col in 0..n {
        let want = match up {
            Some(u) => {
                let (g, u) = (dot(weight, col), dot(u, col));
                g / (1.0 + (-g).exp()) * u
            }
            None => dot(weight, col),
        };
        let got = y[row * n + col];
        assert!((got - want).abs() <= tol * (1.0 + want.abs()), "{what} y[{row}, {col}]: {got} vs {want}");
    }
    if let Some(res) = sum {
        for (i, want) in s.iter().enumerate() {
            let r = res[row * k + i];
            assert!((r - want).abs() <= tol * (1.0 + want.abs()), "{what} res[{row}, {i}]: {r} vs {want}");
        }
    }
}

/// The folded steps' norm: `x` and `skip` `[1, m, k]` into `h`, and the sum `res` where `sum`;
/// γ a constant `gamma`.
pub fn skip_norm_node(ty: ElemType, m: u64, k: u64, sum: bool, eps: f32) -> Node {
    let x = [1, m, k];
    let mut gamma = val("gamma", ty, &[k]);
    gamma.constant = true;
    let res = if sum { val("res", ty, &x) } else { val("", ty, &[]) };
    let outs = vec![val("h", ty, &x), val("", ty, &[]), val("", ty, &[]), res];
    let mut norm = node(
        "SkipSimplifiedLayerNormalization",
        1,
        vec![Some(val("x", ty, &x)), Some(val("skip", ty, &x)), Some(gamma)],
        outs,
        vec![("epsilon", Attr::Float(eps))],
    );
    norm.domain = "com.microsoft".into();
    norm
}
