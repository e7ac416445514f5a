//! MatMulNBits through the program builder and executor on the test adapter, against a float64
//! reference of ONNX Runtime's dequantisation on fresh random packed weights: 2, 4 and 8 bits,
//! block sizes 16..256, zero points absent, packed or typed, a bias, f32 and f16, rows that take
//! the GEMV kernel (≤ 8) and rows that take the dequantised-B GEMM, K and N off tile multiples.
mod common;

use common::graph::{node, run_graph, val, T};
use ep_kernels::caps::profiles;
use ep_kernels::graph::{Attr, ExecOptions, PlacementOptions};
use ep_kernels::ops::quant::nbits::{lanes_for, NbitsKernel};
use ep_kernels::ops::quant::source::{NbitsKind, LANES_UNROLL};
use ep_kernels::ops::{Kernel, KernelIo, PrepareCx, Tensor};
use ep_kernels::runtime::GpuBuffer;
use ep_kernels::ElemType;
use rand::Rng;

#[derive(Clone, Copy, PartialEq)]
enum Zp {
    None,
    Packed,
    Typed,
}

struct Case {
    m: u64,
    k: u64,
    n: u64,
    bits: u32,
    block: u64,
    zp: Zp,
    bias: bool,
}

fn tensor(ty: ElemType, shape: &[u64], v: &[f32]) -> T {
    if ty == ElemType::F16 {
        T::f16(shape, v)
    } else {
        T::f32(shape, v)
    }
}

/// `bits`-bit values packed low bits first (a column's values start at a byte).
fn pack(values: &[u8], bits: u32) -> Vec<u8> {
    let per = (8 / bits) as usize;
    values
        .chunks(per)
        .map(|c| c.iter().enumerate().fold(0u8, |byte, (i, &v)| byte | (v << (bits as usize * i))))
        .collect()
}

