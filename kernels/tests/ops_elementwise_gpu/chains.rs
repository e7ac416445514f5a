//! Fused chains as one step, errors for bad shapes, and what placement declines.
use super::*;

use common::graph::val as value;
use ep_kernels::caps::profiles;
use ep_kernels::graph::{Constant, Node, PlacementOptions};
use ep_kernels::ops::lookup;

fn constant(name: &str, t: &T) -> Constant {
    Constant { name: name.into(), dtype: t.ty, shape: t.shape.clone(), data: t.data.clone() }
}

/// Asserts `nodes` compile into one step, then runs them.
fn one_step(nodes: &[Node], inputs: &[(&str, &T)], consts: &[(&str, &T)], out: &str) -> T {
    let names: Vec<String> = inputs.iter().map(|(n, _)| n.to_string()).collect();
    let cs = consts.iter().map(|(n, t)| constant(n, t)).collect();
    let program = build_program(nodes, &names, &[out.to_string()], cs).unwrap();
    assert_eq!(program.steps.len(), 1, "{:?}", program.steps.iter().map(|s| &s.ops).collect::<Vec<_>>());
    run_graph(nodes, inputs, consts, &[out]).unwrap().remove(0)
}

fn scalar(ty: ElemType, v: f32) -> T {
    if ty == F16 {
        T::f16(&[], &[v])
    } else {
        T::f32(&[], &[v])
    }
}

#[test]
fn erf_gelu_chain_is_one_step() {
    let mut rng = common::rng("erf_gelu_chain_is_one_step");
    for ty in [F32, F16] {
        let s: &[u64] = &[3, 5, 67];
        let x = floats(&mut rng, ty, s, -5.0, 5.0, &[0.0, -0.0]);
        let (c, one, half) = (scalar(ty, std::f32::consts::SQRT_2), scalar(ty, 1.0), scalar(ty, 0.5));
        let v = |n: &str| Some(value(n, ty, s));
        let k = |n: &str, t: &T| Some(const_val(n, t));
        let nodes = [
            node("Div", 14, vec![v("x"), k("c", &c)], vec![value("d", ty, s)], vec![]),
            node("Erf", 13, vec![v("d")], vec![value("e", ty, s)], vec![]),
            node("Add", 14, vec![v("e"), k("one", &one)], vec![value("f", ty, s)], vec![]),
            node("Mul", 14, vec![v("x"), v("f")], vec![value("g", ty, s)], vec![]),
            node("Mul", 14, vec![v("g"), k("half", &half)], vec![value("y", ty, s)], vec![]),
        ];
        let got = one_step(&nodes, &[("x", &x)], &[("c", &c), ("one", &one), ("half", &half)], "y");
        let sqrt2 = c.values()[0];
        let want = expect(&[&x], s, |a| a[0] * (erf(a[0] / sqrt2) + 1.0) * 0.5, ty);
        let (at, rt) = tol(ty, 2e-7, 2e-6);
        assert_close(&format!("gelu chain {ty}"), &got.values(), &want, at, rt);
    }
}

#[test]
fn mask_chain_broadcasts_mid_chain() {
    let mut rng = common::rng("mask_chain_broadcasts_mid_chain");
    for (mask_ty, ty) in [(I64, F32), (Bool, F32), (I64, F16)] {
        let ms: &[u64] = &[2, 1, 1, 7];
        let ss: &[u64] = &[2, 3, 7, 7];
        let bits: Vec<bool> = (0..14).map(|_| rng.random()).collect();
        let mask = if mask_ty == Bool {
            T::bool(ms, &bits)
        } else {
            T::i64(ms, &bits.iter().map(|&b| b as i64).collect::<Vec<_>>())
        };
        let scores = floats(&mut rng, ty, ss, -3.0, 3.0, &[]);
        let (one, big) = (scalar(ty, 1.0), scalar(ty, -10000.0));
        let nodes = [
            node(
                "Cast",
                13,
                vec![Some(value("m", mask_ty, ms))],
                vec![value("mf", ty, ms)],
                vec![("to", Attr::Int(ty.onnx() as i64))],
            ),
            node(
                "Sub",
                14,
                vec![Some(const_val("one", &one)), Some(value("mf", ty, ms))],
                vec![value("inv", ty, ms)],
                vec![],
            ),
            node(
                "Mul",
                14,
                vec![Some(value("inv", ty, ms)), Some(const_val("big", &big))],
                vec![value("bias", ty, ms)],
                vec![],
            ),
            node(
                "Add",
                14,
                vec![Some(value("s", ty, ss)), Some(value("bias", ty, ms))],
                vec![value("y", ty, ss)],
                vec![],
            ),
        ];
        let got = one_step(&nodes, &[("m", &mask), ("s", &scores)], &[("one", &one), ("big", &big)], "y");
        let want = expect(&[&scores, &mask], ss, |a| a[0] + (1.0 - a[1]) * -10000.0, ty);
        let (at, rt) = tol(ty, 1e-6, 1e-6);
        assert_close(&format!("mask chain {mask_ty} {ty}"), &got.values(), &want, at, rt);
    }
}

