//! LayerNormalization, RMSNormalization and Softmax/LogSoftmax (the reductions: `ops_reduce_gpu.rs`) through
//! the program builder and executor on the test adapter, against float64 references on fresh
//! random data, in f32 and f16, with every attribute form.
mod common;

use common::graph::{const_val, node, run_graph, val, T};
use common::rows::{assert_close, opts, random, reduce_ref};
use ep_kernels::graph::{Attr, ExecOptions, Node};
use ep_kernels::ops::norm::layer::{NormKernel, NormKind};
use ep_kernels::ops::norm::reduce::ReduceKernel;
use ep_kernels::ops::norm::softmax::SoftmaxKernel;
use ep_kernels::ops::norm::RowTuning;
use ep_kernels::ops::{Kernel, KernelIo, PrepareCx, Tensor};
use ep_kernels::runtime::GpuBuffer;
use ep_kernels::{DeviceKind, ElemType};
use rand::Rng;

fn layer_norm_ref(x: &[f64], s: &[f64], b: Option<&[f64]>, n: usize, eps: f64, rms: bool) -> [Vec<f64>; 3] {
    let (mut y, mut means, mut invs) = (Vec::new(), Vec::new(), Vec::new());
    for row in x.chunks(n) {
        let mean = if rms { 0.0 } else { row.iter().sum::<f64>() / n as f64 };
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
        let inv = 1.0 / (var + eps).sqrt();
        for v in row {
            // Scale and bias come broadcast to the row's length (or to all of X).
            let e = y.len();
            y.push((v - mean) * inv * s[e % s.len()] + b.map_or(0.0, |b| b[e % b.len()]));
        }
        means.push(mean);
        invs.push(inv);
    }
    [y, means, invs]
}

/// LayerNormalization with its three outputs (as listed; statistics of type `st`) at `axis`.
fn check_layer_norm(
    test: &str,
    ty: ElemType,
    shape: &[u64],
    axis: i64,
    with_bias: bool,
    listed: [bool; 3],
    st: ElemType,
) {
    let mut rng = common::rng(test);
    let rank = shape.len() as i64;
    let a = if axis < 0 { axis + rank } else { axis } as usize;
    let norm: Vec<u64> = shape[a..].to_vec();
    let n: u64 = norm.iter().product();
    let (xv, x) = random(&mut rng, ty, shape, 2.0, 0.5);
    let (sv, s) = random(&mut rng, ty, &norm, 1.0, 0.0);
    let (bv, b) = random(&mut rng, ty, &norm, 1.0, 0.0);
    let eps = 1e-3f32;
    let stat_shape: Vec<u64> = shape.iter().enumerate().map(|(d, &v)| if d < a { v } else { 1 }).collect();
    let names = ["y", "mean", "inv"];
    let outs: Vec<_> = (0..3)
        .map(|k| {
            let name = if listed[k] { names[k] } else { "" };
            if k == 0 {
                val(name, ty, shape)
            } else {
                val(name, st, &stat_shape)
            }
        })
        .collect();
    let mut inputs = vec![Some(val("x", ty, shape)), Some(const_val("s", &s))];
    if with_bias {
        inputs.push(Some(const_val("b", &b)));
    }
    let stash = Attr::Int(i64::from(st == ElemType::F32));
    let attrs = vec![("axis", Attr::Int(axis)), ("epsilon", Attr::Float(eps)), ("stash_type", stash)];
    let ln = node("LayerNormalization", 17, inputs, outs, attrs);
    ep_kernels::ops::lookup(&ln).unwrap().check(&ln, &opts()).unwrap();
    let wanted: Vec<&str> = (0..3).filter(|&k| listed[k]).map(|k| names[k]).collect();
    let mut consts = vec![("s", &s)];
    if with_bias {
        consts.push(("b", &b));
    }
    let got = run_graph(&[ln], &[("x", &x)], &consts, &wanted).unwrap();
    let want = layer_norm_ref(&xv, &sv, with_bias.then_some(bv.as_slice()), n as usize, f64::from(eps), false);
    for (g, k) in got.iter().zip((0..3).filter(|&k| listed[k])) {
        let ty = if k == 0 { ty } else { st };
        assert_eq!(g.shape, if k == 0 { shape.to_vec() } else { stat_shape.clone() });
        assert_close(&format!("{test} {}", names[k]), g, &want[k], ty);
    }
}

