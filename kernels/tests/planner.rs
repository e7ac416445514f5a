//! The planner is a pure function of numbers: each fallback is shown by changing one limit of
//! a recorded profile, and property tests check that every plan respects every limit.

use ep_kernels::caps::profiles;
use ep_kernels::gemm::{fold_grid, matmul_problem, plan_gemm, GemmPlan, GemmProblem, Tiling, TilingChoice};
use ep_kernels::{DType, DeviceCaps, PlanError};
use proptest::prelude::*;

fn h200() -> DeviceCaps {
    profiles::get("h200").unwrap()
}

fn square(n: u32) -> GemmProblem {
    GemmProblem::simple(DType::F32, n, n, n, false, false)
}

fn tiling(p: &GemmProblem, caps: &DeviceCaps, choice: TilingChoice) -> Tiling {
    plan_gemm(p, caps, choice).unwrap().tiling
}

#[test]
fn large_problems_take_128_tiles() {
    assert_eq!(tiling(&square(4096), &h200(), TilingChoice::Auto), Tiling::Tile128);
    let mlp = GemmProblem::simple(DType::F16, 2048, 4096, 4096, false, false);
    assert_eq!(tiling(&mlp, &h200(), TilingChoice::Auto), Tiling::Tile128);
}

#[test]
fn few_tiles_and_long_k_split() {
    let p = GemmProblem::simple(DType::F32, 128, 4096, 4096, false, false);
    assert!(matches!(tiling(&p, &h200(), TilingChoice::Auto), Tiling::SplitK { splits } if splits >= 2));
    // Short K: splitting buys nothing.
    let p = GemmProblem::simple(DType::F32, 128, 512, 256, false, false);
    assert_eq!(tiling(&p, &h200(), TilingChoice::Auto), Tiling::Tile64);
}

#[test]
fn thin_problems_take_gemv_and_swap_when_n_is_small() {
    let p = GemmProblem::simple(DType::F32, 1, 4096, 4096, false, false);
    let plan = plan_gemm(&p, &h200(), TilingChoice::Auto).unwrap();
    assert_eq!((plan.tiling, plan.swap_operands), (Tiling::Gemv, false));
    let p = GemmProblem::simple(DType::F32, 4096, 1, 4096, false, false);
    let plan = plan_gemm(&p, &h200(), TilingChoice::Auto).unwrap();
    assert_eq!((plan.tiling, plan.swap_operands), (Tiling::Gemv, true));
}

#[test]
fn storage_limit_falls_back_from_128_to_64() {
    let mut caps = h200();
    caps.max_workgroup_storage_bytes = 12 * 1024;
    let plan = plan_gemm(&square(4096), &caps, TilingChoice::Auto).unwrap();
    assert_eq!(plan.tiling, Tiling::Tile64);
    assert!(plan.fallbacks[0].contains("workgroup storage"), "{:?}", plan.fallbacks);
    // f16 halves the storage: 128×128 fits again.
    let p = GemmProblem::simple(DType::F16, 4096, 4096, 4096, false, false);
    assert_eq!(tiling(&p, &caps, TilingChoice::Auto), Tiling::Tile128);
}

#[test]
fn invocation_limit_falls_back_to_gemv() {
    let mut caps = h200();
    caps.max_invocations_per_workgroup = 128;
    let plan = plan_gemm(&square(4096), &caps, TilingChoice::Tile128).unwrap();
    assert_eq!(plan.tiling, Tiling::Gemv);
    assert_eq!(plan.fallbacks.len(), 2, "{:?}", plan.fallbacks);
    assert_eq!(plan.steps[0].variant.invocations(), 128);
}

#[test]
fn workgroup_size_limit_falls_back() {
    let mut caps = h200();
    caps.max_workgroup_size = [8, 1024, 64];
    let err = plan_gemm(&square(100), &caps, TilingChoice::Auto).unwrap_err();
    assert!(err.to_string().contains("no GEMM kernel fits"), "{err}");
    caps.max_workgroup_size = [256, 1, 1];
    assert_eq!(tiling(&square(1000), &caps, TilingChoice::Auto), Tiling::Gemv);
}

#[test]
fn f16_needs_shader_f16() {
    let caps = profiles::get("mobile").unwrap();
    let p = GemmProblem::simple(DType::F16, 64, 64, 64, false, false);
    assert_eq!(plan_gemm(&p, &caps, TilingChoice::Auto).unwrap_err(), PlanError::F16Unsupported);
}

#[test]
fn binding_limit_declines_and_split_workspace_falls_back() {
    let mut caps = h200();
    caps.max_storage_binding_size = 1 << 20;
    let err = plan_gemm(&square(1024), &caps, TilingChoice::Auto).unwrap_err();
    assert!(matches!(err, PlanError::BindingTooLarge { .. }), "{err}");
    // With 4 MB per binding every operand of 128×1024×1024 f32 fits; 9 splits of its 512 KB
    // output do not.
    caps.max_storage_binding_size = 4 << 20;
    let p = GemmProblem::simple(DType::F32, 128, 1024, 1024, false, false);
    let plan = plan_gemm(&p, &caps, TilingChoice::SplitK).unwrap();
    assert_eq!(plan.tiling, Tiling::Tile64, "{:?}", plan.fallbacks);
}

