//! A SkipSimplifiedLayerNormalization folded into the MatMulNBits step that reads its output
//! (onnxruntime-genai's decode: the norm before the QKV projection, and before SwiGLU's gate and
//! up projections). One row runs one dispatch, which makes A from the norm's input, skip and γ
//! and stores their sum; more rows run the norm into a scratch buffer first. Against float64 on
//! fresh random data, N off any tile multiple, outputs checked beside the sum.

mod common;

use common::graph::{node, run_graph, step_ops, val, T};
use common::norm_ref::{check_row, skip_norm_node, NormRow};
use ep_kernels::graph::{build_program, Attr, ExecOptions, Node};
use ep_kernels::ElemType;
use rand::Rng;

const K: u64 = 96;
const N: u64 = 67;
const BLOCK: u64 = 32;
const EPS: f32 = 1e-5;

fn t(ty: ElemType, shape: &[u64], v: &[f32]) -> T {
    if ty == ElemType::F16 {
        T::f16(shape, v)
    } else {
        T::f32(shape, v)
    }
}

/// Random 4-bit weights `[N, K / BLOCK, BLOCK / 2]` and their scales; the dequantised `[N, K]`.
fn weights(rng: &mut impl Rng, ty: ElemType) -> (T, T, Vec<f64>) {
    let q: Vec<u8> = (0..N * K).map(|_| rng.random_range(0..16u8)).collect();
    let packed: Vec<u8> = q.chunks(2).map(|p| p[0] | (p[1] << 4)).collect();
    let blocks = K / BLOCK;
    let s: Vec<f32> = (0..N * blocks).map(|_| rng.random_range(0.01f32..0.05)).collect();
    let scales = t(ty, &[N * blocks], &s);
    let sv = scales.values();
    let w = (0..N * K).map(|i| (f64::from(q[i as usize]) - 8.0) * sv[(i / BLOCK) as usize]).collect();
    (T::u8(&[N, blocks, BLOCK / 2], &packed), scales, w)
}

fn nbits(ty: ElemType, m: u64, name: &str) -> Node {
    nbits_n(ty, m, name, N)
}

/// A MatMulNBits of `n` columns.
fn nbits_n(ty: ElemType, m: u64, name: &str, n: u64) -> Node {
    let mut b = val(&format!("{name}.b"), ElemType::U8, &[n, K / BLOCK, BLOCK / 2]);
    let mut s = val(&format!("{name}.s"), ty, &[n * K / BLOCK]);
    (b.constant, s.constant) = (true, true);
    let attrs = vec![
        ("K", Attr::Int(K as i64)),
        ("N", Attr::Int(n as i64)),
        ("bits", Attr::Int(4)),
        ("block_size", Attr::Int(BLOCK as i64)),
    ];
    let mut n = node(
        "MatMulNBits",
        1,
        vec![Some(val("h", ty, &[1, m, K])), Some(b), Some(s)],
        vec![val(name, ty, &[1, m, n])],
        attrs,
    );
    n.domain = "com.microsoft".into();
    n
}

/// The norm (`h`, and the sum `res` when `sum`), then one product `y` or SwiGLU's two.
fn graph(ty: ElemType, m: u64, swiglu: bool, sum: bool) -> Vec<Node> {
    let norm = skip_norm_node(ty, m, K, sum, EPS);
    if !swiglu {
        return vec![norm, nbits(ty, m, "y")];
    }
    let o = [1, m, N];
    vec![
        norm,
        nbits(ty, m, "g"),
        node("Sigmoid", 13, vec![Some(val("g", ty, &o))], vec![val("sg", ty, &o)], vec![]),
        node("Mul", 14, vec![Some(val("g", ty, &o)), Some(val("sg", ty, &o))], vec![val("silu", ty, &o)], vec![]),
        nbits(ty, m, "u"),
        node("Mul", 14, vec![Some(val("silu", ty, &o)), Some(val("u", ty, &o))], vec![val("y", ty, &o)], vec![]),
    ]
}

/// Dispatches of each step at the graph's shapes, on the test adapter.
fn dispatches(nodes: &[Node], inputs: &[&str], outputs: &[&str], shapes: &[&[u64]]) -> Vec<usize> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let program = build_program(nodes, &s(inputs), &s(outputs), vec![]).unwrap();
    let caps = common::gpu().caps().clone();
    program
        .steps
        .iter()
        .map(|step| {
            let ins: Vec<Option<&[u64]>> =
                step.inputs.iter().enumerate().map(|(i, o)| o.as_ref().and_then(|_| shapes.get(i).copied())).collect();
            step.kernel.plan(&ins, &caps, &ExecOptions::default()).unwrap().map_or(0, |p| p.dispatches.len())
        })
        .collect()
}