#[test]
fn layer_norm_whisper_rows() {
    for ty in [ElemType::F32, ElemType::F16] {
        check_layer_norm("layer_norm_whisper_rows", ty, &[1, 1500, 384], -1, true, [true, false, false], ty);
    }
}

#[test]
fn layer_norm_axis1_with_statistics() {
    for ty in [ElemType::F32, ElemType::F16] {
        let f32 = ElemType::F32;
        check_layer_norm("layer_norm_axis1", ty, &[2, 3, 5, 7], 1, true, [true, true, true], f32);
        check_layer_norm("layer_norm_axis1_no_bias", ty, &[2, 3, 5, 7], -3, false, [true, false, true], f32);
        check_layer_norm("layer_norm_rows_of_1", ty, &[7, 1], -1, true, [true, true, false], f32);
        check_layer_norm("layer_norm_axis0", ty, &[3, 1500], 0, false, [true, true, true], f32);
        check_layer_norm("layer_norm_stash0", ty, &[4, 36], -1, true, [true, true, true], ty);
    }
}

#[test]
fn layer_norm_broadcast_scale() {
    let mut rng = common::rng("layer_norm_broadcast_scale");
    let shape = [2u64, 3, 4];
    let (xv, x) = random(&mut rng, ElemType::F32, &shape, 1.0, 0.0);
    let (sv, s) = random(&mut rng, ElemType::F32, &[2, 1, 4], 1.0, 0.0);
    let (bv, b) = random(&mut rng, ElemType::F32, &[1], 1.0, 0.0);
    let ln = node(
        "LayerNormalization",
        17,
        vec![Some(val("x", ElemType::F32, &shape)), Some(const_val("s", &s)), Some(const_val("b", &b))],
        vec![val("y", ElemType::F32, &shape)],
        vec![],
    );
    let got = run_graph(&[ln], &[("x", &x)], &[("s", &s), ("b", &b)], &["y"]).unwrap();
    // Broadcast scale [2,1,4] onto [2,3,4] by hand.
    let s_full: Vec<f64> = (0..24).map(|e| sv[(e / 12) * 4 + e % 4]).collect();
    let want = layer_norm_ref(&xv, &s_full, Some(&bv), 4, 1e-5, false);
    assert_close("broadcast scale", &got[0], &want[0], ElemType::F32);
}

#[test]
fn rms_norm() {
    let mut rng = common::rng("rms_norm");
    for ty in [ElemType::F32, ElemType::F16] {
        for (shape, axis) in [(vec![1u64, 1500, 384], -1i64), (vec![2, 3, 5, 7], 1), (vec![4, 1], -1)] {
            let a = if axis < 0 { axis + shape.len() as i64 } else { axis } as usize;
            let (xv, x) = random(&mut rng, ty, &shape, 2.0, 0.3);
            let (sv, s) = random(&mut rng, ty, &shape[a..], 1.0, 0.0);
            let rms = node(
                "RMSNormalization",
                23,
                vec![Some(val("x", ty, &shape)), Some(const_val("s", &s))],
                vec![val("y", ty, &shape)],
                vec![("axis", Attr::Int(axis)), ("epsilon", Attr::Float(0.1))],
            );
            ep_kernels::ops::lookup(&rms).unwrap().check(&rms, &opts()).unwrap();
            let got = run_graph(&[rms], &[("x", &x)], &[("s", &s)], &["y"]).unwrap();
            let n = shape[a..].iter().product::<u64>() as usize;
            let want = layer_norm_ref(&xv, &sv, None, n, 0.1_f32 as f64, true);
            assert_close(&format!("rms {shape:?} axis {axis}"), &got[0], &want[0], ty);
        }
    }
}

fn softmax_ref(x: &[f64], [outer, n, inner]: [usize; 3], log: bool) -> Vec<f64> {
    let mut y = vec![0.0; x.len()];
    for o in 0..outer {
        for i in 0..inner {
            let at = |j: usize| o * n * inner + j * inner + i;
            let m = (0..n).map(|j| x[at(j)]).fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = (0..n).map(|j| (x[at(j)] - m).exp()).sum();
            for j in 0..n {
                y[at(j)] = if log { x[at(j)] - m - sum.ln() } else { (x[at(j)] - m).exp() / sum };
            }
        }
    }
    y
}

