//! The vec4 SIMT kernels and the cooperative-matrix kernels against a float64 reference on the
//! test adapter. The coop kernels run *emulated* (cooperative operations replaced by plain
//! WGSL of the same semantics), so their staging, fragment indexing — row-major `coopLoadT`
//! against column-major `coopLoad`, i.e. transposed operands — and epilogue are checked on an
//! adapter without tensor cores; the H200 runs the real ones (`kernel_bench`).

mod common;
#[path = "gemm_variants_gpu/split.rs"]
mod split;

use common::*;
use ep_kernels::caps::profiles;
use ep_kernels::gemm::tuning::{COOP_128, COOP_64, COOP_WIDE, SIMT_VEC_128, SIMT_VEC_64};
use ep_kernels::gemm::{
    broadcast_layout, plan_gemm, plan_gemm_tuned, Activation, CoopMode, CoopShape, GemmOptions, GemmPlan, GemmProblem,
    GemmVariant, StepIo, Tiling, TilingChoice, Tuning, FLAG_RESIDUAL, FLAG_RESIDUAL_AFTER_ACT, FLAG_RESIDUAL_MUL,
};
use ep_kernels::runtime::{Dispatch, GemmBindings, Gpu, GpuBuffer};
use ep_kernels::{DType, DeviceCaps};
use rand::Rng;

/// Shapes that are multiples of 8 (so wide loads are proven) but of no tile, plus K shorter
/// than one slice and K not a multiple of the slice depth.
const ALIGNED: &[(u32, u32, u32)] = &[(136, 72, 104), (8, 200, 48), (72, 16, 8), (64, 64, 64)];
const TRANSPOSES: &[(bool, bool)] = &[(false, false), (true, false), (false, true), (true, true)];

fn data(p: &GemmProblem, rng: &mut impl Rng, round: bool) -> (Vec<f32>, Vec<f32>, Option<Vec<f32>>) {
    let mut a = random_vec(rng, extent(&p.a, p.m, p.k, &p.batch));
    let mut b = random_vec(rng, extent(&p.b, p.k, p.n, &p.batch));
    let mut bias = p.epilogue.bias.map(|l| random_vec(rng, extent(&l, p.m, p.n, &p.batch).max(1)));
    if round {
        a = round_f16(&a);
        b = round_f16(&b);
        bias = bias.map(|v| round_f16(&v));
    }
    (a, b, bias)
}

fn check_plan(p: &GemmProblem, plan: &GemmPlan, rng: &mut impl Rng, what: &str) {
    let gpu = gpu();
    // The coop path rounds operands to f16 even for f32 problems: give it f16-exact values so
    // the comparison judges accumulation only.
    let round = p.dtype == DType::F16 || plan.uses_coop();
    let (a, b, bias) = data(p, rng, round);
    let got = run_plan(&gpu, p, plan, &a, &b, bias.as_deref());
    let want = reference(p, &a, &b, bias.as_deref());
    let (atol, rtol) = tolerance(p.dtype, p.k);
    let names: Vec<String> = plan.variants().map(|v| v.name()).collect();
    assert_close(&got, &want, atol, rtol, &format!("{what} {names:?}"));
}

fn with_bias(mut p: GemmProblem) -> GemmProblem {
    p.epilogue.bias = Some(broadcast_layout(&[p.n as u64], &[p.m as u64, p.n as u64], &p).unwrap());
    p.epilogue.activation = Activation::Clip { min: -4.0, max: 4.0 };
    p.epilogue.alpha = 0.75;
    p
}

#[test]
fn simt_vec4_matches_reference() {
    let gpu = gpu();
    let mut rng = rng("simt_vec4");
    let dtypes: &[DType] = if gpu.caps().shader_f16 { &[DType::F32, DType::F16] } else { &[DType::F32] };
    for &dtype in dtypes {
        for choice in [TilingChoice::Tile128, TilingChoice::Tile64, TilingChoice::SplitK] {
            for (i, &(m, n, k)) in ALIGNED.iter().enumerate() {
                let (ta, tb) = TRANSPOSES[(i + choice as usize) % 4];
                let mut p = GemmProblem::simple(dtype, m, n, k, ta, tb);
                if i % 2 == 0 {
                    p = with_bias(p);
                }
                let plan = plan_gemm(&p, gpu.caps(), &GemmOptions::tiling(choice)).unwrap();
                assert!(
                    matches!(plan.steps[0].variant, GemmVariant::TiledVec { .. }),
                    "{m}x{n}x{k} planned {:?}",
                    plan.steps[0].variant
                );
                check_plan(&p, &plan, &mut rng, &format!("{dtype} {m}x{n}x{k} tA={ta} tB={tb}"));
            }
        }
    }
}