#[test]
fn grid_folds_past_the_dimension_limit() {
    let mut caps = h200();
    caps.max_workgroups_per_dimension = 100;
    let plan =
        plan_gemm(&GemmProblem::simple(DType::F32, 1, 200_000, 8, false, false), &caps, TilingChoice::Auto).unwrap();
    let [x, y, z] = plan.steps[0].grid;
    assert!(x <= 100 && y <= 100 && z <= 100 && (x * y * z) as u64 >= plan.steps[0].params.total_workgroups as u64);
    assert!(y > 1);
    caps.max_workgroups_per_dimension = 10;
    assert!(matches!(
        plan_gemm(&GemmProblem::simple(DType::F32, 1, 200_000, 8, false, false), &caps, TilingChoice::Auto),
        Err(PlanError::Invalid(_))
    ));
    assert_eq!(fold_grid(1, 65535).unwrap(), [1, 1, 1]);
    assert_eq!(fold_grid(70000, 65535).unwrap(), [65535, 2, 1]);
}

#[test]
fn shared_weights_fold_batch_into_rows() {
    let (p, _) = matmul_problem(&[4, 128, 512], &[512, 512], DType::F32).unwrap();
    let plan = plan_gemm(&p, &h200(), TilingChoice::Auto).unwrap();
    assert_eq!((plan.steps[0].params.m, plan.steps[0].params.batch_count), (512, 1));
    let (p, _) = matmul_problem(&[4, 128, 512], &[4, 512, 512], DType::F32).unwrap();
    let plan = plan_gemm(&p, &h200(), TilingChoice::Auto).unwrap();
    assert_eq!((plan.steps[0].params.m, plan.steps[0].params.batch_count), (128, 4));
}

/// Prints the decision table of every recorded profile (`--nocapture`); asserts each plans.
#[test]
fn decision_table() {
    let shapes: &[(&str, u32, u32, u32)] = &[
        ("4096³", 4096, 4096, 4096),
        ("MLP M=2048", 2048, 4096, 4096),
        ("MLP M=128", 128, 4096, 4096),
        ("Whisper QKV 1500×384×384", 1500, 384, 384),
        ("Whisper FFN 1500×1536×384", 1500, 1536, 384),
        ("conv1 im2col 3000×384×240", 3000, 384, 240),
        ("GEMV 1×4096×4096", 1, 4096, 4096),
        ("129×7×1000", 129, 7, 1000),
    ];
    for (name, caps) in profiles::all() {
        println!("profile {name}:");
        for &(label, m, n, k) in shapes {
            for dtype in [DType::F32, DType::F16] {
                let p = GemmProblem::simple(dtype, m, n, k, false, false);
                match plan_gemm(&p, &caps, TilingChoice::Auto) {
                    Ok(plan) => println!("  {label:28} {dtype}: {}", describe(&plan)),
                    Err(e) => println!("  {label:28} {dtype}: declined: {e}"),
                }
            }
        }
    }
}

fn describe(plan: &GemmPlan) -> String {
    let names: Vec<String> = plan.variants().map(|v| v.name()).collect();
    format!("{:?} grid {:?} [{}]", plan.tiling, plan.steps[0].grid, names.join(" + "))
}

/// Cases per property: `EP_WGPU_FUZZ_CASES` (CI: the default; by hand: e.g. 1000000).
fn fuzz_cases() -> u32 {
    std::env::var("EP_WGPU_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000)
}

fn arb_caps() -> impl Strategy<Value = DeviceCaps> {
    ((0u32..65536, 1u32..1025, 1u32..1025, 1u32..1025, 1u32..70000), (1u64 << 10..1u64 << 32, any::<bool>(), 1u32..600))
        .prop_map(|((storage, inv, wx, wy, wpd), (binding, f16, par))| DeviceCaps {
            max_workgroup_storage_bytes: storage,
            max_invocations_per_workgroup: inv,
            max_workgroup_size: [wx, wy, 64],
            max_workgroups_per_dimension: wpd,
            max_storage_binding_size: binding,
            max_buffer_size: binding,
            shader_f16: f16,
            parallelism: par,
            ..DeviceCaps::default()
        })
}

fn arb_problem() -> impl Strategy<Value = GemmProblem> {
    (0u32..5000, 0u32..5000, 0u32..5000, any::<bool>(), any::<bool>(), any::<bool>()).prop_map(
        |(m, n, k, ta, tb, f16)| GemmProblem::simple(if f16 { DType::F16 } else { DType::F32 }, m, n, k, ta, tb),
    )
}

fn arb_choice() -> impl Strategy<Value = TilingChoice> {
    prop_oneof![
        Just(TilingChoice::Auto),
        Just(TilingChoice::Tile128),
        Just(TilingChoice::Tile64),
        Just(TilingChoice::SplitK),
        Just(TilingChoice::Gemv)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: fuzz_cases(), ..ProptestConfig::default() })]

    #[test]
    fn every_plan_respects_every_limit(caps in arb_caps(), p in arb_problem(), choice in arb_choice()) {
        match plan_gemm(&p, &caps, choice) {
            Ok(plan) => {
                prop_assert!(!plan.steps.is_empty());
                prop_assert!(plan.workspace_bytes <= caps.max_storage_binding_size);
                for step in &plan.steps {
                    let v = step.variant;
                    let [x, y, z] = v.workgroup_size();
                    prop_assert!(caps.allows_workgroup(x, y, z), "{v:?} workgroup");
                    prop_assert!(v.storage_bytes() <= caps.max_workgroup_storage_bytes, "{v:?} storage");
                    prop_assert!(v.dtype() == DType::F32 || caps.shader_f16);
                    let max = caps.max_workgroups_per_dimension;
                    let [gx, gy, gz] = step.grid;
                    prop_assert!(gx <= max && gy <= max && gz <= max, "grid {:?} > {max}", step.grid);
                    prop_assert!(gx as u64 * gy as u64 * gz as u64 >= step.params.total_workgroups as u64);
                    prop_assert_eq!((step.params.grid_x, step.params.grid_y), (gx, gy));
                }
                let elems = [p.output_len(), p.m as u64 * p.k as u64, p.k as u64 * p.n as u64];
                for e in elems {
                    prop_assert!(e * p.dtype.size() <= caps.max_storage_binding_size);
                }
            }
            Err(e) => {
                // A typed reason, never a panic.
                prop_assert!(!e.to_string().is_empty());
            }
        }
    }
}

