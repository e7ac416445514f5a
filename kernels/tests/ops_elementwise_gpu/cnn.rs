//! The activations of convolutional networks: HardSigmoid, HardSwish, Softplus, Mish, Elu, Selu
//! (with and without attributes) and PRelu with a per-channel or full slope, in f32 and f16.
use super::*;

fn softplus(x: f64) -> f64 {
    x.max(0.0) + (-x.abs()).exp().ln_1p()
}

#[test]
fn cnn_activations() {
    let mut rng = common::rng("cnn_activations");
    type Case = (&'static str, Vec<(&'static str, Attr)>, fn(f64) -> f64);
    let cases: Vec<Case> = vec![
        ("HardSigmoid", vec![], |x| (0.2 * x + 0.5).clamp(0.0, 1.0)),
        ("HardSigmoid", vec![("alpha", Attr::Float(0.25)), ("beta", Attr::Float(0.375))], |x| {
            (0.25 * x + 0.375).clamp(0.0, 1.0)
        }),
        ("HardSwish", vec![], |x| x * (x / 6.0 + 0.5).clamp(0.0, 1.0)),
        ("Softplus", vec![], softplus),
        ("Mish", vec![], |x| x * softplus(x).tanh()),
        ("Elu", vec![], |x| if x < 0.0 { x.exp() - 1.0 } else { x }),
        ("Elu", vec![("alpha", Attr::Float(0.5))], |x| if x < 0.0 { 0.5 * (x.exp() - 1.0) } else { x }),
        ("Selu", vec![], |x| {
            let (a, g) = (f64::from(1.673_263_2_f32), f64::from(1.050_701_f32));
            g * if x <= 0.0 { a * (x.exp() - 1.0) } else { x }
        }),
        ("Selu", vec![("alpha", Attr::Float(2.0)), ("gamma", Attr::Float(0.5))], |x| {
            0.5 * if x <= 0.0 { 2.0 * (x.exp() - 1.0) } else { x }
        }),
    ];
    for ty in [F32, F16] {
        let x = floats(&mut rng, ty, &[3, 7, 5], -8.0, 8.0, &[0.0, -0.0, 30.0, -30.0, 3.0, -3.0]);
        for (op, attrs, f) in &cases {
            let (a, r) = tol(ty, 1e-6, 1e-5);
            let got = run(op, 22, &[&x], ty, attrs.clone()).unwrap();
            let want = expect(&[&x], &got.shape, |v| f(v[0]), ty);
            assert_close(&format!("{op} {attrs:?} {ty}"), &got.values(), &want, a, r);
        }
    }
}

#[test]
fn prelu_per_channel_and_full_slope() {
    let mut rng = common::rng("prelu_per_channel_and_full_slope");
    for ty in [F32, F16] {
        for slope_shape in [&[5u64, 1, 1][..], &[2, 5, 3, 7], &[7], &[1]] {
            let x = floats(&mut rng, ty, &[2, 5, 3, 7], -4.0, 4.0, &[]);
            let s = floats(&mut rng, ty, slope_shape, -1.0, 1.0, &[]);
            let got = run("PRelu", 16, &[&x, &s], ty, vec![]).unwrap();
            assert_eq!(got.shape, vec![2, 5, 3, 7]);
            let want = expect(&[&x, &s], &got.shape, |v| if v[0] < 0.0 { v[0] * v[1] } else { v[0] }, ty);
            let (a, r) = tol(ty, 1e-7, 1e-6);
            assert_close(&format!("PRelu {slope_shape:?}"), &got.values(), &want, a, r);
        }
    }
}
