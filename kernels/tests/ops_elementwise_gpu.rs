//! Elementwise ops through the program builder and executor: every op at every element type it
//! takes against a float64 (or exact integer) reference on fresh random data with NaN, ±Inf
//! and ±0 where they mean something; every kind of broadcasting; bool outputs of odd sizes;
//! int64 beyond 32 bits; fused chains as one step; and bad shapes as errors.
mod common;

#[path = "ops_elementwise_gpu/reference.rs"]
mod reference;

use common::graph::{const_val, node, run_graph, val, T};
use ep_kernels::graph::{build_program, Attr};
use ep_kernels::ElemType::{self, Bool, F16, F32, I32, I64};
use rand::Rng;
use reference::{assert_close, broadcast_shape, erf, expect, i64s, specials};

const NAMES: [&str; 5] = ["a", "b", "c", "d", "e"];

/// Runs one node `op` over `inputs` (named a, b, ...), giving `y` of type `out`.
fn run(op: &str, opset: i32, inputs: &[&T], out: ElemType, attrs: Vec<(&str, Attr)>) -> Result<T, String> {
    let shapes: Vec<&[u64]> = inputs.iter().map(|t| t.shape.as_slice()).collect();
    let shape = broadcast_shape(&shapes).unwrap_or_default();
    let ins = inputs.iter().zip(NAMES).map(|(t, n)| Some(val(n, t.ty, &t.shape))).collect();
    let nd = node(op, opset, ins, vec![val("y", out, &shape)], attrs);
    let feeds: Vec<(&str, &T)> = NAMES.iter().copied().zip(inputs.iter().copied()).collect();
    run_graph(&[nd], &feeds, &[], &["y"]).map(|mut v| v.remove(0))
}

/// A float tensor of `ty` with values from `lo..hi`, then `extra` values appended in place of
/// the last ones.
fn floats(rng: &mut impl Rng, ty: ElemType, shape: &[u64], lo: f32, hi: f32, extra: &[f32]) -> T {
    let len = shape.iter().product::<u64>() as usize;
    let mut v: Vec<f32> = (0..len).map(|_| rng.random_range(lo..hi)).collect();
    for (slot, &x) in v.iter_mut().rev().zip(extra.iter().rev()) {
        *slot = x;
    }
    if ty == F16 {
        T::f16(shape, &v)
    } else {
        T::f32(shape, &v)
    }
}

/// Tolerances (absolute, relative) of a float op: f16 results are judged at f16 precision.
fn tol(ty: ElemType, atol: f64, rtol: f64) -> (f64, f64) {
    if ty == F16 {
        (atol.max(2e-4), 2e-3)
    } else {
        (atol, rtol)
    }
}

type Unary = (&'static str, f32, f32, fn(f64) -> f64, f64, f64);

fn gelu(x: f64) -> f64 {
    0.5 * x * (1.0 + erf(x / std::f64::consts::SQRT_2))
}

fn gelu_tanh(x: f64) -> f64 {
    0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x)).tanh())
}

fn relu(x: f64) -> f64 {
    if x < 0.0 {
        0.0
    } else {
        x
    }
}

