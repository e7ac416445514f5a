//! Bounds known when the program is built (`graph/bounds.rs`) in the plans of the split f32
//! kernels: which passes a run still plans.

mod common;

use common::graph::{const_val, node, val, T};
use ep_kernels::caps::profiles;
use ep_kernels::graph::{build_program, Attr, Constant, ExecOptions, Node};
use ep_kernels::ElemType;

const F32: ElemType = ElemType::F32;

fn v(name: &str, shape: &[u64]) -> Option<ep_kernels::graph::ValueInfo> {
    Some(val(name, F32, shape))
}

/// A product reading a LayerNormalization's output, planned on the H200 where f32 products of
/// Whisper-tiny's size split into three f16 products: its A operand's scale comes from the
/// norm's bound (`graph/bounds.rs`), so its runs plan no max pass; the same product reading the
/// partition's input keeps one.
#[test]
fn a_normalised_operand_plans_no_max_pass_on_the_h200() {
    let caps = profiles::get("h200").unwrap();
    let (m, k, n) = (1500u64, 384u64, 1536u64);
    let ramp = |len: u64, f: f32| (0..len).map(|i| (i % 7) as f32 * f - 0.1).collect::<Vec<f32>>();
    let weights = const_val("w", &T::f32(&[k, n], &ramp(k * n, 0.01)));
    let norm = node(
        "LayerNormalization",
        17,
        vec![
            v("x", &[m, k]),
            Some(const_val("gamma", &T::f32(&[k], &ramp(k, 0.3)))),
            Some(const_val("beta", &T::f32(&[k], &ramp(k, 0.05)))),
        ],
        vec![val("h", F32, &[m, k])],
        vec![("axis", Attr::Int(-1))],
    );
    let dispatches = |input: &str, with_norm: bool| {
        let product =
            node("MatMul", 13, vec![v(input, &[m, k]), Some(weights.clone())], vec![val("y", F32, &[m, n])], vec![]);
        let nodes: Vec<Node> = if with_norm { vec![norm.clone(), product] } else { vec![product] };
        let constants = nodes
            .iter()
            .flat_map(|n| n.inputs.iter().flatten())
            .filter(|v| v.constant)
            .map(|v| Constant {
                name: v.name.clone(),
                dtype: F32,
                shape: v.fixed_shape().unwrap(),
                data: v.small_data.clone().unwrap(),
            })
            .collect();
        let program = build_program(&nodes, &["x".to_string()], &["y".to_string()], constants).unwrap();
        let step = program.steps.iter().find(|s| s.ops == "MatMul").unwrap();
        let shapes = [Some(&[m, k][..]), Some(&[k, n][..])];
        let plan = step.kernel.plan(&shapes, &caps, &ExecOptions::default()).unwrap().unwrap();
        assert!(plan.line.contains("Coop"), "split into f16 products on the H200: {}", plan.line);
        plan.dispatches.into_iter().map(|d| d.0).collect::<Vec<_>>()
    };
    let bounded = dispatches("h", true);
    assert!(bounded.iter().all(|d| !d.starts_with("absmax")), "{bounded:?}");
    let plain = dispatches("x", false);
    assert!(plain.iter().any(|d| d.starts_with("absmax")), "{plain:?}");
    assert_eq!(plain.len(), bounded.len() + 1, "{plain:?} against {bounded:?}");
}
