//! Executables on the real adapter under bad conditions: zero-size dimensions, NaN/Inf data,
//! tensors past the device's limits, and a device destroyed under them.

mod common;

use std::collections::BTreeMap;

use common::*;
use ep_kernels::graph::{build_program, Attr, ExecOptions, Executable, HostTensor, Node, ValueInfo};
use ep_kernels::runtime::Gpu;
use ep_kernels::{DType, GpuError};

fn value(name: &str, rank: usize) -> ValueInfo {
    common::graph::symbolic(name, rank)
}

fn node(op: &str, inputs: &[ValueInfo], output: &str, attrs: &[(&str, Attr)]) -> Node {
    Node {
        name: op.to_lowercase(),
        op_type: op.into(),
        domain: String::new(),
        since_version: 17,
        inputs: inputs.iter().cloned().map(Some).collect(),
        outputs: vec![Some(value(output, 2))],
        attrs: attrs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect::<BTreeMap<_, _>>(),
        assigned_ep: None,
    }
}

/// `Y = A·B` (MatMul) or `Y = alpha·A·B + beta·C` (Gemm) over host inputs.
fn executable(gpu: &std::sync::Arc<Gpu>, gemm: Option<(f32, f32)>) -> Executable {
    let (a, b, c) = (value("A", 2), value("B", 2), value("C", 1));
    let (nodes, inputs) = match gemm {
        None => (vec![node("MatMul", &[a, b], "Y", &[])], vec!["A", "B"]),
        Some((alpha, beta)) => (
            vec![node("Gemm", &[a, b, c], "Y", &[("alpha", Attr::Float(alpha)), ("beta", Attr::Float(beta))])],
            vec!["A", "B", "C"],
        ),
    };
    let inputs: Vec<String> = inputs.into_iter().map(String::from).collect();
    let program = build_program(&nodes, &inputs, &["Y".to_string()], vec![]).unwrap();
    Executable::new(gpu.clone(), program, ExecOptions::default()).unwrap()
}

/// Runs once; returns the output shape and values.
fn run(exec: &Executable, inputs: &[(&[u64], &[f32])]) -> Result<(Vec<u64>, Vec<f32>), GpuError> {
    let bytes: Vec<Vec<u8>> = inputs.iter().map(|(_, v)| to_bytes(v, DType::F32)).collect();
    let tensors: Vec<HostTensor> = inputs
        .iter()
        .zip(&bytes)
        .map(|((shape, _), data)| HostTensor { dtype: DType::F32.into(), shape, data })
        .collect();
    let mut out = (Vec::new(), Vec::new());
    exec.run(&tensors, &mut |_, shape, data| {
        out = (shape.to_vec(), from_bytes(data, DType::F32));
        Ok(())
    })?;
    Ok(out)
}

fn matmul_ref(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    (0..m * n).map(|i| (0..k).map(|p| a[i / n * k + p] * b[p * n + i % n]).sum()).collect()
}

#[test]
fn zero_size_dimensions_give_empty_outputs_or_zeros() {
    let gpu = gpu();
    let exec = executable(&gpu, None);
    for (m, k, n) in [(0, 3, 4), (3, 0, 4), (3, 4, 0), (0, 0, 0), (5, 3, 2)] {
        let (a, b) = (vec![0.5f32; m * k], vec![2.0f32; k * n]);
        let (shape, got) = run(&exec, &[(&[m as u64, k as u64], &a), (&[k as u64, n as u64], &b)]).unwrap();
        assert_eq!(shape, vec![m as u64, n as u64]);
        assert_eq!(got, matmul_ref(&a, &b, m, k, n), "{m}x{k}x{n}");
    }
    // K = 0 in a Gemm: only beta·C remains.
    let exec = executable(&gpu, Some((1.0, 2.0)));
    let c = [1.0f32, -2.0, 3.0];
    let (shape, got) = run(&exec, &[(&[2, 0], &[]), (&[0, 3], &[]), (&[3], &c)]).unwrap();
    assert_eq!((shape, got), (vec![2, 3], vec![2.0, -4.0, 6.0, 2.0, -4.0, 6.0]));
}

#[test]
fn nan_and_inf_propagate_and_beta_zero_ignores_c() {
    let gpu = gpu();
    let exec = executable(&gpu, None);
    let a = [f32::NAN, 1.0, f32::INFINITY, 1.0, 1.0, 1.0];
    let b = [1.0f32, 2.0, -1.0, 1.0];
    let (_, got) = run(&exec, &[(&[3, 2], &a), (&[2, 2], &b)]).unwrap();
    assert!(got[0].is_nan() && got[1].is_nan());
    assert_eq!(&got[2..4], &[f32::INFINITY, f32::INFINITY]);
    assert_eq!(&got[4..], &[0.0, 3.0]);
    // beta = 0: C is never read (as in ORT's CPU EP), so NaN in C does not reach the output.
    let exec = executable(&gpu, Some((1.0, 0.0)));
    let (_, got) =
        run(&exec, &[(&[1, 1], &[2.0]), (&[1, 2], &[1.0, 3.0]), (&[2], &[f32::NAN, f32::INFINITY])]).unwrap();
    assert_eq!(got, vec![2.0, 6.0]);
}