/// Softmax or LogSoftmax at `opset` and `axis` (`None`: the default), against the reference
/// viewed as `[outer, n, inner]`.
fn check_softmax(
    rng: &mut impl Rng,
    op: &str,
    opset: i32,
    ty: ElemType,
    shape: &[u64],
    axis: Option<i64>,
    g: [usize; 3],
) {
    let (xv, x) = random(rng, ty, shape, 8.0, 0.0);
    let attrs = axis.map(|a| vec![("axis", Attr::Int(a))]).unwrap_or_default();
    let sm = node(op, opset, vec![Some(val("x", ty, shape))], vec![val("y", ty, shape)], attrs);
    ep_kernels::ops::lookup(&sm).unwrap().check(&sm, &opts()).unwrap();
    let got = run_graph(&[sm], &[("x", &x)], &[], &["y"]).unwrap();
    let want = softmax_ref(&xv, g, op == "LogSoftmax");
    assert_close(&format!("{op}-{opset} {ty:?} {shape:?} axis {axis:?}"), &got[0], &want, ty);
}

#[test]
fn softmax_opsets_and_axes() {
    let mut rng = common::rng("softmax_opsets_and_axes");
    for ty in [ElemType::F32, ElemType::F16] {
        for op in ["Softmax", "LogSoftmax"] {
            let r = &mut rng;
            check_softmax(r, op, 11, ty, &[2, 3, 4, 5], Some(1), [2, 60, 1]);
            check_softmax(r, op, 11, ty, &[2, 3, 4, 5], None, [2, 60, 1]);
            check_softmax(r, op, 1, ty, &[2, 3, 4, 5], Some(-1), [24, 5, 1]);
            check_softmax(r, op, 13, ty, &[2, 3, 4, 5], Some(-1), [24, 5, 1]);
            check_softmax(r, op, 13, ty, &[2, 3, 4, 5], Some(1), [2, 3, 20]);
            check_softmax(r, op, 13, ty, &[2, 3, 4, 5], None, [24, 5, 1]);
            check_softmax(r, op, 13, ty, &[3, 1500], None, [3, 1500, 1]);
            check_softmax(r, op, 13, ty, &[1500, 1], None, [1500, 1, 1]);
            check_softmax(r, op, 13, ty, &[1500, 3], Some(0), [1, 1500, 3]);
            check_softmax(r, op, 13, ty, &[2, 1500, 7], Some(-2), [2, 1500, 7]);
        }
    }
}

#[test]
fn softmax_attention_rows() {
    let mut rng = common::rng("softmax_attention_rows");
    check_softmax(&mut rng, "Softmax", 13, ElemType::F32, &[1, 2, 300, 1500], None, [600, 1500, 1]);
}

fn declined(n: &Node) -> String {
    ep_kernels::ops::lookup(n).unwrap().check(n, &opts()).unwrap_err()
}

#[test]
fn bad_axes_decline_or_fail_clearly() {
    let x = val("x", ElemType::F32, &[2, 3]);
    let y = val("y", ElemType::F32, &[2, 1]);
    let reduce = |axes: Vec<i64>| {
        node("ReduceMax", 13, vec![Some(x.clone())], vec![y.clone()], vec![("axes", Attr::Ints(axes))])
    };
    assert!(declined(&reduce(vec![2])).contains("out of range"));
    assert!(declined(&reduce(vec![1, -1])).contains("repeated"));
    let computed =
        node("ReduceSum", 13, vec![Some(x.clone()), Some(val("a", ElemType::I64, &[1]))], vec![y.clone()], vec![]);
    assert!(declined(&computed).contains("computed at run time"));
    let i64_mean =
        node("ReduceMean", 13, vec![Some(val("x", ElemType::I64, &[2]))], vec![val("y", ElemType::I64, &[])], vec![]);
    assert!(!declined(&i64_mean).is_empty());
    let sm = node("Softmax", 13, vec![Some(x.clone())], vec![x.clone()], vec![("axis", Attr::Int(2))]);
    assert!(declined(&sm).contains("out of range"));
    let ln = node(
        "LayerNormalization",
        17,
        vec![Some(x.clone()), Some(val("s", ElemType::F32, &[2]))],
        vec![x.clone()],
        vec![],
    );
    assert!(declined(&ln).contains("does not broadcast"));
    // With the rank unknown at placement, the same axis fails at run time with the node's name.
    let unknown = ep_kernels::graph::ValueInfo { shape: None, ..x.clone() };
    let sm =
        node("Softmax", 13, vec![Some(unknown)], vec![val("y", ElemType::F32, &[2, 3])], vec![("axis", Attr::Int(2))]);
    let t = T::f32(&[2, 3], &[0.0; 6]);
    let err = run_graph(&[sm], &[("x", &t)], &[], &["y"]).unwrap_err();
    assert!(err.contains("Softmax_node") && err.contains("out of range"), "{err}");
}

