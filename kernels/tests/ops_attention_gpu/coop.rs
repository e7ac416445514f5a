//! The tensor-core flash kernel in its emulated form (the same template with plain-WGSL fragment
//! operations), so its indexing, lane-to-column order, masks and online softmax are checked on
//! adapters without tensor cores; on a device with them `Engine::Auto` runs the real fragments
//! (the pytest suite then covers it end to end).

use super::direct::Direct;
use super::Case;
use crate::common;
use ep_kernels::ops::attention::{coop, Engine};
use ep_kernels::ElemType;
use rand::Rng;

/// One emulated run of ONNX `Attention` (4-D) against float64, with a mask kind.
/// `kt`: K is stored transposed, `[B, H, D, S]` (staged element by element, not in 8-half chunks).
fn check(rng: &mut impl Rng, c: &Case, mask: &str, splits: Option<u64>, kt: bool) {
    check_capped(rng, c, mask, splits, kt, 0.0);
}

fn check_capped(rng: &mut impl Rng, c: &Case, mask: &str, splits: Option<u64>, kt: bool, softcap: f64) {
    let run = Direct { ty: ElemType::F16, mask, kt, softcap, gain: None };
    run.check(
        rng,
        c,
        |kernel| {
            kernel.engine = Engine::CoopEmulated;
            kernel.splits = splits;
        },
        |plan| {
            assert!(plan.contains("tensor cores (emulated)"), "{plan}");
            let want_splits = splits.unwrap_or(1);
            assert!(plan.contains(&format!("{want_splits} key split(s)")), "{plan}");
            // The plain kernel exactly where the problem is never causal (seqlens are causal
            // offsets), K/V rows come in whole chunks (not transposed) and scores are not capped.
            let plain = c.causal.is_none() && mask != "seqlens" && !kt && softcap == 0.0;
            assert_eq!(plan.contains(", plain ("), plain, "{plan}");
        },
    );
}

