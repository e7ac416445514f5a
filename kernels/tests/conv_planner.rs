//! The conv planner on the recorded profiles: which path each shape takes, fallbacks under
//! changed limits, and a property test that every plan respects every limit (attribute
//! resolution is tested in `conv_attrs.rs`).

use ep_kernels::caps::profiles;
use ep_kernels::conv::{
    im2col_bytes, plan_conv, plan_conv_with, prefer_implicit, prepack_weights, resolve, AutoPad, ConvAlgo, ConvAttrs,
    ConvInputs, ConvPath, ConvProblem, ConvSchedule,
};
use ep_kernels::gemm::{GemmOptions, Tiling, TilingChoice};
use ep_kernels::{DType, DeviceCaps, PlanError};
use proptest::prelude::*;

fn problem(x: &[u64], w: &[u64], attrs: &ConvAttrs) -> Result<ConvProblem, PlanError> {
    resolve(&ConvInputs { x, w, bias: None, dtype: DType::F32 }, attrs, true)
}

fn conv(x: &[u64], w: &[u64], pads: &[i64], strides: &[i64], group: i64, dtype: DType) -> ConvProblem {
    let attrs = ConvAttrs { pads: pads.to_vec(), strides: strides.to_vec(), group, ..ConvAttrs::new() };
    resolve(&ConvInputs { x, w, bias: Some(&[w[0]]), dtype }, &attrs, true).unwrap()
}

/// The shapes of the decision table, with the path every profile must choose.
fn table_shapes(dtype: DType) -> Vec<(&'static str, ConvProblem, ConvPath)> {
    vec![
        (
            "Whisper conv1 80→384 k3 p1 L3000",
            conv(&[1, 80, 3000], &[384, 80, 3], &[1, 1], &[], 1, dtype),
            ConvPath::Im2colGemm,
        ),
        (
            "Whisper conv2 384→384 k3 s2 p1",
            conv(&[1, 384, 3000], &[384, 384, 3], &[1, 1], &[2], 1, dtype),
            ConvPath::Im2colGemm,
        ),
        (
            "ResNet 3×3 64→64 56×56",
            conv(&[1, 64, 56, 56], &[64, 64, 3, 3], &[1, 1, 1, 1], &[], 1, dtype),
            ConvPath::Im2colGemm,
        ),
        (
            "depthwise 3×3 32ch 56×56",
            conv(&[1, 32, 56, 56], &[32, 1, 3, 3], &[1, 1, 1, 1], &[], 32, dtype),
            ConvPath::Direct,
        ),
        (
            "pointwise 1×1 64→256 56×56",
            conv(&[1, 64, 56, 56], &[256, 64, 1, 1], &[], &[], 1, dtype),
            ConvPath::Pointwise,
        ),
        (
            "ResNeXt 3×3 128→128 g32 28×28",
            conv(&[1, 128, 28, 28], &[128, 4, 3, 3], &[1, 1, 1, 1], &[], 32, dtype),
            ConvPath::Direct,
        ),
        (
            "grouped 3×3 64→64 g4 28×28 N3",
            conv(&[3, 64, 28, 28], &[64, 16, 3, 3], &[1, 1, 1, 1], &[], 4, dtype),
            ConvPath::Im2colGemm,
        ),
    ]
}

/// Prints the decision table of every recorded profile (`--nocapture`) and checks the path.
#[test]
fn decision_table() {
    for (name, caps) in profiles::all() {
        println!("profile {name}:");
        for dtype in [DType::F32, DType::F16] {
            for (label, p, path) in table_shapes(dtype) {
                match plan_conv(&p, &caps, &GemmOptions::tiling(TilingChoice::Auto)) {
                    Ok(plan) => {
                        println!("  {label:32} {dtype}: {}", plan.describe());
                        assert_eq!(plan.path(), path, "{name} {label} {dtype}");
                    }
                    Err(e) => {
                        println!("  {label:32} {dtype}: declined: {e}");
                        assert!(dtype == DType::F16 && !caps.shader_f16, "{name} {label} {dtype}: {e}");
                        assert_eq!(e, PlanError::F16Unsupported);
                    }
                }
            }
        }
    }
}

