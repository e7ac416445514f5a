//! The fusion rule on plain partitions: which nodes share a kernel, and that a value another
//! node (or the caller) reads is never absorbed.

mod common;

use common::graph::{const_val, node, val, T};
use ep_kernels::graph::Attr;
use ep_kernels::graph::{build_program, Node, Program};
use ep_kernels::ElemType;
use ep_kernels::ElemType::F32;

fn mm(name: &str, a: &str, b: &str, out: &str, shape: &[u64]) -> Node {
    let mut n = node(
        "MatMul",
        13,
        vec![Some(val(a, F32, &[4, 8])), Some(val(b, F32, &[8, 8]))],
        vec![val(out, F32, shape)],
        vec![],
    );
    n.name = name.into();
    n
}

fn unary(op: &str, x: &str, out: &str) -> Node {
    let mut n = node(op, 14, vec![Some(val(x, F32, &[4, 8]))], vec![val(out, F32, &[4, 8])], vec![]);
    n.name = out.into();
    n
}

fn binary(op: &str, a: &str, b: &str, b_shape: &[u64], out: &str) -> Node {
    let mut n = node(
        op,
        14,
        vec![Some(val(a, F32, &[4, 8])), Some(val(b, F32, b_shape))],
        vec![val(out, F32, &[4, 8])],
        vec![],
    );
    n.name = out.into();
    n
}

fn program(nodes: &[Node], inputs: &[&str], outputs: &[&str]) -> Program {
    let inputs: Vec<String> = inputs.iter().map(|s| s.to_string()).collect();
    let outputs: Vec<String> = outputs.iter().map(|s| s.to_string()).collect();
    build_program(nodes, &inputs, &outputs, vec![]).unwrap_or_else(|e| panic!("{e}"))
}

fn step_ops(p: &Program) -> Vec<String> {
    p.steps.iter().map(|s| s.ops.clone()).collect()
}

#[test]
fn bias_and_activation_fold_into_the_product() {
    let nodes = [mm("m", "x", "w", "m", &[4, 8]), binary("Add", "m", "b", &[8], "a"), unary("Relu", "a", "y")];
    let p = program(&nodes, &["x", "w", "b"], &["y"]);
    assert_eq!(step_ops(&p), ["MatMul+Add+Relu"]);
}

#[test]
fn a_value_read_elsewhere_is_not_absorbed() {
    // `m` leaves the partition, so Relu cannot overwrite it in the product's store.
    let nodes = [mm("m", "x", "w", "m", &[4, 8]), unary("Relu", "m", "y")];
    let p = program(&nodes, &["x", "w"], &["y", "m"]);
    assert_eq!(step_ops(&p), ["MatMul", "Relu"]);
    // A second reader inside the partition keeps it too.
    let nodes = [mm("m", "x", "w", "m", &[4, 8]), unary("Relu", "m", "r"), binary("Add", "m", "r", &[4, 8], "y")];
    let p = program(&nodes, &["x", "w"], &["y"]);
    assert_eq!(step_ops(&p), ["MatMul", "Relu+Add"]);
}

#[test]
fn an_add_that_broadcasts_the_output_is_not_a_bias() {
    // [4,8] + [2,4,8] grows the output: it runs as its own kernel.
    let mut add = binary("Add", "m", "b", &[2, 4, 8], "y");
    add.outputs[0] = Some(val("y", F32, &[2, 4, 8]));
    let nodes = [mm("m", "x", "w", "m", &[4, 8]), add];
    let p = program(&nodes, &["x", "w", "b"], &["y"]);
    assert_eq!(step_ops(&p), ["MatMul", "Add"]);
}

