//! What a Conv's store absorbs beyond bias and Relu/Clip: a BatchNormalization folded into its
//! weights (one step instead of two, the same values as Conv then BatchNormalization in f64).

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
