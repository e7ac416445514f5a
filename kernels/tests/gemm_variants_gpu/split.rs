//! f32 products split into f16 high and low parts on the (emulated) coop kernel (`gemm::split`):
//! accuracy against float64, NaN and infinities, the max pass's maxima, a constant B's maximum
//! taken once and a bound on |A| in place of its pass.

use super::*;

/// f32 products split into f16 high and low parts on the (emulated) coop kernel, against
/// float64: errors within 1e-6 of Σ|a||b| (a few fp32 roundings) where rounding the operands to f16
/// (`f32_via_f16`) errs by ~1e-3 of it, with operand magnitudes far outside f16's range (1e6,
/// 1e-6: the scales bring them in), K not a multiple of the slice depth, transposed operands,
/// bias, alpha and an activation. A NaN in A reaches exactly its row.
#[test]
fn f32_split_emulated_matches_reference() {
    let shapes = [COOP_64, CoopShape { bm: 64, bn: 64, sg_m: 4, sg_n: 4, ..COOP_WIDE }];
    check_f32_split(CoopMode::Off, shapes, "_x3", "f32_split");
}

/// The same checks on the fused form (K once, high and low parts staged side by side): two
/// register sets in flight, and one stage, in shapes whose doubled staging fits llvmpipe's 32 KB.
#[test]
fn f32_split_fused_emulated_matches_reference() {
    let shapes = [CoopShape { bk: 16, depth: 2, ..COOP_64 }, CoopShape { stages: 1, depth: 1, ..COOP_64 }];
    check_f32_split(CoopMode::On, shapes, "_x3f", "f32_split_fused");
}

fn check_f32_split(fused: CoopMode, shapes: [CoopShape; 2], suffix: &str, seed: &str) {
    let Some(gpu) = coop_gpu() else { return };
    let mut rng = rng(seed);
    let options = GemmOptions { f32_split: CoopMode::On, f32_split_fused: fused, ..Default::default() };
    let cases: &[(u32, u32, u32, f32, f32)] =
        &[(72, 40, 36, 1.0, 1.0), (64, 48, 100, 1e6, 1e-6), (40, 72, 20, 3e-5, 7e4), (136, 72, 104, 1.0, 0.02)];
    for (i, &(m, n, k, sa, sb)) in cases.iter().enumerate() {
        let (ta, tb) = TRANSPOSES[i % 4];
        let mut p = GemmProblem::simple(DType::F32, m, n, k, ta, tb);
        if i % 2 == 1 {
            p = with_bias(p);
            p.epilogue.activation = Activation::None;
        }
        let shape = shapes[i % 2];
        let plan = emulated_plan_with(&p, shape, &options).expect("split plan");
        let ios: Vec<StepIo> = plan.steps.iter().map(|s| s.io).collect();
        assert_eq!(ios, [StepIo::AbsMax, StepIo::Product { to_workspace: false }]);
        let name = plan.steps[1].variant.name();
        assert!(plan.steps[1].variant.reads_scales() && name.ends_with(&format!("{suffix}_emu")), "{name}");
        let a: Vec<f32> = random_vec(&mut rng, extent(&p.a, m, k, &p.batch)).iter().map(|v| v * sa).collect();
        let b: Vec<f32> = random_vec(&mut rng, extent(&p.b, k, n, &p.batch)).iter().map(|v| v * sb).collect();
        let bias = p.epilogue.bias.map(|l| random_vec(&mut rng, extent(&l, m, n, &p.batch)));
        let got = run_plan(&gpu, &p, &plan, &a, &b, bias.as_deref());
        let want = reference(&p, &a, &b, bias.as_deref());
        // Σ|a||b| scales the error bound (the bias adds at most |β·bias| ≤ 1 in magnitude).
        let mut q = p;
        q.epilogue = Default::default();
        let abs = |v: &[f32]| v.iter().map(|x| x.abs()).collect::<Vec<f32>>();
        let size = reference(&q, &abs(&a), &abs(&b), None);
        for (j, ((&g, &w), &s)) in got.iter().zip(&want).zip(&size).enumerate() {
            let err = (g as f64 - w).abs();
            let bound = 1e-6 * s + 1e-30;
            assert!(err <= bound, "case {i} element {j}: {g} against {w} (|err| {err:.3e}, bound {bound:.3e})");
        }
    }
    // A NaN in A poisons exactly its output row and an infinity its row, an infinity in B its
    // column, as in f32; the scales come from the finite values. Where B's infinity meets a value
    // f16 holds exactly once scaled (no low part), a zero (NaN) and A's infinity, the result is
    // f32's. A value too small for f16 once scaled (no part at all) meets it as a zero: NaN where
    // f32 gives -inf (the documented limit, docs/RELIABILITY.md §8).
    let p = GemmProblem::simple(DType::F32, 40, 40, 32, false, false);
    let plan = emulated_plan_with(&p, shapes[1], &options).expect("split plan");
    let mut a: Vec<f32> = random_vec(&mut rng, 40 * 32).iter().map(|v| v * 1e6).collect();
    let mut b = random_vec(&mut rng, 32 * 40);
    a[5 * 32 + 7] = f32::NAN;
    a[6 * 32 + 3] = 0.75 * (1 << 20) as f32;
    a[7 * 32 + 3] = -1e-20;
    a[8 * 32 + 3] = 0.0;
    a[9 * 32 + 3] = f32::NEG_INFINITY;
    b[3 * 40 + 9] = f32::INFINITY;
    b[3 * 40 + 11] = 0.5;
    let got = run_plan(&gpu, &p, &plan, &a, &b, None);
    let want = reference(&p, &a, &b, None);
    let special =
        [(6, 9, f64::INFINITY), (7, 9, f64::NEG_INFINITY), (9, 9, f64::NEG_INFINITY), (9, 11, f64::NEG_INFINITY)];
    for (r, c, w) in special {
        assert_eq!(want[r * 40 + c], w, "reference at ({r}, {c})");
    }
    assert!(want[8 * 40 + 9].is_nan(), "0·inf in the reference");
    let tiny = 7 * 40 + 9;
    assert!(got[tiny].is_nan(), "the value below f16 meets B's infinity as a zero: {}", got[tiny]);
    for (j, (&g, &w)) in got.iter().zip(&want).enumerate() {
        if j == tiny {
            continue;
        }
        if w.is_nan() || w.is_infinite() {
            assert!(g.is_nan() == w.is_nan() && (w.is_nan() || g as f64 == w), "element {j}: {g}, expected {w}");
            assert!([5, 9].contains(&(j / 40)) || j % 40 == 9, "element {j}: {w}");
        } else {
            // Σ|a||b| ≈ 32 · 5e5 · 0.5 = 8e6: within 2e-6 of it (dropping the low parts errs by ~4000).
            assert!((g as f64 - w).abs() <= 16.0, "element {j}: {g} against {w}");
        }
    }
    check_split_reads_every_maximum(&gpu, &mut rng, shapes[0], &options);
}

