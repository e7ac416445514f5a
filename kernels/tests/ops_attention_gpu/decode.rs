//! The split-KV decode kernels against float64: the per-K/V-head form (query heads sharing a K/V
//! head read it once, whole-row loads, chunks combined per row) at every block of query rows it
//! is generated for, with masks, causal rows and softcap; and the per-row form it leaves to K
//! stored transposed.

use super::direct::Direct;
use super::Case;
use crate::common;
use ep_kernels::ops::attention::decode::kv_lanes;
use ep_kernels::ops::attention::kernel::Causal;
use ep_kernels::ElemType;

fn case(hq: usize, hkv: usize, sq: usize, skv: usize, d: usize, causal: Option<i64>) -> Case {
    Case { b: 2, hq, hkv, sq, skv, d, scale: 1.0 / (d as f64).sqrt(), causal }
}

/// The test adapter where it runs the K/V-head kernel (it needs subgroups), else `None`, said.
fn kv_adapter() -> Option<std::sync::Arc<ep_kernels::runtime::Gpu>> {
    let gpu = common::gpu();
    if kv_lanes(ElemType::F32, 64, gpu.caps()).is_none() {
        eprintln!("skipped: this adapter has no subgroups");
        return None;
    }
    Some(gpu)
}

#[test]
fn per_kv_head_decode_against_f64() {
    let Some(gpu) = kv_adapter() else { return };
    let mut rng = common::rng("per_kv_head_decode_against_f64");
    // (case, mask, softcap): query rows per K/V head 1, 2, 3 (a block of 4), 4, 8 and 16 (two
    // blocks); key counts no multiple of a step, and long enough for many chunks (the per-row
    // combine) or a few (the per-element reduction).
    let cases = [
        (case(4, 1, 1, 1000, 128, None), "none", 0.0),
        (case(2, 1, 1, 77, 64, None), "add", 0.0),
        (case(3, 3, 3, 700, 64, Some(0)), "add", 0.0),
        (case(8, 2, 1, 333, 256, None), "bool", 0.0),
        (case(8, 1, 1, 2049, 128, None), "none", 0.5),
        (case(8, 1, 2, 515, 64, Some(513)), "none", 0.0),
        (case(4, 2, 4, 64, 128, Some(60)), "bool", 0.0),
        (case(1, 1, 1, 5, 64, None), "none", 0.0),
    ];
    // Where an invocation would hold too much of a row (head size 256 on a small subgroup), the
    // per-row kernel runs it.
    check_cases(&cases, None, |ty, c, plan| {
        let per_kv = kv_lanes(ty, c.d as u64, gpu.caps()).is_some();
        assert!(plan.contains("split-KV") && plan.contains("per K/V head") == per_kv, "{plan}")
    });
    for ty in [ElemType::F32, ElemType::F16] {
        // K stored transposed: its rows are no whole chunks, so the per-row kernel runs it.
        let run = Direct { ty, mask: "add", kt: true, softcap: 0.0, gain: None };
        let c = case(4, 2, 1, 300, 64, None);
        run.check(
            &mut rng,
            &c,
            |_| {},
            |plan| assert!(plan.contains("split-KV") && !plan.contains("per K/V head"), "{plan}"),
        );
    }
}

/// The kernel's last workgroup of each row block combines the chunks (`attn_decode_last`) where
/// each invocation's share takes few rounds of loads, else a combine dispatch follows: forced
/// chunk counts on each side, one and two row blocks, causal rows (Sq = 2, their keys last).
/// Each step runs twice (`Direct::check`), so a chunk counter left behind fails the second run.
#[test]
fn chunks_combined_by_the_last_workgroup_or_a_dispatch() {
    if kv_adapter().is_none() {
        return;
    }
    let mut rng = common::rng("chunks_combined_by_the_last_workgroup_or_a_dispatch");
    // (case, forced chunks, combined by the last workgroup)
    let cases = [
        (case(4, 1, 1, 2000, 128, None), 8, true),
        (case(4, 1, 1, 2000, 128, None), 31, true),
        (case(4, 1, 1, 8000, 128, None), 60, false),
        (case(8, 1, 2, 1500, 64, Some(1498)), 20, true),
        (case(8, 1, 2, 1500, 128, Some(1498)), 40, false),
        (case(2, 2, 1, 900, 64, None), 1, true),
    ];
    for ty in [ElemType::F32, ElemType::F16] {
        for (c, splits, last) in &cases {
            let run = Direct { ty, mask: "none", kt: false, softcap: 0.0, gain: None };
            let configure = |k: &mut ep_kernels::ops::attention::FlashKernel| {
                k.splits = Some(*splits);
                if c.causal.is_some() {
                    k.causal = Causal::BottomRight;
                }
            };
            run.check(&mut rng, c, configure, |plan| {
                assert!(plan.contains("per K/V head") && plan.contains("combined by the last") == *last, "{plan}")
            });
        }
    }
}