#[test]
fn simt_vec4_with_stores_in_one_loop_matches_reference() {
    // `quick_compile` (the interim plans' kernels): the same products, the stores in a loop.
    let gpu = gpu();
    let mut rng = rng("simt_vec4_quick");
    let dtypes: &[DType] = if gpu.caps().shader_f16 { &[DType::F32, DType::F16] } else { &[DType::F32] };
    let options = GemmOptions { quick_compile: true, ..GemmOptions::tiling(TilingChoice::Tile64) };
    for &dtype in dtypes {
        for (i, &(m, n, k)) in ALIGNED.iter().enumerate() {
            for (j, &(ta, tb)) in TRANSPOSES.iter().enumerate() {
                let mut p = with_bias(GemmProblem::simple(dtype, m, n, k, ta, tb));
                if (i + j) % 2 == 0 {
                    p.epilogue.activation = Activation::Gelu;
                }
                let plan = plan_gemm(&p, gpu.caps(), &options).unwrap();
                let name = plan.steps[0].shader().name();
                assert!(name.contains("_q"), "{m}x{n}x{k} planned {name}");
                check_plan(&p, &plan, &mut rng, &format!("{dtype} {m}x{n}x{k} tA={ta} tB={tb}"));
            }
        }
    }
}

/// The H200's caps with the test adapter's workgroup storage, so plans carry coop variants
/// that fit the test adapter once emulated.
fn coop_caps() -> DeviceCaps {
    let mut caps = profiles::get("h200").unwrap();
    caps.max_workgroup_storage_bytes = gpu().caps().max_workgroup_storage_bytes;
    caps
}

/// Plans `p` on coop caps with one coop shape, then swaps every coop step for its emulation.
fn emulated_plan(p: &GemmProblem, shape: CoopShape, choice: TilingChoice, f32_via_f16: bool) -> Option<GemmPlan> {
    // f32 stays on the SIMT kernels unless it opts in to f16 here (the split path has its own test).
    let f32_split = CoopMode::Off;
    emulated_plan_with(p, shape, &GemmOptions { tiling: choice, f32_via_f16, f32_split, ..Default::default() })
}

fn emulated_plan_with(p: &GemmProblem, shape: CoopShape, options: &GemmOptions) -> Option<GemmPlan> {
    let tuning = Tuning::single(shape, shape, SIMT_VEC_128, SIMT_VEC_64);
    let mut plan = plan_gemm_tuned(p, &coop_caps(), options, &tuning).ok()?;
    if !plan.uses_coop() {
        return None;
    }
    for step in &mut plan.steps {
        if let GemmVariant::Coop(c) = &mut step.variant {
            c.emulate = true;
            c.subgroup_sync = false;
        }
    }
    Some(plan)
}

/// Coop shapes that fit 32 KB of workgroup storage: the tuned 64×64, 128×128 variants, and
/// each staging, prefetch and partial-load option.
fn emulable_shapes() -> Vec<(CoopShape, TilingChoice)> {
    vec![
        (COOP_64, TilingChoice::Tile64),
        (COOP_64, TilingChoice::SplitK),
        (CoopShape { stages: 1, depth: 1, ..COOP_128 }, TilingChoice::Tile128),
        (CoopShape { sg_m: 2, sg_n: 2, stages: 1, depth: 1, ..COOP_128 }, TilingChoice::Tile128),
        // Both operands staged K-contiguous (transposing stores), two register sets in flight.
        (CoopShape { stage_k: true, depth: 2, ..COOP_64 }, TilingChoice::SplitK),
        (CoopShape { stage_k: true, stages: 1, depth: 1, ..COOP_128 }, TilingChoice::Tile128),
        // 8 subgroups over a 64×64 tile 16 deep: 128 chunks of A per slice for 256 invocations,
        // so only the first half load A (the partial loaders of the 512-invocation kernels).
        (CoopShape { bk: 16, sg_m: 2, sg_n: 4, ..COOP_64 }, TilingChoice::Tile64),
        // COOP_WIDE's code paths at a size that fits 32 KB: 512 invocations, two register sets,
        // both operands loaded by part of the invocations.
        (CoopShape { bm: 64, bn: 64, sg_m: 4, sg_n: 4, ..COOP_WIDE }, TilingChoice::Tile128),
    ]
}

/// The test adapter, where it has shader-f16 (the coop kernels stage in f16 even when emulated).
fn coop_gpu() -> Option<std::sync::Arc<ep_kernels::runtime::Gpu>> {
    let gpu = gpu();
    if !gpu.caps().shader_f16 {
        eprintln!("adapter has no shader-f16: coop kernels stage in f16");
        return None;
    }
    Some(gpu)
}

