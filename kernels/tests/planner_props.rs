//! Property tests of the GEMM planner: on random device limits, options and problems, every
//! plan respects every limit, and batched MatMul problems of random broadcast shapes plan.

use ep_kernels::caps::profiles;
use ep_kernels::gemm::coop_device_check;
use ep_kernels::gemm::{
    matmul_problem, plan_gemm, CoopMode, GemmOptions, GemmProblem, GemmVariant, StepIo, TilingChoice,
};
use ep_kernels::{DType, DeviceCaps};
use proptest::prelude::*;

fn h200() -> DeviceCaps {
    profiles::get("h200").unwrap()
}

/// Cases per property: `EP_WGPU_FUZZ_CASES` (CI: the default; by hand: e.g. 1000000).
fn fuzz_cases() -> u32 {
    std::env::var("EP_WGPU_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000)
}

fn arb_caps() -> impl Strategy<Value = DeviceCaps> {
    let limits = (
        (0u32..65536, 1u32..1025, 1u32..1025, 1u32..1025, 1u32..70000),
        (1u64 << 10..1u64 << 32, any::<bool>(), 1u32..600),
    );
    // Coop configurations of the H200 (any subset) and subgroup sizes around the assumed 32.
    let coop =
        (proptest::collection::vec(any::<bool>(), 6), prop_oneof![Just(0u32), Just(16), Just(32), Just(64)], 0u32..3);
    (limits, coop).prop_map(|(((storage, inv, wx, wy, wpd), (binding, f16, par)), (keep, sg, sg_spread))| {
        let configs = h200().coop_matrix.into_iter().zip(keep).filter_map(|(c, k)| k.then_some(c)).collect();
        DeviceCaps {
            max_workgroup_storage_bytes: storage,
            max_invocations_per_workgroup: inv,
            max_workgroup_size: [wx, wy, 64],
            max_workgroups_per_dimension: wpd,
            max_storage_binding_size: binding,
            max_buffer_size: binding,
            shader_f16: f16,
            parallelism: par,
            subgroup_min_size: sg,
            subgroup_max_size: sg << sg_spread,
            subgroups: sg > 0,
            coop_matrix: configs,
            ..DeviceCaps::default()
        }
    })
}

fn arb_options() -> impl Strategy<Value = GemmOptions> {
    let mode = || prop_oneof![Just(CoopMode::Auto), Just(CoopMode::Off), Just(CoopMode::On)];
    (arb_choice(), mode(), any::<bool>(), mode(), mode()).prop_map(
        |(tiling, cooperative_matrix, f32_via_f16, f32_split, f32_split_fused)| {
            let modes =
                GemmOptions { cooperative_matrix, f32_via_f16, f32_split, f32_split_fused, ..Default::default() };
            GemmOptions { tiling, ..modes }
        },
    )
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
    fn every_plan_respects_every_limit(caps in arb_caps(), p in arb_problem(), options in arb_options()) {
        match plan_gemm(&p, &caps, &options) {
            Ok(plan) => {
                prop_assert!(!plan.steps.is_empty());
                if plan.uses_coop() {
                    prop_assert!(options.cooperative_matrix != CoopMode::Off);
                    let split = plan.splits_f32();
                    prop_assert!(p.dtype == DType::F16 || options.f32_via_f16 || split);
                    prop_assert!(!split || (options.f32_split != CoopMode::Off && p.dtype == DType::F32));
                    prop_assert!(coop_device_check(&caps).is_ok());
                } else if options.cooperative_matrix != CoopMode::Off {
                    // Declining the coop path always says why.
                    prop_assert!(plan.fallbacks.iter().any(|f| f.starts_with("coop")), "{:?}", plan.fallbacks);
                }
                prop_assert!(plan.workspace_bytes <= caps.max_storage_binding_size);
                for step in &plan.steps {
                    let v = step.variant;
                    let [x, y, z] = v.workgroup_size();
                    prop_assert!(caps.allows_workgroup(x, y, z), "{v:?} workgroup");
                    prop_assert!(v.storage_bytes() <= caps.max_workgroup_storage_bytes, "{v:?} storage");
                    prop_assert!(v.dtype() == DType::F32 || caps.shader_f16);
                    prop_assert_eq!(v.is_coop(), plan.uses_coop() && matches!(step.io, StepIo::Product { .. }));
                    if let GemmVariant::Coop(c) = v {
                        prop_assert!(!c.emulate);
                        prop_assert!(v.fits(&caps).is_ok());
                    }
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
    fn batched_plans_respect_every_limit(caps in arb_caps(), (a, b, bias, f16) in arb_batched(), options in arb_options()) {
        let dtype = if f16 { DType::F16 } else { DType::F32 };
        let Ok((mut p, out)) = matmul_problem(&a, &b, dtype) else { return Ok(()) };
        if let Some(bias) = bias {
            match ep_kernels::gemm::broadcast_layout(&bias, &out, &p) {
                Ok(l) => p.epilogue.bias = Some(l),
                Err(e) => prop_assert!(!e.to_string().is_empty()),
            }
        }
        match plan_gemm(&p, &caps, &options) {
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
