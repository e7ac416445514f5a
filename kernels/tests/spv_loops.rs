//! `spv_loops` on what naga writes for the real tensor-core kernels: every GEMM and attention
//! variant that multiplies on cooperative matrices gets exactly its product-carrying loops
//! marked (a GEMM's one K loop; an attention's key loop), every other loop keeps naga's
//! empty loop control, and the marked module still parses as the same instruction stream.

use std::path::PathBuf;

use ep_kernels::runtime::spv_loops::{keep_product_loops_rolled, loop_controls};

fn spirv(path: &PathBuf) -> Vec<u32> {
    let source = std::fs::read_to_string(path).unwrap();
    let module = naga::front::wgsl::parse_str(&source).unwrap();
    let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
        .validate(&module)
        .unwrap();
    let options = naga::back::spv::Options { lang_version: (1, 6), ..Default::default() };
    let stage =
        naga::back::spv::PipelineOptions { entry_point: "main".into(), shader_stage: naga::ShaderStage::Compute };
    naga::back::spv::write_vec(&module, &info, &options, Some(&stage)).unwrap()
}

fn coop_goldens() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../goldens");
    let mut list: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            ["gemm_f16_coop_", "gemm_f32_coop_", "attn_coop_f16_", "attn_coop_f32x3_"]
                .iter()
                .any(|p| name.starts_with(p))
                && !name.contains("_emu")
                && name.ends_with(".wgsl")
        })
        .collect();
    list.sort();
    list
}

#[test]
fn every_tensor_core_kernel_gets_its_product_loops_marked_and_nothing_else() {
    let list = coop_goldens();
    assert!(list.len() >= 40, "found {} tensor-core goldens", list.len());
    let names = |s: &str| list.iter().any(|p| p.to_string_lossy().contains(s));
    // The Whisper-tiny plans' tensor-core pipelines are among them (fp16 and fp32).
    let whisper = [
        "gemm_f16_coop_128x128_ss.wgsl",
        "gemm_f16_coop_64x64_ss_res.wgsl",
        "attn_coop_f16_d64_128x32_mask_none_split",
        "gemm_f32_coop_128x256_k16_w4x4_s2_p2_x3_ss_xact.wgsl",
        "attn_coop_f32x3_d64_64x32_mask_none_split",
    ];
    for want in whisper {
        assert!(names(want), "{want}");
    }
    for path in &list {
        let before = spirv(path);
        let mut after = before.clone();
        let marked = keep_product_loops_rolled(&mut after).unwrap();
        let name = path.file_name().unwrap().to_string_lossy();
        assert!(marked >= 1, "{name}: no loop marked");
        let (b, a) = (loop_controls(&before), loop_controls(&after));
        assert_eq!(a.len(), b.len(), "{name}");
        assert!(b.iter().all(|&c| c == 0), "{name}: naga wrote loop controls {b:?}");
        assert_eq!(a.iter().filter(|&&c| c == 2).count(), marked, "{name}: {a:?}");
        assert!(a.iter().all(|&c| c == 0 || c == 2), "{name}: {a:?}");
        assert!(marked < a.len(), "{name}: every loop marked ({a:?}), the fragment loops too");
        // Only loop-control words changed.
        let changed = before.iter().zip(&after).filter(|(x, y)| x != y).count();
        assert_eq!(changed, marked, "{name}");
        if name.starts_with("gemm_") {
            assert_eq!(marked, 1, "{name}: a GEMM has one K loop");
        }
    }
}
