//! Unit tests of the tensor-core flash kernel's planning and rendering (`coop.rs`).

use super::*;
use crate::caps::profiles;

#[test]
fn uniforms_match_the_template() {
    assert_eq!(std::mem::size_of::<CoopParams>(), 144);
}

#[test]
fn only_capped_variants_carry_the_capping_code() {
    let source = |softcap| CoopSource {
        d: 64,
        nsg: 4,
        bc: 64,
        mask: MaskKind::Bool,
        emulate: false,
        split: false,
        softcap,
        x3: false,
        plain: false,
    };
    let (plain, capped) = (source(false).emit().unwrap(), source(true).emit().unwrap());
    assert!(!plain.contains("capped(sr["), "an uncapped kernel compiles the capping block");
    assert_eq!(capped.matches("capped(sr[").count(), 32, "one capped score per column an invocation holds");
    assert!(source(true).name().ends_with("_mask_bool_cap"));
    // GroupQueryAttention's mask is the boolean one: its capped kernels have goldens.
    let h200 = profiles::get("h200").unwrap();
    let names: Vec<String> = variants(&h200).iter().map(|v| v.name()).collect();
    assert!(names.iter().any(|n| n == "attn_coop_f16_d64_64x64_mask_bool_cap_split"), "{names:?}");
}

#[test]
fn splits_fill_the_device_in_whole_tiles() {
    let h200 = profiles::get("h200").unwrap();
    // Whisper-tiny: 6 heads × 24 query tiles over 1500 keys: 2 splits of 768.
    assert_eq!(plan_splits(144, 1500, 4, 64, &h200), (2, 768));
    // Eight subgroups a workgroup: half as many workgroups fill the device.
    assert_eq!(plan_splits(256, 4096, 8, 32, &h200), (1, 4096));
    assert_eq!(plan_splits(72, 1500, 8, 32, &h200), (2, 768));
    // Many query tiles: no split.
    assert_eq!(plan_splits(2048, 4096, 4, 64, &h200), (1, 4096));
    // Few keys: no split shorter than 4 tiles.
    assert_eq!(plan_splits(8, 200, 4, 64, &h200), (1, 256));
    assert_eq!(plan_splits(1, 100_000, 4, 32, &h200).0, 261);
}

#[test]
fn prefetched_tiles_render_and_validate() {
    // (d, nsg, bc, x3, emulate, prefetches)
    for (d, nsg, bc, x3, emulate, want) in [
        (64, 8, 32, false, false, true),
        (64, 4, 64, false, false, false),
        (128, 8, 32, false, false, false),
        (64, 4, 32, true, false, false),
        (64, 2, 32, false, true, true),
        (128, 2, 16, false, true, true),
        (64, 2, 16, true, true, false),
    ] {
        for mask in [MaskKind::None, MaskKind::Add] {
            let source = CoopSource { d, nsg, bc, mask, emulate, split: true, softcap: false, x3, plain: false };
            let text = source.emit().unwrap();
            let (module, info) =
                crate::shader::validate_with_info(&text, source.capabilities()).unwrap_or_else(|e| panic!("{e}"));
            naga::back::spv::write_vec(&module, &info, &Default::default(), None).unwrap();
            assert_eq!(text.contains("fn fetch_kv"), want, "{}", source.name());
        }
    }
}

#[test]
fn plain_kernels_leave_out_the_element_wise_staging_and_the_causal_paths() {
    // Whisper's kernels, f16 both prefetching and not and split f32, on tensor cores and emulated.
    for (nsg, bc, emulate, x3) in
        [(8, 32, false, false), (4, 64, false, false), (2, 32, true, false), (4, 32, false, true), (2, 16, true, true)]
    {
        for mask in [MaskKind::None, MaskKind::Add, MaskKind::Bool] {
            let source = |plain| CoopSource { d: 64, nsg, bc, mask, emulate, split: true, softcap: false, x3, plain };
            let (full, plain) = (source(false), source(true));
            let text = plain.emit().unwrap();
            let (module, info) =
                crate::shader::validate_with_info(&text, plain.capabilities()).unwrap_or_else(|e| panic!("{e}"));
            naga::back::spv::write_vec(&module, &info, &Default::default(), None).unwrap();
            assert!(!text.contains("p.causal") && !text.contains("p.vec_kv"), "{}", plain.name());
            assert!(!text.contains("k_at(k_base"), "{}: element-wise staging left in", plain.name());
            let full_text = full.emit().unwrap();
            assert!(full_text.contains("p.causal != 0u") && full_text.contains("p.vec_kv != 0u"), "{}", full.name());
            assert_eq!(plain.name(), format!("{}", full.name().replace("_split", "_plain_split")));
        }
    }
    // Only problems that are never causal, with whole-chunk K/V, unmasked by seqlens and uncapped.
    assert!(plain_fits(MaskKind::None, false, false, true));
    assert!(!plain_fits(MaskKind::None, false, true, true), "causal");
    assert!(!plain_fits(MaskKind::None, false, false, false), "strided K/V rows");
    assert!(!plain_fits(MaskKind::Bool, true, false, true), "capped");
    assert!(!plain_fits(MaskKind::SeqLens, false, false, true), "seqlens");
    // Every plain tiling has its variant (goldens).
    let h200 = profiles::get("h200").unwrap();
    let names: Vec<String> = variants(&h200).iter().map(|v| v.name()).collect();
    assert!(names.iter().any(|n| n == "attn_coop_f16_d64_128x32_mask_none_plain_split"), "{names:?}");
    assert!(names.iter().any(|n| n == "attn_coop_f32x3_d64_64x32_mask_none_plain_split"), "{names:?}");
    assert!(!names.iter().any(|n| n.contains("_cap_plain") || n.contains("seqlens_plain")), "{names:?}");
}

