//! A SkipSimplifiedLayerNormalization folded into the MatMul steps that read its output (an fp16
//! or fp32 decoder as onnxruntime-genai builds it: the norm before the QKV projection, before
//! SwiGLU's gate and up projections, before the LM head). One row on the narrow one-row GEMV runs
//! one dispatch per product, which makes A from the norm's input, skip and γ; the first product
//! also stores their sum. SwiGLU's gate and up projections are one step (`ops/matmul_dual.rs`):
//! one row runs one dispatch over both weights. More rows run the norm into a scratch buffer
//! first (and SwiGLU's up projection before its gate). Against float64 on fresh random data, K
//! and N off any tile multiple, outputs checked beside the sum.

mod common;

use common::graph::{node, run_graph, step_ops, val, T};
use common::norm_ref::{check_row, skip_norm_node, NormRow};
use ep_kernels::graph::{build_program, ExecOptions, Node};
use ep_kernels::ElemType;
use rand::Rng;

/// Long enough rows for the narrow GEMV (at least 512), and not a multiple of its 128 K lanes.
const K: u64 = 520;
/// Outputs for the 2-lane form in f16 (on the test adapter).
const N: u64 = 72;
const EPS: f32 = 1e-5;

fn t(ty: ElemType, shape: &[u64], v: &[f32]) -> T {
    if ty == ElemType::F16 {
        T::f16(shape, v)
    } else {
        T::f32(shape, v)
    }
}

fn matmul(ty: ElemType, m: u64, name: &str, k: u64, n: u64) -> Node {
    let mut b = val(&format!("{name}.w"), ty, &[k, n]);
    b.constant = true;
    node("MatMul", 13, vec![Some(val("h", ty, &[1, m, k])), Some(b)], vec![val(name, ty, &[1, m, n])], vec![])
}

/// The norm (`h`, and the sum `res` when `sum`), then one product `y` or SwiGLU's two.
fn graph(ty: ElemType, m: u64, swiglu: bool, sum: bool, k: u64, n: u64) -> Vec<Node> {
    let norm = skip_norm_node(ty, m, k, sum, EPS);
    if !swiglu {
        return vec![norm, matmul(ty, m, "y", k, n)];
    }
    let o = [1, m, n];
    vec![
        norm,
        matmul(ty, m, "g", k, n),
        node("Sigmoid", 13, vec![Some(val("g", ty, &o))], vec![val("sg", ty, &o)], vec![]),
        node("Mul", 14, vec![Some(val("g", ty, &o)), Some(val("sg", ty, &o))], vec![val("silu", ty, &o)], vec![]),
        matmul(ty, m, "u", k, n),
        node("Mul", 14, vec![Some(val("silu", ty, &o)), Some(val("u", ty, &o))], vec![val("y", ty, &o)], vec![]),
    ]
}

fn inputs(swiglu: bool) -> &'static [&'static str] {
    if swiglu {
        &["x", "skip", "gamma", "g.w", "u.w"]
    } else {
        &["x", "skip", "gamma", "y.w"]
    }
}

/// Dispatches of each step at the graph's shapes, on the test adapter.
fn dispatches(m: u64, swiglu: bool) -> Vec<usize> {
    programs(ElemType::F32, m, swiglu, N).iter().map(Vec::len).collect()
}

/// The programs each step dispatches at the graph's shapes, on the test adapter.
fn programs(ty: ElemType, m: u64, swiglu: bool, n: u64) -> Vec<Vec<String>> {
    let nodes = graph(ty, m, swiglu, true, K, n);
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let program = build_program(&nodes, &s(inputs(swiglu)), &s(&["y", "res"]), vec![]).unwrap();
    let caps = common::gpu().caps().clone();
    let (x, w, gamma, o): (&[u64], &[u64], &[u64], &[u64]) = (&[1, m, K], &[K, n], &[K], &[1, m, n]);
    program
        .steps
        .iter()
        .map(|step| {
            // A, B, the bias and residual slots, skip, γ, SwiGLU's up projection's weights.
            let given = |i: usize| step.inputs.get(i).is_some_and(Option::is_some);
            let shapes = [Some(x), Some(w), None, given(3).then_some(o), Some(x), Some(gamma), given(6).then_some(w)];
            let plan = step.kernel.plan(&shapes, &caps, &ExecOptions::default()).unwrap();
            plan.map_or(Vec::new(), |p| p.dispatches.into_iter().map(|(name, _)| name).collect())
        })
        .collect()
}

fn check(ty: ElemType, m: u64, swiglu: bool, sum: bool, n: u64) {
    let want_ops: &[&str] = if swiglu {
        &["SkipSimplifiedLayerNormalization+MatMul+MatMul+Sigmoid+Mul+Mul"]
    } else {
        &["SkipSimplifiedLayerNormalization+MatMul"]
    };
    check_steps(ty, (m, K, n), swiglu, sum, want_ops);
}

