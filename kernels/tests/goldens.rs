//! Every shader variant the planners can emit for the recorded device profiles is rendered and
//! compared byte for byte with `goldens/<variant>.wgsl`, and validated by naga with exactly
//! the capabilities the variant needs. `UPDATE_GOLDENS=1` rewrites the files; CI also runs
//! `git diff --exit-code goldens/`, so any drift is reviewed as a diff.

use std::collections::BTreeMap;
use std::path::PathBuf;

use ep_kernels::caps::profiles;
use ep_kernels::shader::{validate, ShaderVariant};
use ep_kernels::variants::reachable_variants;

fn goldens_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../goldens")
}

fn all_variants() -> BTreeMap<String, ShaderVariant> {
    let mut all = BTreeMap::new();
    for (_, caps) in profiles::all() {
        all.extend(reachable_variants(&caps));
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
        if let Err(e) = validate(&source, variant.capabilities()) {
            failures.push(format!("{name}: naga rejects it:\n{e}"));
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

#[test]
fn goldens_need_their_capabilities() {
    // An f16 variant must not validate without SHADER_FLOAT16: proves the capability set is
    // exact, not permissive.
    for (name, variant) in all_variants() {
        let needed = variant.capabilities();
        if needed.is_empty() {
            continue;
        }
        let source = variant.emit().unwrap();
        assert!(validate(&source, naga::valid::Capabilities::empty()).is_err(), "{name} validated without {needed:?}");
    }
}

#[test]
fn every_profile_reaches_a_plan() {
    for (name, caps) in profiles::all() {
        assert!(!reachable_variants(&caps).is_empty(), "{name}: no variant");
    }
}
