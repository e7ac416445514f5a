//! Shared helpers for GPU tests: the device, fresh random data, a float64 reference GEMM.
#![allow(dead_code)]

pub mod graph;
pub mod norm_ref;
pub mod rows;

use std::sync::{Arc, OnceLock};

use ep_kernels::gemm::{GemmPlan, GemmProblem, MatrixLayout, MAX_BATCH_DIMS};
use ep_kernels::runtime::{GemmBindings, Gpu, GpuOptions};
use ep_kernels::DType;
use rand::{Rng, SeedableRng};

/// The test device: `EP_WGPU_TEST_ADAPTER` (index or name) or the best adapter found; on CI
/// that is the Vulkan software rasterizer.
pub fn gpu() -> Arc<Gpu> {
    static GPU: OnceLock<Arc<Gpu>> = OnceLock::new();
    GPU.get_or_init(|| {
        let gpu = open_gpu();
        eprintln!("test adapter: {:?}", gpu.adapter());
        gpu
    })
    .clone()
}

/// A device of its own on the test adapter (for tests that destroy or exhaust it).
pub fn open_gpu() -> Arc<Gpu> {
    let adapter = std::env::var("EP_WGPU_TEST_ADAPTER").unwrap_or_default().parse().unwrap();
    Gpu::new(&GpuOptions { adapter, ..Default::default() }).expect("a wgpu adapter (install mesa-vulkan-drivers)")
}

/// A fresh generator each run; the seed is printed so a failure can be replayed with
/// `EP_WGPU_TEST_SEED`.
pub fn rng(test: &str) -> rand::rngs::StdRng {
    let seed = std::env::var("EP_WGPU_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random::<u64>);
    eprintln!("{test}: seed {seed}");
    rand::rngs::StdRng::seed_from_u64(seed)
}

pub fn random_vec(rng: &mut impl Rng, len: usize) -> Vec<f32> {
    (0..len).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

/// Values exactly representable in f16, so the f16 path is judged on accumulation only.
pub fn round_f16(v: &[f32]) -> Vec<f32> {
    v.iter().map(|&x| half::f16::from_f32(x).to_f32()).collect()
}

pub fn to_bytes(v: &[f32], dtype: DType) -> Vec<u8> {
    match dtype {
        DType::F32 => bytemuck::cast_slice(v).to_vec(),
        DType::F16 => v.iter().flat_map(|&x| half::f16::from_f32(x).to_le_bytes()).collect(),
    }
}

pub fn from_bytes(b: &[u8], dtype: DType) -> Vec<f32> {
    match dtype {
        DType::F32 => b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
        DType::F16 => b.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32()).collect(),
    }
}

fn batch_coords(mut b: u64, shape: &[u32; MAX_BATCH_DIMS]) -> [u64; MAX_BATCH_DIMS] {
    let mut c = [0u64; MAX_BATCH_DIMS];
    for i in (0..MAX_BATCH_DIMS).rev() {
        c[i] = b % shape[i] as u64;
        b /= shape[i] as u64;
    }
    c
}

fn at(data: &[f32], l: &MatrixLayout, coords: &[u64; MAX_BATCH_DIMS], row: u64, col: u64) -> f64 {
    let mut idx = row * l.row_stride as u64 + col * l.col_stride as u64;
    for (c, s) in coords.iter().zip(l.batch_strides) {
        idx += c * s as u64;
    }
    data[idx as usize] as f64
}

/// Float64 reference of the whole problem, epilogue included; contiguous `[batch, M, N]`.
pub fn reference(p: &GemmProblem, a: &[f32], b: &[f32], bias: Option<&[f32]>) -> Vec<f64> {
    let (m, n, k) = (p.m as u64, p.n as u64, p.k as u64);
    let mut out = Vec::with_capacity(p.output_len() as usize);
    for bi in 0..p.batch_count() {
        let c = batch_coords(bi, &p.batch);
        for i in 0..m {
            for j in 0..n {
                let mut acc = 0f64;
                for kk in 0..k {
                    acc += at(a, &p.a, &c, i, kk) * at(b, &p.b, &c, kk, j);
                }
                let mut v = p.epilogue.alpha as f64 * acc;
                if let (Some(l), Some(bias)) = (p.epilogue.bias, bias) {
                    v += p.epilogue.beta as f64 * at(bias, &l, &c, i, j);
                }
                v = p.epilogue.activation.reference(v);
                out.push(v);
            }
        }
    }
    out
}

/// Asserts |got − want| ≤ atol + rtol·|want| everywhere (NaN — an unwritten element — fails).
pub fn assert_close(got: &[f32], want: &[f64], atol: f64, rtol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let err = (g as f64 - w).abs();
        assert!(
            err.is_finite() && err <= atol + rtol * w.abs(),
            "{what}: element {i} is {g}, expected {w} (|err| {err})"
        );
    }
}