fn h200() -> DeviceCaps {
    profiles::get("h200").unwrap()
}

#[test]
fn whisper_gemms_on_h200() {
    let caps = h200();
    for (label, p, _) in table_shapes(DType::F32).into_iter().take(2) {
        let plan = plan_conv(&p, &caps, &GemmOptions::tiling(TilingChoice::Auto)).unwrap();
        let gemm = plan.gemm().unwrap();
        let params = &gemm.steps[0].params;
        // One GEMM over the whole output: M channels × pixels, K = C·k.
        assert_eq!((params.m, params.n, params.batch_count), (384, p.ow, 1), "{label}");
        assert_eq!(params.k, p.c * 3, "{label}");
        assert_eq!(gemm.tiling, Tiling::Tile64, "{label}: {:?}", gemm.fallbacks);
        assert_eq!(plan.col_bytes, p.c as u64 * 3 * p.ow as u64 * 4);
    }
}

/// Channels last (a Transpose absorbed), the GEMM stays the conv's own `W · col`, both operands
/// in their layouts, and only the stores (with the residual's reads) go through transposed
/// strides: on f16 tensor cores, Whisper's conv2 took a kernel with both operands transposed,
/// which compiled 1.4× slower cold. Batch 2 and a pointwise conv, every recorded profile.
#[test]
fn channels_last_stores_the_conv_product_through_transposed_strides() {
    let cases = [
        conv(&[1, 384, 3000], &[384, 384, 3], &[1, 1], &[2], 1, DType::F16),
        conv(&[2, 64, 9, 7], &[40, 64, 3, 3], &[1, 1, 1, 1], &[], 1, DType::F32),
        conv(&[2, 64, 9, 7], &[40, 64, 1, 1], &[], &[], 1, DType::F32),
    ];
    for (profile, caps) in profiles::all() {
        for mut p in cases.clone() {
            p.set_channels_last(false);
            if p.dtype == DType::F16 && !caps.shader_f16 {
                continue;
            }
            let plan = plan_conv(&p, &caps, &GemmOptions::default()).unwrap();
            let gemm = plan.gemm().unwrap();
            let name = |s: &ep_kernels::gemm::GemmStep| format!("{profile} {}", s.variant.name());
            let (pix, k) = (p.pixels() as u32, p.k_per_group() as u32);
            for step in gemm.steps.iter().filter(|s| s.variant != ep_kernels::gemm::GemmVariant::AbsMax) {
                let q = &step.params;
                let name = name(step);
                assert!(!name.contains("_at") && !name.contains("_bt"), "{name}");
                assert_eq!((q.m, q.n, q.k), (p.m, pix, k), "{name}");
                assert_eq!((q.a_rs, q.a_cs, q.b_rs, q.b_cs), (k, 1, pix, 1), "{name}");
                assert_eq!((q.c_rs, q.c_cs, q.c_bs[2]), (1, p.m, if p.n > 1 { p.m * pix } else { 0 }), "{name}");
                assert_eq!((q.bias_rs, q.bias_cs), (1, 0), "{name}");
            }
        }
    }
}

#[test]
fn groups_become_gemm_batches() {
    let p = conv(&[3, 64, 28, 28], &[64, 16, 3, 3], &[1, 1, 1, 1], &[], 4, DType::F32);
    let plan = plan_conv(&p, &h200(), &GemmOptions::tiling(TilingChoice::Tile64)).unwrap();
    let params = &plan.gemm().unwrap().steps[0].params;
    assert_eq!((params.m, params.n, params.k), (16, 784, 144));
    assert_eq!(params.batch_shape, [1, 1, 3, 4]);
    assert_eq!(params.a_bs, [0, 0, 0, 16 * 144]);
    assert_eq!(params.b_bs, [0, 0, 576 * 784, 144 * 784]);
    assert_eq!(params.c_bs, [0, 0, 64 * 784, 16 * 784]);
    assert_eq!((params.bias_rs, params.bias_cs, params.bias_bs), (1, 0, [0, 0, 0, 16]));
}

