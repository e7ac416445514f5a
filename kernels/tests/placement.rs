//! Placement on plain graphs: what is claimed, why the rest is declined, and that every group is
//! convex (no path leaves a group through an unclaimed node and comes back).

mod common;

use common::reentry;
use std::collections::BTreeMap;

use ep_kernels::caps::profiles;
use ep_kernels::graph::{place, Attr, DeclineKind, Dim, Graph, Node, PlacementOptions, Role, ValueInfo};

fn opts() -> PlacementOptions {
    PlacementOptions::defaults(profiles::get("llvmpipe").unwrap())
}

fn value(name: &str, shape: &[i64]) -> ValueInfo {
    ValueInfo {
        name: name.into(),
        elem_type: 1,
        shape: Some(
            shape.iter().map(|&d| if d < 0 { Dim::Symbolic("s".into()) } else { Dim::Fixed(d as u64) }).collect(),
        ),
        constant: false,
        small_data: None,
    }
}

fn constant(name: &str, shape: &[i64]) -> ValueInfo {
    ValueInfo { constant: true, ..value(name, shape) }
}

fn shape_const(name: &str, dims: &[i64]) -> ValueInfo {
    ValueInfo {
        name: name.into(),
        elem_type: 7,
        shape: Some(vec![Dim::Fixed(dims.len() as u64)]),
        constant: true,
        small_data: Some(dims.iter().flat_map(|d| d.to_le_bytes()).collect()),
    }
}

fn node(op: &str, name: &str, inputs: Vec<ValueInfo>, output: ValueInfo) -> Node {
    Node {
        name: name.into(),
        op_type: op.into(),
        domain: String::new(),
        since_version: 17,
        inputs: inputs.into_iter().map(Some).collect(),
        outputs: vec![Some(output)],
        attrs: BTreeMap::new(),
        assigned_ep: None,
    }
}

fn graph(nodes: Vec<Node>, outputs: &[&str]) -> Graph {
    Graph { nodes, outputs: outputs.iter().map(|s| s.to_string()).collect() }
}

/// `(node name, verdict)` in placement order.
type Verdicts = Vec<(String, Result<Role, String>)>;

fn verdicts(g: &Graph) -> (Verdicts, Vec<Vec<usize>>) {
    let p = place(g, &opts());
    assert_convex(g, &p.groups);
    let v = p.decisions.iter().map(|d| (g.nodes[d.node].name.clone(), d.verdict.clone())).collect();
    (v, p.groups)
}

/// No path from a group member through a node outside the group back into the group.
fn assert_convex(g: &Graph, groups: &[Vec<usize>]) {
    for group in groups {
        if let Some(c) = reentry(g, group) {
            panic!("group {group:?} is not convex (re-enters at node {c})");
        }
    }
}

#[test]
fn mlp_with_reshapes_is_one_partition() {
    // ORT's MatMulAddFusion rewrites 3-D MatMul+Add as Reshape → Gemm → Reshape.
    let g = graph(
        vec![
            node(
                "Reshape",
                "r_in",
                vec![value("x", &[2, 7, 64]), shape_const("s1", &[-1, 64])],
                value("x2", &[14, 64]),
            ),
            node(
                "Gemm",
                "gemm",
                vec![value("x2", &[14, 64]), constant("w", &[64, 32]), constant("b", &[32])],
                value("y2", &[14, 32]),
            ),
            node(
                "Reshape",
                "r_out",
                vec![value("y2", &[14, 32]), shape_const("s2", &[2, 7, 32])],
                value("y", &[2, 7, 32]),
            ),
            node("Relu", "relu", vec![value("y", &[2, 7, 32])], value("z", &[2, 7, 32])),
        ],
        &["z"],
    );
    let (v, groups) = verdicts(&g);
    assert!(v.iter().all(|(_, r)| r.is_ok()), "{v:?}");
    assert_eq!(groups.len(), 1);
    assert!(matches!(v[3].1, Ok(Role::Kernel)), "{v:?}");
}

