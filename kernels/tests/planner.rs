//! The planner is a pure function of numbers: each fallback is shown by changing one limit of
//! a recorded profile (`planner_props.rs`: property tests that every plan respects every limit).

use ep_kernels::caps::profiles;
use ep_kernels::gemm::{
    fold_grid, matmul_problem, plan_gemm, Contig, CoopMode, GemmOptions, GemmPlan, GemmProblem, GemmVariant, Tiling,
    TilingChoice,
};
use ep_kernels::{DType, DeviceCaps, PlanError};

fn h200() -> DeviceCaps {
    profiles::get("h200").unwrap()
}

fn square(n: u32) -> GemmProblem {
    GemmProblem::simple(DType::F32, n, n, n, false, false)
}

/// Options with the cooperative-matrix path switched off.
fn off() -> GemmOptions {
    GemmOptions { cooperative_matrix: CoopMode::Off, ..Default::default() }
}

fn tiling(p: &GemmProblem, caps: &DeviceCaps, choice: TilingChoice) -> Tiling {
    plan_gemm(p, caps, &GemmOptions::tiling(choice)).unwrap().tiling
}

#[test]
fn large_problems_take_128_tiles() {
    assert_eq!(plan_gemm(&square(4096), &h200(), &off()).unwrap().tiling, Tiling::Tile128);
    let mlp = GemmProblem::simple(DType::F16, 2048, 4096, 4096, false, false);
    assert_eq!(tiling(&mlp, &h200(), TilingChoice::Auto), Tiling::Coop128);
    assert_eq!(plan_gemm(&mlp, &h200(), &off()).unwrap().tiling, Tiling::Tile128);
}

#[test]
fn few_tiles_and_long_k_split() {
    let p = GemmProblem::simple(DType::F32, 128, 4096, 4096, false, false);
    assert!(matches!(tiling(&p, &h200(), TilingChoice::Auto), Tiling::SplitK { splits } if splits >= 2));
    // Short K: splitting buys nothing.
    let p = GemmProblem::simple(DType::F32, 128, 512, 256, false, false);
    assert_eq!(tiling(&p, &h200(), TilingChoice::Auto), Tiling::Tile64);
}

/// The split-K counts of `docs/PERFORMANCE.md` "Split-K for short K" on the H200 profile.
#[test]
fn short_k_splits_only_the_thinnest_products() {
    let caps = h200();
    let splits =
        |dtype, m, n, k| match tiling(&GemmProblem::simple(dtype, m, n, k, false, false), &caps, TilingChoice::Auto) {
            Tiling::SplitK { splits } | Tiling::CoopSplitK { splits } => splits,
            _ => 1,
        };
    // BERT-base at 128 tokens: 24 tiles, K = 768 → 7 splits, whole 32-deep slices each for the
    // tensor cores, so 6 of 128 (13 against 20 µs; f32 17 against 41).
    assert_eq!(splits(DType::F16, 128, 768, 768), 6);
    assert_eq!(splits(DType::F32, 128, 768, 768), 7);
    // ViT-base's 197 rows: 48 tiles split on the SIMT path only (f32 23 against 41 µs); the
    // tensor-core kernel's split lost end to end.
    assert_eq!(splits(DType::F32, 197, 768, 768), 4);
    assert_eq!(splits(DType::F16, 197, 768, 768), 1);
    // Long K keeps filling the whole device (11 splits: 17 µs, 7: 20 µs).
    assert_eq!(splits(DType::F16, 128, 768, 3072), 11);
    // Whisper's projections have enough tiles, and K below 512 never splits.
    assert_eq!(splits(DType::F32, 1500, 384, 384), 1);
    assert_eq!(splits(DType::F32, 128, 768, 384), 1);
}

#[test]
fn thin_problems_take_gemv_and_swap_when_n_is_small() {
    let p = GemmProblem::simple(DType::F32, 1, 4096, 4096, false, false);
    let plan = plan_gemm(&p, &h200(), &GemmOptions::tiling(TilingChoice::Auto)).unwrap();
    assert_eq!((plan.tiling, plan.swap_operands), (Tiling::Gemv, false));
    let p = GemmProblem::simple(DType::F32, 4096, 1, 4096, false, false);
    let plan = plan_gemm(&p, &h200(), &GemmOptions::tiling(TilingChoice::Auto)).unwrap();
    assert_eq!((plan.tiling, plan.swap_operands), (Tiling::Gemv, true));
}

