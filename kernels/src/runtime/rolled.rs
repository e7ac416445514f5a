//! Tensor-core pipelines whose product loop the driver is asked not to unroll (issue 15).
//!
//! naga marks no loop; NVIDIA's compiler then unrolls a tensor-core GEMM's K loop, and a
//! pipeline takes 0.3–0.8 s to compile. With `DontUnroll` on the loops that carry the
//! cooperative-matrix products ([`super::spv_loops`]) the same kernels compiled 3–5× faster on
//! an H100, with fewer registers, and ran as fast (Whisper-tiny fp16 and fp32;
//! `docs/performance/sessions-54-57.md`). WGSL cannot say so, so these variants are compiled
//! from SPIR-V written here, with the options wgpu-hal's Vulkan backend uses for the checks the
//! variant keeps and the same binding numbers, and handed to the driver as a passthrough module
//! ([`super::TrustedShaders::create_spirv`]).
//!
//! Which variants: the tensor-core GEMMs and the f16 tensor-core attention ([`by_default`]),
//! where the option `rolled_loops` is on (default) and the device takes SPIR-V as is.
//! `ONNXRUNTIME_EP_WGPU_TEST_PASSTHROUGH=<part of a name>` sends the variants whose name holds
//! it through the same path, so that CI's adapter (no tensor cores) runs it. Experiment builds
//! (`wgsl-override`): `EXP_ROLLED=1` rolls every variant whose name holds `EXP_ROLLED_ON`
//! (default `_coop_`), `EXP_ROLLED_MARK=0` leaves the hint out.

use naga::back::spv;

use super::spv_loops::keep_product_loops_rolled;
use super::KeptChecks;

/// A module's SPIR-V and what wgpu needs to know of its one entry point `main`.
pub struct Spirv<'a> {
    pub label: &'a str,
    pub words: &'a [u32],
    pub workgroup_size: [u32; 3],
}

/// Whether the experiment is on at all (the device then asks for passthrough shaders).
pub(super) fn enabled() -> bool {
    cfg!(feature = "wgsl-override") && std::env::var("EXP_ROLLED").is_ok_and(|v| v.trim() == "1")
}

/// The variants rolled by default: the tensor-core GEMMs and the f16 tensor-core attention,
/// never an emulated form. Not the f32 attention of three f16 products (`f32x3`): rolled it ran
/// 3.6% slower on an H100 and compiled no faster.
pub fn by_default(name: &str) -> bool {
    name.contains("_coop_") && !name.contains("_emu") && !name.contains("f32x3")
}

/// Whether `name` compiles rolled, on a device that `rolls` (see [`super::pipelines`]). The
/// test hook may name emulated tensor-core kernels too, so that the software adapter takes the
/// rolled kernels' compile order (`compile_order.rs`).
pub(super) fn wanted(name: &str, rolls: bool) -> bool {
    if !rolls {
        return false;
    }
    if test_passthrough().is_some_and(|part| name.contains(part)) {
        return true;
    }
    if name.contains("_emu") {
        return false;
    }
    if enabled() {
        let on = std::env::var("EXP_ROLLED_ON").unwrap_or_else(|_| "_coop_".into());
        return name.contains(on.as_str());
    }
    by_default(name)
}

/// Test-only `ONNXRUNTIME_EP_WGPU_TEST_PASSTHROUGH=<part of a variant's name>`. Read once; never
/// set it outside tests.
fn test_passthrough() -> Option<&'static str> {
    static PART: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    PART.get_or_init(|| std::env::var("ONNXRUNTIME_EP_WGPU_TEST_PASSTHROUGH").ok().filter(|p| !p.is_empty())).as_deref()
}

