//! The CNN ops through the program builder and executor on the test adapter, against float64
//! references on fresh random data, in f32 and f16: MaxPool, AveragePool, GlobalMaxPool and
//! GlobalAveragePool over 1 to 3 spatial axes with padding, strides, dilations, ceil_mode and
//! auto_pad; BatchNormalization.
mod common;

use common::graph::{node, run_graph, val, T};
use ep_kernels::caps::profiles;
use ep_kernels::graph::{Attr, PlacementOptions};
use ep_kernels::ops::pool::PoolAttrs;
use ep_kernels::ElemType;
use rand::Rng;

fn random(rng: &mut impl Rng, ty: ElemType, shape: &[u64]) -> (Vec<f64>, T) {
    let n: u64 = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|_| rng.random_range(-2.0f32..2.0)).collect();
    let t = if ty == ElemType::F16 { T::f16(shape, &v) } else { T::f32(shape, &v) };
    (t.values(), t)
}

/// The pool of `x` (shape padded to 3 spatial axes) by a direct loop over each window.
fn reference(x: &[f64], shape: &[u64], attrs: &PoolAttrs, max: bool, include_pad: bool) -> (Vec<u64>, Vec<f64>) {
    let g = attrs.resolve(shape).unwrap();
    let [id, ih, iw] = g.input.map(|v| v as i64);
    let mut y = Vec::new();
    for plane in 0..g.planes as i64 {
        for od in 0..g.out[0] as i64 {
            for oh in 0..g.out[1] as i64 {
                for ow in 0..g.out[2] as i64 {
                    let (mut acc, mut inside, mut counted) = (if max { f64::NEG_INFINITY } else { 0.0 }, 0, 0);
                    for kd in 0..g.kernel[0] as i64 {
                        for kh in 0..g.kernel[1] as i64 {
                            for kw in 0..g.kernel[2] as i64 {
                                let at = [
                                    od * g.stride[0] as i64 - g.pad_begin[0] as i64 + kd * g.dilation[0] as i64,
                                    oh * g.stride[1] as i64 - g.pad_begin[1] as i64 + kh * g.dilation[1] as i64,
                                    ow * g.stride[2] as i64 - g.pad_begin[2] as i64 + kw * g.dilation[2] as i64,
                                ];
                                let ends = [id, ih, iw];
                                if (0..3).all(|a| at[a] < ends[a] + g.pad_end[a] as i64) {
                                    counted += 1;
                                }
                                if (0..3).any(|a| at[a] < 0 || at[a] >= ends[a]) {
                                    continue;
                                }
                                let v = x[(((plane * id + at[0]) * ih + at[1]) * iw + at[2]) as usize];
                                inside += 1;
                                acc = if max { acc.max(v) } else { acc + v };
                            }
                        }
                    }
                    let n = if include_pad { counted } else { inside };
                    y.push(if max { acc } else { acc / n.max(1) as f64 });
                }
            }
        }
    }
    (g.out_shape, y)
}

fn check(test: &str, op: &str, ty: ElemType, shape: &[u64], attrs: Vec<(&str, Attr)>) {
    let mut rng = common::rng(test);
    let (xv, x) = random(&mut rng, ty, shape);
    let n = node(op, 19, vec![Some(val("x", ty, shape))], vec![val("y", ty, &[])], attrs);
    let pool = PoolAttrs::of(&n);
    let max = op.ends_with("MaxPool");
    let include_pad = n.int("count_include_pad") == Some(1);
    let (want_shape, want) = reference(&xv, shape, &pool, max, include_pad);
    let got = run_graph(&[n], &[("x", &x)], &[], &["y"]).unwrap();
    assert_eq!(got[0].shape, want_shape, "{test}: shape");
    let (atol, rtol) = if ty == ElemType::F16 { (2e-3, 2e-3) } else { (1e-5, 1e-5) };
    for (i, (g, w)) in got[0].values().iter().zip(&want).enumerate() {
        assert!((g - w).abs() <= atol + rtol * w.abs(), "{test}: element {i}: got {g}, want {w}");
    }
}

fn ints(v: &[i64]) -> Attr {
    Attr::Ints(v.to_vec())
}