#[test]
fn unary_float_ops() {
    let mut rng = common::rng("unary_float_ops");
    let ops: [Unary; 18] = [
        ("Abs", -10.0, 10.0, f64::abs, 0.0, 0.0),
        ("Neg", -10.0, 10.0, |x| -x, 0.0, 0.0),
        ("Exp", -20.0, 20.0, f64::exp, 1e-30, 4e-6),
        ("Log", 0.0, 100.0, f64::ln, 1e-6, 4e-6),
        ("Sqrt", 0.0, 100.0, f64::sqrt, 0.0, 2e-7),
        ("Reciprocal", 0.5, 10.0, f64::recip, 0.0, 2e-7),
        ("Erf", -5.0, 5.0, erf, 2e-7, 2e-7),
        ("Tanh", -12.0, 12.0, f64::tanh, 2e-7, 5e-7),
        ("Sigmoid", -30.0, 30.0, |x| 1.0 / (1.0 + (-x).exp()), 1e-7, 4e-6),
        ("Relu", -10.0, 10.0, relu, 0.0, 0.0),
        ("Gelu", -6.0, 6.0, gelu, 2e-7, 2e-6),
        ("Sin", -10.0, 10.0, f64::sin, 2e-6, 0.0),
        ("Cos", -10.0, 10.0, f64::cos, 2e-6, 0.0),
        ("Floor", -10.0, 10.0, f64::floor, 0.0, 0.0),
        ("Ceil", -10.0, 10.0, f64::ceil, 0.0, 0.0),
        ("Round", -10.0, 10.0, f64::round_ties_even, 0.0, 0.0),
        ("Sqrt", -4.0, -1.0, f64::sqrt, 0.0, 0.0),
        ("Log", -4.0, -1.0, f64::ln, 0.0, 0.0),
    ];
    for ty in [F32, F16] {
        for &(op, lo, hi, f, atol, rtol) in &ops {
            let (lo, hi) = if ty == F16 && op == "Exp" { (-10.0, 10.0) } else { (lo, hi) };
            let mut extra = specials(op);
            if ty == F16 && op == "Reciprocal" {
                extra.retain(|x| x.abs() > 1e-4 || *x == 0.0);
            }
            let x = floats(&mut rng, ty, &[3, 37], lo, hi, &extra);
            let got = run(op, 13, &[&x], ty, vec![]).unwrap();
            let want = expect(&[&x], &got.shape, |v| f(v[0]), ty);
            let (a, r) = tol(ty, atol, rtol);
            assert_close(&format!("{op} {ty}"), &got.values(), &want, a, r);
        }
    }
}

#[test]
fn activations_with_attributes() {
    let mut rng = common::rng("activations_with_attributes");
    for ty in [F32, F16] {
        let x = floats(&mut rng, ty, &[5, 29], -6.0, 6.0, &[f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0]);
        let (a, r) = tol(ty, 2e-7, 2e-6);
        let got = run("LeakyRelu", 16, &[&x], ty, vec![("alpha", Attr::Float(0.3))]).unwrap();
        let want = expect(&[&x], &got.shape, |v| if v[0] < 0.0 { v[0] * 0.3f32 as f64 } else { v[0] }, ty);
        assert_close("LeakyRelu", &got.values(), &want, a, r);
        let got = run("LeakyRelu", 6, &[&x], ty, vec![]).unwrap();
        let want = expect(&[&x], &got.shape, |v| if v[0] < 0.0 { v[0] * 0.01f32 as f64 } else { v[0] }, ty);
        assert_close("LeakyRelu default", &got.values(), &want, a, r);
        let got = run("Gelu", 20, &[&x], ty, vec![("approximate", Attr::String("tanh".into()))]).unwrap();
        let want = expect(&[&x], &got.shape, |v| gelu_tanh(v[0]), ty);
        assert_close("Gelu tanh", &got.values(), &want, a.max(1e-6), r);
        let got = run("Gelu", 20, &[&x], ty, vec![("approximate", Attr::String("none".into()))]).unwrap();
        let want = expect(&[&x], &got.shape, |v| gelu(v[0]), ty);
        assert_close("Gelu none", &got.values(), &want, a, r);
    }
}

#[test]
fn nan_and_inf_tests_give_bools() {
    let specials = [f32::NAN, -f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, 1.5, f32::MAX];
    for ty in [F32, F16] {
        // 21 elements: the last word of the bool output is partly filled.
        let mut rng = common::rng("nan_and_inf_tests_give_bools");
        let x = floats(&mut rng, ty, &[7, 3], -1e4, 1e4, &specials);
        let xs = x.values();
        let got = run("IsNaN", 13, &[&x], Bool, vec![]).unwrap();
        assert_eq!(got.data.len(), 21);
        assert_eq!(got.values(), xs.iter().map(|v| v.is_nan() as u8 as f64).collect::<Vec<_>>(), "IsNaN {ty}");
        for (pos, neg) in [(1, 1), (1, 0), (0, 1), (0, 0)] {
            let attrs = vec![("detect_positive", Attr::Int(pos)), ("detect_negative", Attr::Int(neg))];
            let got = run("IsInf", 10, &[&x], Bool, attrs).unwrap();
            let want: Vec<f64> = xs
                .iter()
                .map(|v| ((*v == f64::INFINITY && pos == 1) || (*v == f64::NEG_INFINITY && neg == 1)) as u8 as f64)
                .collect();
            assert_eq!(got.values(), want, "IsInf {pos} {neg} {ty}");
        }
    }
}