/// Fewer lanes per key row than a subgroup holds (forced): a subgroup's key groups merge by
/// shuffles before the subgroups meet in workgroup memory, several query rows per pass. Few keys
/// leave most key groups empty (their maxima are -inf when merged).
#[test]
fn key_groups_merged_by_subgroup_shuffles_against_f64() {
    let gpu = common::gpu();
    let lanes = 4;
    if kv_lanes(ElemType::F32, 64, gpu.caps()).is_none() || gpu.caps().subgroup_min_size < 2 * lanes {
        eprintln!("skipped: this adapter's subgroups hold no two key groups of {lanes} lanes");
        return;
    }
    let cases = [
        (case(3, 1, 1, 300, 64, None), "none", 0.0),
        (case(8, 2, 1, 5, 64, None), "bool", 0.0),
        (case(8, 1, 1, 1031, 64, None), "add", 0.5),
        (case(4, 2, 2, 70, 64, Some(68)), "none", 0.0),
        (case(2, 2, 1, 1, 64, None), "none", 0.0),
    ];
    check_cases(&cases, Some(lanes), |_, _, plan| assert!(plan.contains("per K/V head"), "{plan}"));
}

/// Each case in f32 and f16 against float64, `lanes` forced where given; `check_plan` sees each
/// plan line. Causal rows with an offset put the queries last among the keys (GroupQueryAttention's).
fn check_cases(cases: &[(Case, &str, f64)], lanes: Option<u32>, check_plan: impl Fn(ElemType, &Case, &str)) {
    let mut rng = common::rng("check_cases");
    for ty in [ElemType::F32, ElemType::F16] {
        for (c, mask, softcap) in cases {
            let run = Direct { ty, mask, kt: false, softcap: *softcap, gain: None };
            let bottom_right = c.causal.is_some_and(|o| o > 0);
            let configure = |k: &mut ep_kernels::ops::attention::FlashKernel| {
                k.lanes = lanes;
                if bottom_right {
                    k.causal = Causal::BottomRight;
                }
            };
            run.check(&mut rng, c, configure, |plan| check_plan(ty, c, plan));
        }
    }
}

/// Few steps over the keys: one workgroup per query row reads every key and writes the output
/// itself (the wide form: no chunks, no partials, no combine). Masks, causal rows of two query
/// tokens (their keys last), grouped heads, one key, and key counts just past a step; a longer
/// cache takes the chunks again. Each step runs twice (`Direct::check`).
#[test]
fn short_caches_run_one_workgroup_per_query_row_against_f64() {
    if kv_adapter().is_none() {
        return;
    }
    // (case, mask, softcap, wide)
    let cases = [
        (case(8, 2, 1, 513, 64, None), "none", 0.0, true),
        (case(4, 1, 1, 1, 64, None), "add", 0.0, true),
        (case(6, 3, 2, 129, 128, Some(127)), "bool", 0.0, true),
        (case(4, 4, 1, 300, 64, None), "none", 0.5, true),
        (case(4, 1, 1, 9000, 64, None), "none", 0.0, false),
    ];
    let mut rng = common::rng("short_caches_run_one_workgroup_per_query_row_against_f64");
    for ty in [ElemType::F32, ElemType::F16] {
        for (c, mask, softcap, wide) in &cases {
            let run = Direct { ty, mask, kt: false, softcap: *softcap, gain: None };
            let bottom_right = c.causal.is_some_and(|o| o > 0);
            let configure = |k: &mut ep_kernels::ops::attention::FlashKernel| {
                if bottom_right {
                    k.causal = Causal::BottomRight;
                }
            };
            run.check(&mut rng, c, configure, |plan| {
                assert!(plan.contains("per K/V head"), "{plan}");
                assert_eq!(plan.contains("one workgroup of"), *wide, "{plan}");
            });
        }
    }
}