#[test]
fn max_pool_2d_resnet_stem() {
    for ty in [ElemType::F32, ElemType::F16] {
        let attrs = vec![("kernel_shape", ints(&[3, 3])), ("strides", ints(&[2, 2])), ("pads", ints(&[1, 1, 1, 1]))];
        check("max_stem", "MaxPool", ty, &[2, 5, 17, 13], attrs);
    }
}

#[test]
fn max_pool_dilation_ceil_and_auto_pad() {
    let dil = vec![("kernel_shape", ints(&[2, 3])), ("dilations", ints(&[2, 1])), ("ceil_mode", Attr::Int(1))];
    check("max_dil_ceil", "MaxPool", ElemType::F32, &[1, 3, 11, 9], [dil, vec![("strides", ints(&[2, 2]))]].concat());
    let same =
        vec![("kernel_shape", ints(&[3])), ("strides", ints(&[2])), ("auto_pad", Attr::String("SAME_LOWER".into()))];
    check("max_same_1d", "MaxPool", ElemType::F32, &[2, 3, 10], same);
    check("max_3d", "MaxPool", ElemType::F32, &[1, 2, 5, 6, 7], vec![("kernel_shape", ints(&[2, 3, 2]))]);
}

#[test]
fn average_pool_padding_counts() {
    for include in [0, 1] {
        let attrs = vec![
            ("kernel_shape", ints(&[3, 3])),
            ("strides", ints(&[2, 2])),
            ("pads", ints(&[1, 0, 2, 1])),
            ("ceil_mode", Attr::Int(1)),
            ("count_include_pad", Attr::Int(include)),
        ];
        for ty in [ElemType::F32, ElemType::F16] {
            check("avg_pads", "AveragePool", ty, &[2, 3, 9, 10], attrs.clone());
        }
    }
    let same = vec![("kernel_shape", ints(&[2, 2])), ("auto_pad", Attr::String("SAME_UPPER".into()))];
    check("avg_same", "AveragePool", ElemType::F32, &[1, 4, 7, 5], same);
}

#[test]
fn global_pools() {
    for ty in [ElemType::F32, ElemType::F16] {
        check("gap", "GlobalAveragePool", ty, &[2, 19, 7, 7], vec![]);
        check("gmp", "GlobalMaxPool", ty, &[3, 5, 9], vec![]);
    }
    check("gap_3d", "GlobalAveragePool", ElemType::F32, &[1, 3, 3, 4, 5], vec![]);
    // Planes long enough for one workgroup each (odd lengths, fewer and more than its invocations).
    for ty in [ElemType::F32, ElemType::F16] {
        check("gap_shared", "GlobalAveragePool", ty, &[2, 3, 13, 11], vec![]);
        check("gmp_shared", "GlobalMaxPool", ty, &[1, 5, 29, 17], vec![]);
    }
}

#[test]
fn bad_attributes_are_declined() {
    let opts = PlacementOptions::defaults(profiles::get("llvmpipe").unwrap());
    let x = val("x", ElemType::F32, &[1, 2, 8, 8]);
    let def = |attrs: Vec<(&str, Attr)>, outs: Vec<ep_kernels::graph::ValueInfo>| {
        let n = node("MaxPool", 12, vec![Some(x.clone())], outs, attrs);
        ep_kernels::ops::lookup(&n).unwrap().check(&n, &opts)
    };
    let y = || vec![val("y", ElemType::F32, &[])];
    let k = ("kernel_shape", ints(&[2, 2]));
    assert!(def(vec![k.clone()], y()).is_ok());
    let bad = [
        vec![k.clone(), ("strides", ints(&[0, 1]))],
        vec![k.clone(), ("pads", ints(&[-1, 0, 0, 0]))],
        vec![k.clone(), ("dilations", ints(&[1]))],
        vec![("kernel_shape", ints(&[9, 9]))],
        vec![],
    ];
    for attrs in bad {
        let e = def(attrs.clone(), y()).unwrap_err();
        assert!(!e.is_empty(), "{attrs:?}");
    }
    let indices = vec![val("y", ElemType::F32, &[]), val("i", ElemType::I64, &[])];
    assert!(def(vec![k], indices).unwrap_err().contains("Indices"));
}