/// Elements an operand buffer must hold for its layout.
pub fn extent(l: &MatrixLayout, rows: u32, cols: u32, batch: &[u32; MAX_BATCH_DIMS]) -> usize {
    l.extent(rows, cols, batch) as usize
}

/// An output buffer's contents before a run: NaN everywhere, so unwritten elements fail.
pub fn poison(len: usize, dtype: DType) -> Vec<u8> {
    to_bytes(&vec![f32::NAN; len], dtype)
}

/// Uploads the operands, runs `plan` and reads the output back.
pub fn run_plan(gpu: &Gpu, p: &GemmProblem, plan: &GemmPlan, a: &[f32], b: &[f32], bias: Option<&[f32]>) -> Vec<f32> {
    let ab = gpu.upload(&to_bytes(a, p.dtype), "a").unwrap();
    let bb = gpu.upload(&to_bytes(b, p.dtype), "b").unwrap();
    let biasb = bias.map(|v| gpu.upload(&to_bytes(v, p.dtype), "bias").unwrap());
    let out = gpu.upload(&poison(p.output_len() as usize, p.dtype), "out").unwrap();
    let dispatches = gpu.prepare_gemm(plan, GemmBindings { a: &ab, b: &bb, bias: biasb.as_ref(), out: &out }).unwrap();
    gpu.run(&dispatches.iter().collect::<Vec<_>>()).unwrap();
    let got = from_bytes(&gpu.read_buffer(&out).unwrap(), p.dtype);
    got[..p.output_len() as usize].to_vec()
}

/// Absolute and relative tolerance of a product with `k` terms stored as `dtype`.
pub fn tolerance(dtype: DType, k: u32) -> (f64, f64) {
    match dtype {
        DType::F32 => (1e-4 * (k as f64).sqrt().max(1.0), 1e-4),
        // f16 storage of the result: half an ulp at |x| ≤ 32 is ≤ 2^-6.
        DType::F16 => (2e-2 + 1e-3 * (k as f64).sqrt(), 2e-3),
    }
}

/// The first node at which a path from a member of `group` through a node outside it comes
/// back into it (`None`: the group is convex).
pub fn reentry(g: &ep_kernels::graph::Graph, group: &[usize]) -> Option<usize> {
    let consumers = g.consumers();
    let members: std::collections::HashSet<usize> = group.iter().copied().collect();
    // Walk forward from every member; once outside, reaching a member is a violation.
    let mut stack: Vec<(usize, bool)> = group.iter().map(|&m| (m, false)).collect();
    let mut seen = std::collections::HashSet::new();
    while let Some((n, left)) = stack.pop() {
        if !seen.insert((n, left)) {
            continue;
        }
        for out in g.nodes[n].outputs.iter().flatten() {
            for &c in consumers.get(out.name.as_str()).into_iter().flatten() {
                let inside = members.contains(&c);
                if left && inside {
                    return Some(c);
                }
                stack.push((c, left || !inside));
            }
        }
    }
    None
}
