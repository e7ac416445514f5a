//! Fuzzing GetCapability and Compile on plain graphs: random small graphs of the ops ORT shows us
//! (MatMul, Gemm, Conv, elementwise unary and broadcasting binary ops, Clip, Reshape, Transpose,
//! Softmax, LayerNormalization, ReduceMean, Concat, Unsqueeze, Slice, Gather) with random shapes, constants,
//! element types (ints included) and symbolic dims, placed on random device profiles. Every
//! group must be convex and must compile (`build_program`) with the fused inputs and outputs ORT
//! would compute for it; nothing may panic.
//!
//! `EP_WGPU_FUZZ_CASES` sets the number of graphs (CI: the default; by hand: e.g. 200000).

mod common;

#[path = "fuzz_graph/gen.rs"]
mod gen;

use gen::{random_graph, FLOAT, INT64};

use common::reentry;
use std::collections::{BTreeMap, HashSet};

use ep_kernels::caps::profiles;
use ep_kernels::conv::ConvAlgo;
use ep_kernels::gemm::{GemmOptions, TilingChoice};
use ep_kernels::graph::{build_program, place, Constant, Dim, Graph, Node, Operand, PlacementOptions, ValueInfo};
use ep_kernels::ElemType;
use proptest::prelude::*;

fn cases() -> u32 {
    std::env::var("EP_WGPU_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(10000)
}

fn random_options(choice: u8) -> PlacementOptions {
    let all = profiles::all();
    let (_, caps) = all[choice as usize % all.len()].clone();
    let tiling =
        [TilingChoice::Auto, TilingChoice::Tile64, TilingChoice::SplitK, TilingChoice::Gemv][choice as usize / 4 % 4];
    let conv_algo = [ConvAlgo::Auto, ConvAlgo::Implicit][choice as usize / 16 % 2];
    PlacementOptions {
        caps,
        enable_f16: choice % 3 != 0,
        gemm: GemmOptions::tiling(tiling),
        conv1d_as_conv2d: true,
        conv_algo,
        cost_rule: choice % 5 != 0,
        flash_attention: if choice % 7 == 0 {
            ep_kernels::graph::FlashMode::All
        } else {
            ep_kernels::graph::FlashMode::Off
        },
    }
}

/// What ORT computes for a fused group (with `drop_constant_initializers`): the values read
/// from outside (constants excluded, they come from the graph), and the values read outside
/// or leaving the graph.
fn fused_io(g: &Graph, group: &[usize]) -> (Vec<String>, Vec<String>, Vec<Constant>) {
    let members: HashSet<usize> = group.iter().copied().collect();
    let produced: HashSet<&str> =
        group.iter().flat_map(|&i| g.nodes[i].outputs.iter().flatten().map(|v| v.name.as_str())).collect();
    let (mut inputs, mut constants) = (Vec::new(), Vec::new());
    let mut seen = HashSet::new();
    for &i in group {
        for v in g.nodes[i].inputs.iter().flatten().filter(|v| !v.name.is_empty()) {
            if produced.contains(v.name.as_str()) || !seen.insert(v.name.clone()) {
                continue;
            }
            if v.constant {
                if let (Some(dtype), Some(shape)) = (ElemType::from_onnx(v.elem_type), v.fixed_shape()) {
                    let len = shape.iter().product::<u64>() * dtype.size();
                    constants.push(Constant { name: v.name.clone(), dtype, shape, data: vec![0; len as usize] });
                }
            } else {
                inputs.push(v.name.clone());
            }
        }
    }
    let consumers = g.consumers();
    let mut outputs = Vec::new();
    for &i in group {
        for v in g.nodes[i].outputs.iter().flatten() {
            let outside = consumers.get(v.name.as_str()).is_some_and(|cs| cs.iter().any(|c| !members.contains(c)));
            if outside || g.outputs.contains(&v.name) {
                outputs.push(v.name.clone());
            }
        }
    }
    (inputs, outputs, constants)
}

fn check(g: &Graph, opts: &PlacementOptions) -> Result<(), TestCaseError> {
    let p = place(g, opts);
    prop_assert_eq!(p.decisions.len(), g.nodes.len());
    let mut in_groups = HashSet::new();
    for group in &p.groups {
        prop_assert!(!group.is_empty());
        for &i in group {
            prop_assert!(in_groups.insert(i), "node {} is in two groups", i);
        }
        prop_assert!(reentry(g, group).is_none(), "group {:?} is not convex", group);
    }
    let claimed: HashSet<usize> = p.decisions.iter().filter(|d| d.verdict.is_ok()).map(|d| d.node).collect();
    prop_assert_eq!(&claimed, &in_groups);
    for d in &p.decisions {
        if let Err(reason) = &d.verdict {
            prop_assert!(!reason.is_empty());
        }
    }
    let order = g.topological_order();
    for group in &p.groups {
        let members: HashSet<usize> = group.iter().copied().collect();
        let ordered: Vec<usize> = order.iter().copied().filter(|i| members.contains(i)).collect();
        let (inputs, outputs, constants) = fused_io(g, &ordered);
        let nodes: Vec<Node> = ordered.iter().map(|&i| g.nodes[i].clone()).collect();
        let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
        match build_program(&nodes, &inputs, &outputs, constants) {
            Err(e) => prop_assert!(false, "group {:?} does not compile: {}", names, e),
            // Every step reads only what earlier steps wrote, and the outputs exist.
            Ok(program) => {
                let mut written = std::collections::HashSet::new();
                for (i, step) in program.steps.iter().enumerate() {
                    for o in step.operands() {
                        let ok = match o {
                            Operand::Temp(t) => written.contains(&t),
                            Operand::Input(k) => k < program.inputs.len(),
                            Operand::Const(k) => k < program.constants.len(),
                        };
                        prop_assert!(ok, "group {:?}: step {} reads {:?}", names, i, o);
                    }
                    written.extend(step.outputs.iter().map(|&(v, _)| v));
                }
                let exists = |o: &Operand| match *o {
                    Operand::Temp(t) => written.contains(&t),
                    Operand::Input(k) => k < program.inputs.len(),
                    Operand::Const(k) => k < program.constants.len(),
                };
                prop_assert!(program.outputs.iter().all(exists));
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn every_group_is_convex_and_compiles(
        ops in prop::collection::vec(any::<u8>(), 1..16),
        seed in any::<u64>(),
        device in any::<u8>(),
    ) {
        let g = random_graph(&ops, seed);
        check(&g, &random_options(device))?;
    }
}

fn f32_value(name: &str, shape: &[u64], constant: bool) -> ValueInfo {
    ValueInfo {
        name: name.into(),
        elem_type: FLOAT,
        shape: Some(shape.iter().map(|&d| Dim::Fixed(d)).collect()),
        constant,
        small_data: None,
    }
}

fn plain(op: &str, inputs: &[&ValueInfo], out: &ValueInfo) -> Node {
    Node {
        name: format!("{op}_{}", out.name),
        op_type: op.into(),
        domain: String::new(),
        since_version: 17,
        inputs: inputs.iter().map(|&v| Some(v.clone())).collect(),
        outputs: vec![Some(out.clone())],
        attrs: BTreeMap::new(),
        assigned_ep: None,
    }
}

/// Regressions the fuzzer's generators found or were extended for, as fixed graphs.
#[test]
fn found_by_fuzzing() {
    let opts = random_options(1);
    let v = |n: &str| f32_value(n, &[3, 8], false);
    let w = |n: &str| f32_value(n, &[8, 8], true);
    // z feeds two products whose sum is an Add: the Add's other operand must be computed before
    // the product it is fused into (either operand order).
    for (first, second) in [("x", "y"), ("y", "x")] {
        let g = Graph {
            nodes: vec![
                plain("MatMul", &[&v("X"), &w("W0")], &v("z")),
                plain("MatMul", &[&v("z"), &w("W1")], &v("x")),
                plain("MatMul", &[&v("z"), &w("W2")], &v("y")),
                plain("Add", &[&v(first), &v(second)], &v("Y")),
            ],
            outputs: ["Y".to_string()].into(),
        };
        check(&g, &opts).unwrap();
    }
    // An Add of a product and a Reshape of another product (the Reshape's input has other
    // consumers): the Add fuses into the product it directly follows, never through the Reshape.
    let shape = ValueInfo {
        elem_type: INT64,
        small_data: Some([3i64, 8].iter().flat_map(|d| d.to_le_bytes()).collect()),
        ..f32_value("s", &[2], true)
    };
    for b_input in ["a", "r"] {
        let g = Graph {
            nodes: vec![
                plain("Gemm", &[&v("X"), &w("W0")], &v("a")),
                plain("Reshape", &[&v("a"), &shape], &v("r")),
                plain("MatMul", &[&v(b_input), &w("W1")], &v("b")),
                plain("Add", &[&v("r"), &v("b")], &v("Y")),
            ],
            outputs: ["Y".to_string(), "a".to_string()].into(),
        };
        check(&g, &opts).unwrap();
    }
    // Two roots whose products cross: a node joining one root's partition must not make the
    // other's re-enter itself through it.
    let g = Graph {
        nodes: vec![
            plain("MatMul", &[&v("X1"), &w("W0")], &f32_value("a", &[8, 8], false)),
            plain("MatMul", &[&v("X2"), &w("W1")], &f32_value("b", &[8, 8], false)),
            plain(
                "MatMul",
                &[&f32_value("a", &[8, 8], false), &f32_value("b", &[8, 8], false)],
                &f32_value("n", &[8, 8], false),
            ),
            plain("MatMul", &[&f32_value("b", &[8, 8], false), &f32_value("n", &[8, 8], false)], &v("Y")),
        ],
        outputs: ["Y".to_string()].into(),
    };
    check(&g, &opts).unwrap();
}
