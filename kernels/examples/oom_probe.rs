//! Out-of-memory probe for a real GPU: fills device memory with storage buffers until the
//! driver refuses one, checks the refusal is our typed `GpuError::OutOfMemory`, frees
//! everything, allocates the same amount again, and runs a GEMM checked against a CPU
//! reference on the same device.
//!
//! ```text
//! cargo build --release --example oom_probe -p ep-wgpu-kernels
//! target/release/examples/oom_probe
//! ```
//!
//! Environment: `EP_WGPU_TEST_ADAPTER` (index or name substring, default: the best adapter),
//! `OOM_PROBE_CAP_GIB` (stop after this many GiB without a refusal; default 200),
//! `OOM_PROBE_CHUNK_MIB` (buffer size; default min(max_buffer_size, 4 GiB)).
//!
//! On a software adapter (llvmpipe) device memory is host memory allocated lazily: run it only
//! under an address-space limit, e.g. `prlimit --as=4294967296 target/release/examples/oom_probe`.
//!
//! Exit status 0 only if every expectation holds.

use std::process::ExitCode;
use std::time::Instant;

use ep_kernels::gemm::{matmul_problem, plan_gemm};
use ep_kernels::runtime::{GemmBindings, Gpu, GpuBuffer, GpuOptions};
use ep_kernels::{DType, GpuError};

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| v.trim().parse().unwrap_or_else(|_| panic!("{name}={v} is not a number")))
}

/// Allocates `chunk`-byte buffers until one is refused or `cap` bytes are held. Returns the
/// buffers and the error that stopped it (None: the cap was reached).
fn fill(gpu: &Gpu, chunk: u64, cap: u64, label: &str) -> (Vec<GpuBuffer>, Option<GpuError>) {
    let mut held = Vec::new();
    while (held.len() as u64 + 1) * chunk <= cap {
        match gpu.storage_buffer(chunk, label) {
            Ok(b) => held.push(b),
            Err(e) => return (held, Some(e)),
        }
    }
    (held, None)
}

/// `A·B` (m×k · k×n, f32) on the device against a float64 CPU reference: the worst error.
fn gemm_error(gpu: &Gpu, m: u64, k: u64, n: u64) -> Result<f64, GpuError> {
    let (p, _) = matmul_problem(&[m, k], &[k, n], DType::F32)?;
    let plan = plan_gemm(&p, gpu.caps(), &Default::default())?;
    let a: Vec<f32> = (0..m * k).map(|i| ((i * 7 + 3) % 13) as f32 / 13.0 - 0.5).collect();
    let b: Vec<f32> = (0..k * n).map(|i| ((i * 5 + 1) % 11) as f32 / 11.0 - 0.5).collect();
    let ab = gpu.upload(bytemuck::cast_slice(&a), "probe-a")?;
    let bb = gpu.upload(bytemuck::cast_slice(&b), "probe-b")?;
    let out = gpu.upload(bytemuck::cast_slice(&vec![f32::NAN; (m * n) as usize]), "probe-out")?;
    let dispatches = gpu.prepare_gemm(&plan, GemmBindings { a: &ab, b: &bb, bias: None, out: &out })?;
    gpu.run(&dispatches.iter().collect::<Vec<_>>())?;
    let bytes = gpu.read_buffer(&out)?;
    let got: &[f32] = bytemuck::cast_slice(&bytes[..(m * n * 4) as usize]);
    let mut worst = 0f64;
    for i in 0..m as usize {
        for j in 0..n as usize {
            let want: f64 = (0..k as usize).map(|p| a[i * k as usize + p] as f64 * b[p * n as usize + j] as f64).sum();
            let err = (got[i * n as usize + j] as f64 - want).abs();
            // NaN (an unwritten element) counts as infinitely wrong.
            worst = if err.is_nan() { f64::INFINITY } else { worst.max(err) };
        }
    }
    Ok(worst)
}

