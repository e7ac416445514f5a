//! Conv against a float64 reference with ONNX semantics on the real adapter (the Vulkan
//! software rasterizer in CI): a randomized sweep over the attribute space, explicit edge
//! cases, and the Whisper frontend shapes. Outputs are poisoned with NaN; data is fresh each
//! run with the seed printed.

mod common;

use common::*;
use ep_kernels::conv::{
    plan_conv_with, prepack_weights, resolve, AutoPad, ConvAlgo, ConvAttrs, ConvInputs, ConvPath, ConvPlan, Residual,
};
use ep_kernels::gemm::{Activation, GemmOptions, TilingChoice};
use ep_kernels::runtime::{ConvBindings, Gpu};
use ep_kernels::DType;
use rand::Rng;

/// One conv node with its data-independent settings.
#[derive(Clone, Debug)]
struct Case {
    x: Vec<u64>,
    w: Vec<u64>,
    attrs: ConvAttrs,
    bias: bool,
    activation: Activation,
    residual: Residual,
    dtype: DType,
    algo: ConvAlgo,
    tiling: TilingChoice,
}

impl Case {
    fn new(x: &[u64], w: &[u64], attrs: ConvAttrs) -> Case {
        Case {
            x: x.to_vec(),
            w: w.to_vec(),
            attrs,
            bias: true,
            activation: Activation::None,
            residual: Residual::None,
            dtype: DType::F32,
            algo: ConvAlgo::Auto,
            tiling: TilingChoice::Auto,
        }
    }
}

/// Per spatial axis: `(pad_begin, pad_end, output_len)` by the ONNX spec, or `None` when the
/// kernel does not fit the padded input.
fn reference_axis(
    input: u64,
    kernel: u64,
    stride: u64,
    dilation: u64,
    attrs: &ConvAttrs,
    axis: (usize, usize),
) -> Option<(u64, u64, u64)> {
    let (axis, rank) = axis;
    let reach = (kernel - 1) * dilation + 1;
    let (begin, end) = match attrs.auto_pad {
        AutoPad::NotSet if attrs.pads.is_empty() => (0, 0),
        AutoPad::NotSet => (attrs.pads[axis] as u64, attrs.pads[rank + axis] as u64),
        AutoPad::Valid => (0, 0),
        AutoPad::SameUpper | AutoPad::SameLower => {
            let out = input.div_ceil(stride);
            let need = ((out - 1) * stride + reach).saturating_sub(input);
            let head = if attrs.auto_pad == AutoPad::SameUpper { need / 2 } else { need - need / 2 };
            (head, need - head)
        }
    };
    let padded = input + begin + end;
    (padded >= reach).then(|| (begin, end, (padded - reach) / stride + 1))
}

/// Float64 conv by direct loops: `(output shape, output)`, or `None` for an invalid node.
fn reference(case: &Case, x: &[f32], w: &[f32], bias: Option<&[f32]>) -> Option<(Vec<u64>, Vec<f64>)> {
    let spatial = case.x.len() - 2;
    let (n, c, m, cg) = (case.x[0], case.x[1], case.w[0], case.w[1]);
    let g = case.attrs.group as u64;
    let attr = |v: &Vec<i64>, i: usize| v.get(i).map_or(1, |&s| s as u64);
    let mut axes = Vec::new();
    for i in 0..spatial {
        let (s, d) = (attr(&case.attrs.strides, i), attr(&case.attrs.dilations, i));
        let (b, _, o) = reference_axis(case.x[2 + i], case.w[2 + i], s, d, &case.attrs, (i, spatial))?;
        axes.push((case.x[2 + i], case.w[2 + i], s, d, b, o));
    }
    // A 1-D conv is the 2-D one with a unit height axis in front.
    if spatial == 1 {
        axes.insert(0, (1, 1, 1, 1, 0, 1));
    }
    let [(h, kh, sh, dh, ph, oh), (wd, kw, sw, dw, pw, ow)] = [axes[0], axes[1]];
    let mut out = vec![0f64; (n * m * oh * ow) as usize];
    for ni in 0..n {
        for mi in 0..m {
            let gi = mi / (m / g);
            let plane = &mut out[((ni * m + mi) * oh * ow) as usize..][..(oh * ow) as usize];
            for ci in 0..cg {
                let xc = &x[((ni * c + gi * cg + ci) * h * wd) as usize..][..(h * wd) as usize];
                for i in 0..kh {
                    for j in 0..kw {
                        let wv = w[(((mi * cg + ci) * kh + i) * kw + j) as usize] as f64;
                        for y in 0..oh {
                            let ih = (y * sh + i * dh) as i64 - ph as i64;
                            if ih < 0 || ih >= h as i64 {
                                continue;
                            }
                            for xo in 0..ow {
                                let iw = (xo * sw + j * dw) as i64 - pw as i64;
                                if iw >= 0 && iw < wd as i64 {
                                    plane[(y * ow + xo) as usize] +=
                                        wv * xc[(ih as u64 * wd + iw as u64) as usize] as f64;
                                }
                            }
                        }
                    }
                }
            }
            for v in plane.iter_mut() {
                *v += bias.map_or(0.0, |b| b[mi as usize] as f64);
                *v = case.activation.reference(*v);
            }
        }
    }
    let mut shape = vec![n, m];
    shape.extend(axes[2 - spatial..].iter().map(|a| a.5));
    Some((shape, out))
}

