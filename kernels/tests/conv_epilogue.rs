//! What a product's store absorbs beyond bias and Relu/Clip: a BatchNormalization folded into a
//! Conv's weights, HardSigmoid/HardSwish/LeakyRelu/SiLU (Conv and MatMul), a Conv's residual
//! Add. Each is one step, with the values of the unfused nodes in f64.

mod common;

use common::graph::{const_val, node, run_graph, val, T};
use ep_kernels::graph::{build_program, Attr, Constant, Node, Program};
use ep_kernels::ElemType;

const X: [u64; 4] = [2, 5, 11, 9];
const M: u64 = 7;

/// The tensors of Conv(3×3, pad 1) → BatchNormalization → Relu, random, in `ty`.
struct Block {
    ty: ElemType,
    x: T,
    consts: Vec<(String, T)>,
}

impl Block {
    fn new(ty: ElemType, seed: &str) -> Block {
        let mut rng = common::rng(seed);
        let mut t = |shape: &[u64], positive: bool| {
            let n = shape.iter().product::<u64>() as usize;
            let v: Vec<f32> =
                common::random_vec(&mut rng, n).iter().map(|&v| if positive { v.abs() + 0.5 } else { v }).collect();
            let v = common::round_f16(&v);
            if ty == ElemType::F16 {
                T::f16(shape, &v)
            } else {
                T::f32(shape, &v)
            }
        };
        let x = t(&X, false);
        let names = ["w", "b", "gamma", "beta", "mean", "var"];
        let shapes: [&[u64]; 6] = [&[M, X[1], 3, 3], &[M], &[M], &[M], &[M], &[M]];
        let consts =
            names.iter().zip(shapes).map(|(n, s)| (n.to_string(), t(s, *n == "var" || *n == "gamma"))).collect();
        Block { ty, x, consts }
    }

    fn c(&self, name: &str) -> &T {
        &self.consts.iter().find(|(n, _)| n == name).expect("a block constant").1
    }

    /// The three nodes; `var_input` makes the variance a graph input instead of a constant.
    fn nodes(&self, var_input: bool) -> Vec<Node> {
        let y = [X[0], M, X[2], X[3]];
        let cv = |n: &str| const_val(n, self.c(n));
        let mut conv = node(
            "Conv",
            11,
            vec![Some(val("x", self.ty, &X)), Some(cv("w")), Some(cv("b"))],
            vec![val("c", self.ty, &y)],
            vec![("pads", Attr::Ints(vec![1; 4]))],
        );
        conv.name = "conv".into();
        let var = if var_input { val("var", self.ty, &[M]) } else { cv("var") };
        let mut bn = node(
            "BatchNormalization",
            15,
            vec![Some(val("c", self.ty, &y)), Some(cv("gamma")), Some(cv("beta")), Some(cv("mean")), Some(var)],
            vec![val("n", self.ty, &y)],
            vec![("epsilon", Attr::Float(1e-3))],
        );
        bn.name = "bn".into();
        let mut relu = node("Relu", 14, vec![Some(val("n", self.ty, &y))], vec![val("y", self.ty, &y)], vec![]);
        relu.name = "relu".into();
        vec![conv, bn, relu]
    }

    fn constants(&self) -> Vec<Constant> {
        self.consts
            .iter()
            .map(|(n, t)| Constant { name: n.clone(), dtype: t.ty, shape: t.shape.clone(), data: t.data.clone() })
            .collect()
    }

    /// Conv, BatchNormalization and Relu in f64.
    fn reference(&self) -> Vec<f64> {
        let (x, w, b) = (self.x.values(), self.c("w").values(), self.c("b").values());
        let [g, be, mu, var] = ["gamma", "beta", "mean", "var"].map(|n| self.c(n).values());
        let [n, c, h, wd] = X.map(|d| d as usize);
        let m = M as usize;
        let mut out = Vec::with_capacity(n * m * h * wd);
        for (bi, oc, oy, ox) in
            (0..n).flat_map(|a| (0..m).flat_map(move |o| (0..h).flat_map(move |y| (0..wd).map(move |x| (a, o, y, x)))))
        {
            let mut acc = b[oc];
            for ic in 0..c {
                for (ky, kx) in (0..3).flat_map(|ky| (0..3).map(move |kx| (ky, kx))) {
                    let (iy, ix) = ((oy + ky) as i64 - 1, (ox + kx) as i64 - 1);
                    if iy >= 0 && ix >= 0 && (iy as usize) < h && (ix as usize) < wd {
                        let xi = ((bi * c + ic) * h + iy as usize) * wd + ix as usize;
                        acc += x[xi] * w[((oc * c + ic) * 3 + ky) * 3 + kx];
                    }
                }
            }
            let v = (acc - mu[oc]) / (var[oc] + 1e-3f32 as f64).sqrt() * g[oc] + be[oc];
            out.push(v.max(0.0));
        }
        out
    }
}