#[test]
fn bad_run_time_shapes_fail_and_the_executable_keeps_working() {
    let gpu = gpu();
    let exec = executable(&gpu, None);
    let err = run(&exec, &[(&[2, 3], &[0.0; 6]), (&[4, 2], &[0.0; 8])]).unwrap_err();
    assert!(err.to_string().contains("inner dimensions"), "{err}");
    let err = run(&exec, &[(&[2, 3], &[0.0; 5]), (&[3, 2], &[0.0; 6])]).unwrap_err();
    assert!(err.to_string().contains("bytes"), "{err}");
    let gemm = executable(&gpu, Some((1.0, 1.0)));
    let err = run(&gemm, &[(&[2, 3], &[0.0; 6]), (&[3, 2], &[0.0; 6]), (&[3], &[0.0; 3])]).unwrap_err();
    assert!(err.to_string().contains("broadcast"), "{err}");
    let (_, got) = run(&exec, &[(&[1, 2], &[1.0, 2.0]), (&[2, 1], &[3.0, 4.0])]).unwrap();
    assert_eq!(got, vec![11.0]);
}

#[test]
fn tensors_past_the_device_limits_fail_with_the_limit() {
    let gpu = gpu();
    let caps = gpu.caps().clone();
    let err = gpu.storage_buffer(caps.max_buffer_size + 4, "huge").unwrap_err();
    assert!(matches!(err, GpuError::OutOfMemory(_)), "{err}");
    // One operand past a storage binding: declined by the planner before any allocation.
    let rows = caps.max_storage_binding_size / 4 / 64 + 1;
    let (p, _) = ep_kernels::gemm::matmul_problem(&[rows, 64], &[64, 1], DType::F32).unwrap();
    let err = ep_kernels::gemm::plan_gemm(&p, &caps, &Default::default()).unwrap_err();
    assert!(err.to_string().contains("storage binding"), "{err}");
}

#[test]
fn a_destroyed_device_fails_every_call_with_device_lost() {
    // A device of its own: destroying the shared test device would break the other tests.
    let gpu = open_gpu();
    let exec = executable(&gpu, None);
    let inputs: [(&[u64], &[f32]); 2] = [(&[1, 2], &[1.0, 2.0]), (&[2, 1], &[3.0, 4.0])];
    assert_eq!(run(&exec, &inputs).unwrap().1, vec![11.0]);
    assert!(!gpu.is_lost());
    gpu.destroy("test");
    assert!(gpu.is_lost());
    for attempt in 0..2 {
        let err = run(&exec, &inputs).unwrap_err();
        assert!(matches!(err, GpuError::DeviceLost(_)), "attempt {attempt}: {err}");
    }
    // New shapes (a fresh prepared set) and new buffers fail the same way.
    let err = run(&exec, &[(&[2, 2], &[0.0; 4]), (&[2, 2], &[0.0; 4])]).unwrap_err();
    assert!(matches!(err, GpuError::DeviceLost(_)), "{err}");
    assert!(matches!(gpu.storage_buffer(16, "x").unwrap_err(), GpuError::DeviceLost(_)));
    assert!(gpu.wait().is_err());
}

/// Read-backs from many threads on one device: another thread's `poll` may fire our map
/// callback just after our own `poll(Wait)` returned; every read must still get its bytes.
#[test]
fn concurrent_read_backs_all_complete() {
    let gpu = gpu();
    let threads: Vec<_> = (0..8u32)
        .map(|t| {
            let gpu = gpu.clone();
            std::thread::spawn(move || {
                for round in 0..400u32 {
                    let data: Vec<u8> = (0..256u32).flat_map(|i| (i ^ t ^ round).to_le_bytes()).collect();
                    let buf = gpu.upload(&data, "round trip").expect("upload");
                    let back = gpu.read_buffer(&buf).expect("read back");
                    assert_eq!(back, data, "thread {t} round {round}");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a reader thread failed");
    }
}

/// Inputs of 8 MiB and more are copied into their pooled staging buffers by several threads
/// through disjoint mapped views, and the staging buffers are mapped again after each run: a
/// repeated run with fresh data must see exactly the new data, and a one-off upload of an odd
/// length must read back byte for byte.
#[test]
fn large_uploads_through_pooled_staging_are_exact() {
    let gpu = gpu();
    let exec = executable(&gpu, None);
    let mut rng = rng("large_uploads");
    let (m, k, n) = (1025usize, 2049usize, 3usize);
    assert!(m * k * 4 >= 2 * ep_kernels::hostcopy::MIN_CHUNK, "A must take the threaded path");
    for round in 0..3 {
        let a = random_vec(&mut rng, m * k);
        let b = random_vec(&mut rng, k * n);
        let (shape, got) = run(&exec, &[(&[m as u64, k as u64], &a), (&[k as u64, n as u64], &b)]).unwrap();
        assert_eq!(shape, vec![m as u64, n as u64]);
        let want = matmul_ref(&a, &b, m, k, n);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!((g - w).abs() <= 1e-3 * (1.0 + w.abs()), "round {round}, element {i}: {g} vs {w}");
        }
    }
    let len = 9 * ep_kernels::hostcopy::MIN_CHUNK / 4 * 4 + 6;
    let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8 ^ (i >> 13) as u8).collect();
    let buf = gpu.upload(&data, "odd").unwrap();
    let back = gpu.read_buffer(&buf).unwrap();
    assert!(back == data, "odd-length upload of {len} bytes did not read back exactly");
}