#[test]
fn integer_unary_ops() {
    let big = [i64::MIN + 1, -(1 << 40) - 7, -5, 0, 3, (1 << 33) + 1, i64::MAX];
    let x = T::i64(&[7], &big);
    for (op, f) in [("Abs", i64::wrapping_abs as fn(i64) -> i64), ("Neg", i64::wrapping_neg), ("Relu", |v| v.max(0))] {
        let got = run(op, 14, &[&x], I64, vec![]).unwrap();
        assert_eq!(i64s(&got), big.iter().map(|&v| f(v)).collect::<Vec<_>>(), "{op} i64");
        let small: Vec<i32> = vec![i32::MIN + 1, -70000, -1, 0, 9, 123456, i32::MAX];
        let got = run(op, 14, &[&T::i32(&[7], &small)], I32, vec![]).unwrap();
        let want: Vec<f64> = small.iter().map(|&v| f(v as i64) as f64).collect();
        assert_eq!(got.values(), want, "{op} i32");
    }
    let b = T::bool(&[5], &[true, false, false, true, true]);
    assert_eq!(run("Not", 1, &[&b], Bool, vec![]).unwrap().values(), vec![0.0, 1.0, 1.0, 0.0, 0.0]);
}

/// Shape pairs covering every kind of broadcasting.
const PAIRS: [(&[u64], &[u64]); 7] = [
    (&[4, 37], &[4, 37]),
    (&[4, 37], &[]),
    (&[1], &[4, 37]),
    (&[4, 37], &[37]),
    (&[4, 1], &[4, 37]),
    (&[3, 1], &[1, 5]),
    (&[2, 1, 5, 3], &[3, 1, 3]),
];