#[test]
fn bool_chain_and_select() {
    let mut rng = common::rng("bool_chain_and_select");
    let s: &[u64] = &[7, 3];
    let x = floats(&mut rng, F32, s, -2.0, 2.0, &[f32::NAN]);
    let m = T::bool(&[3], &[true, false, true]);
    let t = T::f32(&[], &[0.75]);
    let zero = T::f32(&[1], &[0.0]);
    let nodes = [
        node("Abs", 13, vec![Some(value("x", F32, s))], vec![value("a", F32, s)], vec![]),
        node(
            "Greater",
            13,
            vec![Some(value("a", F32, s)), Some(value("t", F32, &[]))],
            vec![value("g", Bool, s)],
            vec![],
        ),
        node(
            "And",
            7,
            vec![Some(value("g", Bool, s)), Some(value("m", Bool, &[3]))],
            vec![value("h", Bool, s)],
            vec![],
        ),
        node("Not", 1, vec![Some(value("h", Bool, s))], vec![value("k", Bool, s)], vec![]),
    ];
    let feeds: [(&str, &T); 3] = [("x", &x), ("t", &t), ("m", &m)];
    let got = one_step(&nodes, &feeds, &[], "k");
    let want = expect(&[&x, &m], s, |a| !(a[0].abs() > 0.75 && a[1] != 0.0) as u8 as f64, Bool);
    assert_eq!(got.data.len(), 21);
    assert_eq!(got.values(), want);
    let mut more = nodes.to_vec();
    more.push(node(
        "Where",
        16,
        vec![Some(value("k", Bool, s)), Some(value("x", F32, s)), Some(const_val("zero", &zero))],
        vec![value("y", F32, s)],
        vec![],
    ));
    let got = one_step(&more, &feeds, &[("zero", &zero)], "y");
    let want = expect(&[&x, &m], s, |a| if !(a[0].abs() > 0.75 && a[1] != 0.0) { a[0] } else { 0.0 }, F32);
    assert_close("bool chain into Where", &got.values(), &want, 0.0, 0.0);
}

/// Log and Sqrt of negative values are NaN inside one fused kernel, where a driver that assumes no
/// NaN folds exp(log(x)) and sqrt(x)² to x (llvmpipe did: IsNaN then saw none; fuzz seed 811170):
/// IsNaN(Exp(Log(x))) and IsNaN(Pow(Sqrt(x), 2)) are true exactly where x < 0, in f32 and f16.
#[test]
fn log_and_sqrt_keep_their_nan_through_a_fused_chain() {
    let mut rng = common::rng("log_and_sqrt_keep_their_nan_through_a_fused_chain");
    for ty in [F32, F16] {
        let s: &[u64] = &[5, 37];
        let x = floats(&mut rng, ty, s, -3.0, 3.0, &[0.0, 1.0]);
        let two = scalar(ty, 2.0);
        let v = |n: &str| Some(value(n, ty, s));
        let chains = [
            (
                node("Log", 13, vec![v("x")], vec![value("l", ty, s)], vec![]),
                node("Exp", 13, vec![v("l")], vec![value("e", ty, s)], vec![]),
            ),
            (
                node("Sqrt", 13, vec![v("x")], vec![value("l", ty, s)], vec![]),
                node("Pow", 15, vec![v("l"), Some(const_val("two", &two))], vec![value("e", ty, s)], vec![]),
            ),
        ];
        for (first, second) in chains {
            let what = format!("{} {ty}", first.op_type);
            let nodes = [first, second, node("IsNaN", 20, vec![v("e")], vec![value("y", Bool, s)], vec![])];
            let got = one_step(&nodes, &[("x", &x)], &[("two", &two)], "y");
            let want = expect(&[&x], s, |a| (a[0] < 0.0) as u8 as f64, Bool);
            assert_eq!(got.values(), want, "{what}");
        }
    }
}