/// Each operand's largest magnitude in the share of the max pass's second workgroup (vec4s
/// 256..512 of 5000 and 1000: its first round whatever the workgroups per operand, at least two):
/// the product must reduce every workgroup's maximum, or that element overflows f16 once scaled.
fn check_split_reads_every_maximum(gpu: &Gpu, rng: &mut impl Rng, shape: CoopShape, options: &GemmOptions) {
    let (m, n, k) = (200, 40, 100);
    let p = GemmProblem::simple(DType::F32, m, n, k, false, false);
    let plan = emulated_plan_with(&p, shape, options).expect("split plan");
    assert!(plan.steps[0].params.tiles_n >= 2, "several max-pass workgroups per operand");
    let mut a = random_vec(rng, (m * k) as usize);
    let mut b = random_vec(rng, (k * n) as usize);
    a[4 * 300 + 3] = 3e3;
    b[4 * 500 + 1] = -5e2;
    let got = run_plan(gpu, &p, &plan, &a, &b, None);
    // A maximum left out, and that outlier overflows f16 once scaled (an infinity). (Outliers
    // a million times the rest would cost the other elements' low parts to f16's subnormals.)
    assert_fp32_accuracy(&p, &a, &b, &got, "outliers in the second max-pass workgroup");
    // An infinity in B (row 50, column 2): every row of A whose value at K = 50 f16 holds exactly
    // once scaled (no low part) still gets +inf, as in f32.
    b[4 * 500 + 2] = f32::INFINITY;
    for i in 0..m as usize {
        a[i * k as usize + 50] = 0.5;
    }
    let got = run_plan(gpu, &p, &plan, &a, &b, None);
    let want = reference(&p, &a, &b, None);
    let abs = |v: &[f32]| v.iter().map(|x| x.abs()).collect::<Vec<f32>>();
    let size = reference(&p, &abs(&a), &abs(&b), None);
    for (j, ((&g, &w), &s)) in got.iter().zip(&want).zip(&size).enumerate() {
        if j % n as usize == 2 {
            assert_eq!((w, g), (f64::INFINITY, f32::INFINITY), "element {j}");
        } else {
            // The other columns are untouched by the infinity (its hi part, 65504, is in column 2 only).
            assert!((g as f64 - w).abs() <= 1e-4 * s, "element {j}: {g} against {w} (Σ|a||b| {s:.3e})");
        }
    }
}

/// `got` against a float64 `A·B` within fp32's accuracy: the bound of an f32 sum of K products,
/// K·2⁻²⁴ of Σ|a||b| per element (a fixed 1e-6 failed some seeds by 10%: 1.16e-3 against 1.06e-3
/// at K = 100, whose bound is 5.96e-6). A maximum left out overflows f16 and fails by far more.
fn assert_fp32_accuracy(p: &GemmProblem, a: &[f32], b: &[f32], got: &[f32], what: &str) {
    let want = reference(p, a, b, None);
    let abs = |v: &[f32]| v.iter().map(|x| x.abs()).collect::<Vec<f32>>();
    let size = reference(p, &abs(a), &abs(b), None);
    let bound = f64::from(p.k) * 2f64.powi(-24);
    for (j, ((&g, &w), &s)) in got.iter().zip(&want).zip(&size).enumerate() {
        let err = (g as f64 - w).abs();
        assert!(err <= bound * s + 1e-30, "{what}, element {j}: {g} against {w} (Σ|a||b| {s:.3e})");
    }
}