#[test]
fn binary_float_ops_broadcast() {
    let mut rng = common::rng("binary_float_ops_broadcast");
    type Binary = (&'static str, fn(f64, f64) -> f64, f64);
    let ops: [Binary; 6] = [
        ("Add", |a, b| a + b, 2e-7),
        ("Sub", |a, b| a - b, 2e-7),
        ("Mul", |a, b| a * b, 2e-7),
        ("Div", |a, b| a / b, 3e-7),
        ("Max", |a, b| if a.is_nan() || b.is_nan() { f64::NAN } else { a.max(b) }, 0.0),
        ("Min", |a, b| if a.is_nan() || b.is_nan() { f64::NAN } else { a.min(b) }, 0.0),
    ];
    let odd = [f32::NAN, f32::INFINITY, -0.0, 0.0];
    for ty in [F32, F16] {
        for (sa, sb) in PAIRS {
            let a = floats(&mut rng, ty, sa, -8.0, 8.0, &odd[..odd.len().min(sa.iter().product::<u64>() as usize / 4)]);
            let b = floats(&mut rng, ty, sb, 0.5, 4.0, &[]);
            for &(op, f, rtol) in &ops {
                let got = run(op, 14, &[&a, &b], ty, vec![]).unwrap();
                assert_eq!(got.shape, broadcast_shape(&[sa, sb]).unwrap());
                let want = expect(&[&a, &b], &got.shape, |v| f(v[0], v[1]), ty);
                let (at, rt) = tol(ty, 0.0, rtol);
                assert_close(&format!("{op} {ty} {sa:?} {sb:?}"), &got.values(), &want, at, rt);
            }
        }
    }
}

#[test]
fn pow_float_and_integer_exponents() {
    let mut rng = common::rng("pow_float_and_integer_exponents");
    for ty in [F32, F16] {
        let (at, rt) = tol(ty, 1e-30, 2e-6);
        let x = floats(&mut rng, ty, &[6, 19], 0.1, 4.0, &[0.0, -0.0, f32::INFINITY, f32::NAN, 1.0]);
        let y = floats(&mut rng, ty, &[19], -3.0, 3.0, &[]);
        let got = run("Pow", 15, &[&x, &y], ty, vec![]).unwrap();
        let want = expect(&[&x, &y], &got.shape, |v| v[0].powf(v[1]), ty);
        assert_close(&format!("Pow {ty}"), &got.values(), &want, at, rt);
        // Negative bases to integer powers (int exponents too), odd and even.
        let x = floats(&mut rng, ty, &[5, 7], -3.0, 3.0, &[-0.0, f32::NEG_INFINITY, -2.0, -2.0]);
        let e: Vec<i64> = vec![-3, -2, -1, 0, 1, 2, 3];
        for exp in [T::i64(&[7], &e), T::i32(&[7], &e.iter().map(|&v| v as i32).collect::<Vec<_>>())] {
            let got = run("Pow", 15, &[&x, &exp], ty, vec![]).unwrap();
            let want = expect(&[&x, &exp], &got.shape, |v| v[0].powf(v[1]), ty);
            assert_close(&format!("Pow {ty} by {}", exp.ty), &got.values(), &want, at, rt);
        }
        // A negative base to a fractional power is NaN; ±0 and ±∞ by C's rules.
        let x = floats(&mut rng, ty, &[6], 0.0, 1.0, &[-2.0, -0.0, -0.0, 0.0, f32::NEG_INFINITY, -1.0]);
        let y = floats(&mut rng, ty, &[6], 0.0, 1.0, &[0.5, 3.0, -3.0, -1.0, 3.0, f32::INFINITY]);
        let got = run("Pow", 15, &[&x, &y], ty, vec![]).unwrap();
        let want = expect(&[&x, &y], &got.shape, |v| v[0].powf(v[1]), ty);
        assert_close(&format!("Pow specials {ty}"), &got.values(), &want, 0.0, 0.0);
    }
}

#[test]
fn integer_arithmetic_is_exact() {
    let mut rng = common::rng("integer_arithmetic_is_exact");
    let a: Vec<i64> =
        (0..45).map(|i| if i % 3 == 0 { rng.random() } else { rng.random_range(-1i64 << 40..1 << 40) }).collect();
    let b: Vec<i64> = (0..15)
        .map(|i| if i % 4 == 0 { rng.random_range(-9..9) } else { rng.random_range(-1i64 << 35..1 << 35) })
        .map(|v| if v == 0 { 7 } else { v })
        .collect();
    let (ta, tb) = (T::i64(&[3, 15], &a), T::i64(&[15], &b));
    type IntOp = (&'static str, fn(i64, i64) -> i64);
    let ops: [IntOp; 6] = [
        ("Add", i64::wrapping_add),
        ("Sub", i64::wrapping_sub),
        ("Mul", i64::wrapping_mul),
        ("Div", i64::wrapping_div),
        ("Max", |x, y| x.max(y)),
        ("Min", |x, y| x.min(y)),
    ];
    for (op, f) in ops {
        let got = run(op, 14, &[&ta, &tb], I64, vec![]).unwrap();
        let want: Vec<i64> = (0..45).map(|i| f(a[i], b[i % 15])).collect();
        assert_eq!(i64s(&got), want, "{op} i64");
        let a32: Vec<i32> = a.iter().map(|&v| (v >> 20) as i32).collect();
        let b32: Vec<i32> = b.iter().map(|&v| (v >> 12) as i32).map(|v| if v == 0 { -3 } else { v }).collect();
        let got = run(op, 14, &[&T::i32(&[3, 15], &a32), &T::i32(&[15], &b32)], I32, vec![]).unwrap();
        let want: Vec<f64> = (0..45).map(|i| f(a32[i] as i64, b32[i % 15] as i64) as i32 as f64).collect();
        assert_eq!(got.values(), want, "{op} i32");
    }
    // Truncation toward zero and the carries of 64-bit sums.
    let x = T::i64(&[6], &[7, -7, 7, -7, 0xffff_ffff, -(1i64 << 32)]);
    let y = T::i64(&[6], &[2, 2, -2, -2, 1, -1]);
    assert_eq!(i64s(&run("Div", 14, &[&x, &y], I64, vec![]).unwrap()), vec![3, -3, -3, 3, 0xffff_ffff, 1 << 32]);
    assert_eq!(i64s(&run("Add", 14, &[&x, &y], I64, vec![]).unwrap()), vec![9, -5, 5, -9, 1 << 32, -(1i64 << 32) - 1]);
}

#[path = "ops_elementwise_gpu/more.rs"]
mod more;

#[path = "ops_elementwise_gpu/chains.rs"]
mod chains;

#[path = "ops_elementwise_gpu/cnn.rs"]
mod cnn;
