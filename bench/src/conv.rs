//! Conv dispatches against a GEMM of the same M·N·K (the conv issue's "≥ 50% of the GEMM's
//! throughput" check), both planned with the product's options, timed with timestamp queries.
//! Each group == 1 case also runs the implicit GEMM (im2col gathered on load) forced, so the
//! explicit and implicit paths are measured side by side. Every conv plan first runs once on a
//! NaN-poisoned output and is checked against a float64 reference on sampled outputs.
//! The layout question (issue 17: NCHW or NHWC for the tensor-core path) is measured by a third
//! product per group == 1 case: the GEMM an NHWC conv would run, `[N·OH·OW, C·kh·kw]·[C·kh·kw, M]`
//! written NHWC, timed without any gather, so a lower bound on an NHWC conv's time.

use ep_kernels::conv::{
    plan_conv, plan_conv_with, resolve, AutoPad, ConvAlgo, ConvAttrs, ConvInputs, ConvPlan, ConvProblem,
};
use ep_kernels::gemm::{plan_gemm, GemmOptions, GemmProblem};
use ep_kernels::runtime::{ConvBindings, Dispatch, GemmBindings, Gpu, GpuBuffer, GpuTimer};
use ep_kernels::DType;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::cases::operand;

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
    Case { label: "resnet 1x1 64>256", x: &[1, 64, 56, 56], w: &[256, 64, 1, 1], pads: &[], strides: &[], group: 1 },
    Case {
        label: "resnet 1x1 1024>256",
        x: &[1, 1024, 14, 14],
        w: &[256, 1024, 1, 1],
        pads: &[],
        strides: &[],
        group: 1,
    },
    Case { label: "resnet 1x1 b32", x: &[32, 256, 56, 56], w: &[64, 256, 1, 1], pads: &[], strides: &[], group: 1 },
    Case {
        label: "resnet 3x3 b32",
        x: &[32, 128, 28, 28],
        w: &[128, 128, 3, 3],
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

/// One conv case and dtype: times in µs, throughput in TFLOP/s, the plans, and the largest
/// relative error of each conv plan against the float64 reference (sampled outputs).
#[derive(Clone, Debug, Default, Serialize)]
pub struct ConvRecord {
    pub label: String,
    pub dtype: String,
    /// The `Auto` plan (im2col + GEMM for the group == 1 cases).
    pub conv_plan: String,
    pub conv_us: f64,
    pub conv_tflops: f64,
    pub conv_max_err: f64,
    /// The same MACs as one plain GEMM.
    pub gemm_us: f64,
    pub gemm_tflops: f64,
    /// The GEMM an NHWC conv runs, `[pixels, K]·[K, M]`, without its gather (group == 1 only).
    pub nhwc_gemm_us: Option<f64>,
    /// The implicit GEMM forced (group == 1 cases only).
    pub implicit_plan: Option<String>,
    pub implicit_us: Option<f64>,
    pub implicit_tflops: Option<f64>,
    pub implicit_max_err: Option<f64>,
    pub pass: bool,
}

/// Output elements checked against the float64 reference per plan.
const SAMPLES: usize = 512;

/// Prints one line per case, dtype and conv path; returns false if a check failed. With
/// `json`, writes the records there.
pub fn run(gpu: &Gpu, timer: &GpuTimer, options: &GemmOptions, json: Option<&str>) -> Result<bool, String> {
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
        "{:<18} {:<4} {:<8} {:>10} {:>9} {:>10} {:>9} {:>8} {:>9} {:>9}  plan",
        "conv", "type", "path", "µs", "TFLOP/s", "GEMM µs", "TFLOP/s", "vs GEMM", "vs auto", "max err"
    );
    let mut records = Vec::new();
    let mut all_pass = true;
    for dtype in [DType::F32, DType::F16] {
        if dtype == DType::F16 && !gpu.caps().shader_f16 {
            continue;
        }
        for (i, c) in CASES.iter().enumerate() {
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
            let seed = 1000 * i as u64 + dtype.size();
            let (xv, wv, bv) = (
                operand(p.input_len() as usize, dtype, seed),
                operand(p.weight_len() as usize, dtype, seed + 1),
                operand(p.m as usize, dtype, seed + 2),
            );
            let upload = |bytes: &[u8], name: &str| gpu.upload(bytes, name).map_err(|e| e.to_string());
            let (x, w, b) = (upload(&xv.bytes, "x")?, upload(&wv.bytes, "w")?, upload(&bv.bytes, "b")?);
            let buf =
                |elems: u64, name: &str| gpu.storage_buffer(elems * dtype.size(), name).map_err(|e| e.to_string());
            let out = buf(p.output_len(), "out")?;
            let elements = sample_outputs(&p, seed + 3);
            let want: Vec<f64> =
                elements.iter().map(|&e| reference(&p, &xv.values, &wv.values, &bv.values, e)).collect();
            let io = ConvBindings { x: &x, w: &w, bias: Some(&b), out: &out, residual: None };
            let conv_dispatches = gpu.prepare_conv(&plan, io).map_err(|e| e.to_string())?;
            let conv_err = check(gpu, &p, &out, &conv_dispatches, &elements, &want)?;
            let conv = time(&conv_dispatches)?;
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
            let tol = tolerance(dtype, p.k_per_group());
            let mut rec = ConvRecord {
                label: c.label.to_string(),
                dtype: dtype.to_string(),
                conv_plan: plan.describe(),
                conv_us: conv * 1e6,
                conv_tflops: flops / conv * 1e-12,
                conv_max_err: conv_err,
                gemm_us: gemm * 1e6,
                gemm_tflops: gemm_flops / gemm * 1e-12,
                pass: conv_err <= tol,
                ..Default::default()
            };
            let line = |path: &str, secs: f64, err: f64, plan: &ConvPlan| {
                println!(
                    "{:<18} {:<4} {:<8} {:>10.1} {:>9.2} {:>10.1} {:>9.2} {:>7.0}% {:>8.0}% {:>9.1e}{}  {}",
                    c.label,
                    dtype,
                    path,
                    secs * 1e6,
                    flops / secs * 1e-12,
                    gemm * 1e6,
                    gemm_flops / gemm * 1e-12,
                    100.0 * (flops / secs) / (gemm_flops / gemm),
                    100.0 * conv / secs,
                    err,
                    if err <= tol { "" } else { " FAIL" },
                    plan.describe()
                );
            };
            line("auto", conv, conv_err, &plan);
            if p.group == 1 {
                let nhwc = GemmProblem::simple(dtype, n, m, k, false, false);
                let nplan = plan_gemm(&nhwc, gpu.caps(), options).map_err(|e| e.to_string())?;
                let bind = GemmBindings { a: &bb, b: &a, bias: None, out: &cc };
                let secs = time(&gpu.prepare_gemm(&nplan, bind).map_err(|e| e.to_string())?)?;
                println!(
                    "{:<18} {:<4} {:<8} {:>10.1} {:>9.2} {:>31.0}%  NHWC GEMM [{n}, {k}]·[{k}, {m}], no gather: {:?}",
                    c.label,
                    dtype,
                    "nhwc",
                    secs * 1e6,
                    gemm_flops / secs * 1e-12,
                    100.0 * conv / secs,
                    nplan.tiling
                );
                rec.nhwc_gemm_us = Some(secs * 1e6);
                let iplan = plan_conv_with(&p, gpu.caps(), options, ConvAlgo::Implicit).map_err(|e| e.to_string())?;
                let dispatches = gpu.prepare_conv(&iplan, io).map_err(|e| e.to_string())?;
                let err = check(gpu, &p, &out, &dispatches, &elements, &want)?;
                let secs = time(&dispatches)?;
                line("implicit", secs, err, &iplan);
                rec.implicit_plan = Some(iplan.describe());
                rec.implicit_us = Some(secs * 1e6);
                rec.implicit_tflops = Some(flops / secs * 1e-12);
                rec.implicit_max_err = Some(err);
                rec.pass &= err <= tol;
            }
            all_pass &= rec.pass;
            records.push(rec);
        }
    }
    if let Some(path) = json {
        let json = serde_json::to_string_pretty(&records).map_err(|e| e.to_string())?;
        std::fs::write(path, json + "\n").map_err(|e| format!("{path}: {e}"))?;
        println!("records written to {path}");
    }
    Ok(all_pass)
}