/// The graph at M × K × N runs as the steps `want_ops` and matches float64.
fn check_steps(ty: ElemType, (m, k, n): (u64, u64, u64), swiglu: bool, sum: bool, want_ops: &[&str]) {
    let what = format!("{ty} m={m} k={k} n={n} swiglu={swiglu} sum={sum}");
    let nodes = graph(ty, m, swiglu, sum, k, n);
    let mut outputs = vec!["y"];
    if sum {
        outputs.push("res");
    }
    let mut ops = step_ops(&nodes, inputs(swiglu), &outputs);
    ops.sort();
    let mut want = want_ops.to_vec();
    want.sort();
    assert_eq!(ops, want, "{what}");
    let mut rng = common::rng(&format!("fusion_matmul_norm {what}"));
    let mut rand = |n: u64, lo: f32, hi: f32| (0..n).map(|_| rng.random_range(lo..hi)).collect::<Vec<f32>>();
    let (x, skip, gamma) = (
        t(ty, &[1, m, k], &rand(m * k, -2.0, 2.0)),
        t(ty, &[1, m, k], &rand(m * k, -2.0, 2.0)),
        t(ty, &[k], &rand(k, 0.5, 1.5)),
    );
    let (gw, uw) = (t(ty, &[k, n], &rand(k * n, -0.1, 0.1)), t(ty, &[k, n], &rand(k * n, -0.1, 0.1)));
    let consts: Vec<(&str, &T)> = if swiglu {
        vec![("gamma", &gamma), ("g.w", &gw), ("u.w", &uw)]
    } else {
        vec![("gamma", &gamma), ("y.w", &gw)]
    };
    let got = run_graph(&nodes, &[("x", &x), ("skip", &skip)], &consts, &outputs).unwrap();
    let (xv, sv, gv, g64, u64_) = (x.values(), skip.values(), gamma.values(), gw.values(), uw.values());
    let tol = if ty == ElemType::F16 { 2e-2 } else { 1e-4 };
    let (k, n) = (k as usize, n as usize);
    let (gate, up) = (|i: usize, col: usize| g64[i * n + col], |i: usize, col: usize| u64_[i * n + col]);
    let (y, res) = (got[0].values(), got.get(1).map(T::values));
    for row in 0..m as usize {
        let at = row * k..(row + 1) * k;
        let norm = NormRow { x: &xv[at.clone()], skip: &sv[at], gamma: &gv, eps: EPS };
        let up: Option<&dyn Fn(usize, usize) -> f64> = if swiglu { Some(&up) } else { None };
        check_row(&norm, &gate, up, (row, n), &y, res.as_deref(), tol, &what);
    }
}

#[test]
fn one_row_folds_the_norm_into_each_product_and_more_rows_run_it_first() {
    for (swiglu, sum) in [(false, true), (true, true), (false, false)] {
        for m in [1, 3] {
            check(ElemType::F32, m, swiglu, sum, N);
            if common::gpu().caps().shader_f16 {
                check(ElemType::F16, m, swiglu, sum, N);
            }
        }
    }
}

/// Wider outputs take the GEMV's 4- and 8-lane forms (64- and 128-byte row segments) with the
/// norm folded in the same way; N off any band multiple.
#[test]
fn wide_outputs_fold_the_norm_into_the_wider_narrow_forms() {
    let f16 = common::gpu().caps().shader_f16;
    for (ty, n, form) in [
        (ElemType::F32, 72, "_c4_"),
        (ElemType::F16, 1160, "_c4_"),
        (ElemType::F16, 4104, "_c8_"),
        (ElemType::F32, 3004, "_c8_"),
    ] {
        if ty == ElemType::F16 && !f16 {
            continue;
        }
        for swiglu in [false, true] {
            let names = programs(ty, 1, swiglu, n);
            let folded = |p: &String| p.contains(form) && p.contains("_skiprms");
            assert!(names.iter().flatten().all(folded), "{ty} n={n}: {names:?}");
            assert_eq!(names.iter().flatten().all(|p| p.ends_with("_dual")), swiglu, "{ty} n={n}: {names:?}");
            check(ty, 1, swiglu, true, n);
        }
    }
    if f16 {
        let names = programs(ElemType::F16, 1, false, N);
        assert!(names[0][0].contains("_narrow") && names[0][0].ends_with("_skiprms"), "{names:?}");
    }
}

#[test]
fn one_row_is_one_dispatch_per_product_and_more_rows_two() {
    assert_eq!(dispatches(1, false), [1]);
    assert_eq!(dispatches(3, false), [2]);
    // SwiGLU: both products in one dispatch; more rows the norm, the up projection, the gate.
    assert_eq!(dispatches(1, true), [1]);
    assert_eq!(dispatches(3, true), [3]);
}

/// Where the norm does not fold (rows too short for the narrow GEMV), SwiGLU's products are
/// still one step after the norm's: the up projection into a scratch buffer, then the gate.
#[test]
fn swiglu_after_an_unfolded_norm_is_one_step_of_two_products() {
    let want: &[&str] = &["MatMul+MatMul+Sigmoid+Mul+Mul", "SkipSimplifiedLayerNormalization"];
    for m in [1, 3] {
        check_steps(ElemType::F32, (m, 256, N), true, true, want);
        if common::gpu().caps().shader_f16 {
            check_steps(ElemType::F16, (m, 256, 1000), true, false, want);
        }
    }
}

#[test]
fn norms_read_elsewhere_or_before_short_rows_are_not_folded() {
    let mut nodes = graph(ElemType::F32, 1, false, true, K, N);
    let h = val("h", ElemType::F32, &[1, 1, K]);
    nodes.push(node("Relu", 14, vec![Some(h)], vec![val("r", ElemType::F32, &[1, 1, K])], vec![]));
    let mut ops = step_ops(&nodes, inputs(false), &["y", "res", "r"]);
    ops.sort();
    assert_eq!(ops, ["MatMul", "Relu", "SkipSimplifiedLayerNormalization"]);
    // Rows shorter than the narrow GEMV's 512: the norm stays its own step.
    let mut ops = step_ops(&graph(ElemType::F32, 1, false, true, 256, N), inputs(false), &["y", "res"]);
    ops.sort();
    assert_eq!(ops, ["MatMul", "SkipSimplifiedLayerNormalization"]);
}