#[test]
fn storage_limit_falls_back_from_128_to_64() {
    let mut caps = h200();
    caps.max_workgroup_storage_bytes = 12 * 1024;
    let plan = plan_gemm(&square(4096), &caps, &GemmOptions::tiling(TilingChoice::Auto)).unwrap();
    assert_eq!(plan.tiling, Tiling::Tile64);
    assert!(
        plan.fallbacks.iter().any(|f| f.starts_with("128x128") && f.contains("workgroup storage")),
        "{:?}",
        plan.fallbacks
    );
    // f16 halves the storage: the scalar 128×128 fits again.
    let p = GemmProblem::simple(DType::F16, 4093, 4096, 4096, false, false);
    assert_eq!(plan_gemm(&p, &caps, &off()).unwrap().tiling, Tiling::Tile128);
}

#[test]
fn invocation_limit_falls_back_to_gemv() {
    let mut caps = h200();
    caps.max_invocations_per_workgroup = 128;
    let plan = plan_gemm(&square(4096), &caps, &GemmOptions::tiling(TilingChoice::Tile128)).unwrap();
    assert_eq!(plan.tiling, Tiling::Gemv);
    let tilings_tried: Vec<_> =
        plan.fallbacks.iter().filter(|f| !f.starts_with("coop: ") && !f.starts_with("split: ")).collect();
    assert_eq!(tilings_tried.len(), 2, "{:?}", plan.fallbacks);
    assert_eq!(plan.steps[0].variant.invocations(), 128);
}

#[test]
fn workgroup_size_limit_falls_back() {
    let mut caps = h200();
    caps.max_workgroup_size = [8, 1024, 64];
    let err = plan_gemm(&square(100), &caps, &GemmOptions::tiling(TilingChoice::Auto)).unwrap_err();
    assert!(err.to_string().contains("no GEMM kernel fits"), "{err}");
    caps.max_workgroup_size = [256, 1, 1];
    assert_eq!(tiling(&square(1000), &caps, TilingChoice::Auto), Tiling::Gemv);
}

#[test]
fn f16_needs_shader_f16() {
    let caps = profiles::get("mobile").unwrap();
    let p = GemmProblem::simple(DType::F16, 64, 64, 64, false, false);
    assert_eq!(plan_gemm(&p, &caps, &GemmOptions::tiling(TilingChoice::Auto)).unwrap_err(), PlanError::F16Unsupported);
}

#[test]
fn binding_limit_declines_and_split_workspace_falls_back() {
    let mut caps = h200();
    caps.max_storage_binding_size = 1 << 20;
    let err = plan_gemm(&square(1024), &caps, &GemmOptions::tiling(TilingChoice::Auto)).unwrap_err();
    assert!(matches!(err, PlanError::BindingTooLarge { .. }), "{err}");
    // With 4 MB per binding every operand of 128×1024×1024 f32 fits; 16 splits of its 512 KB
    // output do not.
    caps.max_storage_binding_size = 4 << 20;
    caps.parallelism = 600;
    let p = GemmProblem::simple(DType::F32, 128, 1024, 1024, false, false);
    let plan = plan_gemm(&p, &caps, &GemmOptions::tiling(TilingChoice::SplitK)).unwrap();
    assert_eq!(plan.tiling, Tiling::Tile64, "{:?}", plan.fallbacks);
}

#[test]
fn grid_folds_past_the_dimension_limit() {
    let mut caps = h200();
    caps.max_workgroups_per_dimension = 100;
    let plan = plan_gemm(
        &GemmProblem::simple(DType::F32, 1, 200_000, 8, false, false),
        &caps,
        &GemmOptions::tiling(TilingChoice::Auto),
    )
    .unwrap();
    let [x, y, z] = plan.steps[0].grid;
    assert!(x <= 100 && y <= 100 && z <= 100 && (x * y * z) as u64 >= plan.steps[0].params.total_workgroups as u64);
    assert!(y > 1);
    caps.max_workgroups_per_dimension = 10;
    assert!(matches!(
        plan_gemm(
            &GemmProblem::simple(DType::F32, 1, 200_000, 8, false, false),
            &caps,
            &GemmOptions::tiling(TilingChoice::Auto)
        ),
        Err(PlanError::Invalid(_))
    ));
    assert_eq!(fold_grid(1, 65535).unwrap(), [1, 1, 1]);
    assert_eq!(fold_grid(70000, 65535).unwrap(), [65535, 2, 1]);
}