#[test]
fn forced_algorithms() {
    let dw = conv(&[1, 32, 56, 56], &[32, 1, 3, 3], &[1, 1, 1, 1], &[], 32, DType::F32);
    let plan = plan_conv_with(&dw, &h200(), &GemmOptions::tiling(TilingChoice::Auto), ConvAlgo::Gemm).unwrap();
    assert_eq!(plan.path(), ConvPath::Im2colGemm);
    let resnet = conv(&[1, 64, 56, 56], &[64, 64, 3, 3], &[1, 1, 1, 1], &[], 1, DType::F32);
    let plan = plan_conv_with(&resnet, &h200(), &GemmOptions::tiling(TilingChoice::Auto), ConvAlgo::Direct).unwrap();
    assert_eq!(plan.path(), ConvPath::Direct);
}

#[test]
fn im2col_larger_than_a_binding_runs_implicit() {
    let mut caps = h200();
    // ResNet 3×3 64→64 at 56×56: col is 576 × 3136 f32 = 7.2 MB, X only 0.8 MB.
    caps.max_storage_binding_size = 4 << 20;
    let p = conv(&[1, 64, 56, 56], &[64, 64, 3, 3], &[1, 1, 1, 1], &[], 1, DType::F32);
    assert!(prefer_implicit(&p, &caps));
    let plan = plan_conv(&p, &caps, &GemmOptions::tiling(TilingChoice::Auto)).unwrap();
    assert_eq!((plan.path(), plan.col_bytes), (ConvPath::Implicit, 0));
    assert!(plan.fallbacks[0].contains("im2col buffer would need 7225344 bytes"), "{:?}", plan.fallbacks);
    // Forcing im2col + GEMM still declines with the reason.
    let err = plan_conv_with(&p, &caps, &GemmOptions::tiling(TilingChoice::Auto), ConvAlgo::Gemm).unwrap_err();
    assert!(matches!(err, PlanError::BindingTooLarge { what: "the im2col buffer", .. }), "{err}");
    // The pointwise conv needs no col buffer.
    let p = conv(&[1, 64, 56, 56], &[256, 64, 1, 1], &[], &[], 1, DType::F32);
    assert_eq!(plan_conv(&p, &caps, &GemmOptions::tiling(TilingChoice::Auto)).unwrap().path(), ConvPath::Pointwise);
    // The direct kernel neither.
    let p = conv(&[1, 64, 56, 56], &[64, 1, 3, 3], &[1, 1, 1, 1], &[], 64, DType::F32);
    assert_eq!(plan_conv(&p, &caps, &GemmOptions::tiling(TilingChoice::Auto)).unwrap().path(), ConvPath::Direct);
}