/// Buffers and the prepared step of `kernel` on `inputs` (uploaded) and fresh outputs.
struct Bound {
    outs: Vec<(GpuBuffer, Vec<u64>, ElemType)>,
    step: ep_kernels::ops::PreparedStep,
    _ins: Vec<GpuBuffer>,
}

fn bind(kernel: &dyn Kernel, inputs: &[&T], out_types: &[ElemType]) -> Bound {
    let gpu = common::gpu();
    let ins: Vec<GpuBuffer> = inputs.iter().map(|t| gpu.upload(&t.data, "in").unwrap()).collect();
    let shapes: Vec<Option<&[u64]>> = inputs.iter().map(|t| Some(t.shape.as_slice())).collect();
    let outs: Vec<(GpuBuffer, Vec<u64>, ElemType)> = kernel
        .infer(&shapes)
        .unwrap()
        .into_iter()
        .zip(out_types)
        .map(|(s, &ty)| (gpu.storage_buffer(s.iter().product::<u64>() * ty.size(), "out").unwrap(), s, ty))
        .collect();
    let io = KernelIo {
        inputs: ins
            .iter()
            .zip(inputs)
            .map(|(buf, t)| Some(Tensor { buf, shape: &t.shape, ty: t.ty, constant: false }))
            .collect(),
        outputs: outs.iter().map(|(buf, shape, ty)| Tensor { buf, shape, ty: *ty, constant: false }).collect(),
    };
    let options = ExecOptions::default();
    let status = gpu.storage_buffer(4, "status").unwrap();
    let step = kernel.prepare(&PrepareCx::on(&gpu, &options, &status), &io).unwrap();
    Bound { outs, step, _ins: ins }
}

/// Runs `kernel` once on `inputs`; its outputs.
fn run_kernel(kernel: &dyn Kernel, inputs: &[&T], out_types: &[ElemType]) -> Vec<T> {
    let gpu = common::gpu();
    let b = bind(kernel, inputs, out_types);
    gpu.run(&b.step.dispatches.iter().collect::<Vec<_>>()).unwrap();
    b.outs
        .iter()
        .map(|(buf, shape, ty)| {
            let mut data = gpu.read_buffer(buf).unwrap();
            data.truncate((shape.iter().product::<u64>() * ty.size()) as usize);
            T { ty: *ty, shape: shape.clone(), data }
        })
        .collect()
}

const TUNINGS: [RowTuning; 4] = [
    RowTuning { threads: 64, subgroups: false, widen: false },
    RowTuning { threads: 256, subgroups: false, widen: false },
    RowTuning { threads: 32, subgroups: true, widen: false },
    RowTuning { threads: 128, subgroups: true, widen: false },
];

