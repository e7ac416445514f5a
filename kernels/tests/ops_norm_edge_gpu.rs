//! Normalisations on non-finite rows: NaN where ONNX Runtime's CPU EP gives NaN (the fuzzer
//! found a LayerNorm returning ±Inf for a row holding -Inf, seed 935064387, and a LogSoftmax
//! returning -Inf for a row holding +Inf, seed 7006213), and on rows whose squares pass f32's
//! range (LayerNorm of Exp's large values made NaN where the CPU EP gives 0, seed 1547369754).
mod common;

use common::graph::{const_val, node, run_graph, val, T};
use ep_kernels::graph::Attr;
use ep_kernels::ElemType;
use rand::Rng;

#[test]
fn an_infinite_input_makes_its_row_nan() {
    for (ty, make) in [(ElemType::F32, T::f32 as fn(&[u64], &[f32]) -> T), (ElemType::F16, T::f16)] {
        for rms in [false, true] {
            let (op, opset) = if rms { ("RMSNormalization", 23) } else { ("LayerNormalization", 17) };
            let x = make(&[2, 5], &[0.8, 0.2, f32::NEG_INFINITY, 1.5, -0.6, 0.1, 0.2, 0.3, 0.4, 0.5]);
            let scale = make(&[5], &[1.0; 5]);
            let n = node(
                op,
                opset,
                vec![Some(val("x", ty, &[2, 5])), Some(const_val("s", &scale))],
                vec![val("y", ty, &[2, 5])],
                vec![("axis", Attr::Int(-1)), ("epsilon", Attr::Float(0.1))],
            );
            let got = run_graph(&[n], &[("x", &x)], &[("s", &scale)], &["y"]).unwrap().remove(0).values();
            if rms {
                // x / sqrt(mean(x²)) with mean(x²) = Inf: 0 for the finite values, NaN for the infinite one.
                assert!(got[2].is_nan() && [0, 1, 3, 4].iter().all(|&i| got[i] == 0.0), "{op} {ty}: {got:?}");
            } else {
                // The mean is -Inf, so every centred value is ±Inf or NaN, and the row is NaN.
                assert!(got[..5].iter().all(|v| v.is_nan()), "{op} {ty}: {got:?}");
            }
            assert!(got[5..].iter().all(|v| v.is_finite()), "{op} {ty}: {got:?}");
        }
    }
}

/// LayerNormalization and RMSNormalization of f32 rows with values from 1e-3 to 1e30, for rows of
/// the scalar (37) and vec4 (64) kernels: against float64 while the squares stay within f32, and 0
/// (scale · 0) where their mean passes f32's range, as ONNX's definition with the f32 `stash_type`
/// and the CPU EP give (the variance is +Inf), never NaN (an Inf − Inf of squares).
#[test]
fn rows_whose_squares_pass_f32_have_an_infinite_variance() {
    let mut rng = common::rng("rows_whose_squares_pass_f32");
    for n in [37u64, 64] {
        let rows = [1e-3f32, 1.0, 1e17, 1e20, 1e30];
        let v: Vec<f32> =
            rows.iter().flat_map(|&m| (0..n).map(move |_| m)).map(|m| m * rng.random_range(-1.0f32..3.0)).collect();
        let shape = [rows.len() as u64, n];
        let x = T::f32(&shape, &v);
        let scale = T::f32(&[n], &vec![1.5; n as usize]);
        for rms in [false, true] {
            let (op, opset) = if rms { ("RMSNormalization", 23) } else { ("LayerNormalization", 17) };
            let ins = vec![Some(val("x", ElemType::F32, &shape)), Some(const_val("s", &scale))];
            let attrs = vec![("axis", Attr::Int(-1)), ("epsilon", Attr::Float(1e-5))];
            let nd = node(op, opset, ins, vec![val("y", ElemType::F32, &shape)], attrs);
            let got = run_graph(&[nd], &[("x", &x)], &[("s", &scale)], &["y"]).unwrap().remove(0).values();
            for (r, row) in x.values().chunks(n as usize).enumerate() {
                let mean = if rms { 0.0 } else { row.iter().sum::<f64>() / n as f64 };
                let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
                let inv = if var > f64::from(f32::MAX) { 0.0 } else { 1.0 / (var + f64::from(1e-5f32)).sqrt() };
                for (j, v) in row.iter().enumerate() {
                    let (g, w) = (got[r * n as usize + j], (v - mean) * inv * 1.5);
                    assert!((g - w).abs() <= 1e-4 * (1.0 + w.abs()), "{op} n={n} row {r} [{j}]: got {g}, want {w}");
                }
            }
        }
    }
}

/// Softmax and LogSoftmax of a row holding +Inf are NaN throughout (ONNX Runtime's CPU EP: the
/// max is +Inf and Inf − Inf poisons the sum); -Inf is an ordinary zero weight. Rows long enough
/// for the vec4 and workgroup-per-row kernels (16) and one along a strided axis.
#[test]
fn a_positive_infinity_makes_its_softmax_row_nan() {
    for (ty, make) in [(ElemType::F32, T::f32 as fn(&[u64], &[f32]) -> T), (ElemType::F16, T::f16)] {
        for (op, axis) in [("Softmax", 1), ("LogSoftmax", 1), ("Softmax", 0), ("LogSoftmax", 0)] {
            let mut v: Vec<f32> = (0..48).map(|i| (i % 7) as f32 * 0.25 - 0.5).collect();
            v[3] = f32::INFINITY; // row 0 (axis 1), column 3 (axis 0)
            v[16 + 5] = f32::NEG_INFINITY; // row 1, column 5
            let x = make(&[3, 16], &v);
            let n = node(
                op,
                13,
                vec![Some(val("x", ty, &[3, 16]))],
                vec![val("y", ty, &[3, 16])],
                vec![("axis", Attr::Int(axis))],
            );
            let got = run_graph(&[n], &[("x", &x)], &[], &["y"]).unwrap().remove(0).values();
            let poisoned: Vec<usize> = if axis == 1 { (0..16).collect() } else { (0..3).map(|r| r * 16 + 3).collect() };
            for (i, g) in got.iter().enumerate() {
                if poisoned.contains(&i) {
                    assert!(g.is_nan(), "{op} axis {axis} {ty}: element {i} is {g}, not NaN");
                } else if i == 16 + 5 {
                    let want = if op == "Softmax" { 0.0 } else { f64::NEG_INFINITY };
                    assert_eq!(*g, want, "{op} axis {axis} {ty}: element {i}");
                } else {
                    assert!(g.is_finite(), "{op} axis {axis} {ty}: element {i} is {g}");
                }
            }
        }
    }
}
