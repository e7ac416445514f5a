//! Every shader variant the planners can emit for the recorded device profiles is rendered and
//! compared byte for byte with `goldens/<variant>.wgsl`, and validated by naga with exactly
//! the capabilities the variant needs. `UPDATE_GOLDENS=1` rewrites the files; CI also runs
//! `git diff --exit-code goldens/`, so any drift is reviewed as a diff.

use std::collections::BTreeMap;
use std::path::PathBuf;

use ep_kernels::caps::{profiles, DeviceCaps};
use ep_kernels::shader::{validate, validate_with_info, ShaderVariant};
use ep_kernels::variants::reachable_variants;

fn goldens_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../goldens")
}

fn all_variants() -> BTreeMap<String, ShaderVariant> {
    let mut all = BTreeMap::new();
    for (_, caps) in profiles::all() {
        all.extend(reachable_variants(&caps));
        // A device without tensor cores under `emulate_tensor_cores`: its tensor-core plans in plain WGSL.
        if caps.coop_matrix.is_empty() {
            all.extend(reachable_variants(&DeviceCaps { coop_emulated: true, ..caps }));
        }
    }
    all
}

#[test]
fn goldens_match_and_validate() {
    let dir = goldens_dir();
    let update = std::env::var("UPDATE_GOLDENS").is_ok_and(|v| v == "1");
    let variants = all_variants();
    let mut failures = Vec::new();
    for (name, variant) in &variants {
        let source = variant.emit().unwrap_or_else(|e| panic!("{name}: {e}"));
        match validate_with_info(&source, variant.capabilities()) {
            Ok((module, info)) => {
                if let Err(e) = spirv_compiles(&module, &info) {
                    failures.push(format!("{name}: naga's SPIR-V backend fails: {e}"));
                }
            }
            Err(e) => failures.push(format!("{name}: naga rejects it:\n{e}")),
        }
        let path = dir.join(format!("{name}.wgsl"));
        if update {
            std::fs::write(&path, &source).unwrap();
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(golden) if golden == source => {}
            Ok(_) => failures.push(format!("{name}: differs from {} (UPDATE_GOLDENS=1 to accept)", path.display())),
            Err(_) => failures.push(format!("{name}: no golden at {} (UPDATE_GOLDENS=1 to add)", path.display())),
        }
    }
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        if path.extension().is_some_and(|e| e == "wgsl") && !variants.contains_key(&stem) {
            if update {
                std::fs::remove_file(&path).unwrap();
            } else {
                failures.push(format!("{}: no planner emits this variant any more", path.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Runs naga's SPIR-V backend as wgpu's Vulkan backend does (index bounds clamped; storage
/// buffers clamped or left to robust buffer access), and with read-zero-skip-write checks, so
/// a backend panic such as `Expression [N] is not cached` shows here, not at pipeline creation
/// on a user's machine. Modules with atomics skip the read-zero-skip-write form: naga's SPIR-V
/// backend has none for atomics, and wgpu's Vulkan backend never asks for it (only its GL
/// backend does, through GLSL).
fn spirv_compiles(module: &naga::Module, info: &naga::valid::ModuleInfo) -> Result<(), String> {
    use naga::proc::{BoundsCheckPolicies, BoundsCheckPolicy as P};
    let atomics = module.types.iter().any(|(_, t)| matches!(t.inner, naga::TypeInner::Atomic(_)));
    let policies =
        [(P::Restrict, P::Unchecked), (P::Restrict, P::Restrict), (P::ReadZeroSkipWrite, P::ReadZeroSkipWrite)];
    for (index, buffer) in policies.into_iter().filter(|&(_, b)| !(atomics && b == P::ReadZeroSkipWrite)) {
        let options = naga::back::spv::Options {
            bounds_check_policies: BoundsCheckPolicies {
                index,
                buffer,
                image_load: P::Unchecked,
                binding_array: P::Unchecked,
            },
            ..Default::default()
        };
        let written = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            naga::back::spv::write_vec(module, info, &options, None)
        }));
        match written {
            Ok(Ok(words)) if !words.is_empty() => {}
            Ok(Ok(_)) => return Err(format!("empty module ({index:?}/{buffer:?})")),
            Ok(Err(e)) => return Err(format!("{e} ({index:?}/{buffer:?})")),
            Err(panic) => {
                let msg = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                return Err(format!("panicked: {msg} ({index:?}/{buffer:?})"));
            }
        }
    }
    Ok(())
}

#[test]
fn goldens_need_their_capabilities() {
    // A variant must not validate without any one of its capabilities: proves the capability
    // set is exact, not permissive.
    for (name, variant) in all_variants() {
        let needed = variant.capabilities();
        let source = variant.emit().unwrap();
        for one in needed.iter() {
            let fewer = needed - one;
            assert!(validate(&source, fewer).is_err(), "{name} validated without {one:?}");
        }
    }
}

#[test]
fn every_profile_reaches_a_plan() {
    for (name, caps) in profiles::all() {
        assert!(!reachable_variants(&caps).is_empty(), "{name}: no variant");
    }
}

/// Coop shapes the planner does not emit today but the tuning sweep measures (K-contiguous
/// staging, two-deep prefetch, single stage, other subgroup grids), in every layout and load
/// width: each must render, validate with exactly its capabilities and pass naga's SPIR-V
/// backend, so a retuned table cannot pick a program that panics at pipeline creation.
#[test]
fn tuning_candidates_validate_and_compile() {
    use ep_kernels::gemm::tuning::{COOP_128, COOP_64};
    use ep_kernels::gemm::{Contig, CoopShape, CoopVariant, GemmVariant};
    use ep_kernels::DType;
    let shapes = [
        CoopShape { stage_k: true, ..COOP_128 },
        CoopShape { depth: 2, ..COOP_128 },
        CoopShape { stage_k: true, depth: 2, ..COOP_64 },
        CoopShape { stages: 1, depth: 1, sg_m: 4, sg_n: 4, ..COOP_128 },
        CoopShape { bm: 256, sg_m: 4, sg_n: 4, stages: 1, depth: 1, stage_k: true, ..COOP_128 },
        CoopShape { bk: 64, ..COOP_64 },
    ];
    let mut failures = Vec::new();
    for shape in shapes {
        for (a, b) in [(Contig::K, Contig::Mn), (Contig::Mn, Contig::K)] {
            for (dtype, width) in [(DType::F16, 8), (DType::F16, 4), (DType::F16, 1), (DType::F32, 4)] {
                for split_k in [false, true] {
                    let v = GemmVariant::Coop(CoopVariant {
                        dtype,
                        shape,
                        split_k,
                        a,
                        b,
                        width,
                        emulate: false,
                        split: false,
                        fused: false,
                        subgroup_sync: split_k,
                    });
                    let variant = ShaderVariant::Gemm(v);
                    let name = variant.name();
                    let source = variant.emit().unwrap_or_else(|e| panic!("{name}: {e}"));
                    match validate_with_info(&source, variant.capabilities()) {
                        Ok((module, info)) => {
                            if let Err(e) = spirv_compiles(&module, &info) {
                                failures.push(format!("{name}: {e}"));
                            }
                        }
                        Err(e) => failures.push(format!("{name}: {e}")),
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