/// Largest relative error of sampled outputs (f32 sums of f16 products round at ~1e-3).
fn tolerance(dtype: DType, k: u64) -> f64 {
    let k = (k as f64).sqrt().max(1.0);
    match dtype {
        DType::F32 => 1e-5 * k,
        DType::F16 => 2e-3 * k,
    }
}

/// Runs `dispatches` once on a NaN-poisoned output and returns the largest error of the
/// sampled elements relative to the largest magnitude of the reference (NaN counts as ∞).
fn check(
    gpu: &Gpu,
    p: &ConvProblem,
    out: &GpuBuffer,
    dispatches: &[Dispatch],
    elements: &[usize],
    want: &[f64],
) -> Result<f64, String> {
    gpu.write(out, &crate::measure::poison(p.dtype, p.output_len())).map_err(|e| e.to_string())?;
    gpu.run(&dispatches.iter().collect::<Vec<_>>()).map_err(|e| e.to_string())?;
    let bytes = gpu.read_buffer(out).map_err(|e| e.to_string())?;
    let value = |e: usize| -> f64 {
        match p.dtype {
            DType::F32 => f32::from_le_bytes(bytes[4 * e..4 * e + 4].try_into().unwrap_or([0xff; 4])) as f64,
            DType::F16 => half::f16::from_le_bytes([bytes[2 * e], bytes[2 * e + 1]]).to_f64(),
        }
    };
    let scale = want.iter().fold(1e-6f64, |m, v| m.max(v.abs()));
    let mut worst = 0f64;
    for (&e, &w) in elements.iter().zip(want) {
        let got = value(e);
        let err = if got.is_nan() { f64::INFINITY } else { (got - w).abs() / scale };
        worst = worst.max(err);
    }
    Ok(worst)
}