fn check(test: &str, ty: ElemType, c: &Case) {
    let mut rng = common::rng(test);
    let kb = c.k.div_ceil(c.block);
    let levels = 1u32 << c.bits;
    let q: Vec<u8> = (0..c.n * kb * c.block).map(|_| rng.random_range(0..levels) as u8).collect();
    let b: Vec<u8> = q.chunks((kb * c.block) as usize).flat_map(|col| pack(col, c.bits)).collect();
    let scales = tensor(ty, &[c.n * kb], &(0..c.n * kb).map(|_| rng.random_range(0.01f32..0.1)).collect::<Vec<_>>());
    let zq: Vec<u8> = (0..c.n * kb).map(|_| rng.random_range(0..levels) as u8).collect();
    let zp = match c.zp {
        Zp::None => None,
        Zp::Packed => {
            let packed: Vec<u8> = zq.chunks(kb as usize).flat_map(|col| pack(col, c.bits)).collect();
            Some(T::u8(&[packed.len() as u64], &packed))
        }
        Zp::Typed => Some(tensor(ty, &[c.n * kb], &zq.iter().map(|&z| z as f32 + 0.5).collect::<Vec<_>>())),
    };
    let zp_of = |i: usize| match c.zp {
        Zp::None => f64::from(levels / 2),
        Zp::Packed => f64::from(zq[i]),
        Zp::Typed => zp.as_ref().unwrap().values()[i],
    };
    let bias = tensor(ty, &[c.n], &(0..c.n).map(|_| rng.random_range(-1.0f32..1.0)).collect::<Vec<_>>());
    let a = tensor(ty, &[c.m, c.k], &(0..c.m * c.k).map(|_| rng.random_range(-1.0f32..1.0)).collect::<Vec<_>>());
    let (av, sv, bv) = (a.values(), scales.values(), bias.values());
    let mut want = vec![0f64; (c.m * c.n) as usize];
    for n in 0..c.n as usize {
        for k in 0..c.k as usize {
            let blk = n * kb as usize + k / c.block as usize;
            let w = (f64::from(q[n * (kb * c.block) as usize + k]) - zp_of(blk)) * sv[blk];
            for m in 0..c.m as usize {
                want[m * c.n as usize + n] += av[m * c.k as usize + k] * w;
            }
        }
    }
    if c.bias {
        want.iter_mut().enumerate().for_each(|(i, v)| *v += bv[i % c.n as usize]);
    }
    let b = T::u8(&[c.n, kb, c.block * u64::from(c.bits) / 8], &b);
    let mut inputs = vec![
        Some(val("A", ty, &[c.m, c.k])),
        Some(val("B", ElemType::U8, &b.shape)),
        Some(val("scales", ty, &scales.shape)),
    ];
    let mut consts = vec![("B", &b), ("scales", &scales)];
    inputs.push(zp.as_ref().map(|z| val("zp", z.ty, &z.shape)));
    if let Some(z) = &zp {
        consts.push(("zp", z));
    }
    if c.bias {
        inputs.extend([None, Some(val("bias", ty, &[c.n]))]);
        consts.push(("bias", &bias));
    }
    let attrs = vec![
        ("K", Attr::Int(c.k as i64)),
        ("N", Attr::Int(c.n as i64)),
        ("bits", Attr::Int(i64::from(c.bits))),
        ("block_size", Attr::Int(c.block as i64)),
        ("accuracy_level", Attr::Int(4)),
    ];
    let mut nd = node("MatMulNBits", 1, inputs, vec![val("Y", ty, &[c.m, c.n])], attrs);
    nd.domain = "com.microsoft".into();
    let def = ep_kernels::ops::lookup(&nd).expect("MatMulNBits is registered");
    let opts = PlacementOptions::defaults(profiles::get("llvmpipe").unwrap());
    def.check(&nd, &opts).expect("claimed");
    let atol = if ty == ElemType::F16 { 2e-2 } else { 1e-4 };
    // The product's error is judged against its largest magnitude; an epilogue's error is that
    // error carried through the epilogue (`slope[i]` times it) plus its own rounding.
    let peak = want.iter().fold(0f64, |m, v| m.max(v.abs())).max(1.0);
    let close = |what: &str, got: &[f64], want: &[f64], slope: &dyn Fn(usize) -> f64| {
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            let bound = atol * (peak * slope(i) + w.abs());
            assert!((g - w).abs() <= bound, "{test} {what}: element {i}: got {g}, want {w} (bound {bound})");
        }
    };
    let compare = |what: &str, got: &[f64]| close(what, got, &want, &|_| 1.0);
    let mut kernel = NbitsKernel::of(&nd).unwrap();
    let got = run_graph(&[nd], &[("A", &a)], &consts, &["Y"]).expect("runs").remove(0).values();
    compare("auto", &got);
    // Each kernel at any number of rows, directly.
    let mut operands: Vec<Option<&T>> = vec![Some(&a), Some(&b), Some(&scales), zp.as_ref(), None];
    operands.push(c.bias.then_some(&bias));
    let kinds = kinds(c);
    for &kind in &kinds {
        kernel.force = Some(kind);
        compare(&format!("{kind:?}"), &run_kernel(&kernel, &operands, ty).values());
    }
    // One row in whole 16-byte chunks takes the one-row kernel unforced.
    kernel.force = None;
    let shapes: Vec<Option<&[u64]>> = operands.iter().map(|t| t.map(|t| t.shape.as_slice())).collect();
    let plan = kernel.plan(&shapes, common::gpu().caps(), &ExecOptions::default()).unwrap().unwrap();
    assert_eq!(plan.tiling == "Lanes", lanes_chosen(c), "{test}: planned {}", plan.tiling);
    // Constant weights: dequantised once by the first prepare, reused by the next.
    kernel.force = Some(NbitsKind::Dequant);
    kernel.weights_constant = true;
    for pass in ["first", "reused"] {
        compare(&format!("Dequant once, {pass}"), &run_kernel(&kernel, &operands, ty).values());
        assert_eq!(format!("{:?}", kernel.dequantized), "DequantSlot(made)");
    }
    // SwiGLU's fused SiLU and gate in each kernel's store: silu(y) · gate.
    let gate = tensor(ty, &[c.m, c.n], &(0..c.m * c.n).map(|_| rng.random_range(-1.0f32..1.0)).collect::<Vec<_>>());
    let gv = gate.values();
    let gated: Vec<f64> = want.iter().zip(&gv).map(|(&v, g)| v / (1.0 + (-v).exp()) * g).collect();
    // |d silu(y) / dy| < 1.1, so an error e in y moves silu(y) · g by at most 1.1 |g| e.
    let gated_slope = |i: usize| 1.1 * gv[i].abs();
    (kernel.silu, kernel.gate) = (true, true);
    operands.push(Some(&gate));
    for &kind in &kinds {
        kernel.force = Some(kind);
        close(&format!("{kind:?}, SiLU and gate"), &run_kernel(&kernel, &operands, ty).values(), &gated, &gated_slope);
    }
}

/// Whether the one-row kernel can run case `c` (on an adapter with subgroups): one row of 4 or
/// 8 bits, blocks and K in whole 16-byte chunks of B.
fn lanes_run(c: &Case) -> bool {
    let cv = 128 / u64::from(c.bits);
    lanes_for(common::gpu().caps()).is_some()
        && c.m == 1
        && [4, 8].contains(&c.bits)
        && c.block % cv == 0
        && c.k % cv == 0
}

/// Whether the planner takes the one-row kernel for case `c`: it runs, and every invocation's
/// chunks of a column are in flight at once.
fn lanes_chosen(c: &Case) -> bool {
    let span = |l: u32| u64::from(LANES_UNROLL * l) * 128 / u64::from(c.bits);
    lanes_run(c) && lanes_for(common::gpu().caps()).is_some_and(|l| c.k <= span(l))
}