#[test]
fn forced_implicit_gives_the_implicit_schedule() {
    let caps = h200();
    let p = conv(&[2, 64, 56, 56], &[96, 64, 3, 3], &[1, 0, 1, 2], &[2, 1], 1, DType::F32);
    assert!(!prefer_implicit(&p, &caps), "Auto keeps im2col + GEMM until measured");
    assert_eq!(plan_conv(&p, &caps, &GemmOptions::tiling(TilingChoice::Auto)).unwrap().path(), ConvPath::Im2colGemm);
    for (tiling, want) in [
        (TilingChoice::Tile128, "gemm_f32_128x128_v4_implicit"),
        // 100 tiles of 64×64: the 64×64 class takes its thin 32×64 shape.
        (TilingChoice::Tile64, "gemm_f32_32x64_v4_implicit_k16_r4x4"),
        (TilingChoice::Gemv, "gemm_f32_32x64_v4_implicit_k16_r4x4"),
    ] {
        let plan = plan_conv_with(&p, &caps, &GemmOptions::tiling(tiling), ConvAlgo::Implicit).unwrap();
        assert_eq!((plan.path(), plan.col_bytes), (ConvPath::Implicit, 0));
        let names: Vec<String> = plan.variants().iter().map(|v| v.name()).collect();
        assert_eq!(names, [want], "{tiling:?}");
        let ConvSchedule::Implicit { gemm, geometry } = &plan.schedule else { unreachable!() };
        let params = &gemm.steps[0].params;
        // One GEMM per image: M channels × output pixels, K = C·kh·kw; B steps through X.
        assert_eq!((params.m, params.n, params.k), (96, p.pixels() as u32, 576));
        assert_eq!((params.batch_shape, params.b_bs), ([1, 1, 2, 1], [0, 0, 64 * 56 * 56, 0]));
        assert_eq!((geometry.c, geometry.h, geometry.w, geometry.ow), (64, 56, 56, p.ow));
        assert_eq!((geometry.taps, geometry.plane, geometry.stride_h, geometry.pad_left), (9, 3136, 2, 0));
    }
    // An RGB input: K = 27 is no multiple of 4, so A loads as scalars.
    let rgb = conv(&[1, 3, 224, 224], &[64, 3, 7, 7], &[3, 3, 3, 3], &[2, 2], 1, DType::F32);
    let plan = plan_conv_with(&rgb, &caps, &GemmOptions::tiling(TilingChoice::Tile64), ConvAlgo::Implicit).unwrap();
    assert_eq!(plan.variants()[0].name(), "gemm_f32_32x64_v4_implicit_a1_k16_r4x4");
    // Split-K: the partial kernel gathers, the reduction is the ordinary one.
    let thin = conv(&[1, 512, 7, 7], &[64, 512, 3, 3], &[1, 1, 1, 1], &[], 1, DType::F32);
    let plan = plan_conv_with(&thin, &caps, &GemmOptions::tiling(TilingChoice::SplitK), ConvAlgo::Implicit).unwrap();
    let names: Vec<String> = plan.variants().iter().map(|v| v.name()).collect();
    assert_eq!(names, ["gemm_f32_64x64_v4_implicit_splitk", "splitk_reduce_f32_t256"]);
}

/// On a profile whose bindings hold 128 MiB, a conv whose im2col buffer would not fit runs as
/// an implicit GEMM under `Auto`, within every limit of the device. (The mobile profile's
/// 16 KiB of workgroup storage fits no vec4 tile, so there neither path runs: declined.)
#[test]
fn huge_im2col_chooses_implicit_on_constrained_profiles() {
    // 3×3 64→64 at 256×256: X and the output are 16 MiB, im2col 144 MiB.
    let p = conv(&[1, 64, 256, 256], &[64, 64, 3, 3], &[1, 1, 1, 1], &[], 1, DType::F32);
    assert_eq!(im2col_bytes(&p), 576 * 65536 * 4);
    let mobile = profiles::get("mobile").unwrap();
    assert!(prefer_implicit(&p, &mobile));
    let err = plan_conv(&p, &mobile, &GemmOptions::tiling(TilingChoice::Auto)).unwrap_err();
    assert!(err.to_string().contains("workgroup storage"), "{err}");
    for name in ["llvmpipe"] {
        let caps = profiles::get(name).unwrap();
        let limit = caps.max_storage_binding_size.min(caps.max_buffer_size);
        assert!(im2col_bytes(&p) > limit && p.input_len() * 4 <= limit, "{name}");
        let plan = plan_conv(&p, &caps, &GemmOptions::tiling(TilingChoice::Auto)).unwrap();
        assert_eq!(plan.path(), ConvPath::Implicit, "{name}: {:?}", plan.fallbacks);
        assert!(plan.fallbacks[0].starts_with("Gemm: the im2col buffer"), "{name}: {:?}", plan.fallbacks);
        let gemm = plan.gemm().unwrap();
        for step in &gemm.steps {
            let [x, y, z] = step.variant.workgroup_size();
            assert!(caps.allows_workgroup(x, y, z), "{name}");
            assert!(step.variant.storage_bytes() <= caps.max_workgroup_storage_bytes, "{name}");
            assert!(step.grid.iter().all(|&g| g <= caps.max_workgroups_per_dimension), "{name}");
        }
        assert!(gemm.workspace_bytes <= limit);
    }
}