/// Exp's overflow to infinity and underflow to 0 inside one fused kernel, where a driver that
/// assumes no infinity folds log(exp(x)) to x: IsInf(Log(Exp(x))) is true past ln(FLT_MAX) and
/// below ln(2^-150), false between (values clear of f32's subnormals, which a driver may flush).
#[test]
fn exp_keeps_its_overflow_through_a_fused_chain() {
    let xs = [100.0, 1e30, 89.0, -200.0, -1e30, 0.5, -3.0, 80.0, -80.0, 0.0];
    let s: &[u64] = &[xs.len() as u64];
    let x = T::f32(s, &xs);
    let v = |n: &str| Some(value(n, F32, s));
    let nodes = [
        node("Exp", 13, vec![v("x")], vec![value("e", F32, s)], vec![]),
        node("Log", 13, vec![v("e")], vec![value("l", F32, s)], vec![]),
        node("IsInf", 20, vec![v("l")], vec![value("y", Bool, s)], vec![]),
    ];
    let got = one_step(&nodes, &[("x", &x)], &[], "y");
    let want: Vec<f64> = xs.iter().map(|&a| (a.exp().ln().is_infinite()) as u8 as f64).collect();
    assert_eq!(want.iter().filter(|&&w| w == 1.0).count(), 5, "the case");
    assert_eq!(got.values(), want);
}

/// Sin and Cos against float64 within a few f32 ulps: small arguments (where sin(x)/x needs
/// relative accuracy), values near multiples of π/2, positions of a rotary table up to 2^14, NaN
/// and ±inf (NaN). A driver's own sin is exact only to 2^-11 absolutely in WGSL; this fails with
/// the plain builtins on the NVIDIA driver.
#[test]
fn sin_and_cos_are_accurate_to_a_few_ulps() {
    let mut rng = common::rng("sin_and_cos_are_accurate_to_a_few_ulps");
    let mut xs: Vec<f32> = vec![0.0, -0.0, 1e-30, -3e-8, 1e-4, 0.5, 1.0, 3.0, 100.0, 12_345.67, 16_384.0];
    for k in 1..40 {
        let m = k as f64 * std::f64::consts::FRAC_PI_2;
        xs.extend([m as f32, f32::from_bits((m as f32).to_bits() + 1), -(m as f32)]);
    }
    xs.extend((0..400).map(|_| 10f32.powf(rng.random_range(-6.0..4.2)) * if rng.random() { 1.0 } else { -1.0 }));
    let n = xs.len() as u64;
    let x = T::f32(&[n], &xs);
    let mut with_specials = xs.clone();
    with_specials.extend([f32::NAN, f32::INFINITY, f32::NEG_INFINITY]);
    let xsp = T::f32(&[n + 3], &with_specials);
    for (op, f) in [("Sin", f64::sin as fn(f64) -> f64), ("Cos", f64::cos)] {
        let nodes = [node(op, 7, vec![Some(value("x", F32, &[n]))], vec![value("y", F32, &[n])], vec![])];
        let got = one_step(&nodes, &[("x", &x)], &[], "y").values();
        for (&g, &v) in got.iter().zip(&xs) {
            let w = f(f64::from(v));
            // A few ulps of the result, or of the reduced argument's rounding (2^-24 · |x| · 2^-8).
            let bound = 4.0 * f64::from(f32::EPSILON) * w.abs().max(1e-30) + 1e-9 * f64::from(v).abs().max(1.0);
            assert!((g - w).abs() <= bound, "{op}({v:e}) = {g:e}, float64 {w:e} (bound {bound:.1e})");
        }
        let nodes = [node(op, 7, vec![Some(value("x", F32, &[n + 3]))], vec![value("y", F32, &[n + 3])], vec![])];
        let got = one_step(&nodes, &[("x", &xsp)], &[], "y").values();
        assert!(got[n as usize..].iter().all(|g| g.is_nan()), "{op} of NaN and ±inf: {:?}", &got[n as usize..]);
    }
}

