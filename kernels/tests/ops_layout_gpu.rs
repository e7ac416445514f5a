//! Layout ops (Transpose, Concat, Slice, Split, Gather, Expand) through the program builder and
//! executor on the test adapter, compared byte for byte with plain index arithmetic on fresh
//! random data, for every element type (bool and f16 with odd counts, so packed words are
//! assembled across rows and dispatches), every attribute form, negative axes and empty tensors.
mod common;

use common::graph::{const_val, node, run_graph, val, T};
use ep_kernels::caps::profiles;
use ep_kernels::graph::{Attr, ExecOptions, Node, PlacementOptions, ValueInfo};
use ep_kernels::ops::layout::strided::{contiguous, prepare, Strided, Tuning};
use ep_kernels::ops::PrepareCx;
use ep_kernels::ElemType;
use rand::Rng;

fn random(rng: &mut impl Rng, ty: ElemType, shape: &[u64]) -> T {
    let n = shape.iter().product::<u64>() as usize;
    let floats = |rng: &mut dyn rand::RngCore| (0..n).map(|_| rng.random_range(-100.0f32..100.0)).collect::<Vec<_>>();
    match ty {
        ElemType::F32 => T::f32(shape, &floats(rng)),
        ElemType::F16 => T::f16(shape, &floats(rng)),
        ElemType::I32 => T::i32(shape, &(0..n).map(|_| rng.random()).collect::<Vec<i32>>()),
        ElemType::I64 => T::i64(shape, &(0..n).map(|_| rng.random()).collect::<Vec<i64>>()),
        ElemType::Bool => T::bool(shape, &(0..n).map(|_| rng.random()).collect::<Vec<bool>>()),
        ElemType::U8 => T::u8(shape, &(0..n).map(|_| rng.random()).collect::<Vec<u8>>()),
    }
}

fn unravel(mut i: u64, shape: &[u64]) -> Vec<u64> {
    let mut idx = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        idx[d] = i % shape[d];
        i /= shape[d];
    }
    idx
}

fn ravel(idx: &[u64], shape: &[u64]) -> u64 {
    idx.iter().zip(shape).fold(0, |acc, (&i, &d)| acc * d + i)
}

/// The tensor of `shape` whose element at each index copies element `src(index)` of `x`
/// (zero bytes for `None`).
fn gathered(x: &T, shape: &[u64], src: impl Fn(&[u64]) -> Option<u64>) -> T {
    let s = x.ty.size() as usize;
    let n = shape.iter().product::<u64>() as usize;
    let mut data = vec![0u8; n * s];
    for o in 0..n {
        if let Some(i) = src(&unravel(o as u64, shape)) {
            let i = i as usize;
            data[o * s..(o + 1) * s].copy_from_slice(&x.data[i * s..(i + 1) * s]);
        }
    }
    T { ty: x.ty, shape: shape.to_vec(), data }
}

fn check(got: &T, want: &T, what: &str) {
    assert_eq!(got.shape, want.shape, "{what}: shape");
    assert!(got.data == want.data, "{what}: data differs\n got {:?}\nwant {:?}", got.values(), want.values());
}

fn input(name: &str, t: &T) -> Option<ValueInfo> {
    Some(val(name, t.ty, &t.shape))
}

fn one(n: Node, inputs: &[(&str, &T)]) -> Result<T, String> {
    let out = n.outputs[0].as_ref().map(|o| o.name.clone()).unwrap_or_default();
    Ok(run_graph(&[n], inputs, &[], &[&out])?.remove(0))
}