fn main() -> ExitCode {
    let adapter = std::env::var("EP_WGPU_TEST_ADAPTER").unwrap_or_default().parse().unwrap();
    let gpu = match Gpu::new(&GpuOptions { adapter, ..Default::default() }) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("oom_probe: cannot open a device: {e}");
            return ExitCode::FAILURE;
        }
    };
    let caps = gpu.caps();
    let chunk = env_u64("OOM_PROBE_CHUNK_MIB").map_or(caps.max_buffer_size.min(4 * GIB), |m| m * MIB) & !3;
    let cap = env_u64("OOM_PROBE_CAP_GIB").unwrap_or(200) * GIB;
    println!("adapter: {:?}", gpu.adapter());
    println!("max_buffer_size {} B; chunk {} MiB; cap {} GiB", caps.max_buffer_size, chunk / MIB, cap / GIB);

    let mut rows: Vec<(String, String, bool)> = Vec::new();
    let mut check = |what: &str, value: String, ok: bool| {
        println!("{} {what}: {value}", if ok { "ok  " } else { "FAIL" });
        rows.push((what.to_string(), value, ok));
    };

    let baseline = gpu.allocated_bytes();
    let gemm_before = gemm_error(&gpu, 256, 512, 384);
    check("GEMM 256x512x384 before", format!("{gemm_before:?}"), matches!(gemm_before, Ok(e) if e < 1e-3));

    let t = Instant::now();
    let (held, stop) = fill(&gpu, chunk, cap, "oom-probe");
    let filled = held.len() as u64 * chunk;
    let fill_s = t.elapsed().as_secs_f64();
    check(
        "first fill",
        format!("{} buffers, {:.2} GiB in {fill_s:.1} s", held.len(), filled as f64 / GIB as f64),
        !held.is_empty(),
    );
    let refusal = match &stop {
        Some(e) => format!("{e} ({})", variant(e)),
        None => format!("none: the {} GiB cap was reached", cap / GIB),
    };
    check("refusal is GpuError::OutOfMemory", refusal, matches!(stop, Some(GpuError::OutOfMemory(_))));
    check("device not lost after the refusal", format!("{}", !gpu.is_lost()), !gpu.is_lost());
    let small = gpu.storage_buffer(4, "probe-small").map(|_| ());
    // Not a requirement: a driver may have nothing left even for 4 bytes.
    println!("info 4-byte buffer while full: {small:?}");

    let n = held.len();
    drop(held);
    let waited = gpu.wait();
    let after_free = gpu.allocated_bytes();
    check(
        "freed: allocator report back to the baseline",
        format!("{baseline:?} B before, {after_free:?} B after ({waited:?})"),
        waited.is_ok() && after_free <= baseline,
    );

    let t = Instant::now();
    let (again, stop_again) = fill(&gpu, chunk, (n as u64).max(1) * chunk, "oom-probe-again");
    check(
        "refill to the same amount",
        format!("{} of {n} buffers in {:.1} s, stop: {stop_again:?}", again.len(), t.elapsed().as_secs_f64()),
        again.len() == n,
    );
    drop(again);
    let waited = gpu.wait();
    check("wait after the refill", format!("{waited:?}"), waited.is_ok());

    let gemm_after = gemm_error(&gpu, 256, 512, 384);
    check("GEMM 256x512x384 after", format!("{gemm_after:?}"), matches!(gemm_after, Ok(e) if e < 1e-3));
    check("device not lost at the end", format!("{}", !gpu.is_lost()), !gpu.is_lost());

    println!("\n| check | result | ok |\n|---|---|---|");
    for (what, value, ok) in &rows {
        println!("| {what} | {value} | {} |", if *ok { "yes" } else { "NO" });
    }
    if rows.iter().all(|r| r.2) {
        println!("\noom_probe: all {} checks passed", rows.len());
        ExitCode::SUCCESS
    } else {
        println!("\noom_probe: {} of {} checks failed", rows.iter().filter(|r| !r.2).count(), rows.len());
        ExitCode::FAILURE
    }
}

fn variant(e: &GpuError) -> &'static str {
    match e {
        GpuError::OutOfMemory(_) => "OutOfMemory",
        GpuError::DeviceLost(_) => "DeviceLost",
        GpuError::Validation { .. } => "Validation",
        _ => "other",
    }
}