#[test]
fn batch_normalization() {
    let mut rng = common::rng("batch_normalization");
    for ty in [ElemType::F32, ElemType::F16] {
        for shape in [&[2u64, 5, 3, 7][..], &[3, 4], &[1, 6, 9]] {
            let c = shape[1];
            let (xv, x) = random(&mut rng, ty, shape);
            let (sv, s) = random(&mut rng, ty, &[c]);
            let (bv, b) = random(&mut rng, ty, &[c]);
            let (mv, m) = random(&mut rng, ty, &[c]);
            let (vv, _) = random(&mut rng, ty, &[c]);
            let vv: Vec<f64> = vv.iter().map(|v| v.abs()).collect();
            let v = if ty == ElemType::F16 {
                T::f16(&[c], &vv.iter().map(|&x| x as f32).collect::<Vec<_>>())
            } else {
                T::f32(&[c], &vv.iter().map(|&x| x as f32).collect::<Vec<_>>())
            };
            let names = ["x", "s", "b", "m", "v"];
            let ins = [&x, &s, &b, &m, &v];
            let inputs = names.iter().zip(ins).map(|(n, t)| Some(val(n, ty, &t.shape))).collect();
            let eps = 1e-3f32;
            let n =
                node("BatchNormalization", 15, inputs, vec![val("y", ty, shape)], vec![("epsilon", Attr::Float(eps))]);
            let feeds: Vec<(&str, &T)> = names.iter().copied().zip(ins).collect();
            let got = run_graph(&[n], &feeds, &[], &["y"]).unwrap();
            let inner: u64 = shape[2..].iter().product();
            let (atol, rtol) = if ty == ElemType::F16 { (4e-3, 4e-3) } else { (1e-5, 1e-5) };
            for (i, g) in got[0].values().iter().enumerate() {
                let ch = (i as u64 / inner % c) as usize;
                let w = (xv[i] - mv[ch]) / (vv[ch] + eps as f64).sqrt() * sv[ch] + bv[ch];
                assert!((g - w).abs() <= atol + rtol * w.abs(), "{shape:?} element {i}: got {g}, want {w}");
            }
        }
    }
    let opts = PlacementOptions::defaults(profiles::get("llvmpipe").unwrap());
    let x = val("x", ElemType::F32, &[1, 3, 4, 4]);
    let cv = |n: &str, len: u64| Some(val(n, ElemType::F32, &[len]));
    let training = node(
        "BatchNormalization",
        15,
        vec![Some(x.clone()), cv("s", 3), cv("b", 3), cv("m", 3), cv("v", 3)],
        vec![val("y", ElemType::F32, &[])],
        vec![("training_mode", Attr::Int(1))],
    );
    assert!(ep_kernels::ops::lookup(&training).unwrap().check(&training, &opts).unwrap_err().contains("training"));
    let wrong = node(
        "BatchNormalization",
        15,
        vec![Some(x), cv("s", 4), cv("b", 3), cv("m", 3), cv("v", 3)],
        vec![val("y", ElemType::F32, &[])],
        vec![],
    );
    assert!(ep_kernels::ops::lookup(&wrong).unwrap().check(&wrong, &opts).is_err());
}

/// numpy's pad of `x` (`shape`) by `(begin, end)` per axis (negative: crop) in `mode`.
fn pad_reference(x: &[f64], shape: &[u64], begin: &[i64], end: &[i64], mode: &str, value: f64) -> (Vec<u64>, Vec<f64>) {
    let out: Vec<u64> = (0..shape.len()).map(|d| (shape[d] as i64 + begin[d] + end[d]) as u64).collect();
    let total: u64 = out.iter().product();
    let mut y = Vec::new();
    'elems: for e in 0..total {
        let (mut rest, mut src, mut stride) = (e, 0i64, 1i64);
        for d in (0..shape.len()).rev() {
            let (n, o) = (shape[d] as i64, (rest % out[d]) as i64);
            rest /= out[d];
            let mut i = o - begin[d];
            if i < 0 || i >= n {
                i = match mode {
                    "edge" => i.clamp(0, n - 1),
                    "wrap" => i.rem_euclid(n),
                    "reflect" => {
                        let period = 2 * (n - 1).max(1);
                        let r = i.abs() % period;
                        if n == 1 {
                            0
                        } else if r >= n {
                            period - r
                        } else {
                            r
                        }
                    }
                    _ => {
                        y.push(value);
                        continue 'elems;
                    }
                };
            }
            src += i * stride;
            stride *= n;
        }
        y.push(x[src as usize]);
    }
    (out, y)
}