#[test]
fn transpose() {
    let mut rng = common::rng("transpose");
    let cases: &[(&[u64], Option<&[i64]>)] = &[
        (&[3, 5, 7], None),
        (&[3, 5, 7], Some(&[0, 2, 1])),
        (&[3, 5, 7], Some(&[1, 0, 2])),
        (&[3, 5, 7], Some(&[1, 2, 0])),
        (&[3, 5, 7], Some(&[2, 0, 1])),
        (&[2, 3, 5, 7], Some(&[3, 1, 0, 2])),
        // Attention's [b, s, h, d] -> [b, h, d, s]: tiled for every size (64 % 4 == 0) ...
        (&[1, 64, 6, 10], Some(&[0, 2, 3, 1])),
        // ... tiled for 2-, 4- and 8-byte elements, strided for bool (50 % 4 != 0) ...
        (&[1, 50, 3, 33], Some(&[0, 2, 3, 1])),
        // ... and batched tiles with edges ([3, 40, 37] -> [3, 37, 40]).
        (&[3, 40, 37], Some(&[0, 2, 1])),
        (&[2, 3, 2, 3, 2, 3, 2, 3], None),
        (&[], None),
        (&[1, 1, 9], Some(&[2, 1, 0])),
        (&[3, 0, 2], Some(&[2, 0, 1])),
    ];
    for ty in ElemType::ALL {
        for &(shape, perm) in cases {
            let x = random(&mut rng, ty, shape);
            let perm: Vec<usize> = match perm {
                Some(p) => p.iter().map(|&p| p as usize).collect(),
                None => (0..shape.len()).rev().collect(),
            };
            let out: Vec<u64> = perm.iter().map(|&p| shape[p]).collect();
            let want = gathered(&x, &out, |idx| {
                let mut src = vec![0; shape.len()];
                for (d, &p) in perm.iter().enumerate() {
                    src[p] = idx[d];
                }
                Some(ravel(&src, shape))
            });
            let attrs = perm_attr(shape.len(), &perm);
            let n = node("Transpose", 21, vec![input("x", &x)], vec![val("y", ty, &out)], attrs);
            check(&one(n, &[("x", &x)]).unwrap(), &want, &format!("Transpose {ty} {shape:?} {perm:?}"));
        }
    }
}

/// `perm` as an attribute, left out when it is the default (reversed axes).
fn perm_attr(rank: usize, perm: &[usize]) -> Vec<(&'static str, Attr)> {
    if perm.iter().copied().eq((0..rank).rev()) {
        vec![]
    } else {
        vec![("perm", Attr::Ints(perm.iter().map(|&p| p as i64).collect()))]
    }
}

#[test]
fn concat() {
    let mut rng = common::rng("concat");
    let cases: &[(&[&[u64]], i64)] = &[
        (&[&[2, 3, 5], &[2, 4, 5]], 1),
        (&[&[2, 3, 5], &[2, 3, 5]], -3),
        (&[&[7], &[0], &[5]], 0),
        // Six inputs: two dispatches, the second keeping the first's parts of shared words.
        (&[&[3, 1], &[3, 2], &[3, 0], &[3, 3], &[3, 1], &[3, 1]], -1),
        (&[&[1, 3], &[2, 3], &[1, 3], &[4, 3], &[1, 3]], 0),
        (&[&[3, 0], &[3, 0]], 1),
    ];
    for ty in ElemType::ALL {
        for &(shapes, axis) in cases {
            let xs: Vec<T> = shapes.iter().map(|s| random(&mut rng, ty, s)).collect();
            let a = if axis < 0 { axis + shapes[0].len() as i64 } else { axis } as usize;
            let mut out = shapes[0].to_vec();
            out[a] = shapes.iter().map(|s| s[a]).sum();
            let mut data = Vec::new();
            let outer: u64 = out[..a].iter().product();
            for o in 0..outer {
                for x in &xs {
                    let row = (x.shape[a..].iter().product::<u64>() * x.ty.size()) as usize;
                    data.extend_from_slice(&x.data[o as usize * row..(o as usize + 1) * row]);
                }
            }
            let want = T { ty, shape: out.clone(), data };
            let names: Vec<String> = (0..xs.len()).map(|i| format!("x{i}")).collect();
            // The second input is a constant (an initializer), the others run-time inputs.
            let ins = names.iter().zip(&xs).map(|(n, x)| input(n, x)).collect();
            let n = node("Concat", 13, ins, vec![val("y", ty, &out)], vec![("axis", Attr::Int(axis))]);
            let feeds: Vec<(&str, &T)> = names.iter().map(String::as_str).zip(&xs).collect();
            let (inputs, consts): (Vec<_>, Vec<_>) = feeds.iter().enumerate().partition(|(i, _)| *i != 1);
            let inputs: Vec<(&str, &T)> = inputs.into_iter().map(|(_, f)| *f).collect();
            let consts: Vec<(&str, &T)> = consts.into_iter().map(|(_, f)| *f).collect();
            let got = run_graph(&[n], &inputs, &consts, &["y"]).unwrap().remove(0);
            check(&got, &want, &format!("Concat {ty} {shapes:?} axis {axis}"));
        }
    }
}

