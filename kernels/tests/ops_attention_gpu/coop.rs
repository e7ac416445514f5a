//! The tensor-core flash kernel in its emulated form (the same template with plain-WGSL fragment
//! operations), so its indexing, lane-to-column order, masks and online softmax are checked on
//! adapters without tensor cores; on a device with them `Engine::Auto` runs the real fragments
//! (the pytest suite then covers it end to end).

use super::{assert_close, random, Case};
use crate::common;
use common::graph::{val, T};
use ep_kernels::graph::{Attr, ExecOptions};
use ep_kernels::ops::attention::{coop, onnx, Engine, Layout};
use ep_kernels::ops::{Kernel, KernelIo, PrepareCx, Tensor};
use ep_kernels::ElemType;
use rand::Rng;

/// One emulated run of ONNX `Attention` (4-D) against float64, with a mask kind.
/// `kt`: K is stored transposed, `[B, H, D, S]` (staged element by element, not in 8-half chunks).
fn check(rng: &mut impl Rng, c: &Case, mask: &str, splits: Option<u64>, kt: bool) {
    check_capped(rng, c, mask, splits, kt, 0.0);
}

fn check_capped(rng: &mut impl Rng, c: &Case, mask: &str, splits: Option<u64>, kt: bool, softcap: f64) {
    let gpu = common::gpu();
    let ty = ElemType::F16;
    let shape = |h: usize, s: usize| [c.b as u64, h as u64, s as u64, c.d as u64];
    let (q, k, v) = (
        random(rng, ty, &shape(c.hq, c.sq)),
        random(rng, ty, &shape(c.hkv, c.skv)),
        random(rng, ty, &shape(c.hkv, c.skv)),
    );
    let (sq, skv) = (c.sq, c.skv);
    let m = match mask {
        "bool" => {
            let bits: Vec<bool> = (0..sq * skv).map(|i| i % skv == 0 || rng.random_range(0..4) != 0).collect();
            Some(T::bool(&[sq as u64, skv as u64], &bits))
        }
        "add" => {
            let add: Vec<f32> = (0..c.b * sq * skv).map(|_| rng.random_range(-2.0f32..1.0)).collect();
            Some(T::f16(&[c.b as u64, 1, sq as u64, skv as u64], &add))
        }
        _ => None,
    };
    let mut inputs = vec![Some(val("q", ty, &q.shape)), Some(val("k", ty, &k.shape)), Some(val("v", ty, &v.shape))];
    if let Some(m) = &m {
        inputs.push(Some(val("m", m.ty, &m.shape)));
    }
    let mut attrs = vec![("scale", Attr::Float(c.scale as f32))];
    if c.causal.is_some() {
        attrs.push(("is_causal", Attr::Int(1)));
    }
    let n = common::graph::node("Attention", 23, inputs, vec![val("y", ty, &shape(c.hq, sq))], attrs);
    let mv = m.as_ref().map(|m| m.values());
    let want = c.reference_capped(softcap, &q.values(), &k.values(), &v.values(), &|b, _, i, j| match (mask, &mv) {
        ("bool", Some(mv)) if mv[i * skv + j] == 0.0 => f64::NEG_INFINITY,
        ("add", Some(mv)) => mv[(b * sq + i) * skv + j],
        _ => 0.0,
    });
    let mut kernel = onnx::kernel(&n).unwrap();
    kernel.engine = Engine::CoopEmulated;
    kernel.splits = splits;
    kernel.softcap = softcap as f32;
    // The kernel reads K through its layout; what it is handed is K stored transposed.
    let k_stored = if kt {
        kernel.k = Layout { perm: [0, 1, 3, 2], packed_heads: None, columns: None };
        let kv = k.values();
        let (h, s, d) = (c.hkv, c.skv, c.d);
        let mut t = vec![0f32; kv.len()];
        for bh in 0..c.b * h {
            for si in 0..s {
                for di in 0..d {
                    t[(bh * d + di) * s + si] = kv[(bh * s + si) * d + di] as f32;
                }
            }
        }
        T::f16(&[c.b as u64, h as u64, d as u64, s as u64], &t)
    } else {
        k.clone()
    };
    let mut tensors = vec![&q, &k_stored, &v];
    tensors.extend(m.as_ref());
    let ins: Vec<_> = tensors.iter().map(|t| gpu.upload(&t.data, "in").unwrap()).collect();
    let bytes = (c.b * c.hq * sq * c.d * 2) as u64;
    // Poisoned (NaN): every element the kernel should write is checked below.
    let out = gpu.upload(&vec![0xffu8; bytes.next_multiple_of(4) as usize], "out").unwrap();
    let oshape = shape(c.hq, sq);
    let io = KernelIo {
        inputs: ins
            .iter()
            .zip(&tensors)
            .map(|(buf, t)| Some(Tensor { buf, shape: &t.shape, ty: t.ty, constant: false }))
            .collect(),
        outputs: vec![Tensor { buf: &out, shape: &oshape, ty, constant: false }],
    };
    let (options, status) = (ExecOptions::default(), gpu.storage_buffer(4, "status").unwrap());
    let cx = PrepareCx { gpu: &gpu, options: &options, status: &status, status_code: 1 };
    let step = kernel.prepare(&cx, &io).unwrap();
    let plan = step.plan.clone().unwrap_or_default();
    assert!(plan.contains("tensor cores (emulated)"), "{plan}");
    let want_splits = splits.unwrap_or(1);
    assert!(plan.contains(&format!("{want_splits} key split(s)")), "{plan}");
    gpu.run(&step.dispatches.iter().collect::<Vec<_>>()).unwrap();
    let mut data = gpu.read_buffer(&out).unwrap();
    data.truncate(bytes as usize);
    let what = format!("d={} sq={sq} skv={skv} mask {mask} causal {:?} softcap {softcap}: {plan}", c.d, c.causal);
    assert_close(&what, &T { ty, shape: oshape.to_vec(), data }.values(), &want, ty);
}