/// Batch shapes of up to three dims, each operand broadcasting some of them.
fn arb_batched() -> impl Strategy<Value = (Vec<u64>, Vec<u64>, Option<Vec<u64>>, bool)> {
    let dims = prop::collection::vec(prop_oneof![Just(0u64), Just(1u64), 1u64..9, 1u64..3000], 2..6);
    (dims, prop::collection::vec(any::<bool>(), 6), 0usize..5, any::<bool>()).prop_map(|(d, mask, bias_kind, f16)| {
        let (m, k, n) = (d[0], d[1], *d.get(2).unwrap_or(&7));
        let batch: Vec<u64> = d[3.min(d.len())..].to_vec();
        let keep = |i: usize, v: u64| if mask[i % mask.len()] { v } else { 1 };
        let a: Vec<u64> = batch.iter().enumerate().map(|(i, &b)| keep(i, b)).chain([m, k]).collect();
        let b: Vec<u64> = batch.iter().enumerate().map(|(i, &v)| keep(i + 3, v)).chain([k, n]).collect();
        let bias = match bias_kind {
            0 => None,
            1 => Some(vec![n]),
            2 => Some(vec![m, 1]),
            3 => Some(vec![]),
            _ => Some(batch.iter().copied().chain([m, n]).collect()),
        };
        (a, b, bias, f16)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: fuzz_cases(), ..ProptestConfig::default() })]

    /// MatMul-shaped problems (batches, broadcasting, zero dims, a fused bias): every plan keeps
    /// every operand's reachable extent within one binding and the grid within the device, or
    /// the planner says why not.
    #[test]
    fn batched_plans_respect_every_limit(caps in arb_caps(), (a, b, bias, f16) in arb_batched(), choice in arb_choice()) {
        let dtype = if f16 { DType::F16 } else { DType::F32 };
        let Ok((mut p, out)) = matmul_problem(&a, &b, dtype) else { return Ok(()) };
        if let Some(bias) = bias {
            match ep_kernels::gemm::broadcast_layout(&bias, &out, &p) {
                Ok(l) => p.epilogue.bias = Some(l),
                Err(e) => prop_assert!(!e.to_string().is_empty()),
            }
        }
        match plan_gemm(&p, &caps, choice) {
            Ok(plan) => {
                let limit = caps.max_storage_binding_size.min(caps.max_buffer_size);
                let size = dtype.size();
                prop_assert!(p.a.extent(p.m, p.k, &p.batch) * size <= limit);
                prop_assert!(p.b.extent(p.k, p.n, &p.batch) * size <= limit);
                prop_assert!(p.output_len() * size <= limit);
                if let Some(l) = p.epilogue.bias {
                    prop_assert!(l.extent(p.m, p.n, &p.batch) * size <= limit);
                }
                prop_assert!(plan.workspace_bytes <= caps.max_storage_binding_size);
                for step in &plan.steps {
                    let max = caps.max_workgroups_per_dimension;
                    prop_assert!(step.grid.iter().all(|&g| g <= max), "grid {:?} > {max}", step.grid);
                    prop_assert!(step.grid.iter().map(|&g| g as u64).product::<u64>() >= step.params.total_workgroups as u64);
                    let [x, y, z] = step.variant.workgroup_size();
                    prop_assert!(caps.allows_workgroup(x, y, z));
                    prop_assert!(step.variant.storage_bytes() <= caps.max_workgroup_storage_bytes);
                }
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
}