#[test]
fn concat_and_gather_mismatches_are_errors() {
    let a = T::f32(&[2, 3], &[0.0; 6]);
    let b = T::f32(&[2, 4], &[0.0; 8]);
    let n = node(
        "Concat",
        13,
        vec![input("a", &a), Some(val("b", ElemType::F32, &[2, 3]))],
        vec![val("y", ElemType::F32, &[4, 3])],
        vec![("axis", Attr::Int(0))],
    );
    let err = one(n, &[("a", &a), ("b", &b)]).unwrap_err();
    assert!(err.contains("Concat") && err.contains("[2, 4]"), "{err}");
    let idx = T::i64(&[2], &[0, 1]);
    let n = node(
        "Gather",
        13,
        vec![Some(val("d", ElemType::F32, &[2, 3, 1])), input("i", &idx)],
        vec![val("y", ElemType::F32, &[2, 3, 2])],
        vec![("axis", Attr::Int(2))],
    );
    let err = one(n, &[("d", &a), ("i", &idx)]).unwrap_err();
    assert!(err.contains("Gather") && err.contains("axis 2"), "{err}");
}

/// ONNX's slice of one axis as an explicit index list (the reference's own arithmetic).
fn slice_indices(dim: u64, start: i64, end: i64, step: i64) -> Vec<u64> {
    let dim = dim as i64;
    let wrap = |v: i64| if v < 0 { v.saturating_add(dim) } else { v };
    let (s, e) = (wrap(start), wrap(end));
    let (s, e) =
        if step > 0 { (s.clamp(0, dim), e.clamp(0, dim)) } else { (s.max(0).min(dim - 1), e.max(-1).min(dim - 1)) };
    let mut out = Vec::new();
    let mut i = s;
    while (step > 0 && i < e) || (step < 0 && i > e) {
        out.push(i as u64);
        i = i.saturating_add(step);
    }
    out
}

/// One Slice case: opset, input shape, starts, ends, axes, steps, and whether the constant
/// inputs are int32.
struct SliceCase {
    opset: i32,
    shape: &'static [u64],
    starts: &'static [i64],
    ends: &'static [i64],
    axes: Option<&'static [i64]>,
    steps: Option<&'static [i64]>,
    i32: bool,
}

const MAX: i64 = i64::MAX;
const MIN: i64 = i64::MIN;

fn slice_cases() -> Vec<SliceCase> {
    let c = |opset, shape, starts, ends, axes, steps, i32| SliceCase { opset, shape, starts, ends, axes, steps, i32 };
    vec![
        c(1, &[4, 5, 7], &[1, 0], &[3, -1], Some(&[0, 2]), None, false),
        c(1, &[4, 5, 7], &[0, 1], &[2, 1000], None, None, false),
        c(13, &[5, 4, 7], &[-1, 1], &[MIN, 1000], Some(&[-1, 0]), Some(&[-2, 2]), false),
        c(10, &[5, 4, 7], &[1], &[-1], None, None, true),
        c(11, &[3, 9], &[8, -100], &[-100, MAX], None, Some(&[-3, 4]), true),
        c(13, &[5, 4, 3], &[3], &[1], Some(&[1]), Some(&[1]), false),
        c(13, &[4, 3], &[10], &[20], Some(&[0]), None, false),
        c(13, &[4, 3], &[MAX], &[MIN], Some(&[-2]), Some(&[-1]), false),
    ]
}

