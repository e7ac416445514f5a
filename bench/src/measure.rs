//! One benchmark case: plan, run once on poisoned output, check sampled elements against
//! float64, then time with timestamp queries.

use ep_kernels::gemm::{GemmPlan, GemmProblem};
use ep_kernels::runtime::{Dispatch, GemmBindings, Gpu, GpuBuffer, GpuTimer};
use ep_kernels::{DType, GpuError};
use serde::Serialize;

use crate::args::Shape;
use crate::cases::{operand, problem};
use crate::check::{max_rel_err, reference, sample, Element};

/// A measured case, as printed and written to JSON.
#[derive(Clone, Debug, Serialize)]
pub struct Record {
    pub shape: String,
    pub dtype: String,
    pub path: String,
    pub tiling: String,
    pub variants: Vec<String>,
    pub fallbacks: Vec<String>,
    /// GPU milliseconds of one run of the plan's dispatches (median over passes).
    pub ms: f64,
    pub tflops: f64,
    pub gbps: f64,
    /// max |out − ref| / rms(ref) over the sampled elements.
    pub max_err: f64,
    pub pass: bool,
    pub error: Option<String>,
}

impl Record {
    pub fn failed(shape: &Shape, dtype: DType, path: &str, error: String) -> Record {
        Record {
            shape: shape.label(),
            dtype: dtype.to_string(),
            path: path.into(),
            tiling: String::new(),
            variants: Vec::new(),
            fallbacks: Vec::new(),
            ms: f64::NAN,
            tflops: f64::NAN,
            gbps: f64::NAN,
            max_err: f64::NAN,
            pass: false,
            error: Some(error),
        }
    }
}

/// Operands of one shape and dtype on the device, with the float64 reference of the sample.
pub struct Inputs {
    pub problem: GemmProblem,
    a: GpuBuffer,
    b: GpuBuffer,
    out: GpuBuffer,
    elements: Vec<Element>,
    want: Vec<f64>,
}

pub fn inputs(gpu: &Gpu, shape: &Shape, dtype: DType) -> Result<Inputs, GpuError> {
    let p = problem(shape, dtype);
    let a_len = p.a.extent(p.m, p.k, &p.batch) as usize;
    let b_len = p.b.extent(p.k, p.n, &p.batch) as usize;
    let seed = ((shape.m as u64) << 40) ^ ((shape.n as u64) << 20) ^ shape.k as u64;
    let a = operand(a_len, dtype, seed);
    let b = operand(b_len, dtype, seed ^ 0xb);
    let elements = sample(&p);
    let want = reference(&p, &a.values, &b.values, &elements);
    Ok(Inputs {
        problem: p,
        a: gpu.upload(&a.bytes, "a")?,
        b: gpu.upload(&b.bytes, "b")?,
        out: gpu.storage_buffer(p.output_len() * 4, "out")?,
        elements,
        want,
    })
}

/// Largest error a path may show: f32 kernels accumulate exactly in f32, and so nearly does
/// the split f32 product; f16 outputs are rounded to f16; f32 through the f16 path rounds its
/// operands.
fn tolerance(dtype: DType, plan: &GemmPlan) -> f64 {
    match (dtype, plan.uses_coop() && !plan.splits_f32()) {
        (DType::F32, false) => 1e-4,
        (DType::F16, _) => 1e-2,
        (DType::F32, true) => 2e-2,
    }
}

pub fn run(gpu: &Gpu, timer: &GpuTimer, inp: &Inputs, plan: &GemmPlan, path: &str, iters: usize) -> Record {
    let p = &inp.problem;
    let mut rec = Record::failed(&shape_of(p), p.dtype, path, String::new());
    rec.shape = shape_label(p);
    rec.tiling = plan.tiling.name().into();
    rec.variants = plan.variants().map(|v| v.name()).collect();
    rec.fallbacks = plan.fallbacks.clone();
    match measure(gpu, timer, inp, plan, iters) {
        Ok((secs, err)) => {
            let bytes = (p.m as f64 * p.k as f64 + p.k as f64 * p.n as f64 + p.m as f64 * p.n as f64)
                * p.batch_count() as f64
                * p.dtype.size() as f64;
            rec.ms = secs * 1e3;
            rec.tflops = p.flops() / secs / 1e12;
            rec.gbps = bytes / secs / 1e9;
            rec.max_err = err;
            rec.pass = err <= tolerance(p.dtype, plan);
            rec.error = None;
        }
        Err(e) => rec.error = Some(e.to_string()),
    }
    rec
}

