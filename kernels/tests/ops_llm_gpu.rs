//! The LLM contrib ops other than MatMulNBits (`ops_quant_gpu.rs`) through the program builder
//! and executor on the test adapter, against float64 references on fresh random data, f32 and
//! f16: SimplifiedLayerNormalization, SkipSimplifiedLayerNormalization and
//! SkipLayerNormalization with their optional inputs and outputs, and RotaryEmbedding.
mod common;

use common::graph::{node, run_graph, val, T};
use ep_kernels::caps::profiles;
use ep_kernels::graph::{Attr, Node, PlacementOptions};
use ep_kernels::ElemType;
use rand::Rng;

fn tys() -> Vec<ElemType> {
    if common::gpu().caps().shader_f16 {
        vec![ElemType::F32, ElemType::F16]
    } else {
        vec![ElemType::F32]
    }
}

fn random(rng: &mut impl Rng, ty: ElemType, shape: &[u64], lo: f32, hi: f32) -> T {
    let v: Vec<f32> = (0..shape.iter().product::<u64>()).map(|_| rng.random_range(lo..hi)).collect();
    if ty == ElemType::F16 {
        T::f16(shape, &v)
    } else {
        T::f32(shape, &v)
    }
}

fn assert_close(what: &str, got: &T, want: &[f64], ty: ElemType) {
    let tol = if ty == ElemType::F16 { 4e-3 } else { 2e-5 };
    let got = got.values();
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "{what}: element {i}: got {g}, want {w}");
    }
}

fn claimed(mut n: Node, domain: &str) -> Node {
    n.domain = domain.into();
    let def = ep_kernels::ops::lookup(&n).expect("registered");
    def.check(&n, &PlacementOptions::defaults(profiles::get("llvmpipe").unwrap())).expect("claimed");
    n
}

/// Rows of `hidden` normalised (RMS when `simplified`): outputs y, mean, inv_std.
fn norm_ref(s: &[f64], g: &[f64], beta: Option<&[f64]>, hidden: usize, simplified: bool, eps: f64) -> [Vec<f64>; 3] {
    let (mut y, mut means, mut invs) = (Vec::new(), Vec::new(), Vec::new());
    for row in s.chunks(hidden) {
        let mean = if simplified { 0.0 } else { row.iter().sum::<f64>() / hidden as f64 };
        let inv = 1.0 / (row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / hidden as f64 + eps).sqrt();
        for (h, v) in row.iter().enumerate() {
            y.push((v - mean) * inv * g[h] + beta.map_or(0.0, |b| b[h]));
        }
        means.push(mean);
        invs.push(inv);
    }
    [y, means, invs]
}

#[test]
fn simplified_layer_norm_with_inv_std_var() {
    let mut rng = common::rng("simplified_layer_norm");
    for ty in tys() {
        let (shape, hidden) = ([3u64, 5, 67], 67u64);
        let (x, scale) = (random(&mut rng, ty, &shape, -2.0, 2.0), random(&mut rng, ty, &[hidden], -1.0, 1.0));
        let outs = vec![val("y", ty, &shape), val("inv", ElemType::F32, &[3, 5, 1])];
        let attrs = vec![("epsilon", Attr::Float(1e-5)), ("stash_type", Attr::Int(1))];
        let n = node(
            "SimplifiedLayerNormalization",
            1,
            vec![Some(val("x", ty, &shape)), Some(val("s", ty, &[hidden]))],
            outs,
            attrs,
        );
        let got = run_graph(&[claimed(n, "")], &[("x", &x), ("s", &scale)], &[], &["y", "inv"]).unwrap();
        let want = norm_ref(&x.values(), &scale.values(), None, hidden as usize, true, 1e-5);
        assert_close("y", &got[0], &want[0], ty);
        assert_close("inv", &got[1], &want[2], ElemType::F32);
    }
}