/// torch's erf GELU of `x` ([4, 8] f32) as `y`: `Div(√2) → Erf → Add(1) → Mul(x) → Mul(0.5)`,
/// or with the 0.5 applied to x first (`half_first`); its constants.
fn erf_gelu(x: &str, half_first: bool) -> (Vec<Node>, Vec<ep_kernels::graph::Constant>) {
    let c = |name: &str, v: f32| const_val(name, &T::f32(&[], &[v]));
    let v = |name: &str| Some(val(name, F32, &[4, 8]));
    let named = |mut n: Node, name: &str| {
        n.name = name.into();
        n
    };
    let div = named(
        node("Div", 14, vec![v(x), Some(c("sqrt2", std::f32::consts::SQRT_2))], vec![val("d", F32, &[4, 8])], vec![]),
        "div",
    );
    let erf = unary("Erf", "d", "e");
    let add = named(node("Add", 14, vec![v("e"), Some(c("one", 1.0))], vec![val("a", F32, &[4, 8])], vec![]), "add");
    let half = |input: &str, out: &str| {
        named(node("Mul", 14, vec![v(input), Some(c("half", 0.5))], vec![val(out, F32, &[4, 8])], vec![]), "half")
    };
    let nodes = if half_first {
        vec![div, erf, add, half(x, "h"), binary("Mul", "a", "h", &[4, 8], "y")]
    } else {
        vec![div, erf, add, binary("Mul", x, "a", &[4, 8], "m"), half("m", "y")]
    };
    let consts = ["sqrt2", "one", "half"]
        .iter()
        .zip([std::f32::consts::SQRT_2, 1.0, 0.5])
        .map(|(n, v)| ep_kernels::graph::Constant {
            name: n.to_string(),
            dtype: F32,
            shape: vec![],
            data: v.to_le_bytes().to_vec(),
        })
        .collect();
    (nodes, consts)
}

#[test]
fn erf_gelu_is_one_kernel() {
    let (nodes, consts) = erf_gelu("x", false);
    let p = build_program(&nodes, &["x".to_string()], &["y".to_string()], consts).unwrap();
    assert_eq!(step_ops(&p), ["Div+Erf+Add+Mul+Mul"]);
}

#[test]
fn erf_gelu_after_a_product_runs_in_its_store() {
    for half_first in [false, true] {
        let (gelu, consts) = erf_gelu("x", half_first);
        let nodes: Vec<Node> = [mm("mm", "i", "w", "x", &[4, 8])].into_iter().chain(gelu).collect();
        let inputs = ["i".to_string(), "w".to_string()];
        let p = build_program(&nodes, &inputs, &["y".to_string()], consts).unwrap();
        assert_eq!(step_ops(&p), ["MatMul+Div+Erf+Add+Mul+Mul"], "half first: {half_first}");
    }
    // Through a Reshape, as ORT's MatMulAddFusion leaves a 3-D Linear (the Reshape stays a
    // view of the product's output).
    let (gelu, consts) = erf_gelu("x", false);
    let mut reshape = node(
        "Reshape",
        14,
        vec![Some(val("r", F32, &[32])), Some(const_val("shape", &T::i64(&[2], &[4, 8])))],
        vec![val("x", F32, &[4, 8])],
        vec![],
    );
    reshape.name = "reshape".into();
    let nodes: Vec<Node> = [mm("mm", "i", "w", "r", &[32]), reshape].into_iter().chain(gelu).collect();
    let inputs = ["i".to_string(), "w".to_string()];
    let p = build_program(&nodes, &inputs, &["y".to_string()], consts).unwrap();
    assert!(step_ops(&p).iter().any(|s| s == "MatMul+Div+Erf+Add+Mul+Mul"), "{:?}", step_ops(&p));
    // The product's output also leaves the partition: the GELU stays its own kernel.
    let (gelu, consts) = erf_gelu("x", false);
    let nodes: Vec<Node> = [mm("mm", "i", "w", "x", &[4, 8])].into_iter().chain(gelu).collect();
    let inputs = ["i".to_string(), "w".to_string()];
    let p = build_program(&nodes, &inputs, &["y".to_string(), "x".to_string()], consts).unwrap();
    assert_eq!(step_ops(&p), ["MatMul", "Div+Erf+Add+Mul+Mul"]);
}

