//! Q, K and V projections packed into one product (`graph/packed_proj.rs`) against float64: Q a
//! MatMul with a fused bias and a factor after it, K and V Gemms of a flattened input (as ONNX
//! Runtime's MatMul+Add fusion leaves them; K's weights transposed, alpha = beta), head size 80 so
//! that zero columns pad each range to 256 bytes; the output Transpose back to `[B, S, H, D]` is
//! the kernel's store; in f16 the Softmax is followed by a Cast to f32 and back (ViT's export). A factor on V cannot move into the scale: those projections stay three
//! products, with the same result.

use super::{assert_close, bshd_to_bhsd, random, run_with, Case};
use crate::common;
use common::graph::{const_val, node, val, T};
use ep_kernels::graph::{build_program_with, Attr, Constant, FlashMode, Node};
use ep_kernels::ElemType;
use rand::Rng;

const B: u64 = 2;
const KD: u64 = 40;
const H: u64 = 2;
const D: u64 = 80;
const W: u64 = H * D;

fn scalar(ty: ElemType, x: f32) -> T {
    if ty == ElemType::F16 {
        T::f16(&[], &[x])
    } else {
        T::f32(&[], &[x])
    }
}

/// `x [B·S, KD] · w` for `w` stored `[KD, W]` (or `[W, KD]` when `transposed`), plus `bias`, times `f`.
fn project(x: &[f64], w: &[f64], transposed: bool, bias: Option<&[f64]>, f: f64) -> Vec<f64> {
    let (m, k, n) = (x.len() / KD as usize, KD as usize, W as usize);
    let mut out = vec![0.0; m * n];
    for r in 0..m {
        for c in 0..n {
            let dot: f64 = (0..k).map(|i| x[r * k + i] * if transposed { w[c * k + i] } else { w[i * n + c] }).sum();
            out[r * n + c] = (dot + bias.map_or(0.0, |b| b[c])) * f;
        }
    }
    out
}

