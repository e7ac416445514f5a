//! A Conv followed by the Transpose that moves its channels last (Whisper's frontend: Conv →
//! GELU → Transpose(0, 2, 1) → Add of the positional embedding) runs as one step: the conv's
//! GEMM stores `W · col` through transposed strides, applying the activation and the residual
//! (`graph/fusion.rs`, `GemmPlan::set_output_strides`). Against float64, f32 and f16, 1-D
//! and 2-D, im2col and pointwise, batch 2; other permutations and grouped convs stay apart.

mod common;

use common::graph::{const_val, node, run_graph, val, T};
use ep_kernels::graph::{build_program, Attr, Constant, Node};
use ep_kernels::ElemType;

/// One case: X, W (OIHW, or OIW for 1-D), stride, pad, whether the erf GELU follows the conv,
/// and the residual's shape after the Transpose (`None`: no Add).
#[derive(Clone, Copy)]
struct Case {
    x: &'static [u64],
    w: &'static [u64],
    stride: u64,
    pad: u64,
    gelu: bool,
    residual: Option<&'static [u64]>,
}

const CASES: &[Case] = &[
    // Whisper's second conv, smaller: stride 2, GELU, then the positional embedding [L, M].
    Case { x: &[1, 12, 37], w: &[10, 12, 3], stride: 2, pad: 1, gelu: true, residual: Some(&[19, 10]) },
    // 2-D, batch 2 (the image stride of the channels-last store), no activation or residual.
    Case { x: &[2, 5, 9, 7], w: &[8, 5, 3, 3], stride: 1, pad: 1, gelu: false, residual: None },
    // Pointwise (X itself is the product's A), a residual of the whole output's shape.
    Case { x: &[2, 6, 5, 4], w: &[9, 6, 1, 1], stride: 1, pad: 0, gelu: false, residual: Some(&[2, 5, 4, 9]) },
];

fn constant(name: &str, t: &T) -> Constant {
    Constant { name: name.into(), dtype: t.ty, shape: t.shape.clone(), data: t.data.clone() }
}

fn scalar(ty: ElemType, x: f32) -> T {
    if ty == ElemType::F16 {
        T::f16(&[], &[x])
    } else {
        T::f32(&[], &[x])
    }
}

/// The conv's output shape (NCHW, or NCW for 1-D).
fn conv_shape(c: &Case) -> Vec<u64> {
    let spatial = c.x.len() - 2;
    let mut out = vec![c.x[0], c.w[0]];
    out.extend((0..spatial).map(|i| (c.x[2 + i] + 2 * c.pad - c.w[2 + i]) / c.stride + 1));
    out
}

/// Conv (+ erf GELU) → Transpose(`perm`) (→ Add of `r`), reading `x` and writing `y`.
fn graph(c: &Case, ty: ElemType, perm: &[i64], group: i64) -> Vec<Node> {
    let y = conv_shape(c);
    let t: Vec<u64> = perm.iter().map(|&p| y[p as usize]).collect();
    let v = |name: &str, s: &[u64]| Some(val(name, ty, s));
    let spatial = c.x.len() - 2;
    let attrs = vec![
        ("pads", Attr::Ints(vec![c.pad as i64; 2 * spatial])),
        ("strides", Attr::Ints(vec![c.stride as i64; spatial])),
        ("group", Attr::Int(group)),
    ];
    let weights = |s: &[u64]| const_val("w", &T::random(ty, s, 0.5));
    let mut nodes = vec![node(
        "Conv",
        11,
        vec![v("x", c.x), Some(weights(c.w)), Some(const_val("b", &T::random(ty, &c.w[..1], 0.5)))],
        vec![val("c", ty, &y)],
        attrs,
    )];
    let mut tail = "c";
    if c.gelu {
        let k = |name: &str, x: f32| Some(const_val(name, &scalar(ty, x)));
        nodes.extend([
            node("Div", 14, vec![v("c", &y), k("sqrt2", std::f32::consts::SQRT_2)], vec![val("d", ty, &y)], vec![]),
            node("Erf", 13, vec![v("d", &y)], vec![val("e", ty, &y)], vec![]),
            node("Add", 14, vec![v("e", &y), k("one", 1.0)], vec![val("a", ty, &y)], vec![]),
            node("Mul", 14, vec![v("c", &y), v("a", &y)], vec![val("m", ty, &y)], vec![]),
            node("Mul", 14, vec![v("m", &y), k("half", 0.5)], vec![val("g", ty, &y)], vec![]),
        ]);
        tail = "g";
    }
    let out = if c.residual.is_some() { "t" } else { "y" };
    nodes.push(node(
        "Transpose",
        13,
        vec![v(tail, &y)],
        vec![val(out, ty, &t)],
        vec![("perm", Attr::Ints(perm.to_vec()))],
    ));
    if let Some(r) = c.residual {
        nodes.push(node("Add", 14, vec![v("t", &t), v("r", r)], vec![val("y", ty, &t)], vec![]));
    }
    for (i, n) in nodes.iter_mut().enumerate() {
        n.name = format!("n{i}");
    }
    nodes
}