#[test]
fn lone_reshape_is_ours_and_unknown_ops_are_declined() {
    let g = graph(
        vec![
            node("Reshape", "r", vec![value("x", &[4, 4]), shape_const("s", &[16])], value("y", &[16])),
            node("TopK", "top", vec![value("y", &[16])], value("z", &[16])),
        ],
        &["z"],
    );
    let p = place(&g, &opts());
    assert!(p.decisions[0].verdict.is_ok(), "{:?}", p.decisions);
    assert!(p.decisions[1].verdict.as_ref().unwrap_err().contains("not an op"), "{:?}", p.decisions);
    assert_eq!(p.decisions[1].kind, Some(DeclineKind::NotOurs));
    // On a discrete GPU a partition that only renames buffers would only add host copies.
    let p = place(&g, &h200_opts());
    assert!(p.groups.is_empty());
    assert!(p.decisions[0].verdict.as_ref().unwrap_err().contains("only renames"), "{:?}", p.decisions);
    assert_eq!(p.decisions[0].kind, Some(DeclineKind::Cost));
}

#[test]
fn unclaimed_node_on_a_path_splits_the_group() {
    // a = x·w; s = topk(a) (not ours); c = a·s  → c may not join a's group.
    let g = graph(
        vec![
            node("MatMul", "a", vec![value("x", &[8, 8]), constant("w", &[8, 8])], value("a", &[8, 8])),
            node("TopK", "s", vec![value("a", &[8, 8])], value("s", &[8, 8])),
            node("MatMul", "c", vec![value("a", &[8, 8]), value("s", &[8, 8])], value("c", &[8, 8])),
        ],
        &["c"],
    );
    let (v, groups) = verdicts(&g);
    assert!(v[0].1.is_ok() && v[2].1.is_ok());
    assert_eq!(groups.len(), 2, "{groups:?}");
}

#[test]
fn matmul_then_add_then_clip_fuses() {
    let mut clip = node(
        "Clip",
        "clip",
        vec![
            value("a", &[3, 5, 8]),
            ValueInfo { small_data: Some(0f32.to_le_bytes().to_vec()), ..constant("lo", &[]) },
        ],
        value("y", &[3, 5, 8]),
    );
    clip.inputs.push(Some(ValueInfo { small_data: Some(6f32.to_le_bytes().to_vec()), ..constant("hi", &[]) }));
    let g = graph(
        vec![
            node("MatMul", "m", vec![value("x", &[3, 5, 4]), constant("w", &[4, 8])], value("m", &[3, 5, 8])),
            node("Add", "add", vec![constant("b", &[8]), value("m", &[3, 5, 8])], value("a", &[3, 5, 8])),
            clip,
        ],
        &["y"],
    );
    let (v, groups) = verdicts(&g);
    assert!(v.iter().all(|(_, r)| r.is_ok()), "{v:?}");
    assert_eq!(groups, vec![vec![0, 1, 2]]);
}

#[test]
fn declines_say_why() {
    let mut int_mm = node("MatMul", "i", vec![value("x", &[2, 2]), value("w", &[2, 2])], value("y", &[2, 2]));
    for v in int_mm.inputs.iter_mut().flatten() {
        v.elem_type = 6;
    }
    let bad_k = node("MatMul", "k", vec![value("x", &[2, 3]), value("w", &[4, 2])], value("z", &[2, 2]));
    let mut gemm3 = node("Gemm", "g", vec![value("x", &[2, 3, 4]), value("w", &[4, 2])], value("q", &[2, 2]));
    gemm3.attrs.insert("transB".into(), Attr::Int(0));
    let mut domain = node("MatMul", "d", vec![value("x", &[2, 2]), value("w", &[2, 2])], value("u", &[2, 2]));
    domain.domain = "com.microsoft".into();
    let g = graph(vec![int_mm, bad_k, gemm3, domain], &["y", "z", "q", "u"]);
    let p = place(&g, &opts());
    assert!(p
        .decisions
        .iter()
        .all(|d| d.kind == Some(if d.node == 3 { DeclineKind::NotOurs } else { DeclineKind::Unsupported })));
    let (v, _) = verdicts(&g);
    let reason = |i: usize| v[i].1.clone().unwrap_err();
    assert!(reason(0).contains("element type 6"), "{}", reason(0));
    assert!(reason(1).contains("inner dimensions"), "{}", reason(1));
    assert!(reason(2).contains("not 2-D"), "{}", reason(2));
    assert!(reason(3).contains("not an op"), "{}", reason(3));
}

