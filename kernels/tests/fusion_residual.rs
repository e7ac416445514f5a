//! A residual Add in a product's store: a transformer's `x + Linear(y)`, as a MatMul with its
//! bias Add, or as ONNX Runtime's MatMul+Add fusion leaves it (Reshape → Gemm → Reshape, then the
//! Add) — against float64 on the test adapter, at shapes that are no tile multiple (one thin with
//! a long K, which the planner splits, so the split-K reduction adds the residual).

mod common;

use common::graph::{const_val, node, run_graph, step_ops, val, T};
use ep_kernels::graph::{Attr, Node};
use ep_kernels::ElemType;

fn random(ty: ElemType, shape: &[u64], scale: f32) -> T {
    T::random(ty, shape, scale)
}

fn ops(nodes: &[Node], inputs: &[&str], outputs: &[&str]) -> Vec<String> {
    step_ops(nodes, inputs, outputs)
}

/// `y = r + Linear(x)` over `[b, s, k] → [b, s, n]`: MatMul + Add(bias), or (`gemm`) Reshape →
/// Gemm(C) → Reshape; then the residual Add (`r` first when `r_first`).
fn linear_residual(ty: ElemType, (b, s, k, n): (u64, u64, u64, u64), gemm: bool, r_first: bool) -> Vec<Node> {
    let v = |name: &str, shape: &[u64]| val(name, ty, shape);
    let shape = |name: &str, dims: &[i64]| const_val(name, &T::i64(&[dims.len() as u64], dims));
    let mut nodes = if gemm {
        vec![
            node(
                "Reshape",
                14,
                vec![Some(v("x", &[b, s, k])), Some(shape("flat", &[(b * s) as i64, k as i64]))],
                vec![v("x2", &[b * s, k])],
                vec![],
            ),
            node(
                "Gemm",
                13,
                vec![Some(v("x2", &[b * s, k])), Some(v("w", &[k, n])), Some(v("bias", &[n]))],
                vec![v("g", &[b * s, n])],
                vec![("beta", Attr::Float(1.0))],
            ),
            node(
                "Reshape",
                14,
                vec![Some(v("g", &[b * s, n])), Some(shape("back", &[b as i64, s as i64, n as i64]))],
                vec![v("l", &[b, s, n])],
                vec![],
            ),
        ]
    } else {
        vec![
            node("MatMul", 13, vec![Some(v("x", &[b, s, k])), Some(v("w", &[k, n]))], vec![v("m", &[b, s, n])], vec![]),
            node("Add", 14, vec![Some(v("m", &[b, s, n])), Some(v("bias", &[n]))], vec![v("l", &[b, s, n])], vec![]),
        ]
    };
    let (a0, a1) = if r_first { ("r", "l") } else { ("l", "r") };
    nodes.push(node(
        "Add",
        14,
        vec![Some(v(a0, &[b, s, n])), Some(v(a1, &[b, s, n]))],
        vec![v("y", &[b, s, n])],
        vec![],
    ));
    nodes
}

fn check(ty: ElemType, dims: (u64, u64, u64, u64), gemm: bool, r_first: bool) {
    let (b, s, k, n) = dims;
    let nodes = linear_residual(ty, dims, gemm, r_first);
    let fused = if gemm { "Gemm+Add" } else { "MatMul+Add+Add" };
    let steps: Vec<String> =
        ops(&nodes, &["x", "w", "bias", "r"], &["y"]).into_iter().filter(|o| o != "Reshape").collect();
    assert_eq!(steps, [fused], "{dims:?} gemm {gemm}");
    let (x, w, bias, r) =
        (random(ty, &[b, s, k], 1.0), random(ty, &[k, n], 0.2), random(ty, &[n], 1.0), random(ty, &[b, s, n], 1.0));
    let got = run_graph(&nodes, &[("x", &x), ("w", &w), ("bias", &bias), ("r", &r)], &[], &["y"]).unwrap();
    let (xv, wv, bv, rv) = (x.values(), w.values(), bias.values(), r.values());
    let (m, k, n) = ((b * s) as usize, k as usize, n as usize);
    let tol = if ty == ElemType::F16 { 4e-3 } else { 2e-5 };
    for row in 0..m {
        for col in 0..n {
            let dot: f64 = (0..k).map(|i| xv[row * k + i] * wv[i * n + col]).sum();
            let want = dot + bv[col] + rv[row * n + col];
            let g = got[0].values()[row * n + col];
            let scale = 1.0 + (0..k).map(|i| (xv[row * k + i] * wv[i * n + col]).abs()).sum::<f64>();
            assert!((g - want).abs() <= tol * scale, "{ty} {dims:?} gemm {gemm} [{row}, {col}]: {g} vs {want}");
        }
    }
}