#[test]
fn emulated_tensor_core_kernel_against_f64() {
    let gpu = common::gpu();
    if coop::candidates(64, gpu.caps(), true, false).is_empty() {
        eprintln!("skipped: this adapter has no subgroups or shader-f16");
        return;
    }
    let mut rng = common::rng("emulated_tensor_core_kernel_against_f64");
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
        // Never causal with each mask and K/V in whole chunks (even cases): the plain kernels.
        (Case { b: 1, hq: 2, hkv: 1, sq: 29, skv: 53, d: 64, scale: 0.125, causal: None }, "add", None),
        (Case { b: 2, hq: 2, hkv: 1, sq: 17, skv: 66, d: 96, scale: 0.125, causal: None }, "bool", Some(2)),
        (Case { b: 1, hq: 2, hkv: 2, sq: 33, skv: 71, d: 64, scale: 0.125, causal: None }, "bool", None),
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

/// GroupQueryAttention's `seqlens_k` read by the flash kernels themselves (no mask): batch 0 sees
/// every key, the others stop short of the present length (a shared cache's tail of random keys,
/// which must not count) or fall below the queries (a padded prompt). Each engine: the emulated
/// tensor-core kernel (one and two key splits, and capped), the SIMT kernel, and split-KV decode
/// (one and three query rows), f16 and f32 where the engine runs them.
#[test]
fn seqlens_as_the_causal_offsets_against_f64() {
    let gpu = common::gpu();
    let mut rng = common::rng("seqlens_as_the_causal_offsets_against_f64");
    let case =
        |b, sq, skv, d: usize| Case { b, hq: 4, hkv: 2, sq, skv, d, scale: 1.0 / (d as f64).sqrt(), causal: None };
    if !coop::candidates(64, gpu.caps(), true, false).is_empty() {
        for (c, splits, softcap) in [(case(3, 37, 75, 64), None, 0.0), (case(2, 40, 150, 64), Some(2), 0.0)] {
            check_capped(&mut rng, &c, "seqlens", splits, false, softcap);
        }
        check_capped(&mut rng, &case(2, 33, 50, 128), "seqlens", None, true, 0.4);
    }
    for ty in [ElemType::F32, ElemType::F16] {
        let run = Direct { ty, mask: "seqlens", kt: false, softcap: 0.0, gain: None };
        let simt = |k: &mut ep_kernels::ops::attention::FlashKernel| k.engine = Engine::Simt;
        run.check(&mut rng, &case(3, 21, 70, 64), simt, |plan| assert!(plan.contains("mask seqlens"), "{plan}"));
        for sq in [1, 3] {
            let plan_ok = |plan: &str| assert!(plan.contains("split-KV") && plan.contains("mask seqlens"), "{plan}");
            run.check(&mut rng, &case(3, sq, 300, 64), |_| {}, plan_ok);
        }
    }
}

/// Gains for the split f32 cases: Q and K far from 1 (their scales undo each other in the
/// scores), and V growing 2^(j/48) along the keys, so the first keys' values sit far below the
/// largest, which sets V's scale (steeper growth makes the outputs cancellations of values far
/// larger than themselves, whose error f32's tolerance here does not cover).
fn far_from_one(which: usize, row: usize) -> f32 {
    match which {
        0 => 3.0e3,
        1 => 1.0 / 3.0e3,
        _ => (row as f32 / 48.0).exp2(),
    }
}

/// A factor on a tensor's values by (tensor, sequence position), as `Direct::gain` takes.
type Gain = fn(usize, usize) -> f32;

/// A split f32 case: the problem, mask, forced key splits, K stored transposed, gains.
type SplitCase = (Case, &'static str, Option<u64>, bool, Option<Gain>);

/// V tiny, Q large and K small beyond f16's range: only the scales keep them.
fn beyond_f16(which: usize, _row: usize) -> f32 {
    [1.0e6, 1.0e-6, 1.0e-9][which.min(2)]
}

/// f32 attention split in three f16 products (emulated, after its K/V maxima pass), against
/// float64 at f32's tolerance: masks, causal tiles, key splits, K stored transposed (element
/// loads), magnitudes f16 cannot hold, V growing along the keys, and rows whose max moves past
/// their reference.
#[test]
fn emulated_split_f32_kernel_against_f64() {
    let gpu = common::gpu();
    if coop::candidates(64, gpu.caps(), true, true).is_empty() {
        eprintln!("skipped: this adapter has no subgroups or shader-f16");
        return;
    }
    let mut rng = common::rng("emulated_split_f32_kernel_against_f64");
    let case = |sq, skv, scale, causal| Case { b: 1, hq: 2, hkv: 1, sq, skv, d: 64, scale, causal };
    let cases: [SplitCase; 7] = [
        (case(37, 75, 0.125, None), "none", None, false, None),
        (Case { b: 2, hq: 2, hkv: 2, sq: 19, skv: 41, d: 64, scale: 0.125, causal: None }, "add", Some(2), false, None),
        (case(50, 50, 0.125, Some(0)), "bool", None, true, None),
        (case(45, 45, 0.125, Some(0)), "none", Some(3), true, None),
        (case(40, 150, 0.125, None), "none", None, false, Some(far_from_one)),
        (case(33, 90, 0.125, None), "add", Some(2), true, Some(beyond_f16)),
        (case(40, 150, 4.0, None), "none", None, false, Some(far_from_one)),
    ];
    for (c, mask, splits, kt, gain) in cases {
        let run = Direct { ty: ElemType::F32, mask, kt, softcap: 0.0, gain };
        let configure = |kernel: &mut ep_kernels::ops::attention::FlashKernel| {
            kernel.engine = Engine::CoopEmulated;
            kernel.splits = splits;
        };
        let plain = c.causal.is_none() && !kt;
        run.check(&mut rng, &c, configure, |plan| {
            assert!(plan.contains("f32 split in three f16 products (emulated)"), "{plan}");
            if let Some(s) = splits {
                assert!(plan.contains(&format!("{s} key split(s)")), "{plan}");
            }
            assert_eq!(plan.contains(", plain ("), plain, "{plan}");
        });
    }
}

/// V infinite at key 7 (every element ±inf), other values in [-1, 1).
fn infinite_v(which: usize, row: usize) -> f32 {
    if which == 2 && row == 7 {
        f32::INFINITY
    } else {
        1.0
    }
}

/// An infinity in V reaches every output as in f32 (±inf, of its sign: every query gives that
/// key a probability far from 0), through the split products (V's parts and P's must not make
/// 0·inf or inf − inf); K's maxima pass skips it.
#[test]
fn emulated_split_f32_kernel_passes_infinities() {
    let gpu = common::gpu();
    if coop::candidates(64, gpu.caps(), true, true).is_empty() {
        eprintln!("skipped: this adapter has no subgroups or shader-f16");
        return;
    }
    let mut rng = common::rng("emulated_split_f32_kernel_passes_infinities");
    let c = Case { b: 1, hq: 2, hkv: 1, sq: 37, skv: 75, d: 64, scale: 0.125, causal: None };
    for splits in [None, Some(2)] {
        let run = Direct { ty: ElemType::F32, mask: "none", kt: false, softcap: 0.0, gain: Some(infinite_v) };
        let configure = |kernel: &mut ep_kernels::ops::attention::FlashKernel| {
            kernel.engine = Engine::CoopEmulated;
            kernel.splits = splits;
        };
        run.check(&mut rng, &c, configure, |plan| {
            assert!(plan.contains("f32 split in three f16 products (emulated)"), "{plan}");
        });
    }
}

/// The split f32 kernel with bounds on |K| and |V| known before the run (`graph/bounds.rs`) in
/// place of its maxima pass: bounds 100 times the largest magnitudes, on values f16 cannot hold
/// and on V growing along the keys, give the pass's accuracy against float64.
#[test]
fn emulated_split_f32_kernel_with_kv_bounds_against_f64() {
    let gpu = common::gpu();
    if coop::candidates(64, gpu.caps(), true, true).is_empty() {
        eprintln!("skipped: this adapter has no subgroups or shader-f16");
        return;
    }
    let mut rng = common::rng("emulated_split_f32_kernel_with_kv_bounds_against_f64");
    let case = |sq, skv| Case { b: 1, hq: 2, hkv: 1, sq, skv, d: 64, scale: 0.125, causal: None };
    let cases: [(Case, &str, Gain, [f32; 2]); 2] = [
        (case(33, 90), "add", beyond_f16, [1.0e-6, 1.0e-9]),
        (case(40, 150), "none", far_from_one, [1.0 / 3.0e3, (149.0f32 / 48.0).exp2()]),
    ];
    for (c, mask, gain, largest) in cases {
        let run = Direct { ty: ElemType::F32, mask, kt: false, softcap: 0.0, gain: Some(gain) };
        let configure = |kernel: &mut ep_kernels::ops::attention::FlashKernel| {
            kernel.engine = Engine::CoopEmulated;
            kernel.splits = Some(2);
            kernel.kv_bound = Some(largest.map(|x| x * 100.0));
        };
        run.check(&mut rng, &c, configure, |plan| {
            assert!(plan.contains("f32 split in three f16 products (emulated)"), "{plan}");
            assert!(plan.contains("K/V scales from their bounds"), "{plan}");
        });
    }
}