/// Forcing the implicit GEMM where its kernel cannot run falls back to what `Auto` runs, with
/// the reason recorded.
#[test]
fn forced_implicit_falls_back_when_its_kernel_does_not_fit() {
    let mut caps = h200();
    caps.max_invocations_per_workgroup = 128;
    // 784 tiles of 64×64: too many for the thin 32×64 shape, and the 64×64 one needs 256
    // invocations.
    let p = conv(&[1, 64, 224, 224], &[64, 64, 3, 3], &[1, 1, 1, 1], &[], 1, DType::F32);
    let plan = plan_conv_with(&p, &caps, &GemmOptions::tiling(TilingChoice::Auto), ConvAlgo::Implicit).unwrap();
    assert_eq!(plan.path(), ConvPath::Im2colGemm);
    assert!(plan.fallbacks[0].starts_with("Implicit: "), "{:?}", plan.fallbacks);
    let dw = conv(&[1, 32, 56, 56], &[32, 1, 3, 3], &[1, 1, 1, 1], &[], 32, DType::F32);
    let plan = plan_conv_with(&dw, &caps, &GemmOptions::tiling(TilingChoice::Auto), ConvAlgo::Implicit).unwrap();
    assert_eq!(plan.path(), ConvPath::Direct);
}

#[test]
fn smaller_workgroups_and_grids() {
    let mut caps = h200();
    caps.max_invocations_per_workgroup = 128;
    let p = conv(&[1, 64, 56, 56], &[64, 64, 3, 3], &[1, 1, 1, 1], &[], 1, DType::F32);
    let plan = plan_conv(&p, &caps, &GemmOptions::tiling(TilingChoice::Auto)).unwrap();
    let names: Vec<String> = plan.variants().iter().map(|v| v.name()).collect();
    // 49 tiles of 64×64: the thin 32×64 shape has 128 invocations, and fits.
    assert_eq!(names, ["im2col_f32_t128", "gemm_f32_32x64_v4_k16_r4x4"], "{:?}", plan.gemm().unwrap().fallbacks);
    let big = conv(&[1, 64, 224, 224], &[64, 64, 3, 3], &[1, 1, 1, 1], &[], 1, DType::F32);
    let plan = plan_conv(&big, &caps, &GemmOptions::tiling(TilingChoice::Auto)).unwrap();
    let names: Vec<String> = plan.variants().iter().map(|v| v.name()).collect();
    assert_eq!(names, ["im2col_f32_t128", "gemv_f32_r4_t128"], "{:?}", plan.gemm().unwrap().fallbacks);
    caps.max_invocations_per_workgroup = 16;
    assert!(matches!(
        plan_conv(&p, &caps, &GemmOptions::tiling(TilingChoice::Auto)),
        Err(PlanError::WorkgroupTooSmall { .. })
    ));
    let mut caps = h200();
    caps.max_workgroups_per_dimension = 4;
    let dw = conv(&[1, 32, 56, 56], &[32, 1, 3, 3], &[1, 1, 1, 1], &[], 32, DType::F32);
    let err = plan_conv(&dw, &caps, &GemmOptions::tiling(TilingChoice::Auto)).unwrap_err();
    assert!(matches!(err, PlanError::GridTooLarge { .. }), "{err}");
    caps.max_workgroups_per_dimension = 16;
    let plan = plan_conv(&dw, &caps, &GemmOptions::tiling(TilingChoice::Auto)).unwrap();
    assert_eq!(plan.conv_steps()[0].grid, [16, 16, 2]);
}