/// The row kernels at other workgroup sizes, and with the workgroup-memory reduction the
/// planner never picks on this (subgroup) adapter, against the references.
#[test]
fn row_kernels_at_every_tuning() {
    let mut rng = common::rng("row_kernels_at_every_tuning");
    let find = |n: &Node| ep_kernels::ops::lookup(n).unwrap();
    for tuning in TUNINGS {
        for (ty, n) in [(ElemType::F32, 1500u64), (ElemType::F16, 1501)] {
            let shape = [5, n];
            let (xv, x) = random(&mut rng, ty, &shape, 3.0, 1.0);
            let (sv, s) = random(&mut rng, ty, &[n], 1.0, 0.0);
            let (bv, b) = random(&mut rng, ty, &[n], 1.0, 0.0);
            let ins = vec![Some(val("x", ty, &shape)), Some(val("s", ty, &[n])), Some(val("b", ty, &[n]))];
            let ln = node("LayerNormalization", 17, ins, vec![val("y", ty, &shape)], vec![]);
            let mut k = NormKernel::of(&ln, NormKind::Layer).unwrap();
            k.tuning = tuning;
            let got = run_kernel(&k, &[&x, &s, &b], &[ty]);
            let want = layer_norm_ref(&xv, &sv, Some(&bv), n as usize, 1e-5, false);
            assert_close(&format!("LayerNorm {tuning:?} {ty:?}"), &got[0], &want[0], ty);
            if ty == ElemType::F32 {
                // Squares past f32's range: the variance is +Inf (ONNX's f32 stash_type, the CPU EP), so Y = bias.
                let (_, x) = random(&mut rng, ty, &shape, 3e24, 1e24);
                let got = run_kernel(&k, &[&x, &s, &b], &[ty]);
                let want: Vec<f64> = (0..shape[0]).flat_map(|_| bv.iter().copied()).collect();
                assert_close(&format!("LayerNorm {tuning:?} of values near 1e24"), &got[0], &want, ty);
            }
            let sm = node("Softmax", 13, vec![Some(val("x", ty, &shape))], vec![val("y", ty, &shape)], vec![]);
            let mut k = SoftmaxKernel::of(&sm).unwrap();
            k.tuning = tuning;
            let got = run_kernel(&k, &[&x], &[ty]);
            assert_close(
                &format!("Softmax {tuning:?} {ty:?}"),
                &got[0],
                &softmax_ref(&xv, [5, n as usize, 1], false),
                ty,
            );
            for op in ["ReduceSum", "ReduceMax"] {
                let r = node(
                    op,
                    11,
                    vec![Some(val("x", ty, &shape))],
                    vec![val("y", ty, &[5, 1])],
                    vec![("axes", Attr::Ints(vec![1]))],
                );
                assert!(find(&r).check(&r, &opts()).is_ok());
                let mut k = ReduceKernel::of(&r).unwrap();
                k.tuning = tuning;
                let got = run_kernel(&k, &[&x], &[ty]);
                assert_close(
                    &format!("{op} {tuning:?} {ty:?}"),
                    &got[0],
                    &reduce_ref(&xv, &shape, &[false, true], op),
                    ty,
                );
            }
        }
    }
}

/// GPU time of `kernel`'s dispatches on zeroed inputs of these shapes, from timestamp queries;
/// prints GB/s of one read and one write of X.
fn time_kernel(label: &str, kernel: &dyn Kernel, ty: ElemType, shapes: &[&[u64]]) {
    let gpu = common::gpu();
    let Some(timer) = ep_kernels::runtime::GpuTimer::new(&gpu) else { return };
    let inputs: Vec<T> = shapes
        .iter()
        .map(|s| T { ty, shape: s.to_vec(), data: vec![0; (s.iter().product::<u64>() * ty.size()) as usize] })
        .collect();
    let refs: Vec<&T> = inputs.iter().collect();
    let b = bind(kernel, &refs, &[ty]);
    let dispatches: Vec<_> = b.step.dispatches.iter().collect();
    timer.time(&gpu, &dispatches, 3).unwrap();
    let repeat = 20;
    let secs = timer.time(&gpu, &dispatches, repeat).unwrap() / f64::from(repeat);
    let bytes = inputs[0].data.len() as u64 + b.outs[0].1.iter().product::<u64>() * ty.size();
    eprintln!("{label} {ty:?} {:?}: {:.1} us, {:.1} GB/s", shapes[0], secs * 1e6, bytes as f64 / secs / 1e9);
}

/// Kernel timings of the Whisper-sized rows at several tunings
/// (`cargo test --test ops_norm_gpu -- --ignored --nocapture`).
#[test]
#[ignore]
fn bench_rows() {
    let tunings = [64, 128, 256]
        .into_iter()
        .flat_map(|t| [false, true].map(|sg| RowTuning { threads: t, subgroups: sg, widen: false }));
    for tuning in tunings {
        eprintln!("-- {tuning:?}");
        for ty in [ElemType::F32, ElemType::F16] {
            let attn: &[u64] = &[1, 6, 1500, 1500];
            let sm = node("Softmax", 13, vec![Some(val("x", ty, attn))], vec![val("y", ty, attn)], vec![]);
            let mut k = SoftmaxKernel::of(&sm).unwrap();
            k.tuning = tuning;
            time_kernel("Softmax", &k, ty, &[attn]);
            let rows: &[u64] = &[1, 1500, 384];
            let ln = node(
                "LayerNormalization",
                17,
                vec![Some(val("x", ty, rows)), Some(val("s", ty, &[384])), Some(val("b", ty, &[384]))],
                vec![val("y", ty, rows)],
                vec![],
            );
            let mut k = NormKernel::of(&ln, NormKind::Layer).unwrap();
            k.tuning = tuning;
            time_kernel("LayerNormalization", &k, ty, &[rows, &[384], &[384]]);
            let mean = node(
                "ReduceMean",
                13,
                vec![Some(val("x", ty, rows))],
                vec![val("y", ty, &[1, 1500, 1])],
                vec![("axes", Attr::Ints(vec![-1]))],
            );
            let mut k = ReduceKernel::of(&mean).unwrap();
            k.tuning = tuning;
            time_kernel("ReduceMean", &k, ty, &[rows]);
        }
    }
}