fn step_ops(p: &Program) -> Vec<String> {
    p.steps.iter().map(|s| s.ops.clone()).collect()
}

#[test]
fn batch_norm_folds_into_the_conv() {
    for ty in [ElemType::F32, ElemType::F16] {
        let block = Block::new(ty, "batch_norm_folds_into_the_conv");
        let nodes = block.nodes(false);
        let p = build_program(&nodes, &["x".into()], &["y".into()], block.constants()).unwrap();
        assert_eq!(step_ops(&p), ["Conv+BatchNormalization+Relu"]);
        // Only the folded weights and bias are uploaded.
        let names: Vec<&str> = p.constants.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["w::bn(bn)", "conv::bias::bn(bn)"]);
        let consts: Vec<(&str, &T)> = block.consts.iter().map(|(n, t)| (n.as_str(), t)).collect();
        let got = run_graph(&nodes, &[("x", &block.x)], &consts, &["y"]).unwrap();
        let want = block.reference();
        let scale = want.iter().fold(0f64, |a, v| a.max(v.abs()));
        let tol = if ty == ElemType::F16 { 2e-2 } else { 1e-4 };
        for (i, (g, w)) in got[0].values().iter().zip(&want).enumerate() {
            assert!((g - w).abs() <= tol * scale, "{ty} element {i}: {g} vs {w}");
        }
    }
}

#[test]
fn batch_norm_with_a_runtime_operand_stays_apart() {
    let block = Block::new(ElemType::F32, "batch_norm_with_a_runtime_operand");
    let nodes = block.nodes(true);
    let consts = block.constants().into_iter().filter(|c| c.name != "var").collect();
    let p = build_program(&nodes, &["x".into(), "var".into()], &["y".into()], consts).unwrap();
    assert_eq!(step_ops(&p), ["Conv", "BatchNormalization", "Relu"]);
}

#[test]
fn a_conv_output_read_elsewhere_keeps_its_batch_norm() {
    let block = Block::new(ElemType::F32, "a_conv_output_read_elsewhere");
    let nodes = block.nodes(false);
    let p = build_program(&nodes, &["x".into()], &["y".into(), "c".into()], block.constants()).unwrap();
    assert_eq!(step_ops(&p), ["Conv", "BatchNormalization", "Relu"]);
    assert_eq!(p.constants.len(), 6);
}

/// Conv2d in f64 over NCHW `x` and `[m, c/group, k, k]` weights, stride 1, padding `pad`.
fn conv_reference(x: &T, w: &T, b: &[f64], group: usize, pad: usize) -> Vec<f64> {
    let [n, c, h, wd] = [x.shape[0], x.shape[1], x.shape[2], x.shape[3]].map(|d| d as usize);
    let (m, cg, k) = (w.shape[0] as usize, w.shape[1] as usize, w.shape[2] as usize);
    let (oh, ow) = (h + 2 * pad + 1 - k, wd + 2 * pad + 1 - k);
    let (xv, wv) = (x.values(), w.values());
    let mut out = vec![0.0; n * m * oh * ow];
    for (i, o) in out.iter_mut().enumerate() {
        let (ox, oy, oc, bi) = (i % ow, i / ow % oh, i / (ow * oh) % m, i / (ow * oh * m));
        let g = oc / (m / group);
        let mut acc = b[oc];
        for (ic, ky, kx) in (0..cg).flat_map(|ic| (0..k).flat_map(move |ky| (0..k).map(move |kx| (ic, ky, kx)))) {
            let (iy, ix) = ((oy + ky) as i64 - pad as i64, (ox + kx) as i64 - pad as i64);
            if iy >= 0 && ix >= 0 && (iy as usize) < h && (ix as usize) < wd {
                let xi = ((bi * c + g * cg + ic) * h + iy as usize) * wd + ix as usize;
                acc += xv[xi] * wv[((oc * cg + ic) * k + ky) * k + kx];
            }
        }
        *o = acc;
    }
    let _ = c;
    out
}

