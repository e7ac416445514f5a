//! A gated product in its store: SwiGLU's `SiLU(x·Wg) * (x·Wu)` as exported (the gate's SiLU as
//! `Mul(g, Sigmoid(g))`), where the gate absorbs its SiLU and the final Mul and multiplies its
//! activated result by the up projection's (which runs plain) — against float64 on the test adapter, at shapes that are no tile multiple (the
//! GEMV kernels for one and three rows, and a thin product with a long K, which the planner
//! splits, so the split-K reduction applies the gate).

mod common;

use common::graph::{node, run_graph, step_ops, val, T};
use ep_kernels::graph::{Dim, Node};
use ep_kernels::ElemType;

fn random(ty: ElemType, shape: &[u64], scale: f32) -> T {
    T::random(ty, shape, scale)
}

fn ops(nodes: &[Node], inputs: &[&str], outputs: &[&str]) -> Vec<String> {
    let mut ops = step_ops(nodes, inputs, outputs);
    ops.sort();
    ops
}

/// SwiGLU over `[b, s, k] → [b, s, n]`; the final Mul reads the gate first when `gate_first`.
fn swiglu(ty: ElemType, (b, s, k, n): (u64, u64, u64, u64), gate_first: bool) -> Vec<Node> {
    let v = |name: &str, shape: &[u64]| val(name, ty, shape);
    let o = [b, s, n];
    let (a0, a1) = if gate_first { ("silu", "up") } else { ("up", "silu") };
    vec![
        node("MatMul", 13, vec![Some(v("x", &[b, s, k])), Some(v("wg", &[k, n]))], vec![v("g", &o)], vec![]),
        node("Sigmoid", 13, vec![Some(v("g", &o))], vec![v("sg", &o)], vec![]),
        node("Mul", 14, vec![Some(v("g", &o)), Some(v("sg", &o))], vec![v("silu", &o)], vec![]),
        node("MatMul", 13, vec![Some(v("x", &[b, s, k])), Some(v("wu", &[k, n]))], vec![v("up", &o)], vec![]),
        node("Mul", 14, vec![Some(v(a0, &o)), Some(v(a1, &o))], vec![v("y", &o)], vec![]),
    ]
}

fn check(ty: ElemType, dims: (u64, u64, u64, u64), gate_first: bool) {
    check_nodes(ty, dims, swiglu(ty, dims, gate_first));
}

fn check_nodes(ty: ElemType, dims: (u64, u64, u64, u64), nodes: Vec<Node>) {
    let (b, s, k, n) = dims;
    assert_eq!(ops(&nodes, &["x", "wg", "wu"], &["y"]), ["MatMul", "MatMul+Sigmoid+Mul+Mul"], "{dims:?}");
    let (x, wg, wu) = (random(ty, &[b, s, k], 1.0), random(ty, &[k, n], 0.2), random(ty, &[k, n], 0.2));
    let got = run_graph(&nodes, &[("x", &x), ("wg", &wg), ("wu", &wu)], &[], &["y"]).unwrap();
    let (xv, gv, uv) = (x.values(), wg.values(), wu.values());
    let (m, k, n) = ((b * s) as usize, k as usize, n as usize);
    let tol = if ty == ElemType::F16 { 4e-3 } else { 2e-5 };
    for row in 0..m {
        for col in 0..n {
            let dot = |w: &[f64]| (0..k).map(|i| xv[row * k + i] * w[i * n + col]).sum::<f64>();
            let size = |w: &[f64]| 1.0 + (0..k).map(|i| (xv[row * k + i] * w[i * n + col]).abs()).sum::<f64>();
            let (g, u) = (dot(&gv), dot(&uv));
            let want = g / (1.0 + (-g).exp()) * u;
            let got = got[0].values()[row * n + col];
            let scale = size(&gv) * size(&uv);
            assert!((got - want).abs() <= tol * scale, "{ty} {dims:?} [{row}, {col}]: {got} vs {want}");
        }
    }
}

#[test]
fn a_gated_product_multiplies_in_its_store() {
    for ty in [ElemType::F32, ElemType::F16] {
        check(ty, (2, 37, 40, 72), true);
        check(ty, (2, 37, 40, 72), false);
        // Thin with a long K: split-K partial products, the reduction applies the gate.
        check(ty, (1, 5, 3000, 136), true);
        // One and three rows: the GEMV kernels.
        check(ty, (1, 1, 256, 136), false);
        check(ty, (1, 3, 96, 264), true);
    }
}

