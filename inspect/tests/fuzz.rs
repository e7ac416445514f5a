//! Mutated model files through the reader and the whole inspection (placement, program
//! building, planners): errors are fine, a panic is a failure. Byte-level mutations exercise
//! the protobuf reader; ONNX-level ones (declared dims, attributes, constants, op types,
//! inputs, opsets) reach the EP's checks, shape inference and planners. `INSPECT_FUZZ_ITERS` runs more
//! mutations (default 20000), `INSPECT_FUZZ_SEED` another seed.

use std::path::Path;

use ep_inspect::proto::onnx::tensor_shape_proto::dimension::Value as DimValue;
use ep_inspect::proto::onnx::type_proto::Value as TypeValue;
use ep_inspect::proto::onnx::ModelProto;
use ep_inspect::reader::parse_model;
use ep_inspect::report::inspect;
use ep_inspect::shapes::ShapeArg;
use ep_kernels::caps::profiles;
use ep_kernels::options::EpOptions;
use protobuf::Message;
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

/// A size a mutated file may declare: ordinary, zero, or beyond any device.
fn extreme(rng: &mut StdRng) -> i64 {
    const SIZES: [i64; 9] = [0, 1, 2, 3, 7, 1 << 31, 1 << 40, i64::MAX, -1];
    if rng.random_bool(0.5) {
        SIZES[rng.random_range(0..SIZES.len())]
    } else {
        rng.random_range(-4..70)
    }
}

/// One edit at the ONNX level: a declared dim, an attribute, a small constant's values, an
/// initializer's dims, a node's op type or inputs.
fn mutate_model(m: &mut ModelProto, rng: &mut StdRng) {
    let Some(g) = m.graph.as_mut() else { return };
    let ops = [
        "MatMul",
        "Gemm",
        "Conv",
        "Add",
        "Reshape",
        "Softmax",
        "LayerNormalization",
        "Transpose",
        "Gather",
        "Concat",
        "Slice",
        "Split",
        "ReduceSum",
        "Flatten",
        "Expand",
        "Cast",
        "Where",
        "Clip",
    ];
    match rng.random_range(0..6) {
        0 => {
            let values: Vec<_> = g.value_info.iter_mut().chain(g.input.iter_mut()).chain(g.output.iter_mut()).collect();
            let n = values.len();
            if n == 0 {
                return;
            }
            let v = values.into_iter().nth(rng.random_range(0..n));
            if let Some(Some(TypeValue::TensorType(t))) = v.map(|v| v.type_.mut_or_insert_default().value.as_mut()) {
                let dims = &mut t.shape.mut_or_insert_default().dim;
                if !dims.is_empty() {
                    let k = rng.random_range(0..dims.len());
                    dims[k].value = Some(DimValue::DimValue(extreme(rng)));
                }
            }
        }
        1 => {
            let n = g.node.len();
            let node = &mut g.node[rng.random_range(0..n)];
            let k = rng.random_range(0..node.attribute.len().max(1));
            if let Some(a) = node.attribute.get_mut(k) {
                a.i = Some(extreme(rng));
                a.ints.iter_mut().for_each(|v| *v = if rng.random_bool(0.3) { extreme(rng) } else { *v });
                a.f = Some(rng.random_range(-1e3..1e3));
            }
        }
        2 => {
            let n = g.initializer.len().max(1);
            if let Some(t) = g.initializer.get_mut(rng.random_range(0..n)) {
                t.int64_data = t.dims.iter().map(|_| extreme(rng)).collect();
                if t.data_type == Some(7) && !t.int64_data.is_empty() {
                    t.raw_data = Some(t.int64_data.iter().flat_map(|v| v.to_le_bytes()).collect());
                    t.dims = vec![t.int64_data.len() as i64];
                } else if let Some(d) = t.dims.first_mut() {
                    *d = extreme(rng);
                }
            }
        }
        3 => {
            let n = g.node.len();
            g.node[rng.random_range(0..n)].op_type = Some(ops[rng.random_range(0..ops.len())].to_string());
        }
        4 => {
            let n = g.node.len();
            let node = &mut g.node[rng.random_range(0..n)];
            if !node.input.is_empty() {
                let k = rng.random_range(0..node.input.len());
                if rng.random_bool(0.5) {
                    node.input.remove(k);
                } else {
                    node.input.push(node.input[k].clone());
                }
            }
        }
        _ => {
            if let Some(o) = m.opset_import.first_mut() {
                o.version = Some(rng.random_range(1..=28));
            }
        }
    }
}

#[test]
fn mutated_graphs_never_panic() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/models");
    let iters: usize = std::env::var("INSPECT_FUZZ_ITERS").ok().and_then(|v| v.parse().ok()).unwrap_or(20000) / 4;
    let seed: u64 = std::env::var("INSPECT_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(16);
    let seeds: Vec<ModelProto> = ["mlp", "whisper_frontend", "convnet", "transformer", "transformer_f16"]
        .iter()
        .map(|m| ModelProto::parse_from_bytes(&std::fs::read(dir.join(format!("{m}.onnx"))).unwrap()).unwrap())
        .collect();
    let caps = profiles::all();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut inspected = 0;
    for i in 0..iters {
        let mut model = seeds[i % seeds.len()].clone();
        for _ in 0..rng.random_range(1..4) {
            mutate_model(&mut model, &mut rng);
        }
        let bytes = model.write_to_bytes().unwrap();
        let Ok(mut parsed) = parse_model(&bytes, &dir) else { continue };
        let shapes = [ShapeArg { name: "batch".into(), dims: vec![3] }];
        let args: &[ShapeArg] = if i % 2 == 0 { &shapes } else { &[] };
        if ep_inspect::shapes::apply(&mut parsed, args).is_ok() || ep_inspect::shapes::apply(&mut parsed, &[]).is_ok() {
            let options = EpOptions::from_pairs(if i % 3 == 0 { vec![("offload", "all")] } else { vec![] }).unwrap();
            inspect(&parsed, &options, &caps[i % caps.len()].1);
            inspected += 1;
        }
    }
    eprintln!("{inspected} of {iters} mutated graphs inspected");
    assert!(inspected > iters / 2, "{inspected} of {iters} mutated graphs inspected");
}
