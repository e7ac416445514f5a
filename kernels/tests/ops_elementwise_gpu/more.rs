//! Comparisons, logic, Where, Cast, Clip and the variadic ops.
use super::*;

#[test]
fn comparisons_broadcast_to_bools() {
    let mut rng = common::rng("comparisons_broadcast_to_bools");
    type Cmp = (&'static str, fn(f64, f64) -> bool);
    let ops: [Cmp; 5] = [
        ("Equal", |a, b| a == b),
        ("Less", |a, b| a < b),
        ("Greater", |a, b| a > b),
        ("LessOrEqual", |a, b| a <= b),
        ("GreaterOrEqual", |a, b| a >= b),
    ];
    for ty in [F32, F16, I32] {
        for (sa, sb) in PAIRS {
            let make = |rng: &mut rand::rngs::StdRng, s: &[u64], extra: &[f32]| {
                let t = floats(rng, if ty == I32 { F32 } else { ty }, s, -3.0, 3.0, extra);
                if ty == I32 {
                    T::i32(s, &t.values().iter().map(|v| v.round() as i32).collect::<Vec<_>>())
                } else {
                    let v: Vec<f32> = t.values().iter().map(|v| (v * 2.0).round() as f32 / 2.0).collect();
                    if ty == F16 {
                        T::f16(s, &v)
                    } else {
                        T::f32(s, &v)
                    }
                }
            };
            let nan: &[f32] = if ty == I32 || sa.iter().product::<u64>() < 4 { &[] } else { &[f32::NAN, -0.0] };
            let (a, b) = (make(&mut rng, sa, nan), make(&mut rng, sb, &[]));
            for &(op, f) in &ops {
                let got = run(op, 16, &[&a, &b], Bool, vec![]).unwrap();
                let want = expect(&[&a, &b], &got.shape, |v| f(v[0], v[1]) as u8 as f64, Bool);
                assert_eq!(got.values(), want, "{op} {ty} {sa:?} {sb:?}");
            }
        }
    }
    // int64 values that differ only in their high or low words, and across the sign.
    let a = [1i64 << 40, (1 << 40) + 1, -(1 << 40), -1, 0, i64::MIN, i64::MAX, 5 << 32];
    let b = [(1i64 << 40) + 1, 1 << 40, 1 << 40, 0, -1, i64::MAX, i64::MIN, 5 << 32];
    let (ta, tb) = (T::i64(&[8], &a), T::i64(&[8], &b));
    for &(op, f) in &ops {
        let got = run(op, 16, &[&ta, &tb], Bool, vec![]).unwrap();
        let want: Vec<f64> =
            a.iter().zip(&b).map(|(&x, &y)| f((x > y) as i8 as f64 - (x < y) as i8 as f64, 0.0) as u8 as f64).collect();
        assert_eq!(got.values(), want, "{op} i64");
    }
    let (p, q) = (T::bool(&[5], &[true, false, true, false, true]), T::bool(&[5], &[true, true, false, false, true]));
    assert_eq!(run("Equal", 19, &[&p, &q], Bool, vec![]).unwrap().values(), vec![1.0, 0.0, 0.0, 1.0, 1.0]);
}

#[test]
fn logic_ops_on_bools() {
    let mut rng = common::rng("logic_ops_on_bools");
    for (sa, sb) in [(&[13u64][..], &[13u64][..]), (&[5, 1], &[1, 3]), (&[2, 3, 5], &[5]), (&[9], &[])] {
        let a = T::bool(sa, &(0..sa.iter().product()).map(|_| rng.random()).collect::<Vec<bool>>());
        let b = T::bool(sb, &(0..sb.iter().product()).map(|_| rng.random()).collect::<Vec<bool>>());
        type Logic = (&'static str, fn(bool, bool) -> bool);
        let ops: [Logic; 3] = [("And", |x, y| x && y), ("Or", |x, y| x || y), ("Xor", |x, y| x != y)];
        for (op, f) in ops {
            let got = run(op, 7, &[&a, &b], Bool, vec![]).unwrap();
            let want = expect(&[&a, &b], &got.shape, |v| f(v[0] != 0.0, v[1] != 0.0) as u8 as f64, Bool);
            assert_eq!(got.values(), want, "{op} {sa:?} {sb:?}");
        }
    }
}

#[test]
fn where_selects_every_type() {
    let mut rng = common::rng("where_selects_every_type");
    let cond = T::bool(&[4, 1], &[true, false, true, false]);
    let big: Vec<i64> = (0..28).map(|_| rng.random()).collect();
    let other: Vec<i64> = (0..7).map(|_| rng.random()).collect();
    let got = run("Where", 16, &[&cond, &T::i64(&[4, 7], &big), &T::i64(&[7], &other)], I64, vec![]).unwrap();
    let want: Vec<i64> = (0..28).map(|i| if i / 7 % 2 == 0 { big[i] } else { other[i % 7] }).collect();
    assert_eq!(i64s(&got), want, "Where i64");
    for ty in [F32, F16, I32, Bool] {
        let x = match ty {
            I32 => T::i32(&[4, 7], &(0..28).map(|_| rng.random()).collect::<Vec<i32>>()),
            Bool => T::bool(&[4, 7], &(0..28).map(|_| rng.random()).collect::<Vec<bool>>()),
            _ => floats(&mut rng, ty, &[4, 7], -5.0, 5.0, &[f32::NAN]),
        };
        let y = match ty {
            I32 => T::i32(&[], &[-9]),
            Bool => T::bool(&[], &[true]),
            _ => floats(&mut rng, ty, &[], -5.0, 5.0, &[]),
        };
        let got = run("Where", 16, &[&cond, &x, &y], ty, vec![]).unwrap();
        let want = expect(&[&cond, &x, &y], &got.shape, |v| if v[0] != 0.0 { v[1] } else { v[2] }, ty);
        assert_close(&format!("Where {ty}"), &got.values(), &want, 0.0, 0.0);
    }
}

/// A test value of any element type.
#[derive(Clone, Copy, Debug)]
enum V {
    F(f64),
    I(i64),
    B(bool),
}

fn sources(ty: ElemType) -> (T, Vec<V>) {
    let fl = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        2.7,
        -2.7,
        0.5,
        -0.5,
        3e9,
        -3e9,
        1e19,
        -1e19,
        65519.0,
        65520.0,
        1e-8,
        16777217.0,
        1_099_512_676_352.0,
        -2147483648.0,
        2147483648.0,
        -9.223372e18,
        9.223372e18,
    ];
    match ty {
        F32 => (T::f32(&[22], &fl), fl.iter().map(|&v| V::F(v as f64)).collect()),
        F16 => {
            let t = T::f16(&[11], &fl[..11]);
            let v = t.values().into_iter().map(V::F).collect();
            (t, v)
        }
        I32 => {
            let v = [i32::MIN, i32::MAX, -1, 0, 1, 16777217, -16777217, 70000, 2049];
            (T::i32(&[9], &v), v.iter().map(|&x| V::I(x as i64)).collect())
        }
        I64 => {
            let v = [
                i64::MIN,
                i64::MAX,
                -1,
                0,
                1,
                (1 << 53) + 1,
                (1 << 60) + (1 << 36) + 1,
                -(1 << 62) - 1,
                1 << 32,
                -(1 << 32) + 1,
                0xffff_ffff,
                (1 << 24) + 1,
                -((1 << 40) + (1 << 16) + 1),
            ];
            (T::i64(&[13], &v), v.iter().map(|&x| V::I(x)).collect())
        }
        Bool => {
            let v = [true, false, true, true, false];
            (T::bool(&[5], &v), v.iter().map(|&x| V::B(x)).collect())
        }
        ElemType::U8 => unreachable!("uint8 is not in ElemType::ALL"),
    }
}

/// ONNX Runtime's CPU cast on x86: float to integer truncates; NaN and out of range give the
/// lowest value; to bool is x != 0; integers to f16 go through f32.
fn cast_ref(v: V, to: ElemType) -> V {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    match (v, to) {
        (V::F(x), F32) => V::F(x as f32 as f64),
        (V::I(x), F32) => V::F(x as f32 as f64),
        (V::F(x), F16) => V::F(half::f16::from_f32(x as f32).to_f64()),
        (V::I(x), F16) => V::F(half::f16::from_f32(x as f32).to_f64()),
        (V::F(x), I32) => {
            V::I(if (-2147483648.0..2147483648.0).contains(&x.trunc()) { x.trunc() as i64 } else { i32::MIN as i64 })
        }
        (V::F(x), I64) => V::I(if (-LIMIT..LIMIT).contains(&x) { x.trunc() as i64 } else { i64::MIN }),
        (V::I(x), I32) => V::I(x as i32 as i64),
        (V::I(x), I64) => V::I(x),
        (V::F(x), Bool) => V::B(x != 0.0),
        (V::I(x), Bool) => V::B(x != 0),
        (V::B(b), Bool) => V::B(b),
        (V::B(b), F32 | F16) => V::F(b as u8 as f64),
        (V::B(b), _) => V::I(b as i64),
        (_, ElemType::U8) => unreachable!("uint8 is not in ElemType::ALL"),
    }
}

#[test]
fn cast_between_every_pair() {
    for from in ElemType::ALL {
        let (t, values) = sources(from);
        for to in ElemType::ALL {
            let got = run("Cast", 21, &[&t], to, vec![("to", Attr::Int(to.onnx() as i64))]).unwrap();
            let want: Vec<V> = values.iter().map(|&v| cast_ref(v, to)).collect();
            if to == I64 {
                let want: Vec<i64> = want.iter().map(|v| if let V::I(x) = v { *x } else { 0 }).collect();
                assert_eq!(i64s(&got), want, "Cast {from} -> {to}");
            } else {
                let want: Vec<f64> = want
                    .iter()
                    .map(|v| match *v {
                        V::F(x) => x,
                        V::I(x) => x as f64,
                        V::B(b) => b as u8 as f64,
                    })
                    .collect();
                assert_close(&format!("Cast {from} -> {to}"), &got.values(), &want, 0.0, 0.0);
            }
        }
    }
    // CastLike takes the type of its second input.
    let x = T::f32(&[3], &[1.5, -2.5, 7.0]);
    let like = T::i64(&[1], &[0]);
    assert_eq!(i64s(&run("CastLike", 21, &[&x, &like], I64, vec![]).unwrap()), vec![1, -2, 7]);
}

/// Clip with absent bounds at the type's finite extremes (ONNX's defaults): ±Inf clamp.
fn clip_ref(x: f64, lo: Option<f64>, hi: Option<f64>, ty: ElemType) -> f64 {
    let max = if ty == F16 { 65504.0 } else { f32::MAX as f64 };
    if x.is_nan() {
        return x;
    }
    x.max(lo.unwrap_or(-max)).min(hi.unwrap_or(max))
}

#[test]
fn clip_bounds_in_every_form() {
    let mut rng = common::rng("clip_bounds_in_every_form");
    for ty in [F32, F16] {
        let x = floats(&mut rng, ty, &[3, 21], -4.0, 4.0, &[f32::NAN, f32::INFINITY, f32::NEG_INFINITY]);
        let xv = x.values();
        let check = |got: T, lo: Option<f64>, hi: Option<f64>, what: &str| {
            let want: Vec<f64> = xv.iter().map(|&v| clip_ref(v, lo, hi, ty)).collect();
            assert_close(&format!("Clip {what} {ty}"), &got.values(), &want, 0.0, 0.0);
        };
        // Opset 6: attributes, each optional.
        for (lo, hi) in [(Some(-1.5), Some(2.0)), (Some(-1.5), None), (None, Some(2.0)), (None, None)] {
            let mut attrs = Vec::new();
            attrs.extend(lo.map(|v| ("min", Attr::Float(v as f32))));
            attrs.extend(hi.map(|v| ("max", Attr::Float(v as f32))));
            check(run("Clip", 6, &[&x], ty, attrs).unwrap(), lo, hi, "attributes");
        }
        // Opset 13: constant bounds (to the uniform) or runtime ones (inputs), either omitted.
        let scalar = |v: f32| if ty == F16 { T::f16(&[], &[v]) } else { T::f32(&[], &[v]) };
        let (lo, hi) = (scalar(-1.25), scalar(0.75));
        for constant in [true, false] {
            for (use_lo, use_hi) in [(true, true), (true, false), (false, true), (false, false)] {
                let mut inputs = vec![Some(val("x", ty, &[3, 21]))];
                let mut feeds: Vec<(&str, &T)> = vec![("x", &x)];
                let mut consts: Vec<(&str, &T)> = Vec::new();
                for (used, name, t) in [(use_lo, "lo", &lo), (use_hi, "hi", &hi)] {
                    if !used {
                        inputs.push(if name == "lo" { Some(val("", ty, &[])) } else { None });
                        continue;
                    }
                    inputs.push(Some(if constant { const_val(name, t) } else { val(name, ty, &[]) }));
                    if constant {
                        consts.push((name, t));
                    } else {
                        feeds.push((name, t));
                    }
                }
                let nd = node("Clip", 13, inputs, vec![val("y", ty, &[3, 21])], vec![]);
                let got = run_graph(&[nd], &feeds, &consts, &["y"]).unwrap().remove(0);
                let (l, h) = (use_lo.then_some(-1.25), use_hi.then_some(0.75));
                check(got, l, h, &format!("inputs constant={constant} lo={use_lo} hi={use_hi}"));
            }
        }
    }
    // Integer Clip reads its bounds as inputs.
    let v: Vec<i64> = vec![-(1 << 40), -3, 0, 5, 1 << 40];
    let got = run("Clip", 13, &[&T::i64(&[5], &v), &T::i64(&[], &[-4]), &T::i64(&[], &[1 << 35])], I64, vec![]);
    assert_eq!(i64s(&got.unwrap()), vec![-4, -3, 0, 5, 1 << 35]);
    let got =
        run("Clip", 13, &[&T::i32(&[5], &[-9, -3, 0, 5, 9]), &T::i32(&[], &[-4]), &T::i32(&[], &[6])], I32, vec![]);
    assert_eq!(got.unwrap().values(), vec![-4.0, -3.0, 0.0, 5.0, 6.0]);
}

#[test]
fn variadic_ops_chain_their_inputs() {
    let mut rng = common::rng("variadic_ops_chain_their_inputs");
    type Fold = (&'static str, fn(&[f64]) -> f64);
    let ops: [Fold; 4] = [
        ("Max", |v| v.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b))),
        ("Min", |v| v.iter().fold(f64::INFINITY, |a, &b| a.min(b))),
        ("Sum", |v| v.iter().sum()),
        ("Mean", |v| v.iter().sum::<f64>() / v.len() as f64),
    ];
    for ty in [F32, F16] {
        let a = floats(&mut rng, ty, &[2, 3, 5], -4.0, 4.0, &[]);
        let b = floats(&mut rng, ty, &[3, 1], -4.0, 4.0, &[]);
        let c = floats(&mut rng, ty, &[5], -4.0, 4.0, &[]);
        for (op, f) in ops {
            let (at, rt) = tol(ty, 1e-6, 1e-6);
            let got = run(op, 13, &[&a, &b, &c], ty, vec![]).unwrap();
            let want = expect(&[&a, &b, &c], &got.shape, f, ty);
            assert_close(&format!("{op} {ty} of 3"), &got.values(), &want, at, rt);
            let got = run(op, 13, &[&a], ty, vec![]).unwrap();
            assert_close(&format!("{op} {ty} of 1"), &got.values(), &a.values(), 0.0, 0.0);
        }
    }
    let got =
        run("Max", 13, &[&T::i32(&[3], &[1, -5, 9]), &T::i32(&[1], &[2]), &T::i32(&[3], &[0, -7, 4])], I32, vec![]);
    assert_eq!(got.unwrap().values(), vec![2.0, 2.0, 9.0]);
}