#[test]
fn coop_emulated_matches_reference() {
    if coop_gpu().is_none() {
        return;
    }
    let mut rng = rng("coop_emulated");
    // Multiples of 8 take 16-byte loads, of 4 8-byte loads, the rest scalar loads.
    let shapes: &[(u32, u32, u32)] = &[(136, 72, 104), (68, 20, 44), (33, 70, 47)];
    let mut ran = 0;
    for (s, (shape, choice)) in emulable_shapes().into_iter().enumerate() {
        for (i, &(m, n, k)) in shapes.iter().enumerate() {
            let (ta, tb) = TRANSPOSES[(i + s) % 4];
            let mut p = GemmProblem::simple(DType::F16, m, n, k, ta, tb);
            if (i + s) % 2 == 0 {
                p = with_bias(p);
            }
            let Some(plan) = emulated_plan(&p, shape, choice, false) else {
                panic!("{shape:?} {choice:?} at {m}x{n}x{k}: no coop plan");
            };
            if choice == TilingChoice::SplitK {
                assert!(matches!(plan.tiling, Tiling::CoopSplitK { .. }), "{:?}", plan.tiling);
            }
            let GemmVariant::Coop(c) = plan.steps[0].variant else { unreachable!() };
            let width = if m % 8 == 0 && n % 8 == 0 && k % 8 == 0 {
                8
            } else if m % 4 == 0 && n % 4 == 0 && k % 4 == 0 {
                4
            } else {
                1
            };
            assert_eq!(c.width, width, "{m}x{n}x{k}");
            check_plan(&p, &plan, &mut rng, &format!("{shape:?} {m}x{n}x{k} tA={ta} tB={tb}"));
            ran += 1;
        }
    }
    assert!(ran > 0);
}

/// The coop epilogue with a residual operand (the output's shape, loaded before each fragment
/// is stored): added before the activation, after it, or multiplying the result (a gated
/// product), against float64. Fails with the residual read at a neighbouring element.
#[test]
fn coop_emulated_residual_epilogues_match_reference() {
    let Some(gpu) = coop_gpu() else { return };
    let mut rng = rng("coop_emulated_residual");
    let modes = [
        (FLAG_RESIDUAL, "before the activation"),
        (FLAG_RESIDUAL | FLAG_RESIDUAL_AFTER_ACT, "after the activation"),
        (FLAG_RESIDUAL | FLAG_RESIDUAL_AFTER_ACT | FLAG_RESIDUAL_MUL, "gated"),
    ];
    let shapes = emulable_shapes();
    for (i, &(m, n, k)) in [(136u32, 72u32, 104u32), (33, 70, 47), (72, 16, 8)].iter().enumerate() {
        for (j, &(flags, what)) in modes.iter().enumerate() {
            let (shape, choice) = shapes[(i * 3 + j) % shapes.len()];
            let (ta, tb) = TRANSPOSES[(i + j) % 4];
            let mut p = GemmProblem::simple(DType::F16, m, n, k, ta, tb);
            if flags & FLAG_RESIDUAL_AFTER_ACT != 0 {
                p = with_bias(p);
            }
            let Some(mut plan) = emulated_plan(&p, shape, choice, false) else {
                panic!("{shape:?} {choice:?} at {m}x{n}x{k}: no coop plan");
            };
            plan.add_output_flags(flags);
            let (a, b, bias) = data(&p, &mut rng, true);
            let residual = round_f16(&random_vec(&mut rng, p.output_len() as usize));
            let ab = gpu.upload(&to_bytes(&a, p.dtype), "a").unwrap();
            let bb = gpu.upload(&to_bytes(&b, p.dtype), "b").unwrap();
            let biasb = bias.as_ref().map(|v| gpu.upload(&to_bytes(v, p.dtype), "bias").unwrap());
            let rb = gpu.upload(&to_bytes(&residual, p.dtype), "residual").unwrap();
            let out = gpu.upload(&poison(p.output_len() as usize, p.dtype), "out").unwrap();
            let io = GemmBindings { a: &ab, b: &bb, bias: biasb.as_ref(), out: &out };
            let dispatches = gpu.prepare_gemm_residual(&plan, io, &rb).unwrap();
            gpu.run(&dispatches.iter().collect::<Vec<_>>()).unwrap();
            let got = from_bytes(&gpu.read_buffer(&out).unwrap(), p.dtype);
            let product = reference(&p, &a, &b, bias.as_deref());
            let want: Vec<f64> = product
                .iter()
                .zip(&residual)
                .map(|(&v, &r)| match flags {
                    f if f & FLAG_RESIDUAL_MUL != 0 => v * r as f64,
                    _ => v + r as f64,
                })
                .collect();
            let names: Vec<String> = plan.shaders().map(|v| v.name()).collect();
            assert!(names.iter().any(|n| n.ends_with("_res")), "{names:?}");
            let (atol, rtol) = tolerance(p.dtype, k);
            let label = format!("{what}: {shape:?} {m}x{n}x{k} tA={ta} tB={tb} {names:?}");
            assert_close(&got[..want.len()], &want, atol, rtol, &label);
        }
    }
}

