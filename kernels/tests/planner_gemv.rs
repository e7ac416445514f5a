//! The bandwidth GEMV's narrow forms on the H200 profile: which column lanes a decoder's one-row
//! products take (`gemm/plan.rs::narrow_columns`; measured on an H100 in the fifty-eighth
//! session, `docs/performance/sessions-58-61.md`).

use ep_kernels::caps::{profiles, DeviceCaps};
use ep_kernels::gemm::{plan_gemm, GemmOptions, GemmProblem, GemmVariant};
use ep_kernels::DType;

/// The H200 profile with the parallelism the runtime estimates for a discrete GPU (256; the
/// recorded profile says 264), as the H100 that measured these forms planned them.
fn discrete() -> DeviceCaps {
    DeviceCaps { parallelism: 256, ..profiles::get("h200").unwrap() }
}

/// The one step's kernel of `1 × K` by `K × N` in f16.
fn kernel(n: u32, k: u32) -> String {
    let caps = discrete();
    let plan =
        plan_gemm(&GemmProblem::simple(DType::F16, 1, n, k, false, false), &caps, &GemmOptions::default()).unwrap();
    assert_eq!(plan.steps.len(), 1, "{n}x{k}: {:?}", plan.steps);
    assert!(matches!(plan.steps[0].variant, GemmVariant::GemvVec(_)), "{n}x{k}: {:?}", plan.steps[0].variant);
    plan.steps[0].variant.name()
}

#[test]
fn decoder_products_take_the_widest_segments_that_fill_the_device() {
    // Llama-3.2-1B: QKV, O and SwiGLU's projections on 4 lanes, the down projection (K = 8192)
    // on 2, the LM head on 8; the narrow forms at 512 invocations.
    assert_eq!(kernel(3072, 2048), "gemv_f16_vec_r1_c4_t512");
    assert_eq!(kernel(2048, 2048), "gemv_f16_vec_r1_c4_t512");
    assert_eq!(kernel(8192, 2048), "gemv_f16_vec_r1_c4_t512");
    assert_eq!(kernel(2048, 8192), "gemv_f16_vec_r1_narrow_t512");
    assert_eq!(kernel(128256, 2048), "gemv_f16_vec_r1_c8_t512");
    // Qwen3-0.6B: 1024 outputs leave too few 4-lane bands; its LM head fills the device with
    // the wide form unsplit (256 invocations).
    assert_eq!(kernel(1024, 2048), "gemv_f16_vec_r1_narrow_t512");
    assert_eq!(kernel(1024, 3072), "gemv_f16_vec_r1_narrow_t512");
    assert_eq!(kernel(4096, 1024), "gemv_f16_vec_r1_c4_t512");
    assert_eq!(kernel(3072, 1024), "gemv_f16_vec_r1_c4_t512");
    assert_eq!(kernel(151936, 1024), "gemv_f16_vec_r1");
}

#[test]
fn several_rows_and_short_k_keep_their_forms() {
    let caps = discrete();
    let name = |m: u32, n: u32, k: u32| {
        let p = GemmProblem::simple(DType::F16, m, n, k, false, false);
        plan_gemm(&p, &caps, &GemmOptions::default()).unwrap().steps[0].variant.name()
    };
    // Four rows a workgroup stay on 2 lanes at 256 invocations; K below the 2-lane form's 512
    // stays wide.
    assert_eq!(name(4, 8192, 2048), "gemv_f16_vec_r4_narrow");
    assert!(!name(1, 8192, 256).contains("_c"), "{}", name(1, 8192, 256));
    // K too short for 512 invocations' lanes to take 4 loads each (the 2-lane form: 1024) keeps 256.
    assert_eq!(name(1, 1024, 768), "gemv_f16_vec_r1_narrow");
}

/// One row takes 512 invocations only where the device runs them: a device of 256 invocations,
/// or of 16 KB of workgroup storage (the 512-invocation f16 forms need more), keeps 256.
#[test]
fn small_devices_keep_256_invocations() {
    let name = |caps: &DeviceCaps, n: u32, k: u32| {
        let p = GemmProblem::simple(DType::F16, 1, n, k, false, false);
        plan_gemm(&p, caps, &GemmOptions::default()).unwrap().steps[0].variant.name()
    };
    let few = DeviceCaps { max_invocations_per_workgroup: 256, max_workgroup_size: [256, 256, 64], ..discrete() };
    let small = DeviceCaps { max_workgroup_storage_bytes: 16384, ..discrete() };
    for caps in [&few, &small] {
        assert_eq!(name(caps, 3072, 2048), "gemv_f16_vec_r1_c4");
        assert_eq!(name(caps, 2048, 8192), "gemv_f16_vec_r1_narrow");
    }
}
