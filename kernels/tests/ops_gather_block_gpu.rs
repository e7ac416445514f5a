//! GatherBlockQuantized through the program builder and executor on the test adapter, against a
//! float64 reference of ONNX Runtime's CPU kernel on fresh random tables: 2, 4 and 8 bits, block
//! sizes 16..256 (a last block cut short), zero points absent or packed, int32 and int64
//! indices (negative ones too), rank 2 and 3 tables, f32 and f16 scales. An index out of range
//! fails the run; axes, types and attributes the kernel cannot run are declined with a reason.
mod common;

use common::graph::{node, run_graph, val, T};
use ep_kernels::caps::profiles;
use ep_kernels::graph::{Attr, Node, PlacementOptions};
use ep_kernels::ElemType;
use rand::Rng;

struct Case {
    /// data's leading axes (the gathered one first); the last is `k` values.
    table: Vec<u64>,
    k: u64,
    bits: u32,
    block: u64,
    zp: bool,
    i64: bool,
}

/// `bits`-bit values packed low bits first, each row starting at a byte.
fn pack_rows(values: &[u8], row: usize, bits: u32) -> Vec<u8> {
    let per = (8 / bits) as usize;
    let pack = |c: &[u8]| c.iter().enumerate().fold(0u8, |byte, (i, &v)| byte | (v << (bits as usize * i)));
    values.chunks(row).flat_map(|r| r.chunks(per).map(pack).collect::<Vec<_>>()).collect()
}

/// The node over `[data, ids, scales, zero points]` (the last optional), its output of `ty`.
fn gbq_node(ty: ElemType, operands: [Option<&T>; 4], bits: u32, block: u64, out: &[u64]) -> Node {
    let inputs = operands.iter().zip(["data", "ids", "s", "zp"]).map(|(t, name)| t.map(|t| val(name, t.ty, &t.shape)));
    let inputs: Vec<_> = inputs.collect();
    let data = operands[0].expect("data");
    let attrs = vec![
        ("bits", Attr::Int(i64::from(bits))),
        ("block_size", Attr::Int(block as i64)),
        ("gather_axis", Attr::Int(0)),
        ("quantize_axis", Attr::Int(data.shape.len() as i64 - 1)),
    ];
    let mut nd = node("GatherBlockQuantized", 1, inputs, vec![val("y", ty, out)], attrs);
    nd.domain = "com.microsoft".into();
    nd
}

fn check(test: &str, ty: ElemType, c: &Case) {
    let mut rng = common::rng(test);
    let per = u64::from(8 / c.bits);
    let (vocab, rows) = (c.table[0], c.table.iter().product::<u64>());
    let kb = c.k.div_ceil(c.block);
    let levels = 1u32 << c.bits;
    let q: Vec<u8> = (0..rows * c.k).map(|_| rng.random_range(0..levels) as u8).collect();
    let zq: Vec<u8> = (0..rows * kb).map(|_| rng.random_range(0..levels) as u8).collect();
    let sv: Vec<f32> = (0..rows * kb).map(|_| rng.random_range(0.01f32..0.1)).collect();
    let lead = |last: u64| c.table.iter().copied().chain([last]).collect::<Vec<u64>>();
    let data = T::u8(&lead(c.k / per), &pack_rows(&q, c.k as usize, c.bits));
    let scales = if ty == ElemType::F16 { T::f16(&lead(kb), &sv) } else { T::f32(&lead(kb), &sv) };
    let zp = T::u8(&lead(kb.div_ceil(per)), &pack_rows(&zq, kb as usize, c.bits));
    let ids: Vec<i64> = (0..14).map(|_| rng.random_range(-(vocab as i64)..vocab as i64)).collect();
    let ids =
        if c.i64 { T::i64(&[2, 7], &ids) } else { T::i32(&[2, 7], &ids.iter().map(|&i| i as i32).collect::<Vec<_>>()) };
    let (s, per_index) = (scales.values(), rows / vocab);
    let mut want = Vec::new();
    for &i in &ids.values() {
        let v = (i as i64).rem_euclid(vocab as i64) as u64;
        for row in v * per_index..(v + 1) * per_index {
            for k in 0..c.k {
                let b = (row * kb + k / c.block) as usize;
                let z = if c.zp { f64::from(zq[b]) } else { f64::from(levels / 2) };
                want.push((f64::from(q[(row * c.k + k) as usize]) - z) * s[b]);
            }
        }
    }
    let out: Vec<u64> = [2, 7].into_iter().chain(c.table[1..].iter().copied()).chain([c.k]).collect();
    let nd = gbq_node(ty, [Some(&data), Some(&ids), Some(&scales), c.zp.then_some(&zp)], c.bits, c.block, &out);
    let opts = PlacementOptions::defaults(profiles::get("llvmpipe").unwrap());
    ep_kernels::ops::lookup(&nd).expect("registered").check(&nd, &opts).expect("claimed");
    let mut consts = vec![("data", &data), ("s", &scales)];
    if c.zp {
        consts.push(("zp", &zp));
    }
    let got = run_graph(&[nd], &[("ids", &ids)], &consts, &["y"]).expect("runs").remove(0);
    assert_eq!(got.shape, out, "{test}");
    let tol = if ty == ElemType::F16 { 1e-3 } else { 1e-6 };
    for (i, (g, w)) in got.values().iter().zip(&want).enumerate() {
        assert!((g - w).abs() <= tol * w.abs().max(0.1), "{test}: element {i}: got {g}, want {w}");
    }
}