#[test]
fn prepacked_weights_are_oihw() {
    let p = conv(&[1, 8, 5, 5], &[12, 2, 3, 3], &[], &[], 4, DType::F16);
    let plan = plan_conv(&p, &h200(), &GemmOptions::tiling(TilingChoice::Auto)).unwrap();
    let w: Vec<u8> = (0..12 * 2 * 9 * 2).map(|i| i as u8).collect();
    assert_eq!(prepack_weights(&plan, &w).unwrap(), w);
    assert!(matches!(prepack_weights(&plan, &w[1..]), Err(PlanError::Invalid(_))));
}

fn arb_caps() -> impl Strategy<Value = DeviceCaps> {
    ((0u32..65536, 1u32..1025, 1u32..1025, 1u32..70000), (1u64 << 10..1u64 << 32, any::<bool>(), 1u32..600)).prop_map(
        |((storage, inv, wx, wpd), (binding, f16, par))| DeviceCaps {
            max_workgroup_storage_bytes: storage,
            max_invocations_per_workgroup: inv,
            max_workgroup_size: [wx, 1024, 64],
            max_workgroups_per_dimension: wpd,
            max_storage_binding_size: binding,
            max_buffer_size: binding,
            shader_f16: f16,
            parallelism: par,
            ..DeviceCaps::default()
        },
    )
}

/// A random valid-or-not conv node: `(x, w, attrs, bias, f16)`.
fn arb_node() -> impl Strategy<Value = (Vec<u64>, Vec<u64>, ConvAttrs, bool, bool)> {
    let dims = (1u64..4, 1u64..9, 1u64..9, 1u64..17, 1u64..2049, 1u64..2049, any::<bool>());
    let kernel = (1u64..8, 1u64..8, 1i64..4, 1i64..4, 1i64..3, 1i64..3);
    let pads = (proptest::collection::vec(0i64..4, 4), 0usize..4, any::<bool>(), any::<bool>());
    (dims, kernel, pads).prop_map(|((n, g, cg, mg, h, w, is_1d), (kh, kw, sh, sw, dh, dw), (pads, mode, bias, f16))| {
        let auto_pad = [AutoPad::NotSet, AutoPad::SameUpper, AutoPad::SameLower, AutoPad::Valid][mode];
        let (x, wt, attrs) = if is_1d {
            let attrs = ConvAttrs {
                auto_pad,
                pads: pads[..2].to_vec(),
                strides: vec![sw],
                dilations: vec![dw],
                ..ConvAttrs::new()
            };
            (vec![n, g * cg, w], vec![g * mg, cg, kw], attrs)
        } else {
            let attrs =
                ConvAttrs { auto_pad, pads, strides: vec![sh, sw], dilations: vec![dh, dw], ..ConvAttrs::new() };
            (vec![n, g * cg, h / 16 + 1, w / 16 + 1], vec![g * mg, cg, kh, kw], attrs)
        };
        (x, wt, ConvAttrs { group: g as i64, ..attrs }, bias, f16)
    })
}

