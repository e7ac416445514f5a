//! Experiment (issue 15; `wgsl-override` builds only): tensor-core pipelines whose product loop
//! the driver is asked not to unroll.
//!
//! `EXP_ROLLED=1` compiles every variant whose name holds `EXP_ROLLED_ON` (default `_coop_`;
//! never an emulated one) from SPIR-V written here: naga with the options wgpu-hal's Vulkan
//! backend uses for the checks the variant keeps, then `DontUnroll` on the loops that carry its
//! cooperative-matrix products ([`super::spv_loops`]), handed to the driver as a passthrough
//! module ([`super::TrustedShaders::create_spirv`]). Release builds never read the variables.

use naga::back::spv;

use super::spv_loops::keep_product_loops_rolled;
use super::KeptChecks;

/// Whether the experiment is on at all (the device then asks for passthrough shaders).
pub(super) fn enabled() -> bool {
    cfg!(feature = "wgsl-override") && std::env::var("EXP_ROLLED").is_ok_and(|v| v.trim() == "1")
}

/// Whether `name` compiles rolled.
pub(super) fn wanted(name: &str) -> bool {
    if !enabled() || name.contains("_emu") {
        return false;
    }
    let on = std::env::var("EXP_ROLLED_ON").unwrap_or_else(|_| "_coop_".into());
    name.contains(on.as_str())
}

/// The SPIR-V for `source` with the checks `keep` (all of them where `None`), workgroup memory
/// zeroed by the driver where `zero_init`, and its product loops marked; with how many it marked.
pub fn spirv(source: &str, keep: Option<KeptChecks>, zero_init: bool) -> Result<(Vec<u32>, usize), String> {
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
        ..spv::Options::default()
    };
    let stage = spv::PipelineOptions { entry_point: "main".into(), shader_stage: naga::ShaderStage::Compute };
    let mut words = spv::write_vec(&module, &info, &options, Some(&stage)).map_err(|e| e.to_string())?;
    let marked = keep_product_loops_rolled(&mut words)?;
    Ok((words, marked))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tensor_core_gemm_gets_one_rolled_loop() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../goldens");
        let source = std::fs::read_to_string(dir.join("gemm_f16_coop_128x128_ss.wgsl")).unwrap();
        for keep in [None, Some(KeptChecks::default())] {
            let (words, marked) = spirv(&source, keep, true).unwrap();
            assert_eq!(marked, 1);
            assert!(super::super::spv_loops::loop_controls(&words).contains(&2));
        }
        assert!(spirv("fn f( {", None, true).is_err());
    }
}