#[test]
fn shared_weights_fold_batch_into_rows() {
    let (p, _) = matmul_problem(&[4, 128, 512], &[512, 512], DType::F32).unwrap();
    let plan = plan_gemm(&p, &h200(), &GemmOptions::tiling(TilingChoice::Auto)).unwrap();
    assert_eq!((plan.steps[0].params.m, plan.steps[0].params.batch_count), (512, 1));
    let (p, _) = matmul_problem(&[4, 128, 512], &[4, 512, 512], DType::F32).unwrap();
    let plan = plan_gemm(&p, &h200(), &GemmOptions::tiling(TilingChoice::Auto)).unwrap();
    assert_eq!((plan.steps[0].params.m, plan.steps[0].params.batch_count), (128, 4));
}

fn f16(m: u32, n: u32, k: u32) -> GemmProblem {
    GemmProblem::simple(DType::F16, m, n, k, false, false)
}

fn auto(p: &GemmProblem, caps: &DeviceCaps) -> GemmPlan {
    plan_gemm(p, caps, &GemmOptions::default()).unwrap()
}

fn coop_reason(plan: &GemmPlan) -> &str {
    plan.fallbacks.iter().find_map(|f| f.strip_prefix("coop: ")).unwrap_or("")
}

#[test]
fn h200_takes_tensor_cores_for_f16() {
    let caps = h200();
    let plan = auto(&f16(4096, 4096, 4096), &caps);
    assert_eq!(plan.tiling, Tiling::Coop128);
    assert!(plan.uses_coop() && plan.fallbacks.is_empty(), "{:?}", plan.fallbacks);
    // 16-byte loads and a wave of 128×256 tiles: the 512-invocation kernel.
    assert_eq!(plan.steps[0].variant.name(), "gemm_f16_coop_128x256_k16_w4x4_s2_p2_ss");
    // Whisper's projections have too few 128×128 tiles to fill the device.
    assert_eq!(auto(&f16(1500, 384, 384), &caps).tiling, Tiling::Coop64);
    assert_eq!(auto(&f16(1500, 384, 384), &caps).steps[0].variant.name(), "gemm_f16_coop_64x64_ss");
    // Few output tiles and a long K: split-K on tensor cores.
    let plan = auto(&f16(128, 4096, 4096), &caps);
    assert!(matches!(plan.tiling, Tiling::CoopSplitK { splits } if splits >= 2), "{:?}", plan.tiling);
    let names: Vec<String> = plan.variants().map(|v| v.name()).collect();
    assert_eq!(names, ["gemm_f16_coop_64x64_splitk_ss", "splitk_reduce_f16_t256"]);
    // Transposed operands stage the other way round and load fragments column-major. A
    // transposed A still fits the 128×256 tile; a K-contiguous B staged for it would not fit
    // 48 KB, so the 128×128 kernel takes it.
    let p = GemmProblem::simple(DType::F16, 4096, 4096, 4096, true, false);
    assert_eq!(auto(&p, &caps).steps[0].variant.name(), "gemm_f16_coop_128x256_at_k16_w4x4_s2_p2_ss");
    let p = GemmProblem::simple(DType::F16, 4096, 4096, 4096, true, true);
    assert_eq!(auto(&p, &caps).steps[0].variant.name(), "gemm_f16_coop_128x128_at_bt_ss");
    // N = 384 in 256-wide tiles would compute a third more: the 128×128 kernel.
    assert_eq!(auto(&f16(16384, 384, 1024), &caps).steps[0].variant.name(), "gemm_f16_coop_128x128_ss");
    // Unaligned K: scalar loads, still tensor cores, on the 128×128 kernel (narrow loads need
    // more prefetch registers than the 512-invocation kernel has).
    assert_eq!(auto(&f16(4096, 4096, 4093), &caps).steps[0].variant.name(), "gemm_f16_coop_128x128_scalar_ss");
}

