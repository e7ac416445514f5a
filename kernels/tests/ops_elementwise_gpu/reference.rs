//! Float64 references for the elementwise tests: broadcasting, erf, special values and the
//! comparison with tolerances.

use super::common::graph::T;
use ep_kernels::ElemType;

/// Numpy broadcasting of `shapes`.
pub fn broadcast_shape(shapes: &[&[u64]]) -> Option<Vec<u64>> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    (0..rank)
        .map(|d| {
            let dims: Vec<u64> = shapes
                .iter()
                .filter_map(|s| (d + s.len()).checked_sub(rank).map(|i| s[i]))
                .filter(|&v| v != 1)
                .collect();
            match dims.first() {
                None => Some(1),
                Some(&v) if dims.iter().all(|&x| x == v) => Some(v),
                _ => None,
            }
        })
        .collect()
}

/// The linear index into a tensor of `shape` of the output element `o` of `out` (broadcast).
pub fn source_index(shape: &[u64], out: &[u64], mut o: u64) -> usize {
    let mut idx = 0u64;
    let mut stride = 1u64;
    for d in (0..out.len()).rev() {
        let c = o % out[d];
        o /= out[d];
        if let Some(i) = (d + shape.len()).checked_sub(out.len()) {
            if shape[i] != 1 {
                idx += c * stride;
            }
            stride *= shape[i];
        }
    }
    idx as usize
}

pub fn round_f16(v: f64) -> f64 {
    half::f16::from_f64(v).to_f64()
}

/// `f` over the broadcast inputs' values, rounded to `ty` (floats).
pub fn expect(inputs: &[&T], out: &[u64], f: impl Fn(&[f64]) -> f64, ty: ElemType) -> Vec<f64> {
    let values: Vec<Vec<f64>> = inputs.iter().map(|t| t.values()).collect();
    let total: u64 = out.iter().product();
    (0..total)
        .map(|o| {
            let args: Vec<f64> = inputs.iter().zip(&values).map(|(t, v)| v[source_index(&t.shape, out, o)]).collect();
            let r = f(&args);
            match ty {
                ElemType::F16 => round_f16(r),
                ElemType::F32 => r as f32 as f64,
                _ => r,
            }
        })
        .collect()
}

/// Asserts `got` is within `atol + rtol·|want|` of `want` (NaN matches NaN, infinities match
/// exactly).
pub fn assert_close(what: &str, got: &[f64], want: &[f64], atol: f64, rtol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = (g.is_nan() && w.is_nan()) || g == w || (w.is_finite() && (g - w).abs() <= atol + rtol * w.abs());
        assert!(ok, "{what}: element {i}: got {g:e}, want {w:e}");
    }
}

/// The raw values of an int64 tensor.
pub fn i64s(t: &T) -> Vec<i64> {
    t.data.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect()
}

pub use ep_kernels::gemm::erf;

/// Values worth testing an op on beyond its random range.
pub fn specials(op: &str) -> Vec<f32> {
    let (nan, inf) = (f32::NAN, f32::INFINITY);
    match op {
        "Abs" | "Neg" | "Relu" | "Floor" | "Ceil" => vec![nan, inf, -inf, 0.0, -0.0, 2.5, -2.5],
        "Round" => vec![nan, inf, -inf, 0.0, -0.0, 0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997],
        "Exp" => vec![nan, inf, -inf, 0.0, -0.0],
        "Log" => vec![nan, inf, 0.0, -0.0, 1.0],
        "Sqrt" => vec![nan, inf, 0.0, -0.0],
        "Reciprocal" => vec![nan, inf, -inf, 0.0, -0.0, 1e-30],
        "Erf" => vec![nan, inf, -inf, 0.0, -0.0, 1e-20, -1e-8, 0.9277, 0.93, 3.9, 4.5],
        "Tanh" => vec![nan, inf, -inf, 0.0, -0.0, 1e-5, -1e-5, 3e-4, 5e-4, 8.0],
        "Sigmoid" => vec![nan, inf, -inf, 0.0, -100.0, 100.0],
        _ => vec![nan, 0.0, -0.0],
    }
}

#[test]
fn erf_reference() {
    assert!((erf(0.5) - 0.520_499_877_813_046_5).abs() < 1e-15);
    assert!((erf(3.0) - 0.999_977_909_503_001_4).abs() < 1e-15);
    assert!((erf(-2.5) + 0.999_593_047_982_555).abs() < 1e-15);
    assert_eq!(broadcast_shape(&[&[3, 1], &[1, 4]]), Some(vec![3, 4]));
    assert_eq!(source_index(&[3, 1], &[3, 4], 7), 1);
}