fn check(ty: ElemType, m: u64, swiglu: bool, sum: bool) {
    let what = format!("{ty} m={m} swiglu={swiglu} sum={sum}");
    let nodes = graph(ty, m, swiglu, sum);
    let mut outputs = vec!["y"];
    if sum {
        outputs.push("res");
    }
    let want_ops = if swiglu {
        "SkipSimplifiedLayerNormalization+MatMulNBits+MatMulNBits+Sigmoid+Mul+Mul"
    } else {
        "SkipSimplifiedLayerNormalization+MatMulNBits"
    };
    let inputs: &[&str] = if swiglu {
        &["x", "skip", "gamma", "g.b", "g.s", "u.b", "u.s"]
    } else {
        &["x", "skip", "gamma", "y.b", "y.s"]
    };
    assert_eq!(step_ops(&nodes, inputs, &outputs), [want_ops], "{what}");
    let mut rng = common::rng(&format!("fusion_nbits_norm {what}"));
    let mut rand = |n: u64, lo: f32, hi: f32| (0..n).map(|_| rng.random_range(lo..hi)).collect::<Vec<f32>>();
    let (x, skip, gamma) = (
        t(ty, &[1, m, K], &rand(m * K, -2.0, 2.0)),
        t(ty, &[1, m, K], &rand(m * K, -2.0, 2.0)),
        t(ty, &[K], &rand(K, 0.5, 1.5)),
    );
    let mut rng = common::rng(&format!("fusion_nbits_norm weights {what}"));
    let ((gb, gs, gw), (ub, us, uw)) = (weights(&mut rng, ty), weights(&mut rng, ty));
    let consts: Vec<(&str, &T)> = if swiglu {
        vec![("gamma", &gamma), ("g.b", &gb), ("g.s", &gs), ("u.b", &ub), ("u.s", &us)]
    } else {
        vec![("gamma", &gamma), ("y.b", &gb), ("y.s", &gs)]
    };
    let got = run_graph(&nodes, &[("x", &x), ("skip", &skip)], &consts, &outputs).unwrap();
    let (xv, sv, gv) = (x.values(), skip.values(), gamma.values());
    let tol = if ty == ElemType::F16 { 2e-2 } else { 1e-4 };
    let k = K as usize;
    // Weights `[N, K]`, one column per row.
    let (gate, up) = (|i: usize, col: usize| gw[col * k + i], |i: usize, col: usize| uw[col * k + i]);
    let (y, res) = (got[0].values(), got.get(1).map(T::values));
    for row in 0..m as usize {
        let at = row * k..(row + 1) * k;
        let norm = NormRow { x: &xv[at.clone()], skip: &sv[at], gamma: &gv, eps: EPS };
        let up: Option<&dyn Fn(usize, usize) -> f64> = if swiglu { Some(&up) } else { None };
        check_row(&norm, &gate, up, (row, N as usize), &y, res.as_deref(), tol, &what);
    }
}

#[test]
fn one_row_folds_the_norm_into_the_product_and_more_rows_run_it_first() {
    for (swiglu, sum) in [(false, true), (true, true), (false, false)] {
        for m in [1, 3] {
            check(ElemType::F32, m, swiglu, sum);
            if common::gpu().caps().shader_f16 {
                check(ElemType::F16, m, swiglu, sum);
            }
        }
    }
}

#[test]
fn one_row_is_one_dispatch_and_more_rows_two() {
    let x: &[u64] = &[1, 1, K];
    let nodes = graph(ElemType::F32, 1, false, true);
    let shapes: [&[u64]; 11] = [x, &[N, K / BLOCK, BLOCK / 2], &[N * K / BLOCK], &[], &[], &[], &[], &[], &[], x, &[K]];
    assert_eq!(dispatches(&nodes, &["x", "skip", "gamma", "y.b", "y.s"], &["y", "res"], &shapes), [1]);
    let x3: &[u64] = &[1, 3, K];
    let nodes = graph(ElemType::F32, 3, false, true);
    let mut shapes3 = shapes;
    (shapes3[0], shapes3[9]) = (x3, x3);
    assert_eq!(dispatches(&nodes, &["x", "skip", "gamma", "y.b", "y.s"], &["y", "res"], &shapes3), [2]);
}

#[test]
fn a_norm_output_read_elsewhere_is_not_folded() {
    let mut nodes = graph(ElemType::F32, 1, false, true);
    let h = val("h", ElemType::F32, &[1, 1, K]);
    nodes.push(node("Relu", 14, vec![Some(h)], vec![val("r", ElemType::F32, &[1, 1, K])], vec![]));
    let mut ops = step_ops(&nodes, &["x", "skip", "gamma", "y.b", "y.s"], &["y", "res", "r"]);
    ops.sort();
    assert_eq!(ops, ["MatMulNBits", "Relu", "SkipSimplifiedLayerNormalization"]);
}

/// Weights past 64 MiB (an LM head's) keep the norm in a step of its own: thousands of workgroups
/// would each read its row again. One under the limit still folds it.
#[test]
fn a_product_of_large_weights_keeps_the_norm_apart() {
    let per_column = K / 2;
    let inputs = ["x", "skip", "gamma", "y.b", "y.s"];
    for (n, folded) in [((64 << 20) / per_column + 1, false), ((64 << 20) / per_column, true)] {
        let nodes = vec![skip_norm_node(ElemType::F32, 1, K, true, EPS), nbits_n(ElemType::F32, 1, "y", n)];
        let mut ops = step_ops(&nodes, &inputs, &["y", "res"]);
        ops.sort();
        let want: &[&str] = if folded {
            &["SkipSimplifiedLayerNormalization+MatMulNBits"]
        } else {
            &["MatMulNBits", "SkipSimplifiedLayerNormalization"]
        };
        assert_eq!(ops, want, "N = {n}");
    }
}
