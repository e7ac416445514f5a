//! Embeds every template under `wgsl/` (discovered, not listed: a new op's template cannot be
//! forgotten) as `TEMPLATES: &[(name, source)]` in `$OUT_DIR/templates.rs`.

use std::fmt::Write;
use std::path::PathBuf;

fn main() {
    let dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR")).join("../wgsl");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut names: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)
        .expect("the wgsl/ folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".wgsl.j2"))
        .map(|p| (p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(), p))
        .collect();
    names.sort();
    let mut out = String::from("/// Every template of `wgsl/`, embedded at build time (name, source).\nconst TEMPLATES: &[(&str, &str)] = &[\n");
    for (name, path) in &names {
        println!("cargo:rerun-if-changed={}", path.display());
        let _ = writeln!(out, "    ({name:?}, include_str!({:?})),", path.display().to_string());
    }
    out.push_str("];\n");
    let dest = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("templates.rs");
    std::fs::write(dest, out).expect("writing templates.rs");
}