#[test]
fn slice() {
    let mut rng = common::rng("slice");
    for ty in ElemType::ALL {
        for case in slice_cases() {
            let x = random(&mut rng, ty, case.shape);
            let rank = case.shape.len();
            let axes: Vec<usize> = match case.axes {
                Some(a) => a.iter().map(|&a| if a < 0 { a + rank as i64 } else { a } as usize).collect(),
                None => (0..case.starts.len()).collect(),
            };
            let mut lists: Vec<Vec<u64>> = case.shape.iter().map(|&d| (0..d).collect()).collect();
            for (k, &a) in axes.iter().enumerate() {
                let step = case.steps.map_or(1, |s| s[k]);
                lists[a] = slice_indices(case.shape[a], case.starts[k], case.ends[k], step);
            }
            let out: Vec<u64> = lists.iter().map(|l| l.len() as u64).collect();
            let want = gathered(&x, &out, |idx| {
                let src: Vec<u64> = idx.iter().enumerate().map(|(d, &i)| lists[d][i as usize]).collect();
                Some(ravel(&src, case.shape))
            });
            let n = slice_node(&case, &x, &out);
            let what = format!("Slice {ty} opset {} {:?} {:?}..{:?}", case.opset, case.shape, case.starts, case.ends);
            check(&one(n, &[("x", &x)]).unwrap(), &want, &what);
        }
    }
}

fn slice_node(case: &SliceCase, x: &T, out: &[u64]) -> Node {
    let ints = |name: &str, v: &[i64]| {
        let t = if case.i32 {
            T::i32(
                &[v.len() as u64],
                &v.iter().map(|&v| v.clamp(i32::MIN as i64, i32::MAX as i64) as i32).collect::<Vec<_>>(),
            )
        } else {
            T::i64(&[v.len() as u64], v)
        };
        Some(const_val(name, &t))
    };
    let y = vec![val("y", x.ty, out)];
    if case.opset < 10 {
        let mut attrs = vec![("starts", Attr::Ints(case.starts.to_vec())), ("ends", Attr::Ints(case.ends.to_vec()))];
        attrs.extend(case.axes.map(|a| ("axes", Attr::Ints(a.to_vec()))));
        return node("Slice", case.opset, vec![input("x", x)], y, attrs);
    }
    let mut ins = vec![input("x", x), ints("starts", case.starts), ints("ends", case.ends)];
    ins.push(case.axes.and_then(|a| ints("axes", a)));
    ins.extend(case.steps.map(|s| ints("steps", s)));
    node("Slice", case.opset, ins, y, vec![])
}