fn data(rng: &mut impl Rng, len: u64, dtype: DType) -> Vec<f32> {
    let v = random_vec(rng, len as usize);
    if dtype == DType::F16 {
        round_f16(&v)
    } else {
        v
    }
}

/// Runs `case` on the GPU with fresh data and compares with the reference; returns the plan
/// (`None` when the node is invalid, which the reference must agree with).
fn check(gpu: &Gpu, case: &Case, rng: &mut impl Rng) -> Option<ConvPlan> {
    let len = |s: &[u64]| s.iter().product::<u64>();
    let x = data(rng, len(&case.x), case.dtype);
    let w = data(rng, len(&case.w), case.dtype);
    let bias = case.bias.then(|| data(rng, case.w[0], case.dtype));
    // With a residual the reference stops before the activation, applied here around it.
    let plain = Case { activation: Activation::None, ..case.clone() };
    let mut want = reference(if case.residual == Residual::None { case } else { &plain }, &x, &w, bias.as_deref());
    let bias_shape = [case.w[0]];
    let inputs = ConvInputs { x: &case.x, w: &case.w, bias: case.bias.then_some(&bias_shape[..]), dtype: case.dtype };
    let mut problem = match (resolve(&inputs, &case.attrs, true), &want) {
        (Ok(p), Some(_)) => p,
        (Err(_), None) => return None,
        (got, _) => panic!(
            "{case:?}: resolve gave {got:?}, the reference {}",
            if want.is_some() { "a result" } else { "an error" }
        ),
    };
    let residual = (case.residual != Residual::None).then(|| data(rng, len(&problem.output_shape), case.dtype));
    if let (Some(r), Some((_, want))) = (&residual, &mut want) {
        let act = case.activation;
        for (v, &r) in want.iter_mut().zip(r) {
            let r = r as f64;
            *v = if case.residual == Residual::AfterActivation { act.reference(*v) + r } else { act.reference(*v + r) };
        }
    }
    let (shape, want) = want?;
    assert_eq!(problem.output_shape, shape, "{case:?}");
    problem.activation = case.activation;
    problem.residual = case.residual;
    let plan = plan_conv_with(&problem, gpu.caps(), &GemmOptions::tiling(case.tiling), case.algo)
        .unwrap_or_else(|e| panic!("{case:?}: {e}"));
    let xb = gpu.upload(&to_bytes(&x, case.dtype), "x").unwrap();
    let packed = prepack_weights(&plan, &to_bytes(&w, case.dtype)).unwrap();
    let wb = gpu.upload(&packed, "w").unwrap();
    let bb = bias.as_ref().map(|b| gpu.upload(&to_bytes(b, case.dtype), "b").unwrap());
    let out = gpu.upload(&poison(want.len(), case.dtype), "out").unwrap();
    let rb = residual.as_ref().map(|r| gpu.upload(&to_bytes(r, case.dtype), "r").unwrap());
    let io = ConvBindings { x: &xb, w: &wb, bias: bb.as_ref(), out: &out, residual: rb.as_ref() };
    let dispatches = gpu.prepare_conv(&plan, io).unwrap_or_else(|e| panic!("{case:?}: {e}"));
    gpu.run(&dispatches.iter().collect::<Vec<_>>()).unwrap();
    let got = from_bytes(&gpu.read_buffer(&out).unwrap(), case.dtype);
    let k = (problem.k_per_group() as f64).sqrt();
    let (atol, rtol) = match case.dtype {
        DType::F32 => (1e-4 * k.max(1.0), 1e-4),
        DType::F16 => (2e-2 + 1e-3 * k, 2e-3),
    };
    assert_close(&got[..want.len()], &want, atol, rtol, &format!("{case:?} via {}", plan.describe()));
    Some(plan)
}