/// The attention graph over projections of `x`; `v_factor` scales V after its Gemm.
fn graph(ty: ElemType, v_factor: Option<f32>, s: u64) -> Vec<Node> {
    let (bs, bshd) = (&[B * s, W][..], &[B, s, H, D][..]);
    let shape4 = T::i64(&[4], &[B as i64, s as i64, H as i64, D as i64]);
    let flat = T::i64(&[2], &[(B * s) as i64, KD as i64]);
    let v = |n: &str, s: &[u64]| val(n, ty, s);
    let reshape = |from: ValueInfoArg, to: &str, shape: &T, out: &[u64]| {
        node("Reshape", 14, vec![Some(from), Some(const_val(&format!("{to}_shape"), shape))], vec![v(to, out)], vec![])
    };
    let transpose = |from: &str, to: &str, perm: [i64; 4], out: &[u64]| {
        node("Transpose", 13, vec![Some(v(from, bshd))], vec![v(to, out)], vec![("perm", Attr::Ints(perm.to_vec()))])
    };
    let gemm = |x: &str, w: &str, w_shape: &[u64], c: Option<&str>, attrs: Vec<(&str, Attr)>, out: &str| {
        let mut inputs = vec![Some(v(x, &[B * s, KD])), Some(const_val(w, &random_const(ty, w_shape)))];
        inputs.extend(c.map(|c| Some(const_val(c, &random_const(ty, &[W])))));
        node("Gemm", 13, inputs, vec![v(out, bs)], attrs)
    };
    let (bhsd, bhds, scores) = (&[B, H, s, D][..], &[B, H, D, s][..], &[B, H, s, s][..]);
    let mut nodes = vec![
        // Q: MatMul → Add(bias) → Mul(0.5) → Reshape → Transpose.
        node(
            "MatMul",
            13,
            vec![Some(v("x", &[B, s, KD])), Some(const_val("wq", &random_const(ty, &[KD, W])))],
            vec![v("qm", &[B, s, W])],
            vec![],
        ),
        node(
            "Add",
            14,
            vec![Some(v("qm", &[B, s, W])), Some(const_val("bq", &random_const(ty, &[W])))],
            vec![v("qa", &[B, s, W])],
            vec![],
        ),
        node(
            "Mul",
            14,
            vec![Some(v("qa", &[B, s, W])), Some(const_val("half", &scalar(ty, 0.5)))],
            vec![v("qs", &[B, s, W])],
            vec![],
        ),
        reshape(v("qs", &[B, s, W]), "q4", &shape4, bshd),
        transpose("q4", "qt", [0, 2, 1, 3], bhsd),
        // K: Reshape(x) → Gemm(transB, alpha = beta = 3) → Reshape → Transpose to Kᵀ.
        reshape(v("x", &[B, s, KD]), "xk", &flat, &[B * s, KD]),
        gemm(
            "xk",
            "wk",
            &[W, KD],
            Some("bk"),
            vec![("transB", Attr::Int(1)), ("alpha", Attr::Float(3.0)), ("beta", Attr::Float(3.0))],
            "kg",
        ),
        reshape(v("kg", bs), "k4", &shape4, bshd),
        transpose("k4", "kt", [0, 2, 3, 1], bhds),
        // V: Reshape(x) → Gemm without C → [Mul] → Reshape → Transpose.
        reshape(v("x", &[B, s, KD]), "xv", &flat, &[B * s, KD]),
        gemm("xv", "wv", &[KD, W], None, vec![], "vg"),
    ];
    let mut v_out = "vg";
    if let Some(f) = v_factor {
        nodes.push(node(
            "Mul",
            14,
            vec![Some(v("vg", bs)), Some(const_val("vf", &scalar(ty, f)))],
            vec![v("vs", bs)],
            vec![],
        ));
        v_out = "vs";
    }
    nodes.extend([
        reshape(v(v_out, bs), "v4", &shape4, bshd),
        transpose("v4", "vt", [0, 2, 1, 3], bhsd),
        node("MatMul", 13, vec![Some(v("qt", bhsd)), Some(v("kt", bhds))], vec![v("sc", scores)], vec![]),
        node(
            "Softmax",
            13,
            vec![Some(v("sc", scores))],
            vec![v(if ty == ElemType::F16 { "p0" } else { "p" }, scores)],
            vec![("axis", Attr::Int(-1))],
        ),
    ]);
    if ty == ElemType::F16 {
        // ViT's export: Softmax in f16, then Cast to f32 and back.
        let cast = |from: &str, to: &str, t: ElemType| {
            node(
                "Cast",
                13,
                vec![Some(val(from, if t == ty { ElemType::F32 } else { ty }, scores))],
                vec![val(to, t, scores)],
                vec![("to", Attr::Int(i64::from(t.onnx())))],
            )
        };
        nodes.extend([cast("p0", "p1", ElemType::F32), cast("p1", "p", ty)]);
    }
    nodes.extend([
        node("MatMul", 13, vec![Some(v("p", scores)), Some(v("vt", bhsd))], vec![v("y", bhsd)], vec![]),
        // Back to [B, s, H, D]: the attention stores that layout itself.
        node(
            "Transpose",
            13,
            vec![Some(v("y", bhsd))],
            vec![v("yt", bshd)],
            vec![("perm", Attr::Ints(vec![0, 2, 1, 3]))],
        ),
    ]);
    nodes
}

type ValueInfoArg = ep_kernels::graph::ValueInfo;

/// Weights and biases in [-0.15, 0.15): projections of about unit size, so f16 rounding stays
/// small in the scores. The graph carries the bytes; the reference reads them back from it.
fn random_const(ty: ElemType, shape: &[u64]) -> T {
    let t = random(&mut common::rng("random_const"), ElemType::F32, shape);
    let v: Vec<f32> = t.values().iter().map(|&x| (x * 0.15) as f32).collect();
    if ty == ElemType::F16 {
        T::f16(shape, &v)
    } else {
        T::f32(shape, &v)
    }
}