/// A split product of `plan` prepared with B constant (and A's bound, if any) over A's buffer
/// holding `a` then, `outputs` elements poisoned: A's buffer, the output and the dispatches.
fn constant_b_product(
    gpu: &Gpu,
    plan: &GemmPlan,
    (a, b, outputs): (&[f32], &[f32], usize),
    a_bound: Option<f32>,
) -> (GpuBuffer, GpuBuffer, Vec<Dispatch>) {
    let ab = gpu.upload(&to_bytes(a, DType::F32), "a").unwrap();
    let bb = gpu.upload(&to_bytes(b, DType::F32), "b").unwrap();
    let out = gpu.upload(&poison(outputs, DType::F32), "out").unwrap();
    let io = GemmBindings { a: &ab, b: &bb, bias: None, out: &out };
    let dispatches = gpu.prepare_gemm_constant_b(plan, io, None, a_bound).unwrap();
    (ab, out, dispatches)
}

/// A constant B's maximum is taken once, when the product is prepared; each run's max passes
/// cover A alone. B at 1e6 overflows f16 unless its scale stayed in place, and A changes
/// magnitude from run to run, so its scale must be taken again each time.
#[test]
fn f32_split_with_a_constant_b_takes_its_maximum_once() {
    let Some(gpu) = coop_gpu() else { return };
    let mut rng = rng("f32_split_constant_b");
    let options = GemmOptions { f32_split: CoopMode::On, f32_split_fused: CoopMode::On, ..Default::default() };
    let (m, n, k) = (72, 40, 36);
    let p = GemmProblem::simple(DType::F32, m, n, k, false, false);
    let plan = emulated_plan_with(&p, CoopShape { stages: 1, depth: 1, ..COOP_64 }, &options).expect("split plan");
    let b: Vec<f32> = random_vec(&mut rng, (k * n) as usize).iter().map(|v| v * 1e6).collect();
    let (ab, out, dispatches) =
        constant_b_product(&gpu, &plan, (&vec![0.0; (m * k) as usize], &b, (m * n) as usize), None);
    for scale in [1e-3f32, 1e4, 1.0] {
        let a: Vec<f32> = random_vec(&mut rng, (m * k) as usize).iter().map(|v| v * scale).collect();
        gpu.write(&ab, &to_bytes(&a, DType::F32)).unwrap();
        gpu.write(&out, &poison((m * n) as usize, DType::F32)).unwrap();
        gpu.run(&dispatches.iter().collect::<Vec<_>>()).unwrap();
        let got = from_bytes(&gpu.read_buffer(&out).unwrap(), DType::F32);
        assert_fp32_accuracy(&p, &a, &b, &got, &format!("A at {scale:e}"));
    }
}

/// A bound on |A| known when the product is prepared (`graph/bounds.rs`) replaces A's max pass:
/// no pass runs, and A's maxima in the workspace are the bound and zeros, whatever the pass that
/// ran once over A's buffer then left there (1e30 in its second workgroup's share, which would
/// push every element of A into f16's subnormals). A at 1e5 overflows f16 unless its scale came
/// from the bound; the bound 100 times its largest magnitude still gives fp32's accuracy.
#[test]
fn f32_split_with_a_bound_on_a_runs_no_max_pass() {
    let Some(gpu) = coop_gpu() else { return };
    let mut rng = rng("f32_split_a_bound");
    let options = GemmOptions { f32_split: CoopMode::On, f32_split_fused: CoopMode::On, ..Default::default() };
    let (m, n, k) = (200, 40, 100);
    let p = GemmProblem::simple(DType::F32, m, n, k, false, false);
    let plan = emulated_plan_with(&p, CoopShape { stages: 1, depth: 1, ..COOP_64 }, &options).expect("split plan");
    assert!(plan.steps[0].params.tiles_n >= 2, "several max-pass workgroups per operand");
    let b = random_vec(&mut rng, (k * n) as usize);
    let mut stale = vec![0.0f32; (m * k) as usize];
    stale[4 * 300 + 3] = 1e30;
    let (ab, out, dispatches) = constant_b_product(&gpu, &plan, (&stale, &b, (m * n) as usize), Some(1e7));
    assert_eq!(dispatches.len(), plan.steps.len() - 1, "no max pass runs");
    let a: Vec<f32> = random_vec(&mut rng, (m * k) as usize).iter().map(|v| v * 1e5).collect();
    gpu.write(&ab, &to_bytes(&a, DType::F32)).unwrap();
    gpu.run(&dispatches.iter().collect::<Vec<_>>()).unwrap();
    let got = from_bytes(&gpu.read_buffer(&out).unwrap(), DType::F32);
    assert_fp32_accuracy(&p, &a, &b, &got, "A's scale from its bound");
}