fn attrs(pads: &[i64], strides: &[i64], dilations: &[i64], group: i64) -> ConvAttrs {
    ConvAttrs {
        pads: pads.to_vec(),
        strides: strides.to_vec(),
        dilations: dilations.to_vec(),
        group,
        ..ConvAttrs::new()
    }
}

fn random_case(rng: &mut impl Rng, f16: bool) -> Case {
    let spatial = if rng.random_bool(0.4) { 1 } else { 2 };
    let n = if rng.random_bool(0.75) { 1 } else { 3 };
    let (group, cg, mg) = match rng.random_range(0..10) {
        0..5 => (1, rng.random_range(1..=7), rng.random_range(1..=9)),
        5..7 => (rng.random_range(2..=9), 1, rng.random_range(1..=2)),
        _ => (rng.random_range(2..=4), rng.random_range(1..=5), rng.random_range(1..=7)),
    };
    let mut attrs = ConvAttrs { group: group as i64, ..ConvAttrs::new() };
    let (mut x, mut w) = (vec![n, group * cg], vec![group * mg, cg]);
    for _ in 0..spatial {
        let k = rng.random_range(1..=7u64);
        let d = rng.random_range(1..=2u64);
        let len = if spatial == 1 { rng.random_range(1..=3000) } else { rng.random_range(1..=64) };
        // Mostly inputs the kernel fits; sometimes only the padding makes it fit, or nothing does.
        let reach = (k - 1) * d + 1;
        x.push(if rng.random_bool(0.9) { len.max(reach) } else { rng.random_range(1..=reach) });
        w.push(k);
        attrs.strides.push(rng.random_range(1..=3));
        attrs.dilations.push(d as i64);
    }
    attrs.auto_pad = match rng.random_range(0..8) {
        0 => AutoPad::Valid,
        1 => AutoPad::SameUpper,
        2 => AutoPad::SameLower,
        _ => AutoPad::NotSet,
    };
    if attrs.auto_pad == AutoPad::NotSet && rng.random_bool(0.8) {
        attrs.pads = (0..2 * spatial).map(|_| rng.random_range(0..=3)).collect();
    }
    let mut case = Case::new(&x, &w, attrs);
    case.bias = rng.random_bool(0.5);
    case.activation = match rng.random_range(0..8) {
        0 => Activation::Relu,
        1 => Activation::Clip { min: -0.5, max: 0.75 },
        2 => Activation::HardSwish,
        3 => Activation::Silu,
        4 => Activation::LeakyRelu { alpha: 0.1 },
        _ => Activation::None,
    };
    case.residual = match rng.random_range(0..4) {
        0 => Residual::BeforeActivation,
        1 => Residual::AfterActivation,
        _ => Residual::None,
    };
    case.dtype = if f16 && rng.random_bool(0.2) { DType::F16 } else { DType::F32 };
    case.algo = match rng.random_range(0..5) {
        0 => ConvAlgo::Gemm,
        1 => ConvAlgo::Direct,
        _ => ConvAlgo::Auto,
    };
    case.tiling = match rng.random_range(0..8) {
        0 => TilingChoice::Gemv,
        1 => TilingChoice::SplitK,
        2 => TilingChoice::Tile128,
        _ => TilingChoice::Auto,
    };
    case
}

#[test]
fn random_attribute_sweep() {
    let gpu = gpu();
    let mut rng = rng("conv sweep");
    let f16 = gpu.caps().shader_f16;
    let (mut planned, mut declined) = (std::collections::BTreeMap::new(), 0);
    for _ in 0..300 {
        let case = random_case(&mut rng, f16);
        match check(&gpu, &case, &mut rng) {
            Some(plan) => *planned.entry(format!("{:?}", plan.path())).or_insert(0) += 1,
            None => declined += 1,
        }
    }
    eprintln!("sweep: {planned:?}, {declined} invalid nodes declined");
    assert!(planned.contains_key("Im2colGemm") && planned.contains_key("Direct"), "{planned:?}");
}

