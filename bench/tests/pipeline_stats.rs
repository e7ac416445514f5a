//! `pipeline_stats` on the test adapter: every translated golden compiles in both modes with a
//! measured compile time, and a shader that cannot be compiled becomes an error record, not a
//! crash of the whole run.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn goldens() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../goldens")
}

#[test]
fn reports_every_golden_in_both_modes() {
    let out = std::env::temp_dir().join(format!("pipeline_stats_{}.json", std::process::id()));
    let run = Command::new(env!("CARGO_BIN_EXE_pipeline_stats"))
        .args(["--dir", goldens().to_str().unwrap(), "--only", "im2col_f32_t256,gemm_f32_64x64_v4.wgsl"])
        .args(["--threads", "2", "--json", out.to_str().unwrap()])
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    assert!(stdout.contains("adapter: "), "{stdout}");
    let records: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let _ = std::fs::remove_file(&out);
    let mut seen: Vec<(String, String)> = Vec::new();
    for r in &records {
        assert!(r.get("error").is_none(), "{r}");
        assert!(r["compile_ms"].as_f64().is_some_and(|ms| ms > 0.0), "{r}");
        assert!(r["spirv_bytes"].as_u64().is_some_and(|b| b > 0), "{r}");
        seen.push((r["shader"].as_str().unwrap().into(), r["mode"].as_str().unwrap().into()));
    }
    seen.sort();
    let want: Vec<(String, String)> = ["gemm_f32_64x64_v4", "im2col_f32_t256"]
        .iter()
        .flat_map(|s| ["checked", "unchecked"].map(|m| (s.to_string(), m.to_string())))
        .collect();
    assert_eq!(seen, want);
}

#[test]
fn a_shader_that_cannot_compile_is_an_error_record() {
    let dir = std::env::temp_dir().join(format!("pipeline_stats_bad_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Valid WGSL without the `main` entry point the tool compiles.
    std::fs::write(dir.join("no_main.wgsl"), "@compute @workgroup_size(1) fn other() {}\n").unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_pipeline_stats"))
        .args(["--dir", dir.to_str().unwrap(), "--modes", "unchecked"])
        .output()
        .expect("runs");
    let _ = std::fs::remove_dir_all(&dir);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{stdout}");
    assert!(stdout.contains("error: \"no_main\" \"unchecked\""), "{stdout}");
}

/// `rolled` (unchecked, `DontUnroll` on the loops that carry tensor-core products) compiles a
/// kernel without such products unchanged, and says how many loops it marked.
#[test]
fn the_rolled_mode_compiles_and_reports_its_marks() {
    let out = std::env::temp_dir().join(format!("pipeline_stats_rolled_{}.json", std::process::id()));
    let run = Command::new(env!("CARGO_BIN_EXE_pipeline_stats"))
        .args(["--dir", goldens().to_str().unwrap(), "--only", "gemm_f32_64x64_v4.wgsl", "--modes", "rolled"])
        .args(["--threads", "1", "--json", out.to_str().unwrap()])
        .output()
        .expect("runs");
    let (stdout, stderr) = (String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    assert!(run.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("rolled: 0 loop(s) marked"), "{stderr}");
    let records: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let _ = std::fs::remove_file(&out);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["mode"], "rolled");
    assert!(records[0]["compile_ms"].as_f64().is_some_and(|ms| ms > 0.0), "{}", records[0]);
}