#[test]
fn emulated_tensor_core_kernel_against_f64() {
    let gpu = common::gpu();
    if coop::plan(64, gpu.caps(), true).is_none() {
        eprintln!("skipped: this adapter has no subgroups or shader-f16");
        return;
    }
    let mut rng = rand::rng();
    // Sequences no tile multiple, several K/V tiles, grouped-query heads, every head size's tiling.
    // Split-KV (partials combined by the reduction) forced where the planner would not split here,
    // including causal tiles whose last splits see no key.
    let cases = [
        (Case { b: 1, hq: 2, hkv: 1, sq: 37, skv: 75, d: 64, scale: 0.125, causal: None }, "none", None),
        (Case { b: 2, hq: 2, hkv: 2, sq: 19, skv: 41, d: 64, scale: 0.125, causal: None }, "add", Some(2)),
        (Case { b: 1, hq: 4, hkv: 2, sq: 70, skv: 70, d: 64, scale: 0.125, causal: Some(0) }, "bool", None),
        (Case { b: 1, hq: 2, hkv: 1, sq: 45, skv: 45, d: 64, scale: 0.125, causal: Some(0) }, "none", Some(3)),
        (
            Case { b: 1, hq: 1, hkv: 1, sq: 33, skv: 50, d: 128, scale: 1.0 / (128f64).sqrt(), causal: Some(0) },
            "add",
            None,
        ),
        (
            Case { b: 1, hq: 2, hkv: 1, sq: 21, skv: 37, d: 80, scale: 1.0 / (80f64).sqrt(), causal: None },
            "none",
            Some(2),
        ),
        // Scores of ±30: a row's max moves past its reference (the rescale threshold) between tiles.
        (Case { b: 1, hq: 2, hkv: 1, sq: 40, skv: 150, d: 64, scale: 4.0, causal: None }, "none", None),
        (Case { b: 1, hq: 1, hkv: 1, sq: 20, skv: 99, d: 128, scale: 3.0, causal: None }, "bool", Some(2)),
    ];
    for (i, (c, mask, splits)) in cases.iter().enumerate() {
        // Every other case with K stored transposed.
        check(&mut rng, c, mask, *splits, i % 2 == 1);
    }
    // Softcap (Gemma-2's), small enough to bend these scores (1/√64 times dot products of 64
    // values in [-1, 1): about ±0.3), with each mask kind and a split.
    let capped = Case { b: 1, hq: 2, hkv: 1, sq: 37, skv: 45, d: 64, scale: 0.125, causal: Some(0) };
    for (mask, splits) in [("none", None), ("add", Some(2)), ("bool", None)] {
        check_capped(&mut rng, &capped, mask, splits, false, 0.4);
    }
}