/// The constants `nodes` read, as the provider would hand them to the program builder.
fn constants(nodes: &[Node]) -> Vec<(String, T)> {
    let mut out: Vec<(String, T)> = Vec::new();
    for v in nodes.iter().flat_map(|n| n.inputs.iter().flatten()).filter(|v| v.constant) {
        if out.iter().any(|(n, _)| *n == v.name) {
            continue;
        }
        let ty = ElemType::from_onnx(v.elem_type).unwrap();
        let shape = v.fixed_shape().unwrap();
        out.push((v.name.clone(), T { ty, shape, data: v.small_data.clone().unwrap() }));
    }
    out
}

fn check(ty: ElemType, v_factor: Option<f32>, s: u64) {
    let nodes = graph(ty, v_factor, s);
    let consts = constants(&nodes);
    let get = |name: &str| consts.iter().find(|(n, _)| n == name).unwrap().1.values();
    let x = random(&mut common::rng("check"), ty, &[B, s, KD]);
    let refs: Vec<(&str, &T)> = consts.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let (y, ops, _) = run_with(&nodes, &[("x", &x)], &refs, "yt", ty);
    let packed = v_factor.is_none();
    let products = ops.iter().filter(|o| o.starts_with("MatMul") || o.starts_with("Gemm")).count();
    assert_eq!(products, if packed { 1 } else { 3 }, "{ops:?}");
    assert_eq!(ops.contains(&"MatMul+Add(Q/K/V)".to_string()), packed, "{ops:?}");
    assert!(ops.contains(&"FlashAttention(fused)".to_string()), "{ops:?}");
    assert!(!ops.iter().any(|o| o.contains("Transpose")), "{ops:?}");
    let xs = x.values();
    let q = project(&xs, &get("wq"), false, Some(&get("bq")), 0.5);
    let k = project(&xs, &get("wk"), true, Some(&get("bk")), 3.0);
    let v = project(&xs, &get("wv"), false, None, f64::from(v_factor.unwrap_or(1.0)));
    let bhsd = |t: &[f64]| bshd_to_bhsd(t, B as usize, s as usize, H as usize, D as usize);
    let c = Case {
        b: B as usize,
        hq: H as usize,
        hkv: H as usize,
        sq: s as usize,
        skv: s as usize,
        d: D as usize,
        // No factor on the scores: the attention scale is 1 (times the Q and K factors).
        scale: 1.0,
        causal: None,
    };
    let want = c.reference(&bhsd(&q), &bhsd(&k), &bhsd(&v), &|_, _, _, _| 0.0);
    // [B, H, S, D] → [B, S, H, D].
    let (s, h, d) = (s as usize, H as usize, D as usize);
    let want: Vec<f64> = (0..want.len())
        .map(|i| (i / (s * h * d), i / (h * d) % s, i / d % h, i % d))
        .map(|(bi, si, hi, c)| want[((bi * h + hi) * s + si) * d + c])
        .collect();
    assert_close(&format!("packed {ty} v_factor {v_factor:?} S {s}"), &y.values(), &want, ty);
}

#[test]
fn packed_projections_against_f64() {
    for ty in [ElemType::F32, ElemType::F16] {
        // 19 tokens: the flash kernel; 3: the split-KV kernel for a few query rows.
        for s in [19, 3] {
            check(ty, None, s);
        }
    }
}

#[test]
fn a_factor_on_v_keeps_three_products() {
    check(ElemType::F32, Some(0.5), 19);
}

/// The number in a kernel's `Debug` after `field` (`a_bound: Some(` or `kv_bound: Some([`).
fn bound_in(debug: &str, field: &str) -> Option<f64> {
    let rest = &debug[debug.find(field)? + field.len()..];
    rest[..rest.find([',', ')', ']'])?].trim().parse().ok()
}

