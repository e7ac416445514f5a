//! GEMM kernel microbenchmark: per case, plan, check sampled outputs against float64, time
//! with GPU timestamps; print a table and write JSON. `kernel_bench --help` for the options.

use std::process::ExitCode;

use ep_bench::args::{Args, Path};
use ep_bench::measure::{self, Record};
use ep_bench::sweep::{coop_candidates, simt_candidates};
use ep_kernels::gemm::{plan_gemm, plan_gemm_tuned};
use ep_kernels::runtime::{Gpu, GpuOptions, GpuTimer};

fn main() -> ExitCode {
    let args = match Args::parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(all_pass) if all_pass => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        Err(e) => {
            eprintln!("kernel_bench: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &Args) -> Result<bool, String> {
    // Hand-edited kernels for experiments: `<name>.wgsl` in this folder replaces that variant's template.
    if let Some(dir) = std::env::var_os("KERNEL_BENCH_OVERRIDE") {
        ep_kernels::runtime::set_wgsl_override(dir.into());
    }
    let trusted: Option<std::sync::Arc<dyn ep_kernels::runtime::TrustedShaders>> = if args.unchecked {
        Some(std::sync::Arc::new(onnxruntime_ep_wgpu::experimental::UncheckedShaders))
    } else {
        None
    };
    let options = GpuOptions {
        experimental: onnxruntime_ep_wgpu::experimental::cooperative_matrix_opt_in(),
        trusted_shaders: trusted,
        ..Default::default()
    };
    let gpu = Gpu::new(&options).map_err(|e| e.to_string())?;
    let a = gpu.adapter();
    println!("adapter: {} ({}, driver {} {})", a.name, a.backend, a.driver, a.driver_info);
    if let Some(path) = &args.caps {
        let json = serde_json::to_string_pretty(gpu.caps()).map_err(|e| e.to_string())?;
        std::fs::write(path, json + "\n").map_err(|e| format!("{path}: {e}"))?;
        println!("caps written to {path}");
    }
    if args.conv {
        let timer = GpuTimer::new(&gpu).ok_or("the adapter has no timestamp queries")?;
        let options = ep_kernels::gemm::GemmOptions::default();
        return ep_bench::conv::run(&gpu, &timer, &options, args.json.as_deref());
    }
    if args.shapes.is_empty() {
        return Ok(true);
    }
    let timer = GpuTimer::new(&gpu).ok_or("the adapter has no timestamp queries")?;
    // The device's own parallelism (`None`), or each one `--parallelism` gives.
    let parallelism: Vec<Option<u32>> =
        if args.parallelism.is_empty() { vec![None] } else { args.parallelism.iter().copied().map(Some).collect() };
    let mut records = Vec::new();
    for shape in &args.shapes {
        for &dtype in &args.dtypes {
            let inputs = match measure::inputs(&gpu, shape, dtype) {
                Ok(i) => i,
                Err(e) => {
                    records.push(print(Record::failed(shape, dtype, "-", e.to_string())));
                    continue;
                }
            };
            let p = &inputs.problem;
            let cases: Vec<(String, Result<_, _>)> = match args.sweep {
                None => args
                    .paths
                    .iter()
                    .flat_map(|&path| parallelism.iter().map(move |&n| (path, n)))
                    .map(|(path, n)| {
                        let opts = ep_bench::cases::options(path, dtype, args.tiling);
                        let Some(n) = n else { return (path.name().to_string(), plan_gemm(p, gpu.caps(), &opts)) };
                        let caps = ep_kernels::caps::DeviceCaps { parallelism: n, ..gpu.caps().clone() };
                        (format!("{} p{n}", path.name()), plan_gemm(p, &caps, &opts))
                    })
                    .collect(),
                Some(which) => {
                    let candidates = if which == Path::Coop { coop_candidates() } else { simt_candidates() };
                    candidates
                        .into_iter()
                        .filter(|c| args.only.is_empty() || args.only.iter().any(|o| c.label.contains(o.as_str())))
                        .map(|c| {
                            let opts = ep_bench::cases::options(which, dtype, c.tiling);
                            (c.label, plan_gemm_tuned(p, gpu.caps(), &opts, &c.tuning))
                        })
                        .collect()
                }
            };
            for (label, plan) in cases {
                if let (Ok(plan), Some(dir)) = (&plan, std::env::var_os("KERNEL_BENCH_WGSL")) {
                    dump_wgsl(std::path::Path::new(&dir), plan);
                }
                let rec = match plan {
                    Ok(plan) => measure::run(&gpu, &timer, &inputs, &plan, &label, args.iters),
                    Err(e) => Record::failed(shape, dtype, &label, e.to_string()),
                };
                records.push(print(rec));
            }
        }
    }
    println!();
    println!("{}", table(&records));
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&records).map_err(|e| e.to_string())?;
        std::fs::write(path, json + "\n").map_err(|e| format!("{path}: {e}"))?;
    }
    Ok(records.iter().all(|r| r.pass))
}

/// Writes each planned kernel's WGSL into `dir` (`KERNEL_BENCH_WGSL`), for `pipeline_stats`.
fn dump_wgsl(dir: &std::path::Path, plan: &ep_kernels::gemm::GemmPlan) {
    for shader in plan.shaders() {
        let file = dir.join(format!("{}.wgsl", shader.name()));
        let written = shader.emit().and_then(|src| std::fs::write(&file, src).map_err(|e| e.to_string()));
        if let Err(e) = written {
            eprintln!("{}: {e}", file.display());
        }
    }
}

fn row(r: &Record) -> String {
    let status = if r.pass { "ok" } else { "FAIL" };
    // The product's kernel: a split f32 plan starts with its max pass.
    let variant = r.variants.iter().find(|v| !v.starts_with("absmax")).cloned().unwrap_or_default();
    format!(
        "{:<20} {:<4} {:<26} {:<36} {:>9.3} {:>8.1} {:>7.0} {:>9.2e} {}{}",
        r.shape,
        r.dtype,
        r.path,
        variant,
        r.ms,
        r.tflops,
        r.gbps,
        r.max_err,
        status,
        r.error.as_deref().map(|e| format!(" ({e})")).unwrap_or_default()
    )
}

fn print(r: Record) -> Record {
    println!("{}", row(&r));
    r
}

fn table(records: &[Record]) -> String {
    let mut s = format!(
        "{:<20} {:<4} {:<26} {:<36} {:>9} {:>8} {:>7} {:>9} {}\n",
        "shape", "type", "path", "kernel", "ms", "TFLOP/s", "GB/s", "max err", "check"
    );
    for r in records {
        s.push_str(&row(r));
        s.push('\n');
    }
    s
}