#[test]
fn edge_cases() {
    let gpu = gpu();
    let mut rng = rng("conv edges");
    let same = |mode, strides: &[i64]| ConvAttrs { auto_pad: mode, strides: strides.to_vec(), ..ConvAttrs::new() };
    let cases = [
        // Pointwise, plain and grouped, batch 3: the GEMM reads X.
        (Case::new(&[3, 6, 5, 7], &[10, 6, 1, 1], attrs(&[], &[], &[], 1)), Some(ConvPath::Pointwise)),
        (Case::new(&[3, 6, 5, 7], &[10, 3, 1, 1], attrs(&[], &[], &[], 2)), Some(ConvPath::Pointwise)),
        (Case::new(&[1, 5, 9], &[7, 5, 1], attrs(&[], &[], &[], 1)), Some(ConvPath::Pointwise)),
        // 1×1 with stride or padding needs the gather.
        (Case::new(&[1, 6, 9, 9], &[5, 6, 1, 1], attrs(&[], &[2, 2], &[], 1)), Some(ConvPath::Im2colGemm)),
        (Case::new(&[1, 6, 9, 9], &[5, 6, 1, 1], attrs(&[1, 0, 0, 2], &[], &[], 1)), Some(ConvPath::Im2colGemm)),
        // The kernel exactly covers the padded input: a single output pixel.
        (Case::new(&[1, 3, 4, 5], &[4, 3, 6, 5], attrs(&[1, 0, 1, 0], &[], &[], 1)), None),
        // Input smaller than the kernel; padding makes it fit.
        (Case::new(&[2, 3, 2], &[4, 3, 5], attrs(&[2, 1], &[], &[], 1)), None),
        (Case::new(&[1, 2, 2, 2], &[3, 2, 3, 3], attrs(&[1, 0, 0, 1], &[], &[], 1)), None),
        // SAME with strides 2 and 3 on even and odd sizes, dilated.
        (Case::new(&[1, 3, 10, 11], &[4, 3, 3, 4], same(AutoPad::SameUpper, &[2, 3])), None),
        (Case::new(&[1, 3, 10, 11], &[4, 3, 3, 4], same(AutoPad::SameLower, &[3, 2])), None),
        (Case::new(&[1, 3, 17], &[2, 3, 4], ConvAttrs { dilations: vec![2], ..same(AutoPad::SameLower, &[2]) }), None),
        (Case::new(&[1, 3, 17], &[2, 3, 2], same(AutoPad::SameUpper, &[3])), None),
        (Case::new(&[1, 3, 7, 7], &[2, 3, 3, 3], same(AutoPad::Valid, &[2, 2])), None),
        // Stride larger than the kernel: SAME needs no padding.
        (Case::new(&[1, 2, 5, 5], &[2, 2, 1, 1], same(AutoPad::SameUpper, &[3, 3])), Some(ConvPath::Im2colGemm)),
        // Depthwise, with a channel multiplier of 2, and a wide grouped conv.
        (Case::new(&[1, 13, 20, 20], &[13, 1, 3, 3], attrs(&[1, 1, 1, 1], &[], &[], 13)), Some(ConvPath::Direct)),
        (Case::new(&[3, 5, 33], &[10, 1, 5], attrs(&[2, 2], &[2], &[], 5)), Some(ConvPath::Direct)),
        (Case::new(&[1, 10, 9, 9], &[30, 5, 3, 3], attrs(&[0, 1, 2, 0], &[], &[2, 1], 2)), Some(ConvPath::Im2colGemm)),
        // Long 1-D, dilated, asymmetric padding.
        (Case::new(&[1, 3, 3000], &[5, 3, 7], attrs(&[3, 0], &[3], &[2], 1)), Some(ConvPath::Im2colGemm)),
    ];
    for (mut case, path) in cases {
        for activation in [Activation::None, Activation::Relu] {
            case.activation = activation;
            let plan = check(&gpu, &case, &mut rng).unwrap_or_else(|| panic!("{case:?} declined"));
            if let Some(path) = path {
                assert_eq!(plan.path(), path, "{case:?}");
            }
        }
    }
}