/// The graph's constants, as the provider hands them over.
fn constants(nodes: &[Node]) -> Vec<(String, T)> {
    let mut out: Vec<(String, T)> = Vec::new();
    for v in nodes.iter().flat_map(|n| n.inputs.iter().flatten()).filter(|v| v.constant) {
        if !out.iter().any(|(n, _)| *n == v.name) {
            let ty = ElemType::from_onnx(v.elem_type).unwrap();
            out.push((v.name.clone(), T { ty, shape: v.fixed_shape().unwrap(), data: v.small_data.clone().unwrap() }));
        }
    }
    out
}

/// The steps' ops of the program `nodes` compile to, reading `inputs` and writing `y`.
fn step_ops(nodes: &[Node], inputs: &[&str], consts: &[(String, T)]) -> Vec<String> {
    let inputs: Vec<String> = inputs.iter().map(|s| s.to_string()).collect();
    let constants = consts.iter().map(|(n, t)| constant(n, t)).collect();
    let p = build_program(nodes, &inputs, &["y".into()], constants).unwrap();
    p.steps.iter().map(|s| s.ops.clone()).collect()
}

/// The conv (stride, pad) in f64 over `[N, C, H, W]` (1-D: H = 1), GELU where asked, stored
/// `[N, H, W, M]`, plus `r` (the same elements in that order).
fn reference(c: &Case, x: &[f64], w: &[f64], b: &[f64], r: Option<&[f64]>) -> Vec<f64> {
    let four = |s: &[u64]| if s.len() == 3 { [s[0], s[1], 1, s[2]] } else { [s[0], s[1], s[2], s[3]] };
    let [n, ch, h, wd] = four(c.x).map(|d| d as usize);
    let [m, _, kh, kw] = four(c.w).map(|d| d as usize);
    let [_, _, oh, ow] = four(&conv_shape(c)).map(|d| d as usize);
    let (s, p) = (c.stride as i64, c.pad as i64);
    let (ph, sh) = if c.x.len() == 3 { (0, 1) } else { (p, s) };
    let mut out = vec![0.0; n * oh * ow * m];
    for (i, o) in out.iter_mut().enumerate() {
        let (oc, ox, oy, bi) = (i % m, i / m % ow, i / (m * ow) % oh, i / (m * ow * oh));
        let mut acc = b[oc];
        for ic in 0..ch {
            for ky in 0..kh {
                for kx in 0..kw {
                    let (iy, ix) = (oy as i64 * sh + ky as i64 - ph, ox as i64 * s + kx as i64 - p);
                    if iy >= 0 && ix >= 0 && (iy as usize) < h && (ix as usize) < wd {
                        acc += x[((bi * ch + ic) * h + iy as usize) * wd + ix as usize]
                            * w[((oc * ch + ic) * kh + ky) * kw + kx];
                    }
                }
            }
        }
        if c.gelu {
            acc = 0.5 * acc * (1.0 + libm_erf(acc / std::f64::consts::SQRT_2));
        }
        *o = acc + r.map_or(0.0, |r| r[i]);
    }
    out
}