/// The tile classes by problem size on the H200 profile, as measured (docs/PERFORMANCE.md,
/// "GEMM occupancy"): 64×64 below a third of `parallelism` in 128×128 tiles, the 128×256 kernel
/// above a quarter of it in its own tiles, 128×128 between, and never a tile that pads M = 64.
#[test]
fn h200_tile_classes_follow_the_measurements() {
    let caps = h200();
    let name = |m, n, k| auto(&f16(m, n, k), &caps).steps[0].variant.name();
    assert_eq!(name(512, 2048, 2048), "gemm_f16_coop_64x64_ss");
    assert_eq!(name(512, 3072, 1024), "gemm_f16_coop_128x128_ss");
    assert_eq!(name(1024, 2048, 2048), "gemm_f16_coop_128x128_ss");
    assert_eq!(name(1500, 1536, 384), "gemm_f16_coop_128x256_k16_w4x4_s2_p2_ss");
    assert_eq!(name(512, 8192, 2048), "gemm_f16_coop_128x256_k16_w4x4_s2_p2_ss");
    assert_eq!(name(64, 65536, 576), "gemm_f16_coop_64x64_ss");
}

#[test]
fn thin_products_keep_gemv_unless_coop_is_forced() {
    let caps = h200();
    let plan = auto(&f16(4, 4096, 4096), &caps);
    assert_eq!(plan.tiling, Tiling::Gemv);
    assert!(coop_reason(&plan).contains("GEMV"), "{:?}", plan.fallbacks);
    let on = GemmOptions { cooperative_matrix: CoopMode::On, ..Default::default() };
    assert!(plan_gemm(&f16(4, 4096, 4096), &caps, &on).unwrap().uses_coop());
}