#[test]
fn a_residual_after_a_linear_runs_in_its_store() {
    for ty in [ElemType::F32, ElemType::F16] {
        for (gemm, r_first) in [(false, false), (true, true), (true, false)] {
            check(ty, (2, 37, 40, 72), gemm, r_first);
        }
        // Thin with a long K: split-K partial products, the reduction adds bias and residual.
        check(ty, (1, 5, 3000, 136), true, false);
        // One and three rows: the GEMV kernels.
        check(ty, (1, 1, 256, 136), false, false);
        check(ty, (1, 3, 96, 264), true, true);
    }
}

#[test]
fn only_a_product_without_activation_takes_a_residual() {
    let ty = ElemType::F32;
    let v = |name: &str| val(name, ty, &[4, 8]);
    let mm = node("MatMul", 13, vec![Some(v("x")), Some(val("w", ty, &[8, 8]))], vec![v("m")], vec![]);
    let add = |a: &str, b: &str, out: &str| node("Add", 14, vec![Some(v(a)), Some(v(b))], vec![v(out)], vec![]);
    // An activation comes first: the residual is an Add of its own.
    let relu = node("Relu", 14, vec![Some(v("m"))], vec![v("a")], vec![]);
    assert_eq!(ops(&[mm.clone(), relu, add("a", "r", "y")], &["x", "w", "r"], &["y"]), ["MatMul+Relu", "Add"]);
    // Without a bias, the first full-shape Add is the bias and a second one a residual.
    let nodes = [mm.clone(), add("m", "c", "l"), add("l", "r", "y")];
    assert_eq!(ops(&nodes, &["x", "w", "c", "r"], &["y"]), ["MatMul+Add+Add"]);
    // A residual the caller also reads stays where it is; the sum is read too: nothing after it.
    let nodes = [
        mm.clone(),
        add("m", "c", "l"),
        add("l", "r", "y"),
        node("Relu", 14, vec![Some(v("y"))], vec![v("z")], vec![]),
    ];
    assert_eq!(ops(&nodes, &["x", "w", "c", "r"], &["z"]), ["MatMul+Add+Add", "Relu"]);
    // An Add that broadcasts the sum to a higher rank ([4, 8] + [1, 4, 8]) changes the shape: its own kernel.
    let mut wide = add("l", "r", "y");
    wide.inputs[1] = Some(val("r", ty, &[1, 4, 8]));
    wide.outputs[0] = Some(val("y", ty, &[1, 4, 8]));
    assert_eq!(ops(&[mm.clone(), add("m", "c", "l"), wide], &["x", "w", "c", "r"], &["y"]), ["MatMul+Add", "Add"]);
    // A transposed Gemm keeps the Add separate.
    let g = node(
        "Gemm",
        13,
        vec![Some(v("x")), Some(val("w", ty, &[8, 8])), Some(val("c", ty, &[8]))],
        vec![v("g")],
        vec![("transB", Attr::Int(1))],
    );
    assert_eq!(ops(&[g, add("g", "r", "y")], &["x", "w", "c", "r"], &["y"]), ["Gemm", "Add"]);
}