/// erf in f64 (Abramowitz–Stegun 7.1.26 is too coarse for f32's tolerance: a series and a
/// continued fraction).
fn libm_erf(x: f64) -> f64 {
    let t = x.abs();
    let v = if t < 2.5 {
        // Maclaurin series.
        let (mut sum, mut term, mut k) = (t, t, 0.0f64);
        while term.abs() > 1e-17 * sum.abs() {
            k += 1.0;
            term *= -t * t / k;
            sum += term / (2.0 * k + 1.0);
        }
        2.0 / std::f64::consts::PI.sqrt() * sum
    } else {
        // erfc's continued fraction.
        let mut f = 0.0f64;
        for k in (1..60).rev() {
            f = (k as f64 / 2.0) / (t + f);
        }
        1.0 - (-t * t).exp() / std::f64::consts::PI.sqrt() / (t + f)
    };
    v.copysign(x)
}

fn perm_last(rank: usize) -> Vec<i64> {
    if rank == 3 {
        vec![0, 2, 1]
    } else {
        vec![0, 2, 3, 1]
    }
}

#[test]
fn a_transpose_to_channels_last_runs_in_the_conv() {
    for ty in [ElemType::F32, ElemType::F16] {
        for c in CASES {
            let nodes = graph(c, ty, &perm_last(c.x.len()), 1);
            let consts = constants(&nodes);
            let ops = step_ops(&nodes, &["x", "r"][..1 + usize::from(c.residual.is_some())], &consts);
            let want_ops = format!(
                "Conv{}+Transpose{}",
                if c.gelu { "+Div+Erf+Add+Mul+Mul" } else { "" },
                if c.residual.is_some() { "+Add" } else { "" }
            );
            assert_eq!(ops, [want_ops.as_str()], "{ty} {:?}", c.x);
            let x = T::random(ty, c.x, 1.0);
            let r = c.residual.map(|s| T::random(ty, s, 1.0));
            let mut feeds = vec![("x", &x)];
            feeds.extend(r.as_ref().map(|r| ("r", r)));
            let refs: Vec<(&str, &T)> = consts.iter().map(|(n, t)| (n.as_str(), t)).collect();
            let got = run_graph(&nodes, &feeds, &refs, &["y"]).unwrap().remove(0);
            let get = |n: &str| consts.iter().find(|(k, _)| k == n).unwrap().1.values();
            let want = reference(c, &x.values(), &get("w"), &get("b"), r.as_ref().map(|r| r.values()).as_deref());
            let t: Vec<u64> = perm_last(c.x.len()).iter().map(|&p| conv_shape(c)[p as usize]).collect();
            assert_eq!(got.shape, t, "{ty} {:?}", c.x);
            let scale = want.iter().fold(1.0f64, |a, v| a.max(v.abs()));
            let tol = if ty == ElemType::F16 { 2e-2 } else { 1e-5 };
            for (i, (g, w)) in got.values().iter().zip(&want).enumerate() {
                assert!((g - w).abs() <= tol * scale, "{ty} {:?} element {i}: {g} against {w}", c.x);
            }
        }
    }
}

#[test]
fn other_transposes_and_grouped_convs_stay_apart() {
    let c = &CASES[1];
    // Channels not moved last.
    let nodes = graph(c, ElemType::F32, &[0, 1, 3, 2], 1);
    assert_eq!(step_ops(&nodes, &["x"], &constants(&nodes)), ["Conv", "Transpose"]);
    // A grouped conv: 8 output channels in 2 groups over 4 input channels.
    let grouped = Case { x: &[1, 4, 6, 6], w: &[8, 2, 3, 3], ..*c };
    let nodes = graph(&grouped, ElemType::F32, &[0, 2, 3, 1], 2);
    assert_eq!(step_ops(&nodes, &["x"], &constants(&nodes)), ["Conv", "Transpose"]);
}