#[test]
fn f32_splits_large_products_and_stays_exact_elsewhere() {
    let caps = h200();
    let split_reason = |plan: &GemmPlan| plan.fallbacks.iter().find(|f| f.starts_with("split")).cloned();
    // Large: three f16 products of split operands after the max pass, fused (K once, the
    // single-stage 128×128 tile whose doubled staging fits)...
    let plan = auto(&square(4096), &caps);
    assert!(plan.uses_coop());
    let names: Vec<String> = plan.steps.iter().map(|s| s.variant.name()).collect();
    assert_eq!(names, ["absmax_t256", "gemm_f32_coop_128x128_k32_w2x4_s1_p1_x3f_ss"]);
    assert_eq!((plan.steps[1].params.k, plan.steps[1].params.k_chunk), (4096, 4096));
    // The max pass reads both operands' 2^22 vec4s in 256 workgroups each; the product reduces
    // their 2 × 256 maxima (the count in its flags' high half).
    assert_eq!((plan.steps[0].params.m, plan.steps[0].params.tiles_n, plan.workspace_bytes), (1 << 22, 256, 2048));
    assert_eq!(plan.steps[1].params.flags >> 16, 256);
    // ... or serial (K three times), by option or where a short K lets it take 128×256 tiles.
    let serial = GemmOptions { f32_split_fused: CoopMode::Off, ..Default::default() };
    let plan = plan_gemm(&square(4096), &caps, &serial).unwrap();
    assert_eq!(plan.steps[1].variant.name(), "gemm_f32_coop_128x256_k16_w4x4_s2_p2_x3_ss");
    assert_eq!((plan.steps[1].params.k, plan.steps[1].params.k_chunk), (4096, 3 * 4096));
    let name = |m, n, k| auto(&GemmProblem::simple(DType::F32, m, n, k, false, false), &caps).steps[1].variant.name();
    assert_eq!(name(1500, 1536, 384), "gemm_f32_coop_128x256_k16_w4x4_s2_p2_x3_ss");
    // K up to 1024: 16-deep slices (half the code per slice); longer K keeps 32-deep ones (4096³ above).
    assert_eq!(name(1500, 1152, 384), "gemm_f32_coop_128x128_k16_w2x4_s1_p1_x3f_ss");
    assert_eq!(name(512, 3072, 1024), "gemm_f32_coop_128x128_k16_w2x4_s1_p1_x3f_ss");
    assert_eq!(name(512, 3072, 1536), "gemm_f32_coop_128x128_k32_w2x4_s1_p1_x3f_ss");
    // Small: the SIMT kernels, with the reason.
    let plan = auto(&square(256), &caps);
    assert!(!plan.uses_coop());
    assert!(split_reason(&plan).unwrap().contains("third"), "{:?}", plan.fallbacks);
    // Short K (attention scores): the SIMT kernels.
    let mut scores = GemmProblem::simple(DType::F32, 1500, 1500, 64, false, true);
    scores.batch = [1, 1, 1, 6];
    scores.a.batch_strides[3] = 1500 * 64;
    scores.b.batch_strides[3] = 1500 * 64;
    let plan = auto(&scores, &caps);
    assert!(!plan.uses_coop() && split_reason(&plan).unwrap().contains("K < 256"), "{:?}", plan.fallbacks);
    // Narrow (a conv's 128 output channels over its pixels): the SIMT kernels.
    let plan = auto(&GemmProblem::simple(DType::F32, 128, 25088, 1152, false, false), &caps);
    assert!(!plan.uses_coop() && split_reason(&plan).unwrap().contains("N < 512"), "{:?}", plan.fallbacks);
    assert!(auto(&GemmProblem::simple(DType::F32, 1500, 1536, 384, false, false), &caps).steps[1]
        .variant
        .reads_scales());
    // Off by option, or with the coop path off: exact SIMT.
    let off_split = GemmOptions { f32_split: CoopMode::Off, ..Default::default() };
    let plan = plan_gemm(&square(4096), &caps, &off_split).unwrap();
    assert!(!plan.uses_coop());
    assert!(split_reason(&plan).unwrap().contains("f32_split=0"), "{:?}", plan.fallbacks);
    assert!(coop_reason(&plan).contains("f32_via_f16"), "{:?}", plan.fallbacks);
    let plan = plan_gemm(&square(4096), &caps, &off()).unwrap();
    assert!(split_reason(&plan).unwrap().contains("cooperative_matrix=0"), "{:?}", plan.fallbacks);
    // Forced on, a product the coop kernels can compute splits whatever its size; unaligned rows cannot.
    let on = GemmOptions { f32_split: CoopMode::On, ..Default::default() };
    assert!(plan_gemm(&square(256), &caps, &on).unwrap().steps[1].variant.reads_scales());
    let plan = plan_gemm(&GemmProblem::simple(DType::F32, 4096, 4096, 4095, false, false), &caps, &on).unwrap();
    assert!(split_reason(&plan).unwrap().contains("16-byte"), "{:?}", plan.fallbacks);
    // The opt-in f16 precision takes precedence: one product, operands rounded to f16.
    let opt_in = GemmOptions { f32_via_f16: true, ..Default::default() };
    let plan = plan_gemm(&square(4096), &caps, &opt_in).unwrap();
    assert_eq!(plan.steps[0].variant.name(), "gemm_f32_coop_128x256_k16_w4x4_s2_p2_ss");
    // Without tensor cores nothing changes.
    let plan = auto(&square(4096), &profiles::get("llvmpipe").unwrap());
    assert!(!plan.uses_coop() && split_reason(&plan).unwrap().contains("cooperative-matrix"));
}

#[test]
fn option_off_and_forced_tilings() {
    let caps = h200();
    let plan = plan_gemm(&f16(4096, 4096, 4096), &caps, &off()).unwrap();
    assert_eq!(plan.tiling, Tiling::Tile128);
    assert!(coop_reason(&plan).contains("cooperative_matrix=0"));
    let forced = |tiling| GemmOptions { tiling, ..Default::default() };
    let p = f16(4096, 4096, 4096);
    assert_eq!(plan_gemm(&p, &caps, &forced(TilingChoice::Tile64)).unwrap().tiling, Tiling::Coop64);
    assert!(matches!(plan_gemm(&p, &caps, &forced(TilingChoice::SplitK)).unwrap().tiling, Tiling::CoopSplitK { .. }));
    assert_eq!(plan_gemm(&p, &caps, &forced(TilingChoice::Gemv)).unwrap().tiling, Tiling::Gemv);
}