/// The activations a conv's `_xact` store applies: the nodes after the conv output `c` (ending
/// in `y`), the fused step's ops and the function in f64.
type Act = (&'static str, fn(&[u64], ElemType) -> Vec<Node>, fn(f64) -> f64);

fn unary_node(op: &str, x: &str, y: &str, shape: &[u64], attrs: Vec<(&str, Attr)>) -> Node {
    let mut n = node(op, 14, vec![Some(val(x, ElemType::F32, shape))], vec![val(y, ElemType::F32, shape)], attrs);
    n.name = y.into();
    n
}

const ACTIVATIONS: &[Act] = &[
    (
        "Conv+HardSigmoid",
        |s, _| {
            vec![unary_node("HardSigmoid", "c", "y", s, vec![("alpha", Attr::Float(0.3)), ("beta", Attr::Float(0.4))])]
        },
        |x| (0.3f32 as f64 * x + 0.4f32 as f64).clamp(0.0, 1.0),
    ),
    (
        "Conv+HardSwish",
        |s, _| vec![unary_node("HardSwish", "c", "y", s, vec![])],
        |x| x * (x / 6.0 + 0.5).clamp(0.0, 1.0),
    ),
    (
        "Conv+LeakyRelu",
        |s, _| vec![unary_node("LeakyRelu", "c", "y", s, vec![("alpha", Attr::Float(0.1))])],
        |x| if x < 0.0 { 0.1f32 as f64 * x } else { x },
    ),
    (
        "Conv+Sigmoid+Mul",
        |s, ty| {
            let sig = unary_node("Sigmoid", "c", "s", s, vec![]);
            let mut mul =
                node("Mul", 14, vec![Some(val("s", ty, s)), Some(val("c", ty, s))], vec![val("y", ty, s)], vec![]);
            mul.name = "silu".into();
            vec![sig, mul]
        },
        |x| x / (1.0 + (-x).exp()),
    ),
];

#[test]
fn extended_activations_run_in_the_conv_store() {
    // A 3×3 conv (im2col + GEMM), a depthwise one (the direct kernel) and a 1×1 (GEMM on X).
    let cases: [(&[u64], &[u64], usize, usize); 3] = [
        (&[2, 5, 11, 9], &[7, 5, 3, 3], 1, 1),
        (&[1, 6, 10, 7], &[6, 1, 3, 3], 6, 1),
        (&[2, 5, 9, 7], &[9, 5, 1, 1], 1, 0),
    ];
    let mut rng = common::rng("extended_activations_run_in_the_conv_store");
    for &(xs, ws, group, pad) in &cases {
        let mut t =
            |shape: &[u64]| T::f32(shape, &common::random_vec(&mut rng, shape.iter().product::<u64>() as usize));
        let (x, w, b) = (t(xs), t(ws), t(&ws[..1]));
        let pre = conv_reference(&x, &w, &b.values(), group, pad);
        let ys = [xs[0], ws[0], xs[2] + 2 * pad as u64 + 1 - ws[2], xs[3] + 2 * pad as u64 + 1 - ws[3]];
        for (ops, after, f) in ACTIVATIONS {
            let mut conv = node(
                "Conv",
                11,
                vec![Some(val("x", ElemType::F32, xs)), Some(const_val("w", &w)), Some(const_val("b", &b))],
                vec![val("c", ElemType::F32, &ys)],
                vec![("pads", Attr::Ints(vec![pad as i64; 4])), ("group", Attr::Int(group as i64))],
            );
            conv.name = "conv".into();
            let nodes: Vec<Node> = std::iter::once(conv).chain(after(&ys, ElemType::F32)).collect();
            let consts = [("w".to_string(), w.clone()), ("b".to_string(), b.clone())];
            let constants = consts.iter().map(|(n, t)| Constant {
                name: n.clone(),
                dtype: t.ty,
                shape: t.shape.clone(),
                data: t.data.clone(),
            });
            let p = build_program(&nodes, &["x".into()], &["y".into()], constants.collect()).unwrap();
            assert_eq!(step_ops(&p), [*ops], "{xs:?}");
            let refs: Vec<(&str, &T)> = consts.iter().map(|(n, t)| (n.as_str(), t)).collect();
            let got = run_graph(&nodes, &[("x", &x)], &refs, &["y"]).unwrap();
            for (i, (g, v)) in got[0].values().iter().zip(&pre).enumerate() {
                let want = f(*v);
                assert!((g - want).abs() <= 1e-4 * (1.0 + want.abs()), "{ops} {xs:?} element {i}: {g} vs {want}");
            }
        }
    }
}

#[test]
fn silu_whose_input_is_read_elsewhere_stays_apart() {
    // The conv output leaves the partition: Sigmoid and Mul cannot overwrite it in the store.
    let w = T::f32(&[4, 3, 1, 1], &[0.5; 12]);
    let s: &[u64] = &[1, 4, 5, 5];
    let mut conv = node(
        "Conv",
        11,
        vec![Some(val("x", ElemType::F32, &[1, 3, 5, 5])), Some(const_val("w", &w))],
        vec![val("c", ElemType::F32, s)],
        vec![],
    );
    conv.name = "conv".into();
    let nodes: Vec<Node> = std::iter::once(conv).chain((ACTIVATIONS[3].1)(s, ElemType::F32)).collect();
    let constants = vec![Constant { name: "w".into(), dtype: w.ty, shape: w.shape.clone(), data: w.data.clone() }];
    let p = build_program(&nodes, &["x".into()], &["y".into(), "c".into()], constants).unwrap();
    assert_eq!(step_ops(&p), ["Conv", "Sigmoid+Mul"]);
}

#[test]
fn a_residual_add_runs_in_the_conv_store() {
    let cases: [(&[u64], &[u64], usize, usize); 3] = [
        (&[2, 5, 11, 9], &[7, 5, 3, 3], 1, 1),
        (&[1, 6, 10, 7], &[6, 1, 3, 3], 6, 1),
        (&[2, 5, 9, 7], &[9, 5, 1, 1], 1, 0),
    ];
    let mut rng = common::rng("a_residual_add_runs_in_the_conv_store");
    for &(xs, ws, group, pad) in &cases {
        let ys = [xs[0], ws[0], xs[2] + 2 * pad as u64 + 1 - ws[2], xs[3] + 2 * pad as u64 + 1 - ws[3]];
        let mut t =
            |shape: &[u64]| T::f32(shape, &common::random_vec(&mut rng, shape.iter().product::<u64>() as usize));
        let (x, w, b, r) = (t(xs), t(ws), t(&ws[..1]), t(&ys));
        let pre = conv_reference(&x, &w, &b.values(), group, pad);
        // ResNet's order (Add, then Relu) and the other (Relu, then Add, the residual second operand).
        for after in [false, true] {
            let f32v = |n: &str| val(n, ElemType::F32, &ys);
            let mut conv = node(
                "Conv",
                11,
                vec![Some(val("x", ElemType::F32, xs)), Some(const_val("w", &w)), Some(const_val("b", &b))],
                vec![f32v("c")],
                vec![("pads", Attr::Ints(vec![pad as i64; 4])), ("group", Attr::Int(group as i64))],
            );
            conv.name = "conv".into();
            let (add_in, add_out, relu_in, relu_out) = if after { ("a", "y", "c", "a") } else { ("c", "a", "a", "y") };
            let add_inputs = if after { [f32v("r"), f32v(add_in)] } else { [f32v(add_in), f32v("r")] };
            let mut add = node("Add", 14, add_inputs.into_iter().map(Some).collect(), vec![f32v(add_out)], vec![]);
            add.name = "add".into();
            let relu = unary_node("Relu", relu_in, relu_out, &ys, vec![]);
            let nodes = if after { vec![conv, relu, add] } else { vec![conv, add, relu] };
            let consts = [("w".to_string(), w.clone()), ("b".to_string(), b.clone())];
            let constants = consts.iter().map(|(n, t)| Constant {
                name: n.clone(),
                dtype: t.ty,
                shape: t.shape.clone(),
                data: t.data.clone(),
            });
            let p = build_program(&nodes, &["x".into(), "r".into()], &["y".into()], constants.collect()).unwrap();
            assert_eq!(step_ops(&p), [if after { "Conv+Relu+Add" } else { "Conv+Add+Relu" }], "{xs:?}");
            let refs: Vec<(&str, &T)> = consts.iter().map(|(n, t)| (n.as_str(), t)).collect();
            let got = run_graph(&nodes, &[("x", &x), ("r", &r)], &refs, &["y"]).unwrap();
            for (i, ((g, v), rv)) in got[0].values().iter().zip(&pre).zip(r.values()).enumerate() {
                let want = if after { v.max(0.0) + rv } else { (v + rv).max(0.0) };
                assert!(
                    (g - want).abs() <= 1e-4 * (1.0 + want.abs()),
                    "after={after} {xs:?} element {i}: {g} vs {want}"
                );
            }
        }
    }
}

#[test]
fn an_add_of_a_broadcast_operand_is_no_residual() {
    // A per-channel [1, 4, 1, 1] operand does not have the output's shape: the Add stays apart.
    let w = T::f32(&[4, 3, 1, 1], &[0.5; 12]);
    let s: &[u64] = &[1, 4, 5, 5];
    let mut conv = node(
        "Conv",
        11,
        vec![Some(val("x", ElemType::F32, &[1, 3, 5, 5])), Some(const_val("w", &w))],
        vec![val("c", ElemType::F32, s)],
        vec![],
    );
    conv.name = "conv".into();
    let mut add = node(
        "Add",
        14,
        vec![Some(val("c", ElemType::F32, s)), Some(val("r", ElemType::F32, &[1, 4, 1, 1]))],
        vec![val("y", ElemType::F32, s)],
        vec![],
    );
    add.name = "add".into();
    let constants = vec![Constant { name: "w".into(), dtype: w.ty, shape: w.shape.clone(), data: w.data.clone() }];
    let p = build_program(&[conv, add], &["x".into(), "r".into()], &["y".into()], constants).unwrap();
    assert_eq!(step_ops(&p), ["Conv", "Add"]);
}

#[test]
fn matmul_applies_the_extended_activations_too() {
    let (m, k, n) = (5u64, 9u64, 13u64);
    let mut rng = common::rng("matmul_applies_the_extended_activations_too");
    let mut t = |shape: &[u64]| T::f32(shape, &common::random_vec(&mut rng, shape.iter().product::<u64>() as usize));
    let (a, b) = (t(&[m, k]), t(&[k, n]));
    let (av, bv) = (a.values(), b.values());
    let pre: Vec<f64> = (0..(m * n) as usize)
        .map(|i| {
            (0..k as usize).map(|j| av[i / n as usize * k as usize + j] * bv[j * n as usize + i % n as usize]).sum()
        })
        .collect();
    for (ops, after, f) in ACTIVATIONS {
        let mut mm = node(
            "MatMul",
            13,
            vec![Some(val("a", ElemType::F32, &[m, k])), Some(val("b", ElemType::F32, &[k, n]))],
            vec![val("c", ElemType::F32, &[m, n])],
            vec![],
        );
        mm.name = "mm".into();
        let nodes: Vec<Node> = std::iter::once(mm).chain(after(&[m, n], ElemType::F32)).collect();
        let p = build_program(&nodes, &["a".into(), "b".into()], &["y".into()], vec![]).unwrap();
        assert_eq!(step_ops(&p), [ops.replace("Conv", "MatMul")]);
        let got = run_graph(&nodes, &[("a", &a), ("b", &b)], &[], &["y"]).unwrap();
        for (i, (g, v)) in got[0].values().iter().zip(&pre).enumerate() {
            let want = f(*v);
            assert!((g - want).abs() <= 1e-4 * (1.0 + want.abs()), "{ops} element {i}: {g} vs {want}");
        }
    }
}