fn shape_of(p: &GemmProblem) -> Shape {
    Shape { m: p.m, n: p.n, k: p.k, batch: p.batch_count() as u32, trans_a: false, trans_b: false }
}

fn shape_label(p: &GemmProblem) -> String {
    let mut s = shape_of(p);
    s.trans_a = p.a.col_stride != 1;
    s.trans_b = p.b.col_stride != 1;
    s.label()
}

/// `len` NaNs of `dtype`: an output element a plan never writes fails its check.
pub fn poison(dtype: DType, len: u64) -> Vec<u8> {
    match dtype {
        DType::F32 => f32::NAN.to_le_bytes().repeat(len as usize),
        DType::F16 => half::f16::NAN.to_le_bytes().repeat(len as usize),
    }
}

/// Least GPU time (s) the warm-up spends (`KERNEL_BENCH_WARM_UP_S` sets another).
const WARM_UP_S: f64 = 1.0;

/// Keeps the GPU busy until its clocks have settled: at least [`WARM_UP_S`] and three passes,
/// then on while each pass still beats the fastest before it by over 3% (at most ~3 s). After the
/// host builds a case's inputs the H200 idles at 345–660 MHz, and under load it can hold a low
/// clock for a few hundred ms before rising: passes at that clock are as steady as at the full
/// one, so a shorter minimum (150 ms until the nineteenth session) timed 8192³ cases at a third of
/// their speed ("the 8192³ drop", `docs/PERFORMANCE.md`).
fn warm_up(gpu: &Gpu, timer: &GpuTimer, refs: &[&Dispatch], repeat: u32) -> Result<(), GpuError> {
    let least = std::env::var("KERNEL_BENCH_WARM_UP_S").ok().and_then(|s| s.parse().ok()).unwrap_or(WARM_UP_S);
    let (mut spent, mut best, mut passes) = (0.0f64, f64::INFINITY, 0);
    loop {
        let t = timer.time(gpu, refs, repeat)?;
        spent += t;
        passes += 1;
        // No faster than the best pass before it: the clocks stopped rising.
        let settled = t >= best * 0.97;
        best = best.min(t);
        if spent >= 3.0_f64.max(least) || (spent >= least && passes >= 3 && settled) {
            return Ok(());
        }
    }
}

fn measure(gpu: &Gpu, timer: &GpuTimer, inp: &Inputs, plan: &GemmPlan, iters: usize) -> Result<(f64, f64), GpuError> {
    let p = &inp.problem;
    let out_bytes = p.output_len() * p.dtype.size();
    let out = GpuBuffer::new(inp.out.buffer.clone(), out_bytes);
    gpu.write(&out, &poison(p.dtype, p.output_len()))?;
    let dispatches = gpu.prepare_gemm(plan, GemmBindings { a: &inp.a, b: &inp.b, bias: None, out: &out })?;
    let refs: Vec<&Dispatch> = dispatches.iter().collect();
    gpu.run(&refs)?;
    let bytes = gpu.read_buffer(&out)?;
    let values: Vec<f32> = match p.dtype {
        DType::F32 => bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
        DType::F16 => bytes.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32()).collect(),
    };
    let err = max_rel_err(p, &values, &inp.elements, &inp.want);
    let once = timer.time(gpu, &refs, 1)?.max(1e-7);
    let repeat = ((5e-3 / once).ceil() as u32).clamp(1, 5000);
    warm_up(gpu, timer, &refs, repeat)?;
    let mut times: Vec<f64> =
        (0..iters).map(|_| timer.time(gpu, &refs, repeat).map(|t| t / repeat as f64)).collect::<Result<_, _>>()?;
    if std::env::var_os("KERNEL_BENCH_PASSES").is_some() {
        // Every pass's time, in order: whether a slow case is slow throughout or in bursts.
        let ms: Vec<String> = times.iter().map(|t| format!("{:.3}", t * 1e3)).collect();
        eprintln!("passes {}x{}x{} (ms): {}", p.m, p.n, p.k, ms.join(" "));
    }
    times.sort_by(|a, b| a.total_cmp(b));
    Ok((times[times.len() / 2], err))
}