/// The SPIR-V for `source` with the checks `keep` (all of them where `None`), workgroup memory
/// zeroed by the driver where `zero_init`, and its product loops marked; with the entry point's
/// workgroup size and how many loops it marked.
/// `bindings` are the binding numbers of the pipeline layout's group 0: wgpu-hal's Vulkan backend
/// numbers a layout's descriptors densely in binding order and maps the shader's bindings onto
/// them, so a layout with a gap (a residual at 6 and no 5) has its later bindings moved down; a
/// passthrough module must carry the same numbers, or it reads the wrong buffer.
pub fn spirv(
    source: &str,
    keep: Option<KeptChecks>,
    zero_init: bool,
    bindings: &[u32],
) -> Result<(Vec<u32>, [u32; 3], usize), String> {
    let keep = keep.unwrap_or(KeptChecks { bounds: true, loop_bounding: true, int_div: true });
    let mut module = naga::front::wgsl::parse_str(source).map_err(|e| e.emit_to_string(source))?;
    super::subgroup_sync::widen_module(&mut module);
    let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
        .validate(&module)
        .map_err(|e| e.emit_to_string(source))?;
    let policy = match keep.bounds {
        true => naga::proc::BoundsCheckPolicy::Restrict,
        false => naga::proc::BoundsCheckPolicy::Unchecked,
    };
    let options = spv::Options {
        lang_version: (1, 6),
        flags: spv::WriterFlags::LABEL_VARYINGS | spv::WriterFlags::FORCE_POINT_SIZE,
        capabilities: None,
        bounds_check_policies: naga::proc::BoundsCheckPolicies {
            index: policy,
            buffer: policy,
            image_load: naga::proc::BoundsCheckPolicy::Unchecked,
            binding_array: naga::proc::BoundsCheckPolicy::Unchecked,
        },
        zero_initialize_workgroup_memory: match zero_init {
            true => spv::ZeroInitializeWorkgroupMemoryMode::Native,
            false => spv::ZeroInitializeWorkgroupMemoryMode::None,
        },
        force_loop_bounding: keep.loop_bounding,
        emit_int_div_checks: keep.int_div,
        binding_map: dense_bindings(bindings),
        fake_missing_bindings: false,
        ..spv::Options::default()
    };
    let workgroup_size = module
        .entry_points
        .iter()
        .find(|e| e.name == "main")
        .map(|e| e.workgroup_size)
        .ok_or("no entry point 'main'")?;
    let stage = spv::PipelineOptions { entry_point: "main".into(), shader_stage: naga::ShaderStage::Compute };
    let mut words = spv::write_vec(&module, &info, &options, Some(&stage)).map_err(|e| e.to_string())?;
    // `EXP_ROLLED_MARK=0`: the same passthrough module without the hint (which of the two a
    // difference comes from).
    let marked = match std::env::var("EXP_ROLLED_MARK").is_ok_and(|v| v.trim() == "0") {
        true => 0,
        false => keep_product_loops_rolled(&mut words)?,
    };
    Ok((words, workgroup_size, marked))
}

/// Group 0's `bindings` as wgpu-hal's Vulkan backend lays them out: the `i`-th in binding order
/// at Vulkan binding `i`.
fn dense_bindings(bindings: &[u32]) -> spv::BindingMap {
    let mut sorted = bindings.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    (0u32..)
        .zip(sorted)
        .map(|(i, b)| {
            let at = naga::ResourceBinding { group: 0, binding: b };
            (at, spv::BindingInfo { descriptor_set: 0, binding: i, binding_array_size: None })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tensor_core_gemm_gets_one_rolled_loop() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../goldens");
        let source = std::fs::read_to_string(dir.join("gemm_f16_coop_128x128_ss.wgsl")).unwrap();
        for keep in [None, Some(KeptChecks::default())] {
            let (words, size, marked) = spirv(&source, keep, true, &[0, 1, 2, 3, 4]).unwrap();
            assert_eq!(marked, 1);
            assert!(size.iter().product::<u32>() > 1, "{size:?}");
            assert!(super::super::spv_loops::loop_controls(&words).contains(&2));
        }
        assert!(spirv("fn f( {", None, true, &[]).is_err());
    }

    #[test]
    fn tensor_core_gemms_and_f16_attention_roll_by_default() {
        assert!(by_default("gemm_f16_coop_64x64_ss_res"));
        assert!(by_default("gemm_f32_coop_128x128_k16_w2x4_s1_p1_x3f_ss"));
        assert!(by_default("attn_coop_f16_d64_128x32_mask_none_split"));
        assert!(!by_default("attn_coop_f32x3_d64_64x32_mask_none_split"));
        assert!(!by_default("gemm_f16_coop_64x64_emu"));
        assert!(!by_default("gemm_f32_32x64_v4_k16_r4x4_res"));
        assert!(!wanted("gemm_f16_coop_64x64_ss_res", false));
    }

    /// The Binding decorations of `words`: (variable id, binding).
    fn binding_decorations(words: &[u32]) -> Vec<(u32, u32)> {
        let (mut out, mut at) = (Vec::new(), 5);
        while at < words.len() {
            let (count, op) = ((words[at] >> 16) as usize, words[at] & 0xffff);
            // OpDecorate %id Binding n
            if op == 71 && count == 4 && words[at + 2] == 33 {
                out.push((words[at + 1], words[at + 3]));
            }
            at += count.max(1);
        }
        out
    }

    #[test]
    fn bindings_after_a_gap_move_down_as_wgpu_hal_numbers_them() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../goldens");
        let source = std::fs::read_to_string(dir.join("gemm_f16_coop_64x64_ss_res.wgsl")).unwrap();
        let layout = [0, 1, 2, 3, 4, 6];
        let (words, _, _) = spirv(&source, None, true, &layout).unwrap();
        let mut numbers: Vec<u32> = binding_decorations(&words).into_iter().map(|(_, b)| b).collect();
        numbers.sort_unstable();
        assert_eq!(numbers, [0, 1, 2, 3, 4, 5], "the residual at 6 is Vulkan binding 5");
        // A shader binding the layout lacks is an error, not a guess.
        assert!(spirv(&source, None, true, &[0, 1, 2, 3, 4]).is_err());
    }
}