fn h200_opts() -> PlacementOptions {
    PlacementOptions { caps: profiles::get("h200").unwrap(), ..opts() }
}

#[test]
fn low_intensity_partitions_stay_on_cpu_for_a_discrete_gpu() {
    // Attention scores: Q·Kᵀ between CPU ops, ~30 FLOP per byte crossing PCIe.
    let scores = graph(
        vec![node(
            "MatMul",
            "qk",
            vec![value("q", &[6, 1500, 64]), value("k", &[6, 64, 1500])],
            value("s", &[6, 1500, 1500]),
        )],
        &["s"],
    );
    let p = place(&scores, &h200_opts());
    assert!(p.groups.is_empty());
    assert_eq!(p.decisions[0].kind, Some(DeclineKind::Cost));
    let reason = p.decisions[0].verdict.clone().unwrap_err();
    assert!(reason.contains("ms here") && reason.contains("CPU EP"), "{reason}");
    // The software adapter shares host memory: no PCIe to pay for, so it keeps the node.
    assert_eq!(place(&scores, &opts()).groups.len(), 1);
    // offload=all claims it anyway.
    assert_eq!(place(&scores, &PlacementOptions { cost_rule: false, ..h200_opts() }).groups.len(), 1);

    // An MLP layer does ~1000 FLOP per byte moved: kept.
    let mlp = graph(
        vec![node(
            "MatMul",
            "mm",
            vec![value("x", &[2048, 4096]), constant("w", &[4096, 4096])],
            value("y", &[2048, 4096]),
        )],
        &["y"],
    );
    assert_eq!(place(&mlp, &h200_opts()).groups.len(), 1);

    // A small product with little work: the round trip alone costs more than the CPU needs
    // (measured: lone small ops lose on the H200).
    let small = graph(
        vec![node("MatMul", "mm", vec![value("x", &[7, 129]), value("w", &[129, 1000])], value("y", &[7, 1000]))],
        &["y"],
    );
    assert!(place(&small, &h200_opts()).groups.is_empty());
    // A lone memory-bound op of any size: left to the CPU EP.
    let add = graph(
        vec![node("Add", "add", vec![value("a", &[2048, 4096]), value("b", &[2048, 4096])], value("y", &[2048, 4096]))],
        &["y"],
    );
    assert!(place(&add, &h200_opts()).groups.is_empty());

    // Symbolic shapes cannot be judged: kept.
    let dynamic = graph(
        vec![node("MatMul", "qk", vec![value("q", &[6, -1, 64]), value("k", &[6, 64, -1])], value("s", &[6, -1, -1]))],
        &["s"],
    );
    assert_eq!(place(&dynamic, &h200_opts()).groups.len(), 1);
}

#[test]
fn attention_stays_on_a_discrete_gpu_once_softmax_is_ours() {
    // Whisper's scores: Q·Kᵀ → Mul(scale) → Softmax → ·V, all ours: one partition whose host
    // traffic is Q, K, V and the result, so the 54 MB score matrix never crosses PCIe.
    let q = value("q", &[1, 6, 1500, 64]);
    let scale = ValueInfo { small_data: Some(0.125f32.to_le_bytes().to_vec()), ..constant("scale", &[]) };
    let mut softmax =
        node("Softmax", "softmax", vec![value("m", &[1, 6, 1500, 1500])], value("p", &[1, 6, 1500, 1500]));
    softmax.attrs.insert("axis".into(), Attr::Int(-1));
    let g = graph(
        vec![
            node("MatMul", "qk", vec![q, value("kt", &[1, 6, 64, 1500])], value("s", &[1, 6, 1500, 1500])),
            node("Mul", "scale", vec![value("s", &[1, 6, 1500, 1500]), scale], value("m", &[1, 6, 1500, 1500])),
            softmax,
            node(
                "MatMul",
                "pv",
                vec![value("p", &[1, 6, 1500, 1500]), value("v", &[1, 6, 1500, 64])],
                value("o", &[1, 6, 1500, 64]),
            ),
        ],
        &["o"],
    );
    let p = place(&g, &h200_opts());
    assert!(p.decisions.iter().all(|d| d.verdict.is_ok()), "{:?}", p.decisions);
    assert_eq!(p.groups.len(), 1);
}

