//! Files ONNX Runtime would refuse: a clear error naming the problem and a non-zero exit code,
//! never a panic.

use std::path::{Path, PathBuf};
use std::process::Command;

use ep_inspect::reader::{parse_model, read_model};

fn models() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/models")
}

fn error_of(file: &str) -> String {
    read_model(&models().join(file)).map(|_| ()).unwrap_err()
}

#[test]
fn each_bad_file_says_why() {
    assert!(error_of("bad/cycle.onnx").contains("cycle through node"));
    assert!(error_of("bad/unknown_opset.onnx").contains("unknown opset 99"));
    let missing = error_of("bad/missing_external.onnx");
    assert!(missing.contains("external data file") && missing.contains("missing.bin"), "{missing}");
    assert!(error_of("no_such_model.onnx").contains("no_such_model.onnx"));
}

#[test]
fn external_data_is_read() {
    let model = read_model(&models().join("external.onnx")).unwrap();
    let w = &model.initializers["w"];
    assert_eq!((w.dims.as_slice(), w.small_data.as_ref().map(Vec::len)), ([8, 4].as_slice(), Some(128)));
}

#[test]
fn every_truncation_is_an_error() {
    let bytes = std::fs::read(models().join("convnet.onnx")).unwrap();
    for len in 0..bytes.len() {
        // Some prefixes end on a field boundary and parse; those must still not panic, and any
        // that parses has lost a part of the graph the checks then notice or accept.
        let _ = parse_model(&bytes[..len], &models());
    }
    let e = parse_model(&bytes[..bytes.len() / 2], &models()).unwrap_err();
    assert!(
        e.contains("truncated or corrupt protobuf") || e.contains("defines") || e.contains("never produced"),
        "{e}"
    );
}

#[test]
fn the_binary_exits_non_zero() {
    let run = |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_inspect")).args(args).output().unwrap();
    for file in ["bad/cycle.onnx", "bad/unknown_opset.onnx", "bad/missing_external.onnx"] {
        let out = run(&[models().join(file).to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{file}");
        assert!(String::from_utf8_lossy(&out.stderr).starts_with("inspect: "), "{file}");
    }
    let good = models().join("mlp.onnx");
    let good = good.to_str().unwrap();
    assert_eq!(run(&[good, "--option", "tiling=huge"]).status.code(), Some(2));
    assert_eq!(run(&[good, "--shape", "X=1,2,3"]).status.code(), Some(2));
    assert_eq!(run(&[good, "--profile", "nowhere"]).status.code(), Some(1));
    let ok = run(&[good, "--profile", "llvmpipe", "--shape", "X=3,24"]);
    assert_eq!(ok.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&ok.stdout).contains("claimed 6 of 6 nodes in 1 partition(s)"));
}
