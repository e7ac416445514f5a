//! Normalisations on non-finite rows: NaN where ONNX Runtime's CPU EP gives NaN (the fuzzer
//! found a LayerNorm returning ±Inf for a row holding -Inf, seed 935064387, and a LogSoftmax
//! returning -Inf for a row holding +Inf, seed 7006213).
mod common;

use common::graph::{const_val, node, run_graph, val, T};
use ep_kernels::graph::Attr;
use ep_kernels::ElemType;

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