#[test]
fn q_staged_in_rounds_renders_and_validates() {
    // 128 query rows over 32-key tiles: Q passes through the K/V area (64 rows) in two rounds,
    // with a 32-column scratch (46 KB at head size 128).
    for d in [64, 96, 128] {
        for mask in [MaskKind::None, MaskKind::SeqLens] {
            let source = CoopSource {
                d,
                nsg: 8,
                bc: 32,
                mask,
                emulate: false,
                split: true,
                softcap: false,
                x3: false,
                plain: false,
            };
            let text = source.emit().unwrap();
            let (module, info) =
                crate::shader::validate_with_info(&text, source.capabilities()).unwrap_or_else(|e| panic!("{e}"));
            naga::back::spv::write_vec(&module, &info, &Default::default(), None).unwrap();
            assert_eq!(text.matches("qf0 = coopLoadT").count(), 2, "one load of each fragment per round");
        }
    }
    assert_eq!(storage_bytes(8, 32, 128, false, false), 46080);
    assert_eq!((q_rounds(8, 32), chunk_width(8, 32), chunk_width(4, 32)), (2, 32, CHUNK));
    assert!(!holds_q(8, 32, true, false) && !holds_q(8, 32, false, true) && holds_q(8, 32, false, false));
}

#[test]
fn tilings_fit_the_device() {
    let h200 = profiles::get("h200").unwrap();
    let llvmpipe = profiles::get("llvmpipe").unwrap();
    // Eight subgroups where their query tiles fill the H200 (132 workgroups), or half of it at
    // head size 64 (the prefetching tiling), else four.
    let tiles = |heads: u64, sq: u64| move |rows: u64| heads * sq.div_ceil(rows);
    assert_eq!(candidates(64, &h200, false, false), vec![(8, 32), (4, 64)]);
    assert_eq!(plan(64, &h200, false, false, tiles(8, 4096)), Some((8, 32)));
    assert_eq!(plan(64, &h200, false, false, tiles(6, 1500)), Some((8, 32)), "Whisper-tiny: 72 tiles");
    assert_eq!(plan(64, &h200, false, false, tiles(12, 128)), Some((4, 64)), "BERT-base s128: 12 tiles");
    assert_eq!(plan(80, &h200, false, false, tiles(6, 1500)), Some((4, 64)), "no prefetch at 80");
    assert_eq!(plan(80, &h200, false, false, tiles(32, 1024)), Some((8, 32)));
    assert_eq!(candidates(80, &h200, false, false), vec![(8, 32), (4, 64)]);
    assert_eq!(candidates(96, &h200, false, false), vec![(8, 32), (4, 32)]);
    assert_eq!(candidates(128, &h200, false, false), vec![(8, 32), (4, 32)]);
    assert_eq!(plan(128, &h200, false, false, tiles(8, 512)), Some((4, 32)));
    assert!(candidates(72, &h200, false, false).is_empty());
    assert!(candidates(256, &h200, false, false).is_empty());
    assert!(candidates(64, &llvmpipe, false, false).is_empty());
    assert_eq!(candidates(64, &llvmpipe, true, false), vec![(2, 32)]);
    assert_eq!(candidates(128, &llvmpipe, true, false), vec![(2, 16)]);
    for d in HEAD_SIZES {
        for caps in [&h200, &llvmpipe] {
            for (x3, emulate) in [(false, false), (true, false), (false, true), (true, true)] {
                for (nsg, bc) in candidates(d, caps, emulate, x3) {
                    assert!(storage_bytes(nsg, bc, d as u32, emulate, x3) <= caps.max_workgroup_storage_bytes);
                }
            }
        }
    }
    // The split f32 form: head size 64 only, four subgroups over 32 keys (46 KB).
    assert_eq!(candidates(64, &h200, false, true), vec![(4, 32)]);
    assert_eq!(storage_bytes(4, 32, 64, false, true), 46592);
    assert!(candidates(128, &h200, false, true).is_empty());
    assert_eq!(candidates(64, &llvmpipe, true, true), vec![(2, 16)]);
    for (nsg, bc) in [(4, 32), (4, 64), (8, 32), (2, 16)] {
        assert_eq!(row_words(nsg, bc) % 32, 4);
    }
}

