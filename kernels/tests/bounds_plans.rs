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
/// norm's bound (`graph/bounds.rs`), so its runs plan no max pass, also through the Reshape that
/// ONNX Runtime's MatMul+Add fusion puts before a Gemm; the same product reading the
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
            v("x", &[1, m, k]),
            Some(const_val("gamma", &T::f32(&[k], &ramp(k, 0.3)))),
            Some(const_val("beta", &T::f32(&[k], &ramp(k, 0.05)))),
        ],
        vec![val("h", F32, &[1, m, k])],
        vec![("axis", Attr::Int(-1))],
    );
    let flat = T::i64(&[2], &[m as i64, k as i64]);
    let reshape = |from: &str| {
        node(
            "Reshape",
            14,
            vec![v(from, &[1, m, k]), Some(const_val("flat", &flat))],
            vec![val("a", F32, &[m, k])],
            vec![],
        )
    };
    // The per-run dispatches of the product in `nodes` (`op`, reading `a`).
    let dispatches = |mut nodes: Vec<Node>, op: &str| {
        nodes.push(node(op, 13, vec![v("a", &[m, k]), Some(weights.clone())], vec![val("y", F32, &[m, n])], vec![]));
        let constants = nodes
            .iter()
            .flat_map(|n| n.inputs.iter().flatten())
            .filter(|v| v.constant)
            .map(|v| Constant {
                name: v.name.clone(),
                dtype: ElemType::from_onnx(v.elem_type).unwrap(),
                shape: v.fixed_shape().unwrap(),
                data: v.small_data.clone().unwrap(),
            })
            .collect();
        let program = build_program(&nodes, &["x".to_string()], &["y".to_string()], constants).unwrap();
        let step = program.steps.iter().find(|s| s.ops == op).unwrap();
        let shapes = [Some(&[m, k][..]), Some(&[k, n][..])];
        let plan = step.kernel.plan(&shapes, &caps, &ExecOptions::default()).unwrap().unwrap();
        assert!(plan.line.contains("Coop"), "split into f16 products on the H200: {}", plan.line);
        plan.dispatches.into_iter().map(|d| d.0).collect::<Vec<_>>()
    };
    let plain = dispatches(vec![reshape("x")], "MatMul");
    assert!(plain.iter().any(|d| d.starts_with("absmax")), "{plain:?}");
    for op in ["MatMul", "Gemm"] {
        let bounded = dispatches(vec![norm.clone(), reshape("h")], op);
        assert!(bounded.iter().all(|d| !d.starts_with("absmax")), "{op}: {bounded:?}");
        assert_eq!(plain.len(), bounded.len() + 1, "{op}: {plain:?} against {bounded:?}");
    }
}
