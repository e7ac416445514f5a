//! A real out-of-memory inside the device limits, on the real adapter.
//!
//! llvmpipe/lavapipe backs device memory with host memory (`malloc`/`mmap`), so lowering this
//! process's address-space limit (`RLIMIT_AS`) makes `vkAllocateMemory` fail with
//! `VK_ERROR_OUT_OF_DEVICE_MEMORY` for a buffer well inside `max_buffer_size`. The limit is set
//! with util-linux `prlimit` on our own pid (the crate forbids `unsafe`, so no `setrlimit`
//! here). This file holds one test, so the limit never touches another test's threads.
//!
//! On a real GPU the limit changes nothing (device memory is not in our address space) and
//! the test says so and fails; `EP_WGPU_TEST_ADAPTER` must name a software adapter, which is
//! the default on CI.

mod common;

use std::process::Command;

use common::*;
use ep_kernels::gemm::{matmul_problem, plan_gemm};
use ep_kernels::runtime::{GemmBindings, Gpu};
use ep_kernels::{DType, GpuError};

const MIB: u64 = 1 << 20;

/// This process's virtual size (`VmSize` in /proc/self/status), in bytes.
fn vm_size() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmSize:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

/// Sets this process's soft RLIMIT_AS (`None`: unlimited), keeping the hard limit.
fn set_soft_as_limit(soft: Option<u64>) {
    let soft = soft.map_or_else(|| "unlimited".to_string(), |b| b.to_string());
    let out = Command::new("prlimit")
        .arg(format!("--pid={}", std::process::id()))
        .arg(format!("--as={soft}:"))
        .output()
        .expect("util-linux prlimit");
    assert!(out.status.success(), "prlimit --as={soft}: {}", String::from_utf8_lossy(&out.stderr));
}

/// `A·B` for a 37×53 · 53×29 problem on `gpu`, compared with a float64 reference; every step
/// fallible, so a broken device shows up as an error rather than a panic inside a helper.
fn checked_gemm(gpu: &Gpu, seed: u64) -> Result<(), GpuError> {
    let (m, k, n) = (37u64, 53u64, 29u64);
    let (p, _) = matmul_problem(&[m, k], &[k, n], DType::F32).unwrap();
    let plan = plan_gemm(&p, gpu.caps(), &Default::default()).unwrap();
    let a: Vec<f32> = (0..m * k).map(|i| ((i * 7 + seed) % 13) as f32 / 13.0 - 0.5).collect();
    let b: Vec<f32> = (0..k * n).map(|i| ((i * 5 + seed) % 11) as f32 / 11.0 - 0.5).collect();
    let ab = gpu.upload(&to_bytes(&a, DType::F32), "a")?;
    let bb = gpu.upload(&to_bytes(&b, DType::F32), "b")?;
    let out = gpu.upload(&poison((m * n) as usize, DType::F32), "out")?;
    let dispatches = gpu.prepare_gemm(&plan, GemmBindings { a: &ab, b: &bb, bias: None, out: &out })?;
    gpu.run(&dispatches.iter().collect::<Vec<_>>())?;
    let got = from_bytes(&gpu.read_buffer(&out)?, DType::F32);
    let (atol, rtol) = tolerance(DType::F32, k as u32);
    assert_close(&got[..(m * n) as usize], &reference(&p, &a, &b, None), atol, rtol, "gemm");
    Ok(())
}

#[test]
fn an_allocation_the_driver_refuses_is_out_of_memory_and_the_device_keeps_working() {
    let gpu = open_gpu();
    assert!(
        gpu.adapter().is_software(),
        "RLIMIT_AS only bounds device memory on a software adapter: {:?}",
        gpu.adapter()
    );
    // Warm up: compile the pipeline (LLVM's JIT allocates too) and run once.
    checked_gemm(&gpu, 1).unwrap();

    let big = (gpu.caps().max_buffer_size / 4 * 3).min(1536 * MIB) & !3;
    let headroom = 256 * MIB;
    assert!(big > 2 * headroom, "max_buffer_size {} is too small for this test", gpu.caps().max_buffer_size);
    // A buffer and its data made before the limit: uploading it needs a staging buffer, which
    // the limit refuses once the device is full.
    let target = gpu.storage_buffer(96 * MIB, "upload-target").unwrap();
    let data = vec![1u8; (96 * MIB) as usize];
    let baseline = gpu.allocated_bytes();
    let before = vm_size();
    set_soft_as_limit(Some(before + headroom));
    // One buffer far past the limit (a dedicated allocation), then 32 MiB buffers until the
    // driver refuses one (sub-allocated from gpu-allocator's blocks): both must be refused.
    let refused = gpu.storage_buffer(big, "oom-test");
    let mut filled = Vec::new();
    let fill_stop = loop {
        match gpu.storage_buffer(32 * MIB, "oom-fill") {
            Ok(b) if filled.len() < 64 => filled.push(b),
            other => break other.map(|_| ()),
        }
    };
    let filled_count = filled.len();
    // The device is full: an upload needs a staging buffer, which must fail the same way
    // (through `Queue::write_buffer`, wgpu counted this as a lost device).
    let upload = gpu.write(&target, &data);
    drop(filled);
    // Small work still fits under the limit once the fill is released.
    let small = checked_gemm(&gpu, 2);
    set_soft_as_limit(None);

    let err = refused.expect_err("a buffer past RLIMIT_AS was created");
    eprintln!("VmSize {} MiB, limit +{} MiB, buffer {} MiB: {err}", before / MIB, headroom / MIB, big / MIB);
    assert!(matches!(err, GpuError::OutOfMemory(_)), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("out of GPU memory") && msg.contains("oom-test"), "{msg}");
    let fill_err = fill_stop.expect_err("64 buffers of 32 MiB fit under a 256 MiB limit");
    eprintln!("{filled_count} buffers of 32 MiB fit, then: {fill_err}");
    assert!(matches!(fill_err, GpuError::OutOfMemory(_)), "{fill_err:?}");
    assert!(filled_count < 8, "{filled_count} buffers of 32 MiB under a 256 MiB limit");
    let upload_err = upload.expect_err("a 96 MiB upload fit into a full device");
    eprintln!("upload of 96 MiB into the full device: {upload_err}");
    assert!(matches!(upload_err, GpuError::OutOfMemory(_)), "{upload_err:?}");
    small.unwrap();
    assert!(!gpu.is_lost());
    // Nothing leaked: the refused buffers hold no memory, the released ones were freed.
    assert_eq!(gpu.allocated_bytes(), baseline);

    // The limit lifted: the same size is accepted now, the upload goes through, and the
    // device computes correctly.
    let again = gpu.storage_buffer(big, "after").unwrap();
    drop(again);
    gpu.write(&target, &data).unwrap();
    assert!(gpu.read_buffer(&target).unwrap() == data, "the upload after the limit was lifted");
    checked_gemm(&gpu, 3).unwrap();
    gpu.wait().unwrap();
}
