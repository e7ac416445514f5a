//! Mutated model files through the reader and the whole inspection (placement, program
//! building, planners): errors are fine, a panic is a failure. `INSPECT_FUZZ_ITERS` runs more
//! mutations (default 20000), `INSPECT_FUZZ_SEED` another seed.

use std::path::Path;

use ep_inspect::reader::parse_model;
use ep_inspect::report::inspect;
use ep_kernels::caps::profiles;
use ep_kernels::options::EpOptions;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// One random edit: flip bits, overwrite, insert, delete or duplicate a span of bytes.
fn mutate(bytes: &mut Vec<u8>, rng: &mut StdRng) {
    let len = bytes.len().max(1);
    let at = rng.random_range(0..len).min(bytes.len());
    let last = at.min(bytes.len().saturating_sub(1));
    match rng.random_range(0..6) {
        0 if !bytes.is_empty() => bytes[last] ^= 1 << rng.random_range(0..8),
        1 if !bytes.is_empty() => bytes[last] = rng.random(),
        2 => bytes.insert(at, rng.random()),
        3 if at < bytes.len() => drop(bytes.drain(at..(at + rng.random_range(1..16)).min(bytes.len()))),
        4 => bytes.truncate(at),
        _ => {
            let end = (at + rng.random_range(1..32)).min(bytes.len());
            let span = bytes[at..end].to_vec();
            let to = rng.random_range(0..=bytes.len());
            bytes.splice(to..to, span);
        }
    }
}

#[test]
fn mutated_models_never_panic() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/models");
    let iters: usize = std::env::var("INSPECT_FUZZ_ITERS").ok().and_then(|v| v.parse().ok()).unwrap_or(20000);
    let seed: u64 = std::env::var("INSPECT_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(16);
    let seeds: Vec<Vec<u8>> = ["mlp", "whisper_frontend", "convnet", "transformer", "external"]
        .iter()
        .map(|m| std::fs::read(dir.join(format!("{m}.onnx"))).unwrap())
        .collect();
    let caps = profiles::all();
    let options = EpOptions::from_pairs([]).unwrap();
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut parsed, mut inspected) = (0, 0);
    for i in 0..iters {
        let mut bytes = seeds[i % seeds.len()].clone();
        for _ in 0..rng.random_range(1..4) {
            mutate(&mut bytes, &mut rng);
        }
        let Ok(mut model) = parse_model(&bytes, &dir) else { continue };
        parsed += 1;
        if ep_inspect::shapes::apply(&mut model, &[]).is_ok() {
            let report = inspect(&model, &options, &caps[i % caps.len()].1);
            inspected += usize::from(report.nodes.len() == model.graph.nodes.len());
        }
    }
    // The mutations must reach past the protobuf decoder for the test to mean anything.
    eprintln!("{parsed} of {iters} mutated files parsed, {inspected} inspected");
    assert!(
        parsed > iters / 20 && inspected > iters / 50,
        "{parsed} of {iters} mutated files parsed, {inspected} inspected"
    );
}