/// A skip norm of `x [2, 5, hidden]` with `skip [5, hidden]`, every output listed.
fn check_skip(op: &str, ty: ElemType, hidden: u64, beta: bool, bias: bool) {
    let mut rng = common::rng(op);
    let shape = [2u64, 5, hidden];
    let x = random(&mut rng, ty, &shape, -2.0, 2.0);
    let skip = random(&mut rng, ty, &[5, hidden], -2.0, 2.0);
    let (g, b, sb) = (
        random(&mut rng, ty, &[hidden], -1.0, 1.0),
        random(&mut rng, ty, &[hidden], -1.0, 1.0),
        random(&mut rng, ty, &[hidden], -1.0, 1.0),
    );
    let simplified = op == "SkipSimplifiedLayerNormalization";
    let mut inputs =
        vec![Some(val("x", ty, &shape)), Some(val("skip", ty, &[5, hidden])), Some(val("g", ty, &[hidden]))];
    let mut feeds = vec![("x", &x), ("skip", &skip), ("g", &g)];
    if !simplified {
        inputs.push(beta.then(|| val("b", ty, &[hidden])));
        if beta {
            feeds.push(("b", &b));
        }
    }
    if bias {
        inputs.push(Some(val("sb", ty, &[hidden])));
        feeds.push(("sb", &sb));
    }
    let stat = [2u64, 5, 1];
    let outs = vec![
        val("y", ty, &shape),
        val("mean", ElemType::F32, &stat),
        val("inv", ElemType::F32, &stat),
        val("sum", ty, &shape),
    ];
    let n = node(op, 1, inputs, outs, vec![("epsilon", Attr::Float(1e-6))]);
    let got = run_graph(&[claimed(n, "com.microsoft")], &feeds, &[], &["y", "mean", "inv", "sum"]).unwrap();
    let (xv, kv, sbv) = (x.values(), skip.values(), sb.values());
    let sum: Vec<f64> =
        (0..xv.len()).map(|i| xv[i] + kv[i % kv.len()] + if bias { sbv[i % hidden as usize] } else { 0.0 }).collect();
    let bv = b.values();
    let want =
        norm_ref(&sum, &g.values(), (beta && !simplified).then_some(bv.as_slice()), hidden as usize, simplified, 1e-6);
    let what = format!("{op} {} hidden {hidden}", ty.name());
    assert_close(&format!("{what} y"), &got[0], &want[0], ty);
    assert_close(&format!("{what} mean"), &got[1], &want[1], ElemType::F32);
    assert_close(&format!("{what} inv"), &got[2], &want[2], ElemType::F32);
    let sum_rounded = T::f32(&shape, &sum.iter().map(|&v| v as f32).collect::<Vec<_>>()).values();
    assert_close(&format!("{what} sum"), &got[3], &sum_rounded, ty);
}

#[test]
fn skip_norms_with_every_output() {
    for ty in tys() {
        for hidden in [67, 96] {
            check_skip("SkipSimplifiedLayerNormalization", ty, hidden, false, true);
            check_skip("SkipSimplifiedLayerNormalization", ty, hidden, false, false);
            check_skip("SkipLayerNormalization", ty, hidden, true, true);
            check_skip("SkipLayerNormalization", ty, hidden, false, false);
        }
    }
}

#[test]
fn rotary_embedding() {
    let mut rng = common::rng("rotary_embedding");
    for ty in tys() {
        for interleaved in [false, true] {
            // [B 2, S 5, N 3 · D 32], rotating the first 24 of each head; positions per token.
            let (b, s, heads, d, rot, rows) = (2u64, 5u64, 3u64, 32u64, 24u64, 16u64);
            let shape = [b, s, heads * d];
            let x = random(&mut rng, ty, &shape, -1.0, 1.0);
            let pos: Vec<i64> = (0..b * s).map(|_| rng.random_range(0..rows as i64)).collect();
            let pos = T::i64(&[b, s], &pos);
            let (cos, sin) =
                (random(&mut rng, ty, &[rows, rot / 2], -1.0, 1.0), random(&mut rng, ty, &[rows, rot / 2], -1.0, 1.0));
            let inputs = vec![
                Some(val("x", ty, &shape)),
                Some(val("pos", ElemType::I64, &[b, s])),
                Some(val("cos", ty, &[rows, rot / 2])),
                Some(val("sin", ty, &[rows, rot / 2])),
            ];
            let attrs = vec![
                ("interleaved", Attr::Int(i64::from(interleaved))),
                ("num_heads", Attr::Int(heads as i64)),
                ("rotary_embedding_dim", Attr::Int(rot as i64)),
            ];
            let n = node("RotaryEmbedding", 1, inputs, vec![val("y", ty, &shape)], attrs);
            let feeds = [("x", &x), ("pos", &pos), ("cos", &cos), ("sin", &sin)];
            let got = run_graph(&[claimed(n, "com.microsoft")], &feeds, &[], &["y"]).unwrap();
            let (xv, pv, cv, sv) = (x.values(), pos.values(), cos.values(), sin.values());
            let half = (rot / 2) as usize;
            let want: Vec<f64> = (0..xv.len())
                .map(|e| {
                    let (i, token) = (e % d as usize, e / (heads * d) as usize);
                    if i >= rot as usize {
                        return xv[e];
                    }
                    let (c, sign, j) = if interleaved {
                        (i / 2, if i % 2 == 0 { -1.0 } else { 1.0 }, i ^ 1)
                    } else {
                        (i % half, if i < half { -1.0 } else { 1.0 }, (i + half) % rot as usize)
                    };
                    let k = pv[token] as usize * half + c;
                    xv[e] * cv[k] + sign * xv[e - i + j] * sv[k]
                })
                .collect();
            assert_close(&format!("rope {} interleaved {interleaved}", ty.name()), &got[0], &want, ty);
        }
    }
}