fn cases() -> Vec<Case> {
    let c = |table: &[u64], k, bits, block, zp, i64| Case { table: table.to_vec(), k, bits, block, zp, i64 };
    vec![
        c(&[67], 80, 4, 16, true, true),
        c(&[67], 80, 4, 32, false, false),
        c(&[33], 200, 4, 64, true, false),
        c(&[19], 300, 4, 256, false, true),
        c(&[19], 96, 4, 128, true, true),
        c(&[41], 72, 8, 16, true, false),
        c(&[41], 72, 8, 32, false, true),
        c(&[23], 40, 2, 16, true, true),
        c(&[5, 3], 48, 4, 16, true, true),
    ]
}

#[test]
fn gather_block_quantized_f32() {
    for (i, c) in cases().iter().enumerate() {
        check(&format!("gather_block_quantized_f32 case {i}"), ElemType::F32, c);
    }
}

#[test]
fn gather_block_quantized_f16() {
    if !common::gpu().caps().shader_f16 {
        eprintln!("skipped: no shader-f16");
        return;
    }
    for (i, c) in cases().iter().enumerate() {
        check(&format!("gather_block_quantized_f16 case {i}"), ElemType::F16, c);
    }
}

#[test]
fn an_index_out_of_range_fails_the_run() {
    let (data, scales) = (T::u8(&[5, 8], &[0x98; 40]), T::f32(&[5, 1], &[0.5; 5]));
    for bad in [5i64, -6, 1 << 40] {
        let ids = T::i64(&[2], &[1, bad]);
        let nd = gbq_node(ElemType::F32, [Some(&data), Some(&ids), Some(&scales), None], 4, 16, &[2, 16]);
        let err = run_graph(&[nd], &[("ids", &ids)], &[("data", &data), ("s", &scales)], &["y"]).unwrap_err();
        assert!(err.contains("GatherBlockQuantized") && err.contains("out of range"), "{err}");
    }
    let ids = T::i64(&[2], &[1, -5]);
    let nd = gbq_node(ElemType::F32, [Some(&data), Some(&ids), Some(&scales), None], 4, 16, &[2, 16]);
    let got = run_graph(&[nd], &[("ids", &ids)], &[("data", &data), ("s", &scales)], &["y"]).unwrap().remove(0);
    assert_eq!(got.values()[..2], [0.0, 0.5]);
}

#[test]
fn what_cannot_run_is_declined_with_a_reason() {
    let opts = PlacementOptions::defaults(profiles::get("llvmpipe").unwrap());
    let (data, ids, scales) = (T::u8(&[6, 32], &[0; 192]), T::i64(&[3], &[0; 3]), T::f32(&[6, 4], &[1.0; 24]));
    let base = || gbq_node(ElemType::F32, [Some(&data), Some(&ids), Some(&scales), None], 4, 16, &[3, 64]);
    let reason = |nd: &Node| ep_kernels::ops::lookup(nd).unwrap().check(nd, &opts).unwrap_err();
    for (attr, value, needle) in [
        ("bits", 3, "bits=3"),
        ("block_size", 8, "block_size=8"),
        ("gather_axis", 1, "gather_axis=1"),
        ("quantize_axis", 0, "quantize_axis=0"),
    ] {
        let mut nd = base();
        nd.attrs.insert(attr.into(), Attr::Int(value));
        assert!(reason(&nd).contains(needle), "{attr}: {}", reason(&nd));
    }
    let mut int4 = base();
    int4.inputs[0].as_mut().unwrap().elem_type = 22;
    assert!(reason(&int4).contains("uint8"), "{}", reason(&int4));
    let mut scales_mismatch = base();
    scales_mismatch.inputs[2] = Some(val("s", ElemType::F32, &[6, 3]));
    assert!(reason(&scales_mismatch).contains("scales"), "{}", reason(&scales_mismatch));
}