#[test]
fn f32_via_f16_emulated_matches_reference() {
    if coop_gpu().is_none() {
        return;
    }
    let mut rng = rng("f32_via_f16");
    for (i, &(m, n, k)) in [(72u32, 40u32, 36u32), (37, 20, 19)].iter().enumerate() {
        let (ta, tb) = TRANSPOSES[i * 3 % 4];
        let p = with_bias(GemmProblem::simple(DType::F32, m, n, k, ta, tb));
        let plan = emulated_plan(&p, COOP_64, TilingChoice::Auto, true).expect("coop plan");
        let GemmVariant::Coop(c) = plan.steps[0].variant else { unreachable!() };
        assert_eq!((c.dtype, c.width), (DType::F32, if i == 0 { 4 } else { 1 }));
        check_plan(&p, &plan, &mut rng, &format!("f32 via f16 {m}x{n}x{k}"));
    }
}

/// The 16-byte loads (eight f16 as a `vec4<u32>`, unpacked through `unpack2x16float`) carry every
/// finite f16 value unchanged: I·B = B with B holding all 63 488 finite bit patterns (subnormals,
/// the largest values, both zeros), compared exactly, and an infinity or NaN in B reaches the
/// output of its column as the float64 reference has it.
#[test]
fn coop_16_byte_loads_carry_every_f16_value() {
    let Some(gpu) = coop_gpu() else { return };
    let (m, n) = (128u32, 512u32);
    let eye: Vec<f32> = (0..m * m).map(|i| if i / m == i % m { 1.0 } else { 0.0 }).collect();
    let mut b: Vec<f32> = (0..=u16::MAX).map(|bits| half::f16::from_bits(bits).to_f32()).collect();
    for v in b.iter_mut().filter(|v| !v.is_finite()) {
        *v = 0.0;
    }
    // Column 3 gets an infinity (row 5) and column 7 a NaN (row 9).
    b[(5 * n + 3) as usize] = f32::INFINITY;
    b[(9 * n + 7) as usize] = f32::NAN;
    let p = GemmProblem::simple(DType::F16, m, n, m, false, false);
    for (shape, choice) in [(COOP_64, TilingChoice::Tile64), emulable_shapes()[7]] {
        let plan = emulated_plan(&p, shape, choice, false).expect("a coop plan");
        let GemmVariant::Coop(c) = plan.steps[0].variant else { unreachable!() };
        assert_eq!(c.width, 8, "{shape:?}: 16-byte loads");
        let got = run_plan(&gpu, &p, &plan, &eye, &b, None);
        let want = reference(&p, &eye, &b, None);
        for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
            let same = if w.is_nan() { g.is_nan() } else { g as f64 == w };
            assert!(same, "{shape:?}: element {i} ({}, {}) is {g}, expected {w}", i as u32 / n, i as u32 % n);
        }
    }
}

/// The longest K an emulated pass takes (`EMULATED_MAX_K`), unsplit, on every emulable shape:
/// each emulated invocation once held every fragment whole, and llvmpipe returned wrong sums
/// past about 26 slices of K (the emulation now spreads a fragment over the subgroup, as the
/// hardware does); 128×128 tiles and split f32 operands still sum wrongly from 15–48 slices on,
/// so the planner keeps emulated passes to 8 slices (`planner.rs`).
#[test]
fn coop_emulated_at_the_longest_k_matches_reference() {
    if coop_gpu().is_none() {
        return;
    }
    let mut rng = rng("coop_emulated_long_k");
    let k = ep_kernels::gemm::EMULATED_MAX_K;
    let mut ran = 0;
    for (shape, choice) in emulable_shapes().into_iter().filter(|(_, c)| *c != TilingChoice::SplitK) {
        let p = GemmProblem::simple(DType::F16, 64, 40, k, false, false);
        let plan = emulated_plan(&p, shape, choice, false).expect("a coop plan");
        assert!(!matches!(plan.tiling, Tiling::CoopSplitK { .. }), "{:?}", plan.tiling);
        check_plan(&p, &plan, &mut rng, &format!("{shape:?} 64x40x{k}"));
        ran += 1;
    }
    assert!(ran >= 4);
}