fn whisper(x: &[u64], w: &[u64], strides: &[i64], dtype: DType, algo: ConvAlgo) -> Case {
    Case { dtype, algo, ..Case::new(x, w, attrs(&[1, 1], strides, &[], 1)) }
}

#[test]
fn whisper_frontend() {
    let gpu = gpu();
    let mut rng = rng("whisper");
    let mut dtypes = vec![DType::F32];
    if gpu.caps().shader_f16 {
        dtypes.push(DType::F16);
    }
    for dtype in dtypes {
        let conv1 = whisper(&[1, 80, 3000], &[384, 80, 3], &[1], dtype, ConvAlgo::Auto);
        let conv2 = whisper(&[1, 384, 3000], &[384, 384, 3], &[2], dtype, ConvAlgo::Auto);
        for case in [conv1, conv2] {
            let plan = check(&gpu, &case, &mut rng).unwrap();
            assert_eq!(plan.path(), ConvPath::Im2colGemm);
        }
    }
}

#[test]
fn direct_and_gemm_paths_agree_on_depthwise() {
    let gpu = gpu();
    let mut rng = rng("depthwise");
    for algo in [ConvAlgo::Auto, ConvAlgo::Gemm, ConvAlgo::Direct] {
        for tiling in [TilingChoice::Auto, TilingChoice::Tile64] {
            let mut case = Case::new(&[1, 32, 17, 19], &[32, 1, 3, 3], attrs(&[1, 1, 1, 1], &[2, 1], &[], 32));
            case.algo = algo;
            case.tiling = tiling;
            case.activation = Activation::Clip { min: 0.0, max: 0.5 };
            check(&gpu, &case, &mut rng).unwrap();
        }
    }
}

/// The implicit GEMM (im2col gathered on load) forced over a randomized sweep of the attribute
/// space: kernels 1–7, strides 1–3, dilations 1–2, asymmetric and SAME padding, channel counts
/// that are not multiples of 4 (so the scalar-A variant runs too), batch 1 and 3, long 1-D
/// inputs, and every tiling the implicit kernel implements. Grouped convs run as batches.
#[test]
fn implicit_attribute_sweep() {
    let gpu = gpu();
    let mut rng = rng("conv implicit sweep");
    let f16 = gpu.caps().shader_f16;
    let mut variants = std::collections::BTreeMap::new();
    let mut planned = 0;
    for i in 0..36 {
        let mut case = random_case(&mut rng, f16);
        case.algo = ConvAlgo::Implicit;
        case.tiling = [TilingChoice::Auto, TilingChoice::Tile128, TilingChoice::Tile64, TilingChoice::SplitK][i % 4];
        if let Some(plan) = check(&gpu, &case, &mut rng) {
            assert_eq!(plan.path(), ConvPath::Implicit, "{case:?}: {:?}", plan.fallbacks);
            assert_eq!(plan.col_bytes, 0);
            for v in plan.variants() {
                *variants.entry(v.name()).or_insert(0) += 1;
            }
            planned += 1;
        }
    }
    eprintln!("implicit sweep: {planned} planned, variants {variants:?}");
    // Both A loads ran: the scalar one (`_implicit_a1…`) and the vectorised one (`_implicit`, then
    // only epilogue or split suffixes such as `_res`, `_xact`, `_splitk`).
    assert!(variants.keys().any(|v| v.contains("_implicit_a1")), "{variants:?}");
    assert!(variants.keys().any(|v| v.contains("_implicit") && !v.contains("_implicit_a1")), "{variants:?}");
}