#[test]
fn branches_that_start_at_inputs_join_one_partition() {
    // Two chains start at graph inputs and meet: one partition, not one per branch.
    let g = graph(
        vec![
            node("Sigmoid", "a", vec![value("x", &[4, 8])], value("a", &[4, 8])),
            node("Tanh", "b", vec![value("y", &[4, 8])], value("b", &[4, 8])),
            node("Add", "c", vec![value("a", &[4, 8]), value("b", &[4, 8])], value("c", &[4, 8])),
        ],
        &["c"],
    );
    let (v, groups) = verdicts(&g);
    assert!(v.iter().all(|(_, r)| r.is_ok()), "{v:?}");
    assert_eq!(groups.len(), 1, "{groups:?}");
}

/// A value of element type `elem_type`.
fn typed(name: &str, elem_type: i32, shape: &[i64]) -> ValueInfo {
    ValueInfo { elem_type, ..value(name, shape) }
}

#[test]
fn total_sequence_length_producers_stay_on_the_cpu() {
    // genai's pattern: attention_mask → Shape (not ours) → Gather → Cast → GroupQueryAttention's
    // total_sequence_length. Gather and Cast alone would be ours; the value sizes GQA's outputs.
    let shape = node("Shape", "shape", vec![typed("mask", 7, &[1, -1])], typed("mask_shape", 7, &[2]));
    let gather = node(
        "Gather",
        "gather",
        vec![typed("mask_shape", 7, &[2]), ValueInfo { constant: true, ..typed("one", 7, &[]) }],
        typed("total64", 7, &[]),
    );
    let mut cast = node("Cast", "cast", vec![typed("total64", 7, &[])], typed("total", 6, &[]));
    cast.attrs.insert("to".into(), Attr::Int(6));
    let d = 64;
    let mut gqa = node("GroupQueryAttention", "gqa", vec![], value("out", &[1, -1, 4 * d]));
    gqa.domain = "com.microsoft".into();
    gqa.inputs = [
        Some(value("q", &[1, -1, 4 * d])),
        Some(value("k", &[1, -1, 2 * d])),
        Some(value("v", &[1, -1, 2 * d])),
        None,
        None,
        Some(typed("seqlens", 6, &[1])),
        Some(typed("total", 6, &[])),
    ]
    .into();
    gqa.outputs.push(Some(value("present_k", &[1, 2, -1, d])));
    gqa.outputs.push(Some(value("present_v", &[1, 2, -1, d])));
    for (k, v) in [("num_heads", 4), ("kv_num_heads", 2)] {
        gqa.attrs.insert(k.into(), Attr::Int(v));
    }
    let g = graph(vec![shape, gather, cast, gqa], &["out", "present_k", "present_v"]);
    let mut o = opts();
    o.cost_rule = false;
    let p = place(&g, &o);
    let verdict = |name: &str| {
        let d = p.decisions.iter().find(|d| g.nodes[d.node].name == name).unwrap();
        (d.verdict.clone(), d.kind)
    };
    assert_eq!(verdict("gqa").0, Ok(Role::Kernel));
    for name in ["gather", "cast"] {
        let (v, kind) = verdict(name);
        assert!(
            v.as_ref().unwrap_err().contains("feeds GroupQueryAttention 'gqa' as a small integer computed on the CPU"),
            "{name}: {v:?}"
        );
        assert_eq!(kind, Some(DeclineKind::Cost));
    }
    assert_eq!(p.groups.len(), 1);
}