#[test]
fn devices_without_matching_coop_fall_back_with_a_reason() {
    let on = GemmOptions { cooperative_matrix: CoopMode::On, ..Default::default() };
    let opt_in = GemmOptions { cooperative_matrix: CoopMode::On, f32_via_f16: true, ..Default::default() };
    for name in ["llvmpipe", "no_subgroups"] {
        let caps = profiles::get(name).unwrap();
        let plan = plan_gemm(&f16(4096, 4096, 4096), &caps, &on).unwrap();
        assert!(!plan.uses_coop(), "{name}");
        assert!(coop_reason(&plan).contains("cooperative-matrix configuration"), "{name}: {:?}", plan.fallbacks);
    }
    // No shader-f16: f16 problems are declined outright, f32 ones plan without tensor cores.
    let mobile = profiles::get("mobile").unwrap();
    let plan = plan_gemm(&square(1024), &mobile, &opt_in).unwrap();
    assert!(!plan.uses_coop());
    assert!(coop_reason(&plan).contains("shader-f16"), "{:?}", plan.fallbacks);
    // Only an f16→f16 configuration: the kernels accumulate in f32.
    let mut caps = h200();
    caps.coop_matrix.retain(|c| c.cr == ep_kernels::CoopScalar::F16);
    assert!(coop_reason(&auto(&f16(4096, 4096, 4096), &caps)).contains("f16→f32"));
}

#[test]
fn subgroup_size_must_match_the_kernels_assumption() {
    for (min, max) in [(16, 32), (32, 64), (64, 64), (0, 0)] {
        let mut caps = h200();
        caps.subgroup_min_size = min;
        caps.subgroup_max_size = max;
        let plan = auto(&f16(4096, 4096, 4096), &caps);
        assert_eq!(plan.tiling, Tiling::Tile128, "{min}..{max}");
        assert!(coop_reason(&plan).contains("subgroups of exactly 32"), "{:?}", plan.fallbacks);
    }
}

#[test]
fn coop_storage_limit_steps_down_one_shape_at_a_time() {
    let p = f16(4096, 4096, 4096);
    let shape = |plan: &GemmPlan| match plan.steps[0].variant {
        GemmVariant::Coop(c) => Some(c.shape),
        _ => None,
    };
    let mut caps = h200();
    let full = shape(&auto(&p, &caps)).unwrap();
    assert_eq!(full.stages, 2);
    // Less storage than the double-buffered tile: the single-buffered 128×128.
    caps.max_workgroup_storage_bytes = full.storage_bytes(Contig::K, Contig::Mn) - 1;
    let plan = auto(&p, &caps);
    assert_eq!((plan.tiling, shape(&plan).unwrap().stages), (Tiling::Coop128, 1));
    // No 128×128 shape fits: the 64×64 coop tile, with the reason recorded.
    caps.max_workgroup_storage_bytes = 16 * 1024;
    let plan = auto(&p, &caps);
    assert_eq!(plan.tiling, Tiling::Coop64);
    assert!(plan.fallbacks.iter().any(|f| f.starts_with("coop128x128") && f.contains("workgroup storage")));
    // Nothing coop fits: the SIMT kernels.
    caps.max_workgroup_storage_bytes = 8 * 1024;
    let plan = auto(&p, &caps);
    assert!(!plan.uses_coop(), "{:?}", plan.tiling);
    assert!(plan.fallbacks.iter().any(|f| f.starts_with("coop64x64") && f.contains("workgroup storage")));
}

