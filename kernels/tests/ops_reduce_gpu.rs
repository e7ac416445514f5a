//! ReduceSum/Mean/Max/Min/SumSquare/L1/L2/Prod through the program builder and executor on the
//! test adapter, against a float64 reference on fresh random data, in f32, f16 and i32, with every
//! attribute form, and reductions long enough for the wide kernel and its split into chunks.
mod common;

use common::graph::{const_val, node, run_graph, val, T};
use common::rows::{assert_close, opts, random, reduce_ref};
use ep_kernels::graph::Attr;
use ep_kernels::ElemType;
use rand::Rng;

/// The attributes of one reduction: axes go as an attribute before the op's input form.
#[derive(Clone, Copy)]
struct Reduce<'a> {
    op: &'a str,
    opset: i32,
    keepdims: i64,
    noop: bool,
}

/// One reduction of random data of `shape` over `axes`; `want_shape` is the output's shape.
fn check_reduce(rng: &mut impl Rng, r: Reduce<'_>, ty: ElemType, shape: &[u64], axes: &[i64], want_shape: &[u64]) {
    let Reduce { op, opset, keepdims, noop } = r;
    let rank = shape.len() as i64;
    let mut mask = vec![axes.is_empty() && !noop; shape.len()];
    for &a in axes {
        mask[(if a < 0 { a + rank } else { a }) as usize] = true;
    }
    let (xv, x) = if ty == ElemType::I32 {
        let n: u64 = shape.iter().product();
        let v: Vec<i32> = (0..n).map(|_| rng.random_range(-1000..1000)).collect();
        let t = T::i32(shape, &v);
        (t.values(), t)
    } else if op == "ReduceProd" {
        // Products of every length stay well inside f16 (and away from 0 in f32).
        let count: u64 = shape.iter().zip(&mask).filter(|(_, &r)| r).map(|(&d, _)| d).product();
        random(rng, ty, shape, (20.0 / count.max(1) as f32).min(0.5), 1.0)
    } else {
        random(rng, ty, shape, 4.0, 0.5)
    };
    let axes_t = T::i64(&[axes.len() as u64], axes);
    let input_since = if op == "ReduceSum" { 13 } else { 18 };
    let mut inputs = vec![Some(val("x", ty, shape))];
    let mut attrs = vec![("keepdims", Attr::Int(keepdims))];
    if opset >= input_since {
        attrs.push(("noop_with_empty_axes", Attr::Int(noop as i64)));
        if !axes.is_empty() || noop {
            inputs.push(Some(const_val("axes", &axes_t)));
        }
    } else if !axes.is_empty() {
        attrs.push(("axes", Attr::Ints(axes.to_vec())));
    }
    let r = node(op, opset, inputs, vec![val("y", ty, want_shape)], attrs);
    ep_kernels::ops::lookup(&r).unwrap().check(&r, &opts()).unwrap();
    let consts: Vec<(&str, &T)> = if opset >= input_since { vec![("axes", &axes_t)] } else { vec![] };
    let got = run_graph(&[r], &[("x", &x)], &consts, &["y"]).unwrap();
    let what = format!("{op}-{opset} {ty:?} {shape:?} axes {axes:?} keepdims {keepdims} noop {noop}");
    assert_eq!(got[0].shape, want_shape, "{what}");
    let want = if noop && axes.is_empty() { xv } else { reduce_ref(&xv, shape, &mask, op) };
    let count = shape.iter().zip(&mask).filter(|(_, &r)| r).map(|(&d, _)| d).product::<u64>();
    if op == "ReduceProd" && count > 1000 {
        // Each f32 product rounds by up to 2^-24 of itself, so the bound grows with the count
        // (llvmpipe's products of 200000 values near 1 are 9e-4 off, the CPU EP's 1e-4).
        let rtol = count as f64 * 2f64.powi(-24) + if ty == ElemType::F16 { 1e-3 } else { 0.0 };
        for (i, (g, w)) in got[0].values().iter().zip(&want).enumerate() {
            assert!((g - w).abs() <= rtol * w.abs(), "{what}: element {i}: got {g}, want {w}");
        }
        return;
    }
    let tol_ty = if ty == ElemType::I32 { ElemType::F32 } else { ty };
    assert_close(&what, &got[0], &want, tol_ty);
}

