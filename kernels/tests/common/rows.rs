//! Helpers of the row-kernel tests (norms, Softmax, reductions): random data exact in its type,
//! the tolerance by type, and the llvmpipe placement options.
#![allow(dead_code)]

use ep_kernels::caps::profiles;
use ep_kernels::graph::PlacementOptions;
use ep_kernels::ElemType;
use rand::Rng;

use super::graph::T;

/// The placement options of the llvmpipe profile.
pub fn opts() -> PlacementOptions {
    PlacementOptions::defaults(profiles::get("llvmpipe").unwrap())
}

/// Random values of `ty` (exact in it), and the tensor.
pub fn random(rng: &mut impl Rng, ty: ElemType, shape: &[u64], scale: f32, offset: f32) -> (Vec<f64>, T) {
    let n: u64 = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|_| offset + scale * rng.random_range(-1.0f32..1.0)).collect();
    let t = if ty == ElemType::F16 { T::f16(shape, &v) } else { T::f32(shape, &v) };
    (t.values(), t)
}

/// Every value within `atol + rtol·|want|` (NaN only where NaN is wanted).
pub fn assert_close(what: &str, got: &T, want: &[f64], ty: ElemType) {
    let (atol, rtol) = if ty == ElemType::F16 { (2e-3, 4e-3) } else { (2e-5, 2e-5) };
    let got = got.values();
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = if w.is_nan() { g.is_nan() } else { g == w || (g - w).abs() <= atol + rtol * w.abs() };
        assert!(ok, "{what}: element {i}: got {g}, want {w}");
    }
}

/// Applies a reduction to `x` of `shape` in f64: `mask` of reduced axes.
pub fn reduce_ref(x: &[f64], shape: &[u64], mask: &[bool], op: &str) -> Vec<f64> {
    let out_shape: Vec<u64> = shape.iter().zip(mask).map(|(&d, &r)| if r { 1 } else { d }).collect();
    let outs: u64 = out_shape.iter().product();
    let init = match op {
        "ReduceMax" => f64::NEG_INFINITY,
        "ReduceMin" => f64::INFINITY,
        "ReduceProd" => 1.0,
        _ => 0.0,
    };
    let mut acc = vec![init; outs as usize];
    for (e, &v) in x.iter().enumerate() {
        let (mut rem, mut o, mut step) = (e as u64, 0u64, 1u64);
        for d in (0..shape.len()).rev() {
            let c = rem % shape[d];
            rem /= shape[d];
            if !mask[d] {
                o += c * step;
            }
            step *= out_shape[d];
        }
        let a = &mut acc[o as usize];
        *a = match op {
            "ReduceMax" => a.max(v),
            "ReduceMin" => a.min(v),
            "ReduceProd" => *a * v,
            "ReduceSumSquare" | "ReduceL2" => *a + v * v,
            "ReduceL1" => *a + v.abs(),
            _ => *a + v,
        };
    }
    let count: u64 = shape.iter().zip(mask).filter(|(_, &r)| r).map(|(&d, _)| d).product();
    if op == "ReduceMean" {
        acc.iter_mut().for_each(|a| *a = if count == 0 { 0.0 } else { *a / count as f64 });
    }
    if op == "ReduceL2" {
        acc.iter_mut().for_each(|a| *a = a.sqrt());
    }
    acc
}