#[test]
fn bad_shapes_are_errors() {
    let a = T::f32(&[2, 3], &[0.0; 6]);
    let b = T::f32(&[4], &[0.0; 4]);
    let err = run("Add", 14, &[&a, &b], F32, vec![]).unwrap_err();
    assert!(err.contains("Add_node") && err.contains("[2, 3], [4]"), "{err}");
    // Ten alternating broadcast dimensions exceed the eight the kernel walks.
    let sa: Vec<u64> = (0..10).map(|d| if d % 2 == 0 { 2 } else { 1 }).collect();
    let sb: Vec<u64> = (0..10).map(|d| if d % 2 == 0 { 1 } else { 2 }).collect();
    let (a, b) = (T::f32(&sa, &[1.0; 32]), T::f32(&sb, &[1.0; 32]));
    let err = run("Mul", 14, &[&a, &b], F32, vec![]).unwrap_err();
    assert!(err.contains("dimensions"), "{err}");
    // Empty tensors: no work, an empty result.
    let e = T::f32(&[0, 3], &[]);
    assert_eq!(run("Add", 14, &[&e, &T::f32(&[3], &[1.0; 3])], F32, vec![]).unwrap().shape, vec![0, 3]);
}

fn opts(enable_f16: bool) -> PlacementOptions {
    PlacementOptions { enable_f16, ..PlacementOptions::defaults(profiles::get("llvmpipe").unwrap()) }
}

fn check(nd: &Node, enable_f16: bool) -> Result<(), String> {
    lookup(nd).ok_or("no definition")?.check(nd, &opts(enable_f16))
}

fn binary_node(op: &str, opset: i32, a: (i32, &[u64]), b: (i32, &[u64]), out: i32) -> Node {
    let v = |n: &str, (t, s): (i32, &[u64])| {
        let mut x = value(n, F32, s);
        x.elem_type = t;
        Some(x)
    };
    let mut y = value("y", F32, &[]);
    y.elem_type = out;
    node(op, opset, vec![v("a", a), v("b", b)], vec![y], vec![])
}

#[test]
fn placement_declines_with_reasons() {
    let (f, h, l, i, b, d) = (1, 10, 7, 6, 9, 11);
    let s: &[u64] = &[2, 3];
    for (nd, ok) in [
        (binary_node("Add", 14, (f, s), (f, &[3]), f), true),
        (binary_node("Mul", 14, (l, s), (l, s), l), true),
        (binary_node("Div", 14, (i, s), (i, &[1]), i), true),
        (binary_node("Pow", 15, (f, s), (l, s), f), true),
        (binary_node("Add", 14, (d, s), (d, s), d), false),
        (binary_node("Pow", 15, (l, s), (f, s), l), false),
        (binary_node("And", 7, (f, s), (f, s), b), false),
        (binary_node("Less", 13, (b, s), (b, s), b), false),
        (binary_node("Equal", 19, (b, s), (b, s), b), true),
        (binary_node("Add", 14, (f, s), (f, &[4]), f), false),
        (binary_node("Add", 14, (h, s), (h, s), h), true),
    ] {
        assert_eq!(
            check(&nd, true).is_ok(),
            ok,
            "{} {:?}: {:?}",
            nd.op_type,
            nd.input(0).unwrap().elem_type,
            check(&nd, true)
        );
    }
    let f16_add = binary_node("Add", 14, (h, s), (h, s), h);
    assert!(check(&f16_add, false).unwrap_err().contains("float16"));
    let mut legacy = binary_node("Add", 6, (f, s), (f, &[2]), f);
    legacy.attrs.insert("axis".into(), Attr::Int(0));
    assert!(check(&legacy, true).unwrap_err().contains("axis"));
    let x = Some(value("x", F32, s));
    let gelu =
        node("Gelu", 20, vec![x.clone()], vec![value("y", F32, s)], vec![("approximate", Attr::String("erf".into()))]);
    assert!(check(&gelu, true).unwrap_err().contains("approximate"));
    let mut y = value("y", F32, s);
    y.elem_type = d;
    let cast = node("Cast", 21, vec![x.clone()], vec![y], vec![("to", Attr::Int(d as i64))]);
    assert!(check(&cast, true).is_err());
    let mismatch = node("Cast", 21, vec![x], vec![value("y", I32, s)], vec![("to", Attr::Int(7))]);
    assert!(check(&mismatch, true).is_err());
    let many: Vec<_> = (0..40).map(|k| Some(value(&format!("x{k}"), F32, s))).collect();
    let sum = node("Sum", 13, many, vec![value("y", F32, s)], vec![]);
    assert!(check(&sum, true).unwrap_err().contains("storage buffers"));
}