/// On a CPU adapter (llvmpipe stops an invocation's loops after 65535 iterations), a row too long
/// for one invocation's share fails with the limit named instead of a wrong result, and a long
/// row under it still runs right. Real GPUs have no such limit.
#[test]
fn rows_past_the_cpu_adapters_loop_limit_fail_clearly() {
    if common::gpu().caps().kind != DeviceKind::Cpu {
        eprintln!("skipped: not a CPU adapter");
        return;
    }
    // Under the limit on 64 invocations without subgroups: two passes of 31251 iterations each.
    let mut rng = common::rng("rows_past_the_cpu_adapters_loop_limit_fail_clearly");
    let (ty, n) = (ElemType::F32, 2_000_001u64);
    let (xv, x) = random(&mut rng, ty, &[1, n], 3.0, 1.0);
    let (sv, s) = random(&mut rng, ty, &[n], 1.0, 0.0);
    let ln = node(
        "LayerNormalization",
        17,
        vec![Some(val("x", ty, &[1, n])), Some(val("s", ty, &[n]))],
        vec![val("y", ty, &[1, n])],
        vec![],
    );
    let mut k = NormKernel::of(&ln, NormKind::Layer).unwrap();
    k.tuning = RowTuning { threads: 64, subgroups: false, widen: false };
    let got = run_kernel(&k, &[&x, &s], &[ty]);
    assert_close("LayerNorm under the limit", &got[0], &layer_norm_ref(&xv, &sv, None, n as usize, 1e-5, false)[0], ty);
    let sm = node("LogSoftmax", 13, vec![Some(val("x", ty, &[1, n]))], vec![val("y", ty, &[1, n])], vec![]);
    let mut k = SoftmaxKernel::of(&sm).unwrap();
    k.tuning = RowTuning { threads: 64, subgroups: false, widen: false };
    let got = run_kernel(&k, &[&x], &[ty]);
    assert_close("LogSoftmax under the limit", &got[0], &softmax_ref(&xv, [1, n as usize, 1], true), ty);
    let (f32, i64) = (ElemType::F32, ElemType::I64);
    let row = |n: u64| T::f32(&[1, n], &vec![0.5; n as usize]);
    let (long, longer) = (row(5_000_001), row(12_000_001));
    let scale = T::f32(&[12_000_001], &vec![1.0; 12_000_001]);
    let plane = T::f32(&[1, 1, 2300, 2300], &vec![0.5; 2300 * 2300]);
    let v = |name: &str, t: &T| val(name, t.ty, &t.shape);
    let cases = [
        (node("Softmax", 13, vec![Some(v("x", &long))], vec![v("y", &long)], vec![]), &long, None),
        (
            node("ArgMax", 13, vec![Some(v("x", &long))], vec![val("y", i64, &[1, 1])], vec![("axis", Attr::Int(1))]),
            &long,
            None,
        ),
        (
            node("GlobalMaxPool", 1, vec![Some(v("x", &plane))], vec![val("y", f32, &[1, 1, 1, 1])], vec![]),
            &plane,
            None,
        ),
        (
            node(
                "LayerNormalization",
                17,
                vec![Some(v("x", &longer)), Some(const_val("s", &scale))],
                vec![v("y", &longer)],
                vec![],
            ),
            &longer,
            Some(("s", &scale)),
        ),
    ];
    for (n, x, scale) in cases {
        let err = run_graph(std::slice::from_ref(&n), &[("x", x)], scale.as_slice(), &["y"]).unwrap_err();
        assert!(err.contains("the CPU adapter (llvmpipe) stops every loop"), "{}: {err}", n.op_type);
    }
}