#[test]
fn coop_invocation_limit_steps_down() {
    let p = f16(4096, 4096, 4096);
    let mut caps = h200();
    caps.max_invocations_per_workgroup = 128;
    let plan = auto(&p, &caps);
    assert_eq!(plan.tiling, Tiling::Coop128);
    assert_eq!(plan.steps[0].variant.invocations(), 128);
    caps.max_invocations_per_workgroup = 64;
    let plan = auto(&p, &caps);
    assert!(!plan.uses_coop());
    assert!(plan.fallbacks.iter().any(|f| f.starts_with("coop64x64") && f.contains("invocations")));
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
                match plan_gemm(&p, &caps, &GemmOptions::tiling(TilingChoice::Auto)) {
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

/// f32 products of at most 3/4 of `parallelism` in 64×64 tiles take the 32×64 SIMT tile
/// (twice the workgroups: Whisper's 1500×384×384, 144 tiles), fuller ones keep 64×64 (1024³,
/// 256 tiles), and split-K partials keep 64×64 (their split counts assume it).
#[test]
fn thin_f32_products_take_the_32x64_simt_tile() {
    let caps = h200();
    let name = |m, n, k| auto(&GemmProblem::simple(DType::F32, m, n, k, false, false), &caps).steps[0].variant.name();
    assert_eq!(name(1500, 384, 384), "gemm_f32_32x64_v4_k16_r4x4");
    assert_eq!(name(1500, 384, 1536), "gemm_f32_32x64_v4_k16_r4x4");
    assert_eq!(name(197, 3072, 768), "gemm_f32_32x64_v4_k16_r4x4");
    assert_eq!(name(1024, 1024, 1024), "gemm_f32_64x64_v4");
    // The live estimate of a discrete GPU (256): ViT's 192 tiles are exactly 3/4 of it.
    let live = DeviceCaps { parallelism: 256, ..caps.clone() };
    let p = GemmProblem::simple(DType::F32, 197, 3072, 768, false, false);
    assert_eq!(auto(&p, &live).steps[0].variant.name(), "gemm_f32_32x64_v4_k16_r4x4");
    assert_eq!(name(128, 768, 3072), "gemm_f32_64x64_v4_splitk");
}

#[test]
fn emulated_tensor_cores_plan_coop_kernels_in_their_emulated_form() {
    // llvmpipe has no cooperative-matrix configuration: SIMT tiles, unless `emulate_tensor_cores`
    // asks for the tensor-core plans in plain WGSL (no subgroup barriers: the emulation syncs
    // with workgroup ones).
    let llvmpipe = profiles::get("llvmpipe").unwrap();
    let p = GemmProblem::simple(DType::F16, 1500, 1152, 256, false, false);
    let coop = |plan: &GemmPlan| {
        plan.variants().filter_map(|v| if let GemmVariant::Coop(c) = v { Some(c) } else { None }).collect::<Vec<_>>()
    };
    let plain = plan_gemm(&p, &llvmpipe, &GemmOptions::default()).unwrap();
    assert!(coop(&plain).is_empty(), "{plain:?}");
    let emulated = DeviceCaps { coop_emulated: true, ..llvmpipe.clone() };
    let plan = plan_gemm(&p, &emulated, &GemmOptions::default()).unwrap();
    let found = coop(&plan);
    assert!(!found.is_empty() && found.iter().all(|c| c.emulate && !c.subgroup_sync), "{plan:?}");
    // f32 splits into three f16 products where asked for, emulated too.
    let f32p = GemmProblem::simple(DType::F32, 1500, 1152, 256, false, false);
    let split = GemmOptions { f32_split: CoopMode::On, ..Default::default() };
    let plan = plan_gemm(&f32p, &emulated, &split).unwrap();
    assert!(coop(&plan).iter().any(|c| c.split && c.emulate), "{plan:?}");
    // Past 256 of K per pass the emulation plans as a device without tensor cores (llvmpipe sums
    // longer emulated loops wrongly); split-K passes within it stay emulated.
    let long = GemmProblem::simple(DType::F16, 1500, 1152, 1024, false, false);
    let options = GemmOptions { tiling: TilingChoice::Tile64, ..Default::default() };
    assert!(coop(&plan_gemm(&long, &emulated, &options).unwrap()).is_empty());
    let split = plan_gemm(&long, &emulated, &GemmOptions::tiling(TilingChoice::SplitK)).unwrap();
    assert!(coop(&split).iter().all(|c| c.emulate), "{split:?}");
    // A device with real fragments never runs the emulated form, nor the emulation's device the real one.
    assert!(coop(&plan_gemm(&p, &h200(), &GemmOptions::default()).unwrap()).iter().all(|c| !c.emulate));
}