fn arb_algo() -> impl Strategy<Value = (ConvAlgo, TilingChoice)> {
    let algo =
        prop_oneof![Just(ConvAlgo::Auto), Just(ConvAlgo::Gemm), Just(ConvAlgo::Direct), Just(ConvAlgo::Implicit)];
    let tiling = prop_oneof![
        Just(TilingChoice::Auto),
        Just(TilingChoice::Tile128),
        Just(TilingChoice::Tile64),
        Just(TilingChoice::SplitK),
        Just(TilingChoice::Gemv)
    ];
    (algo, tiling)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn resolved_shapes_follow_onnx((x, w, attrs, _, _) in arb_node()) {
        let Ok(p) = problem(&x, &w, &attrs) else { return Ok(()) };
        let spatial = x.len() - 2;
        for i in 0..spatial {
            let a = 2 - spatial + i;
            let (input, k, s, d) = (x[2 + i], w[2 + i], p.strides[a] as u64, p.dilations[a] as u64);
            let padded = input + p.pads[a] as u64 + p.pads[a + 2] as u64;
            prop_assert_eq!(p.output_shape[2 + i], (padded - (k - 1) * d - 1) / s + 1);
            match attrs.auto_pad {
                AutoPad::SameUpper | AutoPad::SameLower => prop_assert_eq!(p.output_shape[2 + i], input.div_ceil(s)),
                AutoPad::Valid => prop_assert_eq!(padded, input),
                AutoPad::NotSet => prop_assert_eq!(
                    (p.pads[a] as i64, p.pads[a + 2] as i64),
                    (attrs.pads[i], attrs.pads[spatial + i])
                ),
            }
        }
    }

    #[test]
    fn every_conv_plan_respects_every_limit(
        caps in arb_caps(),
        (x, w, attrs, bias, f16) in arb_node(),
        (algo, tiling) in arb_algo(),
    ) {
        let dtype = if f16 { DType::F16 } else { DType::F32 };
        let Ok(p) = resolve(&ConvInputs { x: &x, w: &w, bias: bias.then_some(&[w[0]][..]), dtype }, &attrs, true) else {
            return Ok(());
        };
        match plan_conv_with(&p, &caps, &GemmOptions::tiling(tiling), algo) {
            Ok(plan) => {
                let limit = caps.max_storage_binding_size.min(caps.max_buffer_size);
                prop_assert!(dtype == DType::F32 || caps.shader_f16);
                prop_assert!(plan.col_bytes <= limit);
                for bytes in [p.input_len(), p.weight_len(), p.output_len()].map(|e| e * dtype.size()) {
                    prop_assert!(bytes <= limit);
                }
                let max = caps.max_workgroups_per_dimension;
                for step in plan.conv_steps() {
                    let v = step.variant;
                    let [x, y, z] = v.workgroup_size();
                    prop_assert!(caps.allows_workgroup(x, y, z), "{v:?} workgroup");
                    let [gx, gy, gz] = step.grid;
                    prop_assert!(gx <= max && gy <= max && gz <= max, "grid {:?} > {max}", step.grid);
                    prop_assert!(gx as u64 * gy as u64 * gz as u64 >= step.params.total_workgroups as u64);
                    prop_assert_eq!((step.params.grid_x, step.params.grid_y), (gx, gy));
                    let lanes = step.params.total_workgroups as u64 * v.threads() as u64;
                    prop_assert!(lanes >= step.params.invocations as u64);
                }
                if let Some(gemm) = plan.gemm() {
                    prop_assert!(gemm.workspace_bytes <= caps.max_storage_binding_size);
                    for step in &gemm.steps {
                        let v = step.variant;
                        let [x, y, z] = v.workgroup_size();
                        prop_assert!(caps.allows_workgroup(x, y, z), "{v:?} workgroup");
                        prop_assert!(v.storage_bytes() <= caps.max_workgroup_storage_bytes, "{v:?} storage");
                        let [gx, gy, gz] = step.grid;
                        prop_assert!(gx <= max && gy <= max && gz <= max, "grid {:?} > {max}", step.grid);
                    }
                }
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
}

/// The short-K split-K rule of plain products (`gemm::plan::split_count`) leaves convs alone: a
/// 1×1 conv whose product is 768×128×768 (the shape BERT's projections split) stays unsplit.
#[test]
fn convs_keep_short_k_products_unsplit() {
    let caps = profiles::get("h200").unwrap();
    let p = problem(&[1, 768, 8, 16], &[768, 768, 1, 1], &ConvAttrs::new()).unwrap();
    let plan = plan_conv(&p, &caps, &GemmOptions::default()).unwrap();
    let tiling = plan.gemm().unwrap().tiling;
    assert!(!matches!(tiling, Tiling::SplitK { .. } | Tiling::CoopSplitK { .. }), "{tiling:?}");
}