/// The tensor-core attention compiles without wgpu's loop-bounding counter (index clamps and
/// division guards stay), which `CoopSource::loops_terminate` rests on: every loop of every
/// rendered variant is a `for` whose variable only grows, by a positive constant step or one,
/// up to a `<` bound, and none is a `loop` or `while`.
#[test]
fn every_loop_ends_so_only_the_loop_counter_is_left_out() {
    let kept = crate::runtime::KeptChecks { bounds: true, loop_bounding: false, int_div: true };
    let mut rendered = 0;
    for (profile, caps) in profiles::all() {
        for v in variants(&caps).into_iter().filter(|v| v.name().starts_with("attn_coop_")) {
            assert_eq!(v.kept_checks(), Some(kept), "{profile}: {}", v.name());
            let text = v.emit().unwrap();
            assert!(!text.contains("loop {") && !text.contains("while"), "{}", v.name());
            for line in text.lines().filter(|l| l.contains("for (")) {
                assert!(grows_to_a_bound(line), "{}: a loop that may not end: {line}", v.name());
            }
            rendered += 1;
        }
    }
    assert!(rendered > 100, "{rendered}");
    // The check itself tells the loops apart.
    assert!(grows_to_a_bound("    for (var k0 = k_begin; k0 < k_end; k0 = k0 + BC) {"));
    assert!(grows_to_a_bound("for (var e = 0u; e < 8u; e++) {"));
    for bad in [
        "for (var off = L; off < n; off = off * 2u) {",
        "for (var i = n; i > 0u; i = i - 1u) {",
        "for (var i = 0u; i < n; i = i + step) {",
        "for (var i = 0u; i < n; i = i + 0u) {",
        "for (var i = 0u; j < n; i = i + 1u) {",
    ] {
        assert!(!grows_to_a_bound(bad), "{bad}");
    }
}

/// `for (var i = a; i < b; i = i + s)` (or `i++`) with `s` a positive literal or constant.
fn grows_to_a_bound(line: &str) -> bool {
    let Some(head) = line.trim().strip_prefix("for (var ").and_then(|r| r.strip_suffix(") {")) else {
        return false;
    };
    let parts: Vec<&str> = head.split(';').map(str::trim).collect();
    let [init, cond, step] = parts[..] else { return false };
    let Some((var, _)) = init.split_once(" = ") else { return false };
    let constant = |s: &str| {
        let s = s.strip_suffix('u').unwrap_or(s);
        s.parse::<u32>().is_ok_and(|n| n > 0) || s.chars().all(|c| c.is_ascii_uppercase() || c == '_')
    };
    let step_ok = step == format!("{var}++") || step.strip_prefix(&format!("{var} = {var} + ")).is_some_and(constant);
    cond.starts_with(&format!("{var} < ")) && step_ok
}

/// Only the tensor-core attention drops the loop counter: every other variant a device can
/// reach keeps all of wgpu's checks or, where it guards every access itself, none.
#[test]
fn no_other_variant_leaves_out_only_the_loop_counter() {
    let mut seen = (0, 0, 0);
    for (profile, caps) in profiles::all() {
        for (name, v) in crate::variants::reachable_variants(&caps) {
            let kept = v.kept_checks();
            if name.starts_with("attn_coop_") {
                seen.0 += 1;
            } else if v.guards_every_access() {
                assert_eq!(kept, Some(crate::runtime::KeptChecks::default()), "{profile}: {name}");
                seen.1 += 1;
            } else {
                assert_eq!(kept, None, "{profile}: {name}");
                seen.2 += 1;
            }
        }
    }
    assert!(seen.0 > 0 && seen.1 > 0 && seen.2 > 0, "{seen:?}");
}