/// Implicit GEMM on shapes chosen to stress its gather: output pixel counts of 1, 7 and 129
/// (no tile multiple), a 1×1 strided kernel, padding larger than the dilated reach on one side,
/// batch 3 with a reduction length of 27, and every forced tiling.
#[test]
fn implicit_edge_cases() {
    let gpu = gpu();
    let mut rng = rng("conv implicit edges");
    let cases = [
        Case::new(&[1, 5, 3, 3], &[7, 5, 3, 3], attrs(&[0, 0, 0, 0], &[], &[], 1)),
        Case::new(&[3, 3, 9, 9], &[129, 3, 3, 3], attrs(&[1, 2, 0, 1], &[2, 3], &[], 1)),
        Case::new(&[1, 4, 1, 129], &[5, 4, 1, 1], attrs(&[], &[], &[], 1)),
        Case::new(&[1, 6, 9, 9], &[5, 6, 1, 1], attrs(&[], &[2, 2], &[], 1)),
        Case::new(&[1, 8, 6, 22], &[16, 8, 3, 5], attrs(&[3, 0, 1, 4], &[1, 2], &[2, 2], 1)),
        Case::new(&[2, 12, 15, 15], &[20, 12, 7, 7], attrs(&[3, 3, 3, 3], &[3, 1], &[1, 2], 1)),
        Case::new(&[1, 3, 3000], &[5, 3, 7], attrs(&[3, 0], &[3], &[2], 1)),
        Case::new(&[1, 10, 9, 9], &[30, 5, 3, 3], attrs(&[0, 1, 2, 0], &[], &[2, 1], 2)),
    ];
    for case in cases {
        for tiling in [TilingChoice::Auto, TilingChoice::Tile128, TilingChoice::Tile64, TilingChoice::SplitK] {
            let case = Case { algo: ConvAlgo::Implicit, tiling, activation: Activation::Relu, ..case.clone() };
            let plan = check(&gpu, &case, &mut rng).unwrap_or_else(|| panic!("{case:?} declined"));
            assert_eq!(plan.path(), ConvPath::Implicit, "{case:?}");
            let want = match tiling {
                TilingChoice::Tile128 => "128x128",
                // The 64×64 class: 64×64 tiles, or 32×64 ones for few tiles (`plan::simt_64_shapes`).
                TilingChoice::Tile64 => "Tile64",
                TilingChoice::SplitK if plan.gemm().unwrap().steps.len() == 2 => "_splitk",
                _ => "",
            };
            assert!(plan.describe().contains(want), "{case:?} with {tiling:?}: {}", plan.describe());
        }
    }
}

/// The Whisper frontend convs as implicit GEMMs, f32 and (where the adapter has shader-f16) f16.
#[test]
fn implicit_whisper_frontend() {
    let gpu = gpu();
    let mut rng = rng("whisper implicit");
    let mut dtypes = vec![DType::F32];
    if gpu.caps().shader_f16 {
        dtypes.push(DType::F16);
    }
    for dtype in dtypes {
        let conv1 = whisper(&[1, 80, 3000], &[384, 80, 3], &[1], dtype, ConvAlgo::Implicit);
        let conv2 = whisper(&[1, 384, 3000], &[384, 384, 3], &[2], dtype, ConvAlgo::Implicit);
        for case in [conv1, conv2] {
            let plan = check(&gpu, &case, &mut rng).unwrap();
            assert_eq!(plan.path(), ConvPath::Implicit);
            assert!(plan.describe().contains(&format!("gemm_{dtype}_")), "{}", plan.describe());
        }
    }
}

fn depthwise_1d(len: u64) -> Case {
    Case::new(&[1, 16, len], &[16, 1, 3], attrs(&[1, 1], &[], &[], 16))
}

/// Pipelines are cached by variant, so equal variants across lengths mean no recompilation
/// (the pipeline count itself is shared with tests running in parallel).
#[test]
fn new_lengths_reuse_pipelines() {
    let gpu = gpu();
    let mut rng = rng("conv reuse");
    let gemm = |len| Case {
        tiling: TilingChoice::Tile64,
        ..whisper(&[1, 16, len], &[24, 16, 3], &[1], DType::F32, ConvAlgo::Gemm)
    };
    let variants = |case: &Case, rng: &mut _| {
        let plan = check(&gpu, case, rng).unwrap();
        plan.variants().iter().map(|v| v.name()).collect::<Vec<_>>()
    };
    // The GEMM takes vec4 loads where the planner proves 4-element alignment (here: the
    // length), so lengths reuse the pipeline of their alignment class: at most two programs.
    // (All these lengths stay within 3/4 of llvmpipe's parallelism in 64×64 tiles, so they
    // keep one tile class: `plan::simt_64_shapes`.)
    let first = (variants(&gemm(300), &mut rng), variants(&depthwise_1d(300), &mut rng));
    let unaligned = variants(&gemm(7), &mut rng);
    for len in [7u64, 301, 700, 704] {
        let want = if len % 4 == 0 { &first.0 } else { &unaligned };
        assert_eq!(&variants(&gemm(len), &mut rng), want, "length {len}");
        assert_eq!(variants(&depthwise_1d(len), &mut rng), first.1, "length {len}");
    }
}