/// The kernels each case is run on directly.
fn kinds(c: &Case) -> Vec<NbitsKind> {
    let mut kinds = vec![NbitsKind::Gemv, NbitsKind::Tiled, NbitsKind::Dequant];
    if lanes_run(c) {
        kinds.push(NbitsKind::Lanes);
    }
    kinds
}

/// Runs `kernel` once on `inputs` (uploaded; `None` for omitted ones); its output.
fn run_kernel(kernel: &dyn Kernel, inputs: &[Option<&T>], ty: ElemType) -> T {
    let gpu = common::gpu();
    let ins: Vec<Option<GpuBuffer>> = inputs.iter().map(|t| t.map(|t| gpu.upload(&t.data, "in").unwrap())).collect();
    let shapes: Vec<Option<&[u64]>> = inputs.iter().map(|t| t.map(|t| t.shape.as_slice())).collect();
    let shape = kernel.infer(&shapes).unwrap().remove(0);
    let out = gpu.storage_buffer(shape.iter().product::<u64>() * ty.size(), "out").unwrap();
    let io = KernelIo {
        inputs: ins
            .iter()
            .zip(inputs)
            .map(|(buf, t)| Some(Tensor { buf: buf.as_ref()?, shape: &(*t)?.shape, ty: (*t)?.ty, constant: false }))
            .collect(),
        outputs: vec![Tensor { buf: &out, shape: &shape, ty, constant: false }],
    };
    let options = ExecOptions::default();
    let status = gpu.storage_buffer(4, "status").unwrap();
    let cx = PrepareCx::on(&gpu, &options, &status);
    let step = kernel.prepare(&cx, &io).unwrap();
    gpu.run(&step.dispatches.iter().collect::<Vec<_>>()).unwrap();
    let mut data = gpu.read_buffer(&out).unwrap();
    data.truncate((shape.iter().product::<u64>() * ty.size()) as usize);
    T { ty, shape, data }
}

fn cases() -> Vec<Case> {
    let c = |m, k, n, bits, block, zp, bias| Case { m, k, n, bits, block, zp, bias };
    vec![
        c(1, 96, 67, 4, 32, Zp::None, false),
        c(3, 80, 67, 4, 16, Zp::Packed, true),
        c(8, 200, 33, 8, 64, Zp::Typed, false),
        c(37, 96, 67, 4, 32, Zp::Packed, true),
        c(37, 80, 19, 8, 16, Zp::Packed, false),
        c(9, 300, 40, 4, 256, Zp::Typed, true),
        c(2, 300, 40, 8, 128, Zp::None, true),
        c(3, 112, 33, 2, 16, Zp::Packed, true),
        c(37, 80, 21, 2, 32, Zp::None, false),
        // More packed words per column than the GEMV's invocations load in one pass.
        c(2, 2500, 11, 4, 32, Zp::Packed, true),
        // One row in whole chunks (the one-row kernel): the main loop and its remainder, a
        // padded last block, 8 bits, one block per column.
        c(1, 2112, 67, 4, 32, Zp::None, true),
        c(1, 512, 2051, 4, 32, Zp::Packed, true),
        c(1, 96, 67, 4, 64, Zp::Packed, false),
        c(1, 160, 33, 8, 16, Zp::Typed, true),
        c(1, 256, 19, 4, 256, Zp::Typed, false),
        c(1, 1040, 5, 8, 32, Zp::Packed, true),
    ]
}

#[test]
fn matmul_nbits_f32() {
    for (i, c) in cases().iter().enumerate() {
        check(&format!("matmul_nbits_f32 case {i}"), ElemType::F32, c);
    }
}

#[test]
fn matmul_nbits_f16() {
    if !common::gpu().caps().shader_f16 {
        eprintln!("skipped: no shader-f16");
        return;
    }
    for (i, c) in cases().iter().enumerate() {
        check(&format!("matmul_nbits_f16 case {i}"), ElemType::F16, c);
    }
}

#[test]
fn unsupported_attributes_are_declined_with_a_reason() {
    let ty = ElemType::F32;
    let inputs =
        || vec![Some(val("A", ty, &[2, 64])), Some(val("B", ElemType::U8, &[8, 4, 8])), Some(val("scales", ty, &[32]))];
    let opts = PlacementOptions::defaults(profiles::get("llvmpipe").unwrap());
    for (attr, value, needle) in
        [("bits", 3, "bits=3"), ("block_size", 8, "block_size=8"), ("block_size", 24, "power of 2")]
    {
        let mut attrs =
            vec![("K", Attr::Int(64)), ("N", Attr::Int(8)), ("bits", Attr::Int(4)), ("block_size", Attr::Int(16))];
        attrs.retain(|(k, _)| *k != attr);
        attrs.push((attr, Attr::Int(value)));
        let mut nd = node("MatMulNBits", 1, inputs(), vec![val("Y", ty, &[2, 8])], attrs);
        nd.domain = "com.microsoft".into();
        let reason = ep_kernels::ops::lookup(&nd).unwrap().check(&nd, &opts).unwrap_err();
        assert!(reason.contains(needle), "{reason}");
    }
}