/// (opset, shape, axis, split attribute or input, num_outputs, sizes along the axis)
type SplitCase = (i32, &'static [u64], i64, Option<&'static [i64]>, Option<i64>, &'static [u64]);

#[test]
fn split() {
    let mut rng = common::rng("split");
    let cases: &[SplitCase] = &[
        (11, &[3, 5, 2], 1, Some(&[2, 0, 3]), None, &[2, 0, 3]),
        (2, &[3, 5, 2], -2, Some(&[4, 1]), None, &[4, 1]),
        (13, &[3, 5], -1, Some(&[1, 4]), None, &[1, 4]),
        (13, &[6, 3], 0, None, None, &[2, 2, 2]),
        (18, &[7, 3], 0, None, Some(3), &[3, 3, 1]),
        (18, &[3, 9], 1, None, Some(2), &[5, 4]),
        (13, &[0, 3], 0, Some(&[0, 0]), None, &[0, 0]),
    ];
    for ty in ElemType::ALL {
        for &(opset, shape, axis, split, num, sizes) in cases {
            let x = random(&mut rng, ty, shape);
            let a = if axis < 0 { axis + shape.len() as i64 } else { axis } as usize;
            let mut first = 0;
            let mut wants = Vec::new();
            for &len in sizes {
                let mut out = shape.to_vec();
                out[a] = len;
                wants.push(gathered(&x, &out, |idx| {
                    let mut src = idx.to_vec();
                    src[a] += first;
                    Some(ravel(&src, shape))
                }));
                first += len;
            }
            let outs: Vec<ValueInfo> =
                wants.iter().enumerate().map(|(i, w)| val(&format!("y{i}"), ty, &w.shape)).collect();
            let mut ins = vec![input("x", &x)];
            let mut attrs = vec![("axis", Attr::Int(axis))];
            match split {
                Some(s) if opset < 13 => attrs.push(("split", Attr::Ints(s.to_vec()))),
                Some(s) => ins.push(Some(const_val("split", &T::i64(&[s.len() as u64], s)))),
                None => {}
            }
            attrs.extend(num.map(|n| ("num_outputs", Attr::Int(n))));
            let names: Vec<String> = outs.iter().map(|o| o.name.clone()).collect();
            let n = node("Split", opset, ins, outs, attrs);
            let got =
                run_graph(&[n], &[("x", &x)], &[], &names.iter().map(String::as_str).collect::<Vec<_>>()).unwrap();
            for (k, (g, w)) in got.iter().zip(&wants).enumerate() {
                check(g, w, &format!("Split {ty} opset {opset} {shape:?} axis {axis} output {k}"));
            }
        }
    }
}

/// (data shape, axis, indices shape, indices, int32?, constant?)
type GatherCase = (&'static [u64], i64, &'static [u64], &'static [i64], bool, bool);

#[test]
fn gather() {
    let mut rng = common::rng("gather");
    let cases: &[GatherCase] = &[
        (&[5, 4, 3], 1, &[2, 3], &[0, -1, 2, 3, 3, -4], false, false),
        (&[5, 4, 3], -1, &[3], &[2, -3, 0], true, true),
        (&[5, 3], 0, &[], &[-5], false, false),
        (&[7], 0, &[5], &[6, 0, 6, 1, -7], true, false),
        (&[5, 4, 3], 0, &[0], &[], false, false),
        // Out of range at run time: the run fails naming the node, as ONNX Runtime's CPU EP does.
        (&[3, 4], 1, &[5], &[0, 4, -5, 1 << 40, -1], false, false),
    ];
    for ty in ElemType::ALL {
        for &(shape, axis, ishape, values, i32, constant) in cases {
            let x = random(&mut rng, ty, shape);
            let a = if axis < 0 { axis + shape.len() as i64 } else { axis } as usize;
            let out: Vec<u64> = shape[..a].iter().chain(ishape).chain(&shape[a + 1..]).copied().collect();
            let n_axis = shape[a] as i64;
            let want = gathered(&x, &out, |idx| {
                let q = ravel(&idx[a..a + ishape.len()], ishape) as usize;
                let j = if values[q] < 0 { values[q] + n_axis } else { values[q] };
                let mut src: Vec<u64> = idx[..a].to_vec();
                src.push(u64::try_from(j).ok().filter(|&j| j < n_axis as u64)?);
                src.extend_from_slice(&idx[a + ishape.len()..]);
                Some(ravel(&src, shape))
            });
            let idx = if i32 {
                T::i32(ishape, &values.iter().map(|&v| v as i32).collect::<Vec<_>>())
            } else {
                T::i64(ishape, values)
            };
            let idx_val = if constant { Some(const_val("i", &idx)) } else { input("i", &idx) };
            let n = node(
                "Gather",
                13,
                vec![input("x", &x), idx_val],
                vec![val("y", ty, &out)],
                vec![("axis", Attr::Int(axis))],
            );
            let feeds: Vec<(&str, &T)> = if constant { vec![("x", &x)] } else { vec![("x", &x), ("i", &idx)] };
            let consts: Vec<(&str, &T)> = if constant { vec![("i", &idx)] } else { vec![] };
            let result = run_graph(&[n], &feeds, &consts, &["y"]);
            if values.iter().any(|&v| v < -n_axis || v >= n_axis) {
                let err = result.expect_err("an out-of-range index fails the run");
                assert!(err.contains("Gather") && err.contains("out of range"), "{err}");
                continue;
            }
            let got = result.unwrap().remove(0);
            check(&got, &want, &format!("Gather {ty} {shape:?} axis {axis} indices {values:?}"));
        }
    }
}

#[test]
fn expand() {
    let mut rng = common::rng("expand");
    let cases: &[(&[u64], &[i64])] = &[
        (&[3, 1], &[2, 1, 4]),
        (&[2, 3], &[1]),
        (&[1, 3, 1], &[4, 1, 5]),
        (&[5], &[2, 3, 1, 5]),
        (&[], &[3, 3]),
        (&[1], &[0]),
    ];
    for ty in ElemType::ALL {
        for &(shape, target) in cases {
            let x = random(&mut rng, ty, shape);
            let rank = shape.len().max(target.len());
            let dim = |s: &[u64], d: usize| if d + s.len() >= rank { s[d + s.len() - rank] } else { 1 };
            let t: Vec<u64> = target.iter().map(|&v| v as u64).collect();
            let out: Vec<u64> =
                (0..rank).map(|d| if dim(shape, d) == 1 { dim(&t, d) } else { dim(shape, d) }).collect();
            let lead = rank - shape.len();
            let want = gathered(&x, &out, |idx| {
                let src: Vec<u64> = (0..shape.len()).map(|k| if shape[k] == 1 { 0 } else { idx[k + lead] }).collect();
                Some(ravel(&src, shape))
            });
            let s = T::i64(&[target.len() as u64], target);
            let n =
                node("Expand", 13, vec![input("x", &x), Some(const_val("s", &s))], vec![val("y", ty, &out)], vec![]);
            check(&one(n, &[("x", &x)]).unwrap(), &want, &format!("Expand {ty} {shape:?} to {target:?}"));
        }
    }
}

fn opts() -> PlacementOptions {
    PlacementOptions::defaults(profiles::get("llvmpipe").unwrap())
}

fn placement(n: &Node) -> Result<(), String> {
    ep_kernels::ops::lookup(n).expect("a layout op").check(n, &opts())
}

#[test]
fn placement_declines_what_cannot_run() {
    let x = Some(val("x", ElemType::F32, &[4, 3]));
    let y = || vec![val("y", ElemType::F32, &[4, 3])];
    let i64s = |v: &[i64]| T::i64(&[v.len() as u64], v);
    // Constant indices out of range stay on the CPU EP, which reports the error.
    let idx = Some(const_val("i", &i64s(&[0, 4])));
    assert!(placement(&node("Gather", 13, vec![x.clone(), idx], y(), vec![])).unwrap_err().contains("out of range"));
    let idx = Some(const_val("i", &i64s(&[0, -4])));
    assert!(placement(&node("Gather", 13, vec![x.clone(), idx], y(), vec![])).is_ok());
    // Run-time Slice bounds and Expand shapes are not read on the GPU.
    let starts = Some(val("s", ElemType::I64, &[1]));
    let ends = Some(const_val("e", &i64s(&[2])));
    let err = placement(&node("Slice", 13, vec![x.clone(), starts, ends], y(), vec![])).unwrap_err();
    assert!(err.contains("run time"), "{err}");
    let err = placement(&node("Expand", 13, vec![x.clone(), Some(val("s", ElemType::I64, &[2]))], y(), vec![]));
    assert!(err.unwrap_err().contains("run time"));
    let perm = vec![("perm", Attr::Ints(vec![0, 0]))];
    assert!(placement(&node("Transpose", 13, vec![x.clone()], y(), perm)).is_err());
    let axis = vec![("axis", Attr::Int(2))];
    assert!(placement(&node("Concat", 13, vec![x.clone(), x.clone()], y(), axis)).is_err());
    let f16 =
        node("Transpose", 13, vec![Some(val("h", ElemType::F16, &[2]))], vec![val("y", ElemType::F16, &[2])], vec![]);
    assert!(placement(&f16).is_ok());
    let off = PlacementOptions { enable_f16: false, ..opts() };
    assert!(ep_kernels::ops::lookup(&f16).unwrap().check(&f16, &off).is_err());
}

/// The strided view of `x` that `perm` transposes it to.
fn transposed(shape: &[u64], perm: &[usize]) -> Strided {
    let strides = contiguous(shape);
    Strided {
        dims: perm.iter().map(|&p| shape[p]).collect(),
        strides: perm.iter().map(|&p| strides[p]).collect(),
        base: 0,
    }
}

/// The strided and tiled kernels under every tuning (the device picks one; a GPU's runs of one
/// word and tiles are not what llvmpipe picks), against the view walked on the host.
#[test]
fn strided_kernels_agree_under_every_tuning() {
    let mut rng = common::rng("strided_kernels_agree_under_every_tuning");
    let gpu = common::gpu();
    let options = ExecOptions::default();
    let status = gpu.storage_buffer(4, "status").unwrap();
    let cx = PrepareCx::on(&gpu, &options, &status);
    let views = [
        (vec![3, 40, 37], transposed(&[3, 40, 37], &[0, 2, 1])),
        (vec![1, 64, 6, 10], transposed(&[1, 64, 6, 10], &[0, 2, 3, 1])),
        (vec![2, 9, 3, 12], transposed(&[2, 9, 3, 12], &[2, 0, 3, 1])),
        (vec![5, 7], Strided { dims: vec![3, 4], strides: vec![-7, 2], base: 28 }),
        (vec![3], Strided { dims: vec![4, 3, 5], strides: vec![0, 1, 0], base: 0 }),
        (vec![2], Strided { dims: vec![], strides: vec![], base: 1 }),
    ];
    let tunings =
        [(1, true), (1, false), (3, false), (16, false), (16, true)].map(|(run, tiled)| Tuning { run, tiled });
    for size in [1u64, 2, 4, 8] {
        for (shape, view) in &views {
            let n: u64 = shape.iter().product();
            let data: Vec<u8> = (0..n * size).map(|_| rng.random()).collect();
            let count = view.count();
            let mut want = Vec::new();
            for e in 0..count {
                let idx = unravel(e, &view.dims);
                let at = idx.iter().zip(&view.strides).fold(view.base as i64, |acc, (&i, &s)| acc + i as i64 * s);
                want.extend_from_slice(&data[(at as u64 * size) as usize..][..size as usize]);
            }
            let src = gpu.upload(&data, "src").unwrap();
            for tuning in tunings {
                let dst = gpu.storage_buffer(count * size, "dst").unwrap();
                let d = prepare(&cx, &src, &dst, size, view, tuning).unwrap();
                gpu.run(&[&d]).unwrap();
                let got = gpu.read_buffer(&dst).unwrap();
                assert!(got == want, "{size}-byte {view:?} {tuning:?} via {}", d.label);
            }
        }
    }
}

/// Whisper's attention transposes on the test adapter, strided against tiled: run with
/// `cargo test --test ops_layout_gpu -- --ignored --nocapture`.
#[test]
#[ignore = "timing, not a check"]
fn transpose_timing() {
    let gpu = common::gpu();
    let options = ExecOptions::default();
    let status = gpu.storage_buffer(4, "status").unwrap();
    let cx = PrepareCx::on(&gpu, &options, &status);
    let shape = [1u64, 1500, 6, 64];
    let timer = ep_kernels::runtime::GpuTimer::new(&gpu);
    for size in [4u64, 2] {
        let src = gpu.storage_buffer(576_000 * size, "src").unwrap();
        let dst = gpu.storage_buffer(576_000 * size, "dst").unwrap();
        for perm in [[0usize, 1, 2, 3], [0, 2, 1, 3], [0, 2, 3, 1]] {
            let view = transposed(&shape, &perm);
            for tuning in [(1, false), (16, false), (1, true), (16, true)].map(|(run, tiled)| Tuning { run, tiled }) {
                let d = prepare(&cx, &src, &dst, size, &view, tuning).unwrap();
                gpu.run(&[&d]).unwrap();
                // Timestamps where the adapter has them, else the wall clock of whole runs.
                let ms = (0..5)
                    .map(|_| match &timer {
                        Some(t) => t.time(&gpu, &[&d], 100).unwrap() * 10.0,
                        None => {
                            let start = std::time::Instant::now();
                            gpu.run(&[&d; 10]).unwrap();
                            start.elapsed().as_secs_f64() * 100.0
                        }
                    })
                    .fold(f64::MAX, f64::min);
                eprintln!("{size}-byte {perm:?} via {} {tuning:?}: {ms:.2} ms", d.label);
            }
        }
    }
}
