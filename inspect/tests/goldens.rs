//! Placement goldens: the inspector's report for each committed model on each recorded
//! profile, compared byte for byte with `goldens/inspect/<model>[.<case>].<profile>.txt`.
//! A change in placement, fusion, a planner or a profile shows up as a reviewed diff;
//! `UPDATE_GOLDENS=1 cargo test -p ep-wgpu-inspect --test goldens` rewrites them.

use std::path::{Path, PathBuf};

use ep_inspect::cli::{run, Args};
use ep_kernels::caps::profiles;

/// `(model, case tag, extra arguments)`.
const CASES: &[(&str, &str, &[&str])] = &[
    ("mlp", "", &[]),
    ("mlp", "batch256", &["--shape", "X=256,24"]),
    ("mlp", "offload_all", &["--shape", "batch=4", "--option", "offload=all"]),
    ("whisper_frontend", "", &[]),
    ("convnet", "", &[]),
    ("convnet", "implicit", &["--option", "conv_algorithm=implicit"]),
    ("transformer", "", &[]),
    ("transformer", "offload_all", &["--option", "offload=all"]),
    ("transformer_f16", "", &[]),
    ("transformer_f16", "f16_off", &["--option", "enable_f16=0"]),
    ("whisper_frontend", "tiling128", &["--option", "tiling=128x128"]),
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

#[test]
fn placement_goldens() {
    let update = std::env::var_os("UPDATE_GOLDENS").is_some();
    let dir = root().join("goldens/inspect");
    let mut failures = Vec::new();
    let mut written = std::collections::BTreeSet::new();
    for (model, tag, extra) in CASES {
        for (profile, _) in profiles::all() {
            let path = root().join(format!("inspect/tests/models/{model}.onnx"));
            let mut argv = vec![path.to_string_lossy().into_owned(), "--profile".into(), profile.into()];
            argv.extend(extra.iter().map(|s| s.to_string()));
            let report = run(&Args::parse(&argv).unwrap()).unwrap();
            let name =
                if tag.is_empty() { format!("{model}.{profile}.txt") } else { format!("{model}.{tag}.{profile}.txt") };
            let golden = dir.join(&name);
            written.insert(name.clone());
            if update {
                std::fs::write(&golden, &report).unwrap();
                continue;
            }
            match std::fs::read_to_string(&golden) {
                Ok(g) if g == report => {}
                Ok(_) => {
                    failures.push(format!("{name}: differs from {} (UPDATE_GOLDENS=1 to accept)", golden.display()))
                }
                Err(_) => failures.push(format!("{name}: no golden (UPDATE_GOLDENS=1 to add)")),
            }
        }
    }
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if !written.contains(&name) {
            failures.push(format!("goldens/inspect/{name}: no case produces it any more"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn json_matches_text() {
    let path = root().join("inspect/tests/models/convnet.onnx");
    let argv = |json: bool| {
        let mut a = vec![path.to_string_lossy().into_owned(), "--profile".into(), "llvmpipe".into()];
        if json {
            a.push("--json".into());
        }
        run(&Args::parse(&a).unwrap()).unwrap()
    };
    let value: serde_json::Value = serde_json::from_str(&argv(true)).unwrap();
    let claimed: Vec<&str> = value["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["claimed"] == true)
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert_eq!(claimed, ["conv1", "relu1", "pool", "depthwise", "relu2", "pointwise", "gap", "flatten", "fc"]);
    assert_eq!(value["partitions"].as_array().unwrap().len(), 1);
    assert!(argv(false).contains("claimed 9 of 9 nodes in 1 partition(s); declined 0"));
}