/// `x` normalised over its last axis the way exporters decompose LayerNorm (opset 17 ReduceMean
/// with an `axes` attribute), with γ and β; `rms` builds the RMSNorm form instead.
fn decomposed_norm(rms: bool, d: u64) -> (Vec<Node>, Vec<(String, T)>) {
    use ep_kernels::graph::Attr;
    let s = [3, d];
    let v = |n: &str| val(n, F32, &s);
    let row = |n: &str| val(n, F32, &[3, 1]);
    let c = |n: &str, x: f32| const_val(n, &T::f32(&[], &[x]));
    let mean = |x: &str, out: &str| {
        node("ReduceMean", 13, vec![Some(v(x))], vec![row(out)], vec![("axes", Attr::Ints(vec![-1]))])
    };
    let bin = |op: &str, a: ValueInfoPair, b: ValueInfoPair, out: ep_kernels::graph::ValueInfo| {
        let mut n = node(op, 14, vec![Some(a), Some(b)], vec![out.clone()], vec![]);
        n.name = out.name.clone();
        n
    };
    type ValueInfoPair = ep_kernels::graph::ValueInfo;
    let gamma = T::f32(&[d], &(0..d).map(|i| 0.5 + i as f32 / d as f32).collect::<Vec<_>>());
    let beta = T::f32(&[d], &(0..d).map(|i| (i as f32 * 0.37).sin()).collect::<Vec<_>>());
    let mut nodes = Vec::new();
    let centred = if rms {
        "x"
    } else {
        nodes.push(mean("x", "mu"));
        nodes.push(bin("Sub", v("x"), row("mu"), v("d")));
        "d"
    };
    nodes.push(bin("Pow", v(centred), c("two", 2.0), v("sq")));
    let mut m2 = mean("sq", "var");
    m2.name = "var".into();
    nodes.push(m2);
    nodes.push(bin("Add", row("var"), c("eps", 1e-5), row("ve")));
    let mut sqrt = node("Sqrt", 13, vec![Some(row("ve"))], vec![row("sd")], vec![]);
    sqrt.name = "sd".into();
    nodes.push(sqrt);
    nodes.push(bin("Div", v(centred), row("sd"), v("n")));
    nodes.push(bin("Mul", v("n"), const_val("gamma", &gamma), v("g")));
    let mut consts = vec![
        ("two".to_string(), T::f32(&[], &[2.0])),
        ("eps".to_string(), T::f32(&[], &[1e-5])),
        ("gamma".to_string(), gamma),
    ];
    if !rms {
        nodes.push(bin("Add", v("g"), const_val("beta", &beta), v("y")));
        consts.push(("beta".to_string(), beta));
    }
    (nodes, consts)
}