/// ViT's patch embedding: Conv(4×4, stride 4) → Reshape merging the pixels → Transpose(0, 2, 1),
/// then an Add of the output's shape: one step storing `[N, H·W, M]`.
#[test]
fn a_reshape_merging_the_pixels_before_the_transpose_runs_in_the_conv() {
    let c = Case { x: &[2, 3, 9, 8], w: &[6, 3, 4, 4], stride: 4, pad: 0, gelu: false, residual: None };
    let y = conv_shape(&c);
    let flat = [y[0], y[1], y[2] * y[3]];
    let t = [y[0], y[2] * y[3], y[1]];
    for ty in [ElemType::F32, ElemType::F16] {
        let mut nodes = graph(&c, ty, &[0, 2, 3, 1], 1);
        // Between the conv and the Transpose: the Reshape; the Transpose swaps the last two axes.
        nodes.truncate(1);
        let shape = T::i64(&[3], &flat.map(|d| d as i64));
        nodes.push(node(
            "Reshape",
            14,
            vec![Some(val("c", ty, &y)), Some(const_val("shape", &shape))],
            vec![val("f", ty, &flat)],
            vec![],
        ));
        nodes.push(node(
            "Transpose",
            13,
            vec![Some(val("f", ty, &flat))],
            vec![val("t", ty, &t)],
            vec![("perm", Attr::Ints(vec![0, 2, 1]))],
        ));
        nodes.push(node(
            "Add",
            14,
            vec![Some(val("t", ty, &t)), Some(val("r", ty, &t))],
            vec![val("y", ty, &t)],
            vec![],
        ));
        for (i, n) in nodes.iter_mut().enumerate() {
            n.name = format!("n{i}");
        }
        let consts = constants(&nodes);
        assert_eq!(step_ops(&nodes, &["x", "r"], &consts), ["Conv+Reshape+Transpose+Add"], "{ty}");
        let (x, r) = (T::random(ty, c.x, 1.0), T::random(ty, &t, 1.0));
        let refs: Vec<(&str, &T)> = consts.iter().map(|(n, t)| (n.as_str(), t)).collect();
        let got = run_graph(&nodes, &[("x", &x), ("r", &r)], &refs, &["y"]).unwrap().remove(0);
        let get = |n: &str| consts.iter().find(|(k, _)| k == n).unwrap().1.values();
        let want = reference(&c, &x.values(), &get("w"), &get("b"), Some(&r.values()));
        assert_eq!(got.shape, t);
        let scale = want.iter().fold(1.0f64, |a, v| a.max(v.abs()));
        let tol = if ty == ElemType::F16 { 2e-2 } else { 1e-5 };
        for (i, (g, w)) in got.values().iter().zip(&want).enumerate() {
            assert!((g - w).abs() <= tol * scale, "{ty} element {i}: {g} against {w}");
        }
    }
}

/// The erf GELU's five nodes no longer end a conv's epilogue: a residual Add of the output's
/// shape after them runs in the store too (f32), in the conv's own layout.
#[test]
fn a_residual_after_the_erf_gelu_runs_in_the_conv() {
    let c = Case { x: &[2, 5, 23], w: &[7, 5, 3], stride: 1, pad: 1, gelu: true, residual: None };
    let y = conv_shape(&c);
    let ty = ElemType::F32;
    let mut nodes = graph(&c, ty, &[0, 2, 1], 1);
    // Drop the Transpose: the GELU's output "g" meets the residual directly.
    nodes.pop();
    nodes.push(node("Add", 14, vec![Some(val("g", ty, &y)), Some(val("r", ty, &y))], vec![val("y", ty, &y)], vec![]));
    nodes.last_mut().unwrap().name = "add".into();
    let consts = constants(&nodes);
    assert_eq!(step_ops(&nodes, &["x", "r"], &consts), ["Conv+Div+Erf+Add+Mul+Mul+Add"]);
    let (x, r) = (T::random(ty, c.x, 1.0), T::random(ty, &y, 1.0));
    let refs: Vec<(&str, &T)> = consts.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let got = run_graph(&nodes, &[("x", &x), ("r", &r)], &refs, &["y"]).unwrap().remove(0).values();
    let get = |n: &str| consts.iter().find(|(k, _)| k == n).unwrap().1.values();
    // The reference is channels last: element (n, l, m) is the conv's (n, m, l).
    let last = reference(&c, &x.values(), &get("w"), &get("b"), None);
    let (m, l) = (y[1] as usize, y[2] as usize);
    let rv = r.values();
    for (i, g) in got.iter().enumerate() {
        let (bi, mi, li) = (i / (m * l), i / l % m, i % l);
        let want = last[(bi * l + li) * m + mi] + rv[i];
        assert!((g - want).abs() <= 1e-5 * (1.0 + want.abs()), "element {i}: {g} against {want}");
    }
}