#[test]
fn reductions() {
    let mut rng = common::rng("reductions");
    let ops = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceSumSquare", "ReduceL1", "ReduceL2"];
    for op in ops.into_iter().chain(["ReduceProd"]) {
        let (old, new) = if op == "ReduceSum" { (11, 13) } else { (13, 18) };
        let at = |opset: i32, keepdims: i64, noop: bool| Reduce { op, opset, keepdims, noop };
        let (new1, new0, old1, old0) = (at(new, 1, false), at(new, 0, false), at(old, 1, false), at(old, 0, false));
        for ty in [ElemType::F32, ElemType::F16] {
            let r = &mut rng;
            check_reduce(r, new1, ty, &[2, 3, 4], &[1], &[2, 1, 4]);
            check_reduce(r, old0, ty, &[2, 3, 4], &[1], &[2, 4]);
            check_reduce(r, new0, ty, &[2, 3, 4], &[0, -1], &[3]);
            check_reduce(r, old1, ty, &[2, 3, 4], &[2, 0], &[1, 3, 1]);
            check_reduce(r, new1, ty, &[2, 3, 4], &[], &[1, 1, 1]);
            check_reduce(r, old0, ty, &[2, 3, 4], &[], &[]);
            check_reduce(r, at(new, 1, true), ty, &[2, 3, 4], &[], &[2, 3, 4]);
            check_reduce(r, new1, ty, &[3, 1500], &[-1], &[3, 1]);
            check_reduce(r, new0, ty, &[1500, 1], &[1], &[1500]);
            check_reduce(r, new1, ty, &[1500, 3], &[0], &[1, 3]);
            check_reduce(r, new0, ty, &[2, 1500, 3, 5], &[1, 3], &[2, 3]);
            check_reduce(r, old1, ty, &[7, 2, 50, 3], &[0, 2], &[1, 2, 1, 3]);
        }
        if ["ReduceSum", "ReduceMax", "ReduceMin"].contains(&op) {
            check_reduce(&mut rng, new1, ElemType::I32, &[5, 300, 2], &[1], &[5, 1, 2]);
            check_reduce(&mut rng, new0, ElemType::I32, &[5, 300, 2], &[-1, 0], &[300]);
        }
    }
}

#[test]
fn reductions_of_empty_axes() {
    let x = T::f32(&[2, 0, 3], &[]);
    let axes = T::i64(&[1], &[1]);
    for (op, opset, want) in [
        ("ReduceSum", 13, 0.0),
        ("ReduceMean", 18, 0.0),
        ("ReduceMax", 18, f64::NEG_INFINITY),
        ("ReduceMin", 18, f64::INFINITY),
        ("ReduceSumSquare", 18, 0.0),
        ("ReduceL1", 18, 0.0),
        ("ReduceL2", 18, 0.0),
        ("ReduceProd", 18, 1.0),
    ] {
        let r = node(
            op,
            opset,
            vec![Some(val("x", ElemType::F32, &[2, 0, 3])), Some(const_val("axes", &axes))],
            vec![val("y", ElemType::F32, &[2, 1, 3])],
            vec![],
        );
        let got = run_graph(&[r], &[("x", &x)], &[("axes", &axes)], &["y"]).unwrap();
        assert_eq!(got[0].shape, vec![2, 1, 3]);
        assert_eq!(got[0].values(), vec![want; 6], "{op}");
    }
}

/// Reductions long enough for the wide kernel (a workgroup per output over strided elements)
/// and for its split into chunks and a last pass combining them, every op: f32, f16 (except the
/// sums that would overflow it), and i32. Before these kernels an invocation per output walked
/// each output's strided elements alone; llvmpipe stops an invocation after 65535 iterations.
#[test]
fn long_reductions_take_the_wide_kernel_and_its_split() {
    let mut rng = common::rng("long_reductions");
    let cases: [(&[u64], &[i64], &[u64]); 4] = [
        // Strided elements, one chunk; two reduced runs, one chunk.
        (&[5000, 3], &[0], &[3]),
        (&[300, 7, 40], &[0, 2], &[7]),
        // A contiguous run in three chunks; two reduced runs in three chunks.
        (&[3, 200_000], &[1], &[3]),
        (&[70_000, 2, 3], &[0, 2], &[2]),
    ];
    let ops = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceSumSquare", "ReduceL1", "ReduceL2"];
    for op in ops.into_iter().chain(["ReduceProd"]) {
        let r = Reduce { op, opset: if op == "ReduceSum" { 13 } else { 18 }, keepdims: 0, noop: false };
        let sums = ["ReduceSum", "ReduceSumSquare", "ReduceL1"].contains(&op);
        for (shape, axes, out) in cases {
            let count = shape.iter().product::<u64>() / out.iter().product::<u64>();
            check_reduce(&mut rng, r, ElemType::F32, shape, axes, out);
            if !(sums && count > 10_000) {
                check_reduce(&mut rng, r, ElemType::F16, shape, axes, out);
            }
            if ["ReduceSum", "ReduceMax", "ReduceMin"].contains(&op) {
                check_reduce(&mut rng, r, ElemType::I32, shape, axes, out);
            }
        }
    }
}