fn norm_reference(x: &[f32], d: usize, rms: bool, gamma: &[f64], beta: Option<&[f64]>) -> Vec<f64> {
    x.chunks(d)
        .flat_map(|row| {
            let n = d as f64;
            let mean = if rms { 0.0 } else { row.iter().map(|&v| v as f64).sum::<f64>() / n };
            let var = row.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n;
            let inv = 1.0 / (var + 1e-5f32 as f64).sqrt();
            row.iter()
                .enumerate()
                .map(|(i, &v)| (v as f64 - mean) * inv * gamma[i] + beta.map_or(0.0, |b| b[i]))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn decomposed_layer_norm_and_rms_norm_are_one_kernel() {
    let d = 37u64;
    for rms in [false, true] {
        let (nodes, consts) = decomposed_norm(rms, d);
        let out = if rms { "g" } else { "y" };
        let constants: Vec<_> = consts
            .iter()
            .map(|(n, t)| ep_kernels::graph::Constant {
                name: n.clone(),
                dtype: t.ty,
                shape: t.shape.clone(),
                data: t.data.clone(),
            })
            .collect();
        let p = build_program(&nodes, &["x".to_string()], &[out.to_string()], constants).unwrap();
        let want_op = if rms { "RMSNormalization(fused)" } else { "LayerNormalization(fused)" };
        assert_eq!(step_ops(&p), [want_op]);
        let mut rng = common::rng("decomposed_norm");
        let x = common::random_vec(&mut rng, 3 * d as usize);
        let xt = T::f32(&[3, d], &x);
        let const_refs: Vec<(&str, &T)> = consts.iter().map(|(n, t)| (n.as_str(), t)).collect();
        let got = common::graph::run_graph(&nodes, &[("x", &xt)], &const_refs, &[out]).unwrap();
        let gamma = consts[2].1.values();
        let beta = (!rms).then(|| consts[3].1.values());
        let want = norm_reference(&x, d as usize, rms, &gamma, beta.as_deref());
        for (g, w) in got[0].values().iter().zip(&want) {
            assert!((g - w).abs() <= 1e-4 * (1.0 + w.abs()), "rms={rms}: {g} vs {w}");
        }
    }
}

#[test]
fn a_constant_scalar_factor_folds_into_alpha() {
    let c = |name: &str, v: f32| const_val(name, &T::f32(&[], &[v]));
    let mut scale =
        node("Mul", 14, vec![Some(val("a", F32, &[4, 8])), Some(c("s", 0.125))], vec![val("y", F32, &[4, 8])], vec![]);
    scale.name = "scale".into();
    let nodes = [mm("m", "x", "w", "m", &[4, 8]), binary("Add", "m", "b", &[8], "a"), scale];
    let consts = vec![ep_kernels::graph::Constant {
        name: "s".into(),
        dtype: F32,
        shape: vec![],
        data: 0.125f32.to_le_bytes().to_vec(),
    }];
    let p = build_program(&nodes, &["x".into(), "w".into(), "b".into()], &["y".into()], consts).unwrap();
    assert_eq!(step_ops(&p), ["MatMul+Add+Mul"]);
    let x = T::f32(&[4, 8], &(0..32).map(|i| i as f32 * 0.1).collect::<Vec<_>>());
    let w = T::f32(&[8, 8], &(0..64).map(|i| ((i * 7) % 5) as f32 - 2.0).collect::<Vec<_>>());
    let b = T::f32(&[8], &(0..8).map(|i| i as f32).collect::<Vec<_>>());
    let s = T::f32(&[], &[0.125]);
    let got = common::graph::run_graph(&nodes, &[("x", &x), ("w", &w), ("b", &b)], &[("s", &s)], &["y"]).unwrap();
    let (xv, wv, bv) = (x.values(), w.values(), b.values());
    for r in 0..4 {
        for col in 0..8 {
            let want = ((0..8).map(|k| xv[r * 8 + k] * wv[k * 8 + col]).sum::<f64>() + bv[col]) * 0.125;
            let g = got[0].values()[r * 8 + col];
            assert!((g - want).abs() < 1e-5 * (1.0 + want.abs()), "{g} vs {want}");
        }
    }
}

#[test]
fn a_mask_over_some_batch_dims_is_not_a_bias() {
    // Scores [2,3,4,4] + mask [2,1,1,4]: the product merges its batch dims, the mask cannot follow.
    let mut qk = node(
        "MatMul",
        13,
        vec![Some(val("q", F32, &[2, 3, 4, 8])), Some(val("k", F32, &[2, 3, 8, 4]))],
        vec![val("s", F32, &[2, 3, 4, 4])],
        vec![],
    );
    qk.name = "qk".into();
    let mut add = node(
        "Add",
        14,
        vec![Some(val("s", F32, &[2, 3, 4, 4])), Some(val("m", F32, &[2, 1, 1, 4]))],
        vec![val("y", F32, &[2, 3, 4, 4])],
        vec![],
    );
    add.name = "mask".into();
    let p = program(&[qk, add], &["q", "k", "m"], &["y"]);
    assert_eq!(step_ops(&p), ["MatMul", "Add"]);
}

#[test]
fn a_scalar_bias_follows_a_batch_that_b_broadcasts() {
    // A [3, 4, 5, 8] · B [4, 8, 6]: B broadcasts over the first batch dim, so the product keeps
    // two batch dims; a scalar Add fused as its bias must follow them (it ran "bias []: batch
    // dims differ from the product's" when merged on its own; Python fuzzer seed 7005933).
    let (a_shape, b_shape, out) = ([3u64, 4, 5, 8], [4u64, 8, 6], [3u64, 4, 5, 6]);
    let mm = node(
        "MatMul",
        13,
        vec![Some(val("a", F32, &a_shape)), Some(val("b", F32, &b_shape))],
        vec![val("m", F32, &out)],
        vec![],
    );
    let add =
        node("Add", 14, vec![Some(val("c", F32, &[])), Some(val("m", F32, &out))], vec![val("y", F32, &out)], vec![]);
    let nodes = [mm, add];
    assert_eq!(step_ops(&program(&nodes, &["a", "b", "c"], &["y"])), ["MatMul+Add"]);
    let a = T::f32(&a_shape, &(0..480).map(|i| ((i * 7) % 11) as f32 - 5.0).collect::<Vec<_>>());
    let b = T::f32(&b_shape, &(0..192).map(|i| ((i * 5) % 7) as f32 - 3.0).collect::<Vec<_>>());
    let c = T::f32(&[], &[0.5]);
    let got = common::graph::run_graph(&nodes, &[("a", &a), ("b", &b), ("c", &c)], &[], &["y"]).unwrap();
    let (av, bv, g) = (a.values(), b.values(), got[0].values());
    for (i, &gi) in g.iter().enumerate() {
        let (b0, b1, r, col) = (i / 120, i / 30 % 4, i / 6 % 5, i % 6);
        let want: f64 =
            (0..8).map(|k| av[((b0 * 4 + b1) * 5 + r) * 8 + k] * bv[(b1 * 8 + k) * 6 + col]).sum::<f64>() + 0.5;
        assert!((gi - want).abs() < 1e-4, "[{i}] {gi} vs {want}");
    }
}

/// `Split(qkv) → GroupQueryAttention(q, k, v, …)` as genai's builder emits it for Qwen3: the
/// attention reads the packed projection and the Split disappears; with another reader of `q`
/// (or widths that are not heads·d, kv·d, kv·d) the Split stays.
#[test]
fn a_qkv_split_feeding_group_query_attention_is_absorbed() {
    let (heads, kv, d) = (4u64, 2u64, 64u64);
    let widths = [heads * d, kv * d, kv * d];
    let gqa_step = |extra_reader: bool, sizes: [u64; 3]| -> Vec<String> {
        let sz = T::i64(&[3], &sizes.map(|s| s as i64));
        let outs: Vec<_> = ["q", "k", "v"].iter().zip(sizes).map(|(n, w)| val(n, F32, &[1, 1, w])).collect();
        let split = node(
            "Split",
            13,
            vec![Some(val("qkv", F32, &[1, 1, widths.iter().sum()])), Some(const_val("sz", &sz))],
            outs.clone(),
            vec![("axis", Attr::Int(-1))],
        );
        let cache = |n: &str| Some(val(n, F32, &[1, kv, 7, d]));
        let mut gqa = node(
            "GroupQueryAttention",
            1,
            vec![
                Some(outs[0].clone()),
                Some(outs[1].clone()),
                Some(outs[2].clone()),
                cache("past_k"),
                cache("past_v"),
                Some(val("seqlens_k", ElemType::I32, &[1])),
                Some(val("total", ElemType::I32, &[])),
            ],
            vec![val("out", F32, &[1, 1, heads * d]), val("pk", F32, &[1, kv, 8, d]), val("pv", F32, &[1, kv, 8, d])],
            vec![("num_heads", Attr::Int(heads as i64)), ("kv_num_heads", Attr::Int(kv as i64))],
        );
        gqa.domain = "com.microsoft".into();
        let mut nodes = vec![split, gqa];
        let mut outputs = vec!["out", "pk", "pv"];
        if extra_reader {
            nodes.push(unary("Relu", "q", "rq"));
            outputs.push("rq");
        }
        let consts = vec![ep_kernels::graph::Constant {
            name: "sz".into(),
            dtype: sz.ty,
            shape: sz.shape.clone(),
            data: sz.data.clone(),
        }];
        let inputs: Vec<String> =
            ["qkv", "past_k", "past_v", "seqlens_k", "total"].iter().map(|s| s.to_string()).collect();
        let outputs: Vec<String> = outputs.iter().map(|s| s.to_string()).collect();
        let p = build_program(&nodes, &inputs, &outputs, consts).unwrap_or_else(|e| panic!("{e}"));
        step_ops(&p)
    };
    assert_eq!(gqa_step(false, widths), ["GroupQueryAttention(fused)"]);
    assert!(gqa_step(true, widths).contains(&"Split".to_string()));
    let (a, b) = (heads * d - d, kv * d + d);
    assert!(gqa_step(false, [a, b, kv * d]).contains(&"Split".to_string()));
}
