//! A device keeps a bounded number of pipelines: past its limit it drops the least recently used
//! of those nothing prepared holds, so a process that loads model after model does not keep every
//! pipeline it ever compiled. Its own test binary, since the limit is the device's (one per
//! process here).
mod common;

use common::graph::{node, run_graph, val, T};
use ep_kernels::ElemType;

/// A unary op's name and its float64 reference.
type Unary = (&'static str, fn(f64) -> f64);

/// Unary ops, each its own kernel.
const OPS: [Unary; 10] = [
    ("Abs", f64::abs),
    ("Neg", |x| -x),
    ("Relu", |x| x.max(0.0)),
    ("Floor", f64::floor),
    ("Ceil", f64::ceil),
    ("Round", f64::round_ties_even),
    ("Exp", f64::exp),
    ("Reciprocal", |x| 1.0 / x),
    ("LeakyRelu", |x| if x < 0.0 { 0.01 * x } else { x }),
    ("Sqrt", |x| x.abs().sqrt()),
];

#[test]
fn a_device_keeps_a_bounded_number_of_idle_pipelines() {
    let gpu = common::gpu();
    gpu.set_pipeline_limit(6);
    let x = T::f32(&[3, 5], &[-2.5, -1.5, -0.75, 0.5, 1.5, 2.5, 3.25, -4.0, 4.5, 0.25, -0.5, 7.0, 8.5, -9.25, 10.0]);
    // Twice through: the second pass finds the first ones dropped and compiles them again.
    for pass in 0..2 {
        for (op, f) in OPS {
            let input = if op == "Sqrt" { "ax" } else { "x" };
            let mut nodes = vec![node(
                op,
                13,
                vec![Some(val(input, ElemType::F32, &[3, 5]))],
                vec![val("y", ElemType::F32, &[3, 5])],
                vec![],
            )];
            if op == "Sqrt" {
                nodes.insert(
                    0,
                    node(
                        "Abs",
                        13,
                        vec![Some(val("x", ElemType::F32, &[3, 5]))],
                        vec![val("ax", ElemType::F32, &[3, 5])],
                        vec![],
                    ),
                );
            }
            let got = run_graph(&nodes, &[("x", &x)], &[], &["y"]).unwrap().remove(0).values();
            let want: Vec<f64> = x.values().into_iter().map(f).collect();
            assert_eq!(got.len(), want.len());
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!((g - w).abs() <= 1e-6 * w.abs().max(1.0), "pass {pass} {op}: element {i}: got {g}, want {w}");
            }
            assert!(gpu.pipeline_count() <= 6, "pass {pass} {op}: {} pipelines kept", gpu.pipeline_count());
        }
    }
}
