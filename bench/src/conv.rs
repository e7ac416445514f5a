//! Conv dispatches against a GEMM of the same M·N·K (the conv issue's "≥ 50% of the GEMM's
//! throughput" check), both planned with the product's options, timed with timestamp queries.

use ep_kernels::conv::{plan_conv, resolve, AutoPad, ConvAttrs, ConvInputs};
use ep_kernels::gemm::{plan_gemm, GemmOptions, GemmProblem};
use ep_kernels::runtime::{ConvBindings, Dispatch, GemmBindings, Gpu, GpuTimer};
use ep_kernels::DType;

struct Case {
    label: &'static str,
    x: &'static [u64],
    w: &'static [u64],
    pads: &'static [i64],
    strides: &'static [i64],
    group: i64,
}

const CASES: &[Case] = &[
    Case { label: "whisper conv1", x: &[1, 80, 3000], w: &[384, 80, 3], pads: &[1, 1], strides: &[], group: 1 },
    Case { label: "whisper conv2", x: &[1, 384, 3000], w: &[384, 384, 3], pads: &[1, 1], strides: &[2], group: 1 },
    Case {
        label: "resnet 3x3 128",
        x: &[8, 128, 28, 28],
        w: &[128, 128, 3, 3],
        pads: &[1, 1, 1, 1],
        strides: &[],
        group: 1,
    },
    Case {
        label: "resnet 3x3 64",
        x: &[1, 64, 56, 56],
        w: &[64, 64, 3, 3],
        pads: &[1, 1, 1, 1],
        strides: &[],
        group: 1,
    },
    Case {
        label: "depthwise 3x3 256",
        x: &[8, 256, 56, 56],
        w: &[256, 1, 3, 3],
        pads: &[1, 1, 1, 1],
        strides: &[],
        group: 256,
    },
];

/// Prints one line per case and dtype; returns false if a case could not run.
pub fn run(gpu: &Gpu, timer: &GpuTimer, options: &GemmOptions) -> Result<bool, String> {
    let time = |dispatches: &[Dispatch]| -> Result<f64, String> {
        let refs: Vec<&Dispatch> = dispatches.iter().collect();
        timer.time(gpu, &refs, 3).map_err(|e| e.to_string())?; // warm-up
        let mut samples: Vec<f64> = Vec::new();
        for _ in 0..7 {
            samples.push(timer.time(gpu, &refs, 20).map_err(|e| e.to_string())? / 20.0);
        }
        samples.sort_by(f64::total_cmp);
        Ok(samples[samples.len() / 2])
    };
    println!(
        "{:<18} {:<4} {:>10} {:>9} {:>10} {:>9} {:>6}  conv plan",
        "conv", "type", "conv µs", "TFLOP/s", "GEMM µs", "TFLOP/s", "ratio"
    );
    for dtype in [DType::F32, DType::F16] {
        for c in CASES {
            let attrs = ConvAttrs {
                auto_pad: AutoPad::NotSet,
                pads: c.pads.to_vec(),
                strides: c.strides.to_vec(),
                dilations: Vec::new(),
                group: c.group,
                kernel_shape: None,
            };
            let bias = [c.w[0]];
            let p = resolve(&ConvInputs { x: c.x, w: c.w, bias: Some(&bias), dtype }, &attrs, true)
                .map_err(|e| e.to_string())?;
            let plan = plan_conv(&p, gpu.caps(), options).map_err(|e| e.to_string())?;
            let buf =
                |elems: u64, name: &str| gpu.storage_buffer(elems * dtype.size(), name).map_err(|e| e.to_string());
            let (x, w, b, out) = (
                buf(p.input_len(), "x")?,
                buf(p.weight_len(), "w")?,
                buf(p.m as u64, "b")?,
                buf(p.output_len(), "out")?,
            );
            let conv = time(
                &gpu.prepare_conv(&plan, ConvBindings { x: &x, w: &w, bias: Some(&b), out: &out })
                    .map_err(|e| e.to_string())?,
            )?;
            // The same MACs as one GEMM: M = output channels per group × groups, N = pixels, K = per group.
            let (m, n, k) = (p.m, (p.n as u64 * p.pixels()) as u32, p.k_per_group() as u32);
            let g = GemmProblem::simple(dtype, m, n, k, false, false);
            let gplan = plan_gemm(&g, gpu.caps(), options).map_err(|e| e.to_string())?;
            let (a, bb, cc) =
                (buf(m as u64 * k as u64, "a")?, buf(k as u64 * n as u64, "b")?, buf(m as u64 * n as u64, "c")?);
            let gemm = time(
                &gpu.prepare_gemm(&gplan, GemmBindings { a: &a, b: &bb, bias: None, out: &cc })
                    .map_err(|e| e.to_string())?,
            )?;
            let flops = 2.0 * p.macs() as f64;
            let gemm_flops = 2.0 * m as f64 * n as f64 * k as f64;
            println!(
                "{:<18} {:<4} {:>10.1} {:>9.2} {:>10.1} {:>9.2} {:>5.0}%  {}",
                c.label,
                dtype,
                conv * 1e6,
                flops / conv * 1e-12,
                gemm * 1e6,
                gemm_flops / gemm * 1e-12,
                100.0 * (flops / conv) / (gemm_flops / gemm),
                plan.describe()
            );
        }
    }
    Ok(true)
}