/// Flat output indices to check: the first and last elements and random ones.
fn sample_outputs(p: &ConvProblem, seed: u64) -> Vec<usize> {
    let len = p.output_len() as usize;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let mut out = vec![0, len - 1];
    out.extend((0..SAMPLES).map(|_| rng.random_range(0..len)));
    out
}

/// Float64 value of output element `e` (NCHW flat index) by the ONNX definition.
fn reference(p: &ConvProblem, x: &[f32], w: &[f32], bias: &[f32], e: usize) -> f64 {
    let pix = p.pixels() as usize;
    let (nm, q) = (e / pix, e % pix);
    let (ni, mi) = (nm / p.m as usize, nm % p.m as usize);
    let (oy, ox) = (q / p.ow as usize, q % p.ow as usize);
    let (cg, mg) = (p.c_per_group() as usize, p.m_per_group() as usize);
    let gi = mi / mg;
    let (h, wd, kh, kw) = (p.h as i64, p.w as i64, p.kh as usize, p.kw as usize);
    let mut acc = bias[mi] as f64;
    for ci in 0..cg {
        let plane = (ni * p.c as usize + gi * cg + ci) * (h * wd) as usize;
        for i in 0..kh {
            let ih = (oy * p.strides[0] as usize + i * p.dilations[0] as usize) as i64 - p.pads[0] as i64;
            if ih < 0 || ih >= h {
                continue;
            }
            for j in 0..kw {
                let iw = (ox * p.strides[1] as usize + j * p.dilations[1] as usize) as i64 - p.pads[1] as i64;
                if iw >= 0 && iw < wd {
                    let wv = w[((mi * cg + ci) * kh + i) * kw + j] as f64;
                    acc += wv * x[plane + (ih * wd + iw) as usize] as f64;
                }
            }
        }
    }
    acc
}