#[test]
fn pad_every_mode() {
    let mut rng = common::rng("pad_every_mode");
    let i64s = |name: &str, v: &[i64]| common::graph::const_val(name, &T::i64(&[v.len() as u64], v));
    for ty in [ElemType::F32, ElemType::F16] {
        for mode in ["constant", "reflect", "edge", "wrap"] {
            let shape = [2u64, 3, 5, 7];
            let (xv, x) = random(&mut rng, ty, &shape);
            // Pads on the last two axes only (opset 18 axes), one of them cropping.
            let pads = [2i64, 3, 1, -2];
            let value = if ty == ElemType::F16 { T::f16(&[], &[1.5]) } else { T::f32(&[], &[1.5]) };
            let inputs = vec![
                Some(val("x", ty, &shape)),
                Some(i64s("pads", &pads)),
                Some(common::graph::const_val("v", &value)),
                Some(i64s("axes", &[-2, 3])),
            ];
            let n = node("Pad", 19, inputs, vec![val("y", ty, &[])], vec![("mode", Attr::String(mode.into()))]);
            let got = run_graph(&[n], &[("x", &x)], &[], &["y"]).unwrap();
            let (shape_want, want) = pad_reference(&xv, &shape, &[0, 0, 2, 3], &[0, 0, 1, -2], mode, 1.5);
            assert_eq!(got[0].shape, shape_want, "{mode}");
            assert_eq!(got[0].values(), want, "{mode} {ty}");
        }
    }
    // Opset 2: pads and value as attributes, every axis.
    let (xv, x) = random(&mut rng, ElemType::F32, &[4, 6]);
    let attrs = vec![("pads", Attr::Ints(vec![1, 0, 2, 3])), ("value", Attr::Float(-2.0))];
    let n = node("Pad", 2, vec![Some(val("x", ElemType::F32, &[4, 6]))], vec![val("y", ElemType::F32, &[])], attrs);
    let got = run_graph(&[n], &[("x", &x)], &[], &["y"]).unwrap();
    assert_eq!(got[0].values(), pad_reference(&xv, &[4, 6], &[1, 0], &[2, 3], "constant", -2.0).1);
    // A computed pads input and an over-cropping pad are declined.
    let opts = PlacementOptions::defaults(profiles::get("llvmpipe").unwrap());
    let xi = Some(val("x", ElemType::F32, &[4, 6]));
    let runtime = node(
        "Pad",
        19,
        vec![xi.clone(), Some(val("p", ElemType::I64, &[4]))],
        vec![val("y", ElemType::F32, &[])],
        vec![],
    );
    assert!(ep_kernels::ops::lookup(&runtime).unwrap().check(&runtime, &opts).unwrap_err().contains("run time"));
    let crop = node("Pad", 19, vec![xi, Some(i64s("p", &[0, -7, 0, 0]))], vec![val("y", ElemType::F32, &[])], vec![]);
    assert!(ep_kernels::ops::lookup(&crop).unwrap().check(&crop, &opts).is_err());
}

/// GroupNormalization of `x` ([N, C, spatial…]) in float64: scale and bias per channel, or per
/// group when `per_group`.
fn group_norm_reference(x: &[f64], shape: &[u64], groups: usize, s: &[f64], b: &[f64], eps: f64) -> Vec<f64> {
    let (c, spatial) = (shape[1] as usize, shape[2..].iter().product::<u64>() as usize);
    let len = c / groups * spatial;
    let mut y = Vec::new();
    for (r, row) in x.chunks(len).enumerate() {
        let mean = row.iter().sum::<f64>() / len as f64;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / len as f64;
        for (i, v) in row.iter().enumerate() {
            let ch = (r % groups) * (c / groups) + i / spatial;
            let k = if s.len() == c { ch } else { r % groups };
            y.push((v - mean) / (var + eps).sqrt() * s[k] + b[k]);
        }
    }
    y
}