/// A LayerNormalization before the projections bounds what the split f32 kernels read
/// (`graph/bounds.rs`): the packed product gets a bound on |X| and the attention one on |K| and
/// |V|, each at least the largest magnitude of a float64 run on random rows and on a row built
/// to reach the norm's extreme (one element away from the rest), and within 64 times it.
#[test]
fn a_normalised_input_bounds_the_packed_projection() {
    let (ty, s) = (ElemType::F32, 19);
    let mut rng = common::rng("a_normalised_input_bounds_the_packed_projection");
    let gamma: Vec<f32> = (0..KD).map(|_| rng.random_range(0.5f32..1.5)).collect();
    let beta: Vec<f32> = (0..KD).map(|_| rng.random_range(-0.2f32..0.2)).collect();
    let mut nodes = vec![node(
        "LayerNormalization",
        17,
        vec![
            Some(val("x0", ty, &[B, s, KD])),
            Some(const_val("gamma", &T::f32(&[KD], &gamma))),
            Some(const_val("beta", &T::f32(&[KD], &beta))),
        ],
        vec![val("x", ty, &[B, s, KD])],
        vec![("axis", Attr::Int(-1)), ("epsilon", Attr::Float(1e-5))],
    )];
    nodes.extend(graph(ty, None, s));
    let consts: Vec<Constant> = constants(&nodes)
        .into_iter()
        .map(|(name, t)| Constant { name, dtype: t.ty, shape: t.shape, data: t.data })
        .collect();
    let get = |name: &str| consts.iter().find(|c| c.name == name).unwrap().clone();
    let values = |c: Constant| T { ty: c.dtype, shape: c.shape, data: c.data }.values();
    let (wk, bk, wv) = (values(get("wk")), values(get("bk")), values(get("wv")));
    let program = build_program_with(&nodes, &["x0".into()], &["yt".into()], consts, FlashMode::All).unwrap();
    let debug = |ops: &str| format!("{:?}", program.steps.iter().find(|st| st.ops == ops).expect(ops).kernel);
    let a_bound = bound_in(&debug("MatMul+Add(Q/K/V)"), "a_bound: Some(").expect("a bound on X");
    let kv_bound = bound_in(&debug("FlashAttention(fused)"), "kv_bound: Some([").expect("bounds on K and V");
    // Rows of x0: random, and the first one zero but for its element at γ's largest magnitude.
    let mut x0: Vec<f64> = (0..B * s * KD).map(|_| rng.random_range(-1.0..1.0)).collect();
    let top = (0..KD as usize).max_by(|&i, &j| gamma[i].abs().total_cmp(&gamma[j].abs())).unwrap();
    x0[..KD as usize].iter_mut().enumerate().for_each(|(i, x)| *x = if i == top { 1.0 } else { 0.0 });
    let (gamma, beta) = (&gamma, &beta);
    let x: Vec<f64> = x0
        .chunks(KD as usize)
        .flat_map(|row| {
            let mean = row.iter().sum::<f64>() / KD as f64;
            let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / KD as f64;
            let inv = 1.0 / (var + 1e-5).sqrt();
            row.iter().enumerate().map(move |(i, v)| (v - mean) * inv * f64::from(gamma[i]) + f64::from(beta[i]))
        })
        .collect();
    let largest = |t: &[f64]| t.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let kv = largest(&project(&x, &wk, true, Some(&bk), 1.0)).max(largest(&project(&x, &wv, false, None, 1.0)));
    assert!(largest(&x) <= a_bound && a_bound <= 64.0 * largest(&x), "|X| {} against {a_bound}", largest(&x));
    assert!(kv <= kv_bound && kv_bound <= 64.0 * kv, "|K|, |V| {kv} against {kv_bound}");
}