/// The gate takes the gating Mul wherever the up projection stands among the nodes (here first,
/// so it is met first), and the up projection's store then waits for nothing of the gate's.
#[test]
fn the_gate_takes_the_gating_mul_whatever_the_node_order() {
    for ty in [ElemType::F32, ElemType::F16] {
        let dims = (1, 19, 48, 40);
        let mut nodes = swiglu(ty, dims, false);
        let up = nodes.remove(3);
        nodes.insert(0, up);
        check_nodes(ty, dims, nodes);
    }
}

/// Where the gate's SiLU is also read elsewhere, the gating Mul joins the up projection instead.
#[test]
fn a_silu_read_elsewhere_leaves_the_gating_mul_to_the_up_projection() {
    let ty = ElemType::F32;
    let o = [1, 4, 8];
    let mut nodes = swiglu(ty, (1, 4, 8, 8), true);
    nodes.push(node("Relu", 14, vec![Some(val("silu", ty, &o))], vec![val("z", ty, &o)], vec![]));
    assert_eq!(ops(&nodes, &["x", "wg", "wu"], &["y", "z"]), ["MatMul+Mul", "MatMul+Sigmoid+Mul", "Relu"]);
}

#[test]
fn only_a_full_shape_factor_after_a_product_without_activation_is_a_gate() {
    let ty = ElemType::F32;
    let v = |name: &str| val(name, ty, &[4, 8]);
    let mm = node("MatMul", 13, vec![Some(v("x")), Some(val("w", ty, &[8, 8]))], vec![v("m")], vec![]);
    let mul = |a: &str, b: T| node("Mul", 14, vec![Some(v(a)), Some(val("f", ty, &b.shape))], vec![v("y")], vec![]);
    // An activation comes first: the Mul is a kernel of its own.
    let relu = node("Relu", 14, vec![Some(v("m"))], vec![v("a")], vec![]);
    let full = T::f32(&[4, 8], &[0.0; 32]);
    assert_eq!(ops(&[mm.clone(), relu, mul("a", full.clone())], &["x", "w", "f"], &["y"]), ["MatMul+Relu", "Mul"]);
    // A row vector broadcasts: not the output's shape, so not a gate.
    let row = T::f32(&[8], &[0.0; 8]);
    assert_eq!(ops(&[mm.clone(), mul("m", row)], &["x", "w", "f"], &["y"]), ["MatMul", "Mul"]);
    // The product's output also read elsewhere stays a value of its own.
    let nodes = [mm.clone(), mul("m", full.clone()), node("Relu", 14, vec![Some(v("m"))], vec![v("z")], vec![])];
    assert_eq!(ops(&nodes, &["x", "w", "f"], &["y", "z"]), ["MatMul", "Mul", "Relu"]);
    assert_eq!(ops(&[mm, mul("m", full)], &["x", "w", "f"], &["y"]), ["MatMul+Mul"]);
}

/// A decoder's shapes are symbolic (`batch_size`, `sequence_length`): named dims that match
/// are the same shape; an unnamed one could broadcast, so that Mul stays a kernel of its own.
#[test]
fn named_symbolic_dims_make_a_gate_and_unnamed_ones_do_not() {
    let ty = ElemType::F16;
    let sym = |name: &str, dims: &[&str]| {
        let mut v = val(name, ty, &[]);
        v.shape =
            Some(dims.iter().map(|d| d.parse().map_or_else(|_| Dim::Symbolic(d.to_string()), Dim::Fixed)).collect());
        v
    };
    let graph = |seq: &str| {
        let o = ["batch_size", seq, "8"];
        vec![
            node(
                "MatMul",
                13,
                vec![Some(sym("x", &["batch_size", seq, "4"])), Some(val("w", ty, &[4, 8]))],
                vec![sym("up", &o)],
                vec![],
            ),
            node("Mul", 14, vec![Some(sym("silu", &o)), Some(sym("up", &o))], vec![sym("y", &o)], vec![]),
        ]
    };
    assert_eq!(ops(&graph("sequence_length"), &["x", "w", "silu"], &["y"]), ["MatMul+Mul"]);
    assert_eq!(ops(&graph(""), &["x", "w", "silu"], &["y"]), ["MatMul", "Mul"]);
}