#[test]
fn group_and_instance_normalization() {
    let mut rng = common::rng("group_and_instance_normalization");
    // (op, opset, X, groups, scale length)
    // The last two have few long rows, split into chunks (`chunks_for`), the last chunk short.
    let cases: [(&str, i32, &[u64], usize, u64); 7] = [
        ("GroupNormalization", 21, &[2, 6, 5, 7], 3, 6),
        ("GroupNormalization", 21, &[1, 4, 61, 139], 2, 4),
        ("InstanceNormalization", 6, &[1, 2, 97, 101], 2, 2),
        ("GroupNormalization", 18, &[1, 8, 9, 11], 4, 4),
        ("GroupNormalization", 21, &[2, 4, 37], 1, 4),
        ("InstanceNormalization", 6, &[2, 3, 13, 9], 3, 3),
        ("InstanceNormalization", 6, &[1, 5, 3], 5, 5),
    ];
    for ty in [ElemType::F32, ElemType::F16] {
        for (op, opset, shape, groups, k) in cases {
            let (xv, x) = random(&mut rng, ty, shape);
            let (sv, s) = random(&mut rng, ty, &[k]);
            let (bv, b) = random(&mut rng, ty, &[k]);
            let eps = 1e-3f32;
            let mut attrs = vec![("epsilon", Attr::Float(eps))];
            if op == "GroupNormalization" {
                attrs.push(("num_groups", Attr::Int(groups as i64)));
            }
            let inputs = vec![Some(val("x", ty, shape)), Some(val("s", ty, &[k])), Some(val("b", ty, &[k]))];
            let n = node(op, opset, inputs, vec![val("y", ty, shape)], attrs);
            let got = run_graph(&[n], &[("x", &x), ("s", &s), ("b", &b)], &[], &["y"]).unwrap();
            let want = group_norm_reference(&xv, shape, groups, &sv, &bv, eps as f64);
            let (atol, rtol) = if ty == ElemType::F16 { (6e-3, 4e-3) } else { (2e-5, 2e-5) };
            for (i, (g, w)) in got[0].values().iter().zip(&want).enumerate() {
                assert!((g - w).abs() <= atol + rtol * w.abs(), "{op} {shape:?} {ty}: element {i}: got {g}, want {w}");
            }
        }
    }
    let opts = PlacementOptions::defaults(profiles::get("llvmpipe").unwrap());
    let bad = node(
        "GroupNormalization",
        21,
        vec![
            Some(val("x", ElemType::F32, &[1, 6, 4])),
            Some(val("s", ElemType::F32, &[6])),
            Some(val("b", ElemType::F32, &[6])),
        ],
        vec![val("y", ElemType::F32, &[1, 6, 4])],
        vec![("num_groups", Attr::Int(4))],
    );
    assert!(ep_kernels::ops::lookup(&bad).unwrap().check(&bad, &opts).unwrap_err().contains("divisible"));
}

#[path = "ops_cnn_gpu/upsampling.rs"]
mod upsampling;

#[test]
fn large_windows_share_a_workgroup() {
    // Windows of 300 positions over 672 outputs, and of 90000 over one (past llvmpipe's 65535
    // loop iterations for one invocation): a workgroup per output.
    for include in [0, 1] {
        let attrs = vec![
            ("kernel_shape", ints(&[20, 15])),
            ("strides", ints(&[2, 2])),
            ("pads", ints(&[3, 2, 4, 1])),
            ("count_include_pad", Attr::Int(include)),
        ];
        for ty in [ElemType::F32, ElemType::F16] {
            check("avg_wide", "AveragePool", ty, &[1, 2, 40, 30], attrs.clone());
        }
    }
    for ty in [ElemType::F32, ElemType::F16] {
        check("max_wide", "MaxPool", ty, &[1, 1, 300, 300], vec![("kernel_shape", ints(&[300, 300]))]);
        let dil =
            vec![("kernel_shape", ints(&[3, 10, 12])), ("dilations", ints(&[1, 2, 1])), ("strides", ints(&[1, 3, 2]))];
        check("max_wide_3d", "MaxPool", ty, &[1, 2, 4, 30, 30], dil);
    }
    check("avg_wide_1d", "AveragePool", ElemType::F32, &[1, 3, 90_000], vec![("kernel_shape", ints(&[90_000]))]);
}
