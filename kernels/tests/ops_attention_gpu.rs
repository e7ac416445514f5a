//! Flash attention on the test adapter against a float64 reference on fresh random data: ONNX
//! `Attention` (4-D and packed 3-D, causal, boolean and additive masks, grouped-query heads) and
//! the exported `MatMul → scale → Add → Softmax → MatMul` pattern (both K layouts), at sequence
//! lengths that are no tile multiple, with the executor's allocation record showing no Sq×Skv buffer.
mod common;
#[path = "ops_attention_gpu/coop.rs"]
mod coop;
#[path = "ops_attention_gpu/decode.rs"]
mod decode;
#[path = "ops_attention_gpu/direct.rs"]
mod direct;
#[path = "ops_attention_gpu/packed.rs"]
mod packed;

use common::graph::{const_val, node, val, T};
use ep_kernels::graph::{build_program_with, Attr, Constant, ExecOptions, Executable, FlashMode, HostTensor, Node};
use ep_kernels::ElemType;
use rand::Rng;

fn random(rng: &mut impl Rng, ty: ElemType, shape: &[u64]) -> T {
    let n: u64 = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    if ty == ElemType::F16 {
        T::f16(shape, &v)
    } else {
        T::f32(shape, &v)
    }
}

/// The problem in logical (batch, head, seq, dim) form, with its reference.
struct Case {
    b: usize,
    hq: usize,
    hkv: usize,
    sq: usize,
    skv: usize,
    d: usize,
    scale: f64,
    /// Query i sees key j when j ≤ i + offset.
    causal: Option<i64>,
}

impl Case {
    /// O[b, h, i, :] from Q, K, V in [B, H, S, D] order and a mask over [B, H, Sq, Skv]
    /// (`Some(bias)`, -inf excludes).
    fn reference(&self, q: &[f64], k: &[f64], v: &[f64], mask: &dyn Fn(usize, usize, usize, usize) -> f64) -> Vec<f64> {
        self.reference_capped(0.0, q, k, v, mask)
    }

    /// The same with the scaled scores capped to `softcap · tanh(s / softcap)` before the mask
    /// (GroupQueryAttention's `softcap`; 0: none).
    /// Per output element, the size of its row's scores: scale · max over keys of
    /// √(Σ_d (q_d·k_d)²), the spread of a score's rounding error when each product term errs
    /// independently.
    fn score_sizes(&self, q: &[f64], k: &[f64]) -> Vec<f64> {
        let (d, sq, skv) = (self.d, self.sq, self.skv);
        let mut out = Vec::with_capacity(self.b * self.hq * sq * d);
        for b in 0..self.b {
            for h in 0..self.hq {
                let kh = h / (self.hq / self.hkv);
                for i in 0..sq {
                    let qrow = &q[((b * self.hq + h) * sq + i) * d..][..d];
                    let size = (0..skv)
                        .map(|j| {
                            let krow = &k[((b * self.hkv + kh) * skv + j) * d..][..d];
                            qrow.iter().zip(krow).map(|(a, b)| (a * b).powi(2)).sum::<f64>().sqrt()
                        })
                        .fold(0.0, f64::max);
                    out.extend(std::iter::repeat_n(size * self.scale.abs(), d));
                }
            }
        }
        out
    }

    fn reference_capped(
        &self,
        softcap: f64,
        q: &[f64],
        k: &[f64],
        v: &[f64],
        mask: &dyn Fn(usize, usize, usize, usize) -> f64,
    ) -> Vec<f64> {
        let (d, sq, skv) = (self.d, self.sq, self.skv);
        let cap = |x: f64| if softcap > 0.0 { softcap * (x / softcap).tanh() } else { x };
        let mut out = vec![0.0; self.b * self.hq * sq * d];
        for b in 0..self.b {
            for h in 0..self.hq {
                let kh = h / (self.hq / self.hkv);
                for i in 0..sq {
                    let qrow = &q[((b * self.hq + h) * sq + i) * d..][..d];
                    let mut s: Vec<f64> = (0..skv)
                        .map(|j| {
                            let krow = &k[((b * self.hkv + kh) * skv + j) * d..][..d];
                            let dot: f64 = qrow.iter().zip(krow).map(|(a, b)| a * b).sum();
                            let seen = self.causal.is_none_or(|off| j as i64 <= i as i64 + off);
                            if seen {
                                cap(dot * self.scale) + mask(b, h, i, j)
                            } else {
                                f64::NEG_INFINITY
                            }
                        })
                        .collect();
                    let m = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    s.iter_mut().for_each(|x| *x = (*x - m).exp());
                    let sum: f64 = s.iter().sum();
                    for (j, p) in s.iter().enumerate() {
                        let vrow = &v[((b * self.hkv + kh) * skv + j) * d..][..d];
                        for c in 0..d {
                            out[((b * self.hq + h) * sq + i) * d + c] += p / sum * vrow[c];
                        }
                    }
                }
            }
        }
        out
    }
}

/// Runs `nodes` and returns the outputs, the steps' op types and the allocation record.
fn run(nodes: &[Node], inputs: &[(&str, &T)], output: &str, out_ty: ElemType) -> (T, Vec<String>, Vec<(String, u64)>) {
    run_with(nodes, inputs, &[], output, out_ty)
}

fn run_with(
    nodes: &[Node],
    inputs: &[(&str, &T)],
    constants: &[(&str, &T)],
    output: &str,
    out_ty: ElemType,
) -> (T, Vec<String>, Vec<(String, u64)>) {
    let names: Vec<String> = inputs.iter().map(|(n, _)| n.to_string()).collect();
    let consts = constants
        .iter()
        .map(|(n, t)| Constant { name: n.to_string(), dtype: t.ty, shape: t.shape.clone(), data: t.data.clone() })
        .collect();
    let program = build_program_with(nodes, &names, &[output.to_string()], consts, FlashMode::All).unwrap();
    let ops = program.steps.iter().map(|s| s.ops.clone()).collect();
    let exec = Executable::new(common::gpu(), program, ExecOptions::default()).unwrap();
    let host: Vec<HostTensor> =
        inputs.iter().map(|(_, t)| HostTensor { dtype: t.ty, shape: &t.shape, data: &t.data }).collect();
    let mut got = None;
    exec.run(&host, &mut |_, shape, bytes| {
        got = Some(T { ty: out_ty, shape: shape.to_vec(), data: bytes.to_vec() });
        Ok(())
    })
    .unwrap();
    (got.unwrap(), ops, exec.allocations(&host))
}

fn assert_close(what: &str, got: &[f64], want: &[f64], ty: ElemType) {
    let (atol, rtol) = if ty == ElemType::F16 { (2e-3, 5e-3) } else { (2e-5, 1e-4) };
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= atol + rtol * w.abs(), "{what}: element {i}: got {g}, want {w}");
    }
}

/// [`assert_close`], where f32 outputs may also err by 4e-6 of the magnitude of the terms they
/// sum (`terms`: Σ p·|v|): a cancellation of large values keeps f32's error of those values.
/// And a score off by δ moves each p by δ·p: the split f32 kernels carry each operand to about
/// 2^-21, so a row whose scores have size S (`sizes`, [`Case::score_sizes`]) may err by three
/// standard deviations of that, 3·2^-21·S, times the terms.
fn assert_close_terms(what: &str, got: &[f64], want: &[f64], terms: &[f64], sizes: &[f64], ty: ElemType) {
    let (atol, rtol) = if ty == ElemType::F16 { (2e-3, 5e-3) } else { (2e-5, 1e-4) };
    let (kappa, kappa_s) = if ty == ElemType::F16 { (0.0, 0.0) } else { (4e-6, 3.0 * 2f64.powi(-21)) };
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (((&g, &w), &t), &s)) in got.iter().zip(want).zip(terms).zip(sizes).enumerate() {
        if !w.is_finite() {
            assert!(g.is_nan() == w.is_nan() && (w.is_nan() || g == w), "{what}: element {i}: got {g}, want {w}");
            continue;
        }
        let tol = atol + rtol * w.abs() + (kappa + kappa_s * s) * t;
        assert!((g - w).abs() <= tol, "{what}: element {i}: got {g}, want {w} (Σp|v| {t}, score size {s})");
    }
}

/// [B, S, H, D] values as [B, H, S, D].
fn bshd_to_bhsd(x: &[f64], b: usize, s: usize, h: usize, d: usize) -> Vec<f64> {
    let mut out = vec![0.0; x.len()];
    for bi in 0..b {
        for si in 0..s {
            for hi in 0..h {
                for c in 0..d {
                    out[((bi * h + hi) * s + si) * d + c] = x[((bi * s + si) * h + hi) * d + c];
                }
            }
        }
    }
    out
}

#[derive(Clone, Copy, PartialEq)]
enum Mask {
    None,
    /// Additive [B, 1, Sq, Skv].
    Add,
    /// Boolean [Sq, Skv].
    Bool,
}

/// ONNX Attention on `c`, 4-D or packed 3-D, with a mask kind.
fn check_attention(rng: &mut impl Rng, c: &Case, ty: ElemType, packed: bool, mask: Mask) {
    let (b, hq, hkv, sq, skv, d) = (c.b as u64, c.hq as u64, c.hkv as u64, c.sq as u64, c.skv as u64, c.d as u64);
    let shape = |h: u64, s: u64| if packed { vec![b, s, h * d] } else { vec![b, h, s, d] };
    let (qs, ks) = (shape(hq, sq), shape(hkv, skv));
    let (q, k, v) = (random(rng, ty, &qs), random(rng, ty, &ks), random(rng, ty, &ks));
    let m = match mask {
        Mask::None => None,
        Mask::Add => Some(random(rng, ty, &[b, 1, sq, skv])),
        Mask::Bool => {
            // Every row keeps key 0, so no row is empty.
            let bits: Vec<bool> = (0..sq * skv).map(|i| i % skv == 0 || rng.random_range(0..3) != 0).collect();
            Some(T::bool(&[sq, skv], &bits))
        }
    };
    let mut inputs = vec![Some(val("q", ty, &qs)), Some(val("k", ty, &ks)), Some(val("v", ty, &ks))];
    if let Some(m) = &m {
        inputs.push(Some(val("m", m.ty, &m.shape)));
    }
    let mut attrs = vec![("scale", Attr::Float(c.scale as f32))];
    if c.causal.is_some() {
        attrs.push(("is_causal", Attr::Int(1)));
    }
    if packed {
        attrs.push(("q_num_heads", Attr::Int(hq as i64)));
        attrs.push(("kv_num_heads", Attr::Int(hkv as i64)));
    }
    let n = node("Attention", 23, inputs, vec![val("y", ty, &shape(hq, sq))], attrs);
    let mut feeds = vec![("q", &q), ("k", &k), ("v", &v)];
    if let Some(m) = &m {
        feeds.push(("m", m));
    }
    let (y, ops, allocs) = run(&[n], &feeds, "y", ty);
    let to_bhsd =
        |t: &T, h: usize, s: usize| if packed { bshd_to_bhsd(&t.values(), c.b, s, h, c.d) } else { t.values() };
    let mv = m.as_ref().map(T::values);
    let bias = |bi: usize, _h: usize, i: usize, j: usize| -> f64 {
        match (mask, &mv) {
            (Mask::Add, Some(mv)) => mv[(bi * c.sq + i) * c.skv + j],
            (Mask::Bool, Some(mv)) if mv[i * c.skv + j] == 0.0 => f64::NEG_INFINITY,
            _ => 0.0,
        }
    };
    let want = c.reference(&to_bhsd(&q, c.hq, c.sq), &to_bhsd(&k, c.hkv, c.skv), &to_bhsd(&v, c.hkv, c.skv), &bias);
    let got = to_bhsd(&y, c.hq, c.sq);
    let what = format!("Attention {ty} packed={packed} B{b} H{hq}/{hkv} S{sq}x{skv} D{d} causal={:?}", c.causal);
    assert_close(&what, &got, &want, ty);
    assert_eq!(ops, vec!["Attention".to_string()]);
    // The only buffer the executor allocates is the output: no Sq×Skv scores (the split-KV
    // kernel's own workspace holds D + 2 floats per row and key chunk).
    assert_eq!(allocs, vec![("Attention_node".to_string(), b * hq * sq * d * ty.size())], "{what}");
}

#[test]
fn onnx_attention_against_f64() {
    let mut rng = common::rng("onnx_attention_against_f64");
    let case =
        |b, hq, hkv, sq, skv, d: usize, causal| Case { b, hq, hkv, sq, skv, d, scale: 1.0 / (d as f64).sqrt(), causal };
    for ty in [ElemType::F32, ElemType::F16] {
        check_attention(&mut rng, &case(1, 2, 2, 1, 7, 64, None), ty, false, Mask::None);
        check_attention(&mut rng, &case(2, 2, 2, 33, 33, 64, Some(0)), ty, false, Mask::None);
        check_attention(&mut rng, &case(1, 4, 1, 7, 45, 80, None), ty, false, Mask::Add);
        check_attention(&mut rng, &case(1, 8, 1, 17, 17, 128, Some(0)), ty, true, Mask::Bool);
    }
    check_attention(&mut rng, &case(2, 4, 4, 40, 19, 96, Some(0)), ElemType::F32, true, Mask::Add);
    // A few query rows: the split-KV kernel (several chunks of keys on this adapter).
    for ty in [ElemType::F32, ElemType::F16] {
        check_attention(&mut rng, &case(1, 4, 1, 1, 1000, 128, None), ty, false, Mask::None);
    }
    check_attention(&mut rng, &case(1, 2, 2, 3, 700, 64, Some(0)), ElemType::F32, false, Mask::Add);
    check_attention(&mut rng, &case(2, 8, 2, 2, 333, 80, None), ElemType::F32, true, Mask::Bool);
    check_attention(&mut rng, &case(1, 8, 2, 5, 70, 128, None), ElemType::F32, false, Mask::Bool);
    // Gemma's head size 256: the SIMT kernel (the tensor-core one stops at 128) and split-KV decode.
    for ty in [ElemType::F32, ElemType::F16] {
        check_attention(&mut rng, &case(1, 4, 2, 21, 21, 256, Some(0)), ty, false, Mask::None);
        check_attention(&mut rng, &case(1, 2, 1, 11, 37, 256, None), ty, true, Mask::Add);
        check_attention(&mut rng, &case(1, 4, 1, 1, 300, 256, None), ty, false, Mask::Bool);
    }
}

/// The exported pattern: K stored [B, Skv, H, D] through `Transpose(perm 0,2,3,1)`, `Div` by a
/// constant, an additive key-padding mask [B, 1, 1, Skv]; rewritten into one flash step.
#[test]
fn pattern_with_transposed_k_and_mask() {
    let mut rng = common::rng("pattern_with_transposed_k_and_mask");
    for ty in [ElemType::F32, ElemType::F16] {
        let (b, h, sq, skv, d) = (2u64, 3u64, 33u64, 21u64, 64u64);
        let q = random(&mut rng, ty, &[b, h, sq, d]);
        let k = random(&mut rng, ty, &[b, skv, h, d]);
        let v = random(&mut rng, ty, &[b, h, skv, d]);
        let m = random(&mut rng, ty, &[b, 1, 1, skv]);
        let c8 = if ty == ElemType::F16 { T::f16(&[], &[8.0]) } else { T::f32(&[], &[8.0]) };
        let nodes = vec![
            node(
                "Transpose",
                13,
                vec![Some(val("k", ty, &k.shape))],
                vec![val("kt", ty, &[b, h, d, skv])],
                vec![("perm", Attr::Ints(vec![0, 2, 3, 1]))],
            ),
            node(
                "MatMul",
                13,
                vec![Some(val("q", ty, &q.shape)), Some(val("kt", ty, &[b, h, d, skv]))],
                vec![val("s", ty, &[b, h, sq, skv])],
                vec![],
            ),
            node(
                "Div",
                14,
                vec![Some(val("s", ty, &[b, h, sq, skv])), Some(const_val("c", &c8))],
                vec![val("s2", ty, &[b, h, sq, skv])],
                vec![],
            ),
            node(
                "Add",
                14,
                vec![Some(val("s2", ty, &[b, h, sq, skv])), Some(val("m", ty, &m.shape))],
                vec![val("s3", ty, &[b, h, sq, skv])],
                vec![],
            ),
            node(
                "Softmax",
                13,
                vec![Some(val("s3", ty, &[b, h, sq, skv]))],
                vec![val("p", ty, &[b, h, sq, skv])],
                vec![("axis", Attr::Int(-1))],
            ),
            node(
                "MatMul",
                13,
                vec![Some(val("p", ty, &[b, h, sq, skv])), Some(val("v", ty, &v.shape))],
                vec![val("y", ty, &[b, h, sq, d])],
                vec![],
            ),
        ];
        let (y, ops, allocs) = run_with(&nodes, &[("q", &q), ("k", &k), ("v", &v), ("m", &m)], &[("c", &c8)], "y", ty);
        assert_eq!(ops, vec!["FlashAttention(fused)".to_string()]);
        // The only buffer is the output: no Sq×Skv scores.
        assert_eq!(allocs.len(), 1, "{allocs:?}");
        assert_eq!(allocs[0].1, b * h * sq * d * ty.size());
        let c = Case {
            b: b as usize,
            hq: h as usize,
            hkv: h as usize,
            sq: sq as usize,
            skv: skv as usize,
            d: d as usize,
            scale: 0.125,
            causal: None,
        };
        let mv = m.values();
        let want = c.reference(&q.values(), &bshd_to_bhsd(&k.values(), 2, 21, 3, 64), &v.values(), &|bi, _, _, j| {
            mv[bi * 21 + j]
        });
        assert_close(&format!("pattern {ty}"), &y.values(), &want, ty);
    }
}

/// Rank 3 with Kᵀ given as [N, D, Skv], a `Mul` scale and no mask; then the same graph with the
/// scores also read by the caller, which must stay unfused.
#[test]
fn pattern_rank3_and_read_scores_stay_correct() {
    let mut rng = common::rng("pattern_rank3_and_read_scores_stay_correct");
    let (n, sq, skv, d) = (4u64, 7u64, 50u64, 96u64);
    let ty = ElemType::F32;
    let q = random(&mut rng, ty, &[n, sq, d]);
    let kt = random(&mut rng, ty, &[n, d, skv]);
    let v = random(&mut rng, ty, &[n, skv, d]);
    let c = T::f32(&[1], &[0.3]);
    let nodes = vec![
        node(
            "MatMul",
            13,
            vec![Some(val("q", ty, &q.shape)), Some(val("kt", ty, &kt.shape))],
            vec![val("s", ty, &[n, sq, skv])],
            vec![],
        ),
        node(
            "Mul",
            14,
            vec![Some(const_val("c", &c)), Some(val("s", ty, &[n, sq, skv]))],
            vec![val("s2", ty, &[n, sq, skv])],
            vec![],
        ),
        node("Softmax", 13, vec![Some(val("s2", ty, &[n, sq, skv]))], vec![val("p", ty, &[n, sq, skv])], vec![]),
        node(
            "MatMul",
            13,
            vec![Some(val("p", ty, &[n, sq, skv])), Some(val("v", ty, &v.shape))],
            vec![val("y", ty, &[n, sq, d])],
            vec![],
        ),
    ];
    let feeds = [("q", &q), ("kt", &kt), ("v", &v)];
    let (y, ops, _) = run_with(&nodes, &feeds, &[("c", &c)], "y", ty);
    assert_eq!(ops, vec!["FlashAttention(fused)".to_string()]);
    // Kᵀ [N, D, S] as K [N, S, D].
    let ktv = kt.values();
    let mut k = vec![0.0; ktv.len()];
    for i in 0..n as usize {
        for j in 0..skv as usize {
            for e in 0..d as usize {
                k[(i * skv as usize + j) * d as usize + e] = ktv[(i * d as usize + e) * skv as usize + j];
            }
        }
    }
    let case = Case {
        b: 1,
        hq: n as usize,
        hkv: n as usize,
        sq: sq as usize,
        skv: skv as usize,
        d: d as usize,
        scale: 0.3f32 as f64,
        causal: None,
    };
    let want = case.reference(&q.values(), &k, &v.values(), &|_, _, _, _| 0.0);
    assert_close("rank-3 pattern", &y.values(), &want, ty);
    // The scores leave the partition: nothing is absorbed.
    let names: Vec<String> = feeds.iter().map(|(n, _)| n.to_string()).collect();
    let consts = vec![Constant { name: "c".into(), dtype: ty, shape: c.shape.clone(), data: c.data.clone() }];
    let program =
        build_program_with(&nodes, &names, &["y".to_string(), "s2".to_string()], consts, FlashMode::All).unwrap();
    assert!(
        program.steps.iter().all(|s| !s.ops.contains("FlashAttention")),
        "{:?}",
        program.steps.iter().map(|s| &s.ops).collect::<Vec<_>>()
    );
}

/// A head size the kernel lacks (72), or one it has but the rewrite does not take (256: the
/// unfused products were not measured against it), is left to the unfused ops.
#[test]
fn pattern_with_other_head_size_is_not_rewritten() {
    for d in [72u64, 256] {
        pattern_with_head_size_is_not_rewritten(d);
    }
}

fn pattern_with_head_size_is_not_rewritten(d: u64) {
    assert_eq!(pattern_steps(d, ElemType::F32, FlashMode::All), 3);
}

/// By default on a device with tensor cores (`TensorCores`), f32 attention is rewritten only at
/// the head size its split kernel has (64); f16 at every rewrite head size.
#[test]
fn tensor_core_mode_fuses_f32_at_the_split_head_sizes() {
    assert_eq!(pattern_steps(64, ElemType::F32, FlashMode::TensorCores), 1);
    assert_eq!(pattern_steps(128, ElemType::F32, FlashMode::TensorCores), 3);
    assert_eq!(pattern_steps(128, ElemType::F16, FlashMode::TensorCores), 1);
    assert_eq!(pattern_steps(64, ElemType::F32, FlashMode::Off), 3);
}

/// The steps of `MatMul → Softmax → MatMul` at head size `d` under `mode`.
fn pattern_steps(d: u64, ty: ElemType, mode: FlashMode) -> usize {
    let (n, s) = (2u64, 5u64);
    let nodes = vec![
        node(
            "MatMul",
            13,
            vec![Some(val("q", ty, &[n, s, d])), Some(val("kt", ty, &[n, d, s]))],
            vec![val("s", ty, &[n, s, s])],
            vec![],
        ),
        node("Softmax", 13, vec![Some(val("s", ty, &[n, s, s]))], vec![val("p", ty, &[n, s, s])], vec![]),
        node(
            "MatMul",
            13,
            vec![Some(val("p", ty, &[n, s, s])), Some(val("v", ty, &[n, s, d]))],
            vec![val("y", ty, &[n, s, d])],
            vec![],
        ),
    ];
    let names = ["q", "kt", "v"].map(String::from);
    let program = build_program_with(&nodes, &names, &["y".to_string()], vec![], mode).unwrap();
    program.steps.len()
}

/// A mask that would widen the scores ([2, 1, S, S] onto [1, 2, S, S]) keeps the unfused ops,
/// which broadcast it.
#[test]
fn pattern_with_a_widening_mask_is_not_rewritten() {
    let ty = ElemType::F32;
    let (h, s, d) = (2u64, 5u64, 64u64);
    let nodes = vec![
        node(
            "MatMul",
            13,
            vec![Some(val("q", ty, &[1, h, s, d])), Some(val("kt", ty, &[1, h, d, s]))],
            vec![val("s", ty, &[1, h, s, s])],
            vec![],
        ),
        node(
            "Add",
            14,
            vec![Some(val("s", ty, &[1, h, s, s])), Some(val("m", ty, &[2, 1, s, s]))],
            vec![val("s2", ty, &[2, h, s, s])],
            vec![],
        ),
        node("Softmax", 13, vec![Some(val("s2", ty, &[2, h, s, s]))], vec![val("p", ty, &[2, h, s, s])], vec![]),
        node(
            "MatMul",
            13,
            vec![Some(val("p", ty, &[2, h, s, s])), Some(val("v", ty, &[1, h, s, d]))],
            vec![val("y", ty, &[2, h, s, d])],
            vec![],
        ),
    ];
    let names = ["q", "kt", "m", "v"].map(String::from);
    let program = build_program_with(&nodes, &names, &["y".to_string()], vec![], FlashMode::All).unwrap();
    assert!(program.steps.iter().all(|s| !s.ops.contains("FlashAttention")));
}

/// Every flash tiling that fits this adapter (the planner picks by workgroup memory, so it alone
/// would not run the small ones; one that does not fit is refused) on one problem with a boolean mask and causal masking, against float64.
#[test]
fn every_tiling_against_f64() {
    use ep_kernels::ops::attention::{self, onnx};
    use ep_kernels::ops::{KernelIo, PrepareCx, Tensor};
    let mut rng = common::rng("every_tiling_against_f64");
    let gpu = common::gpu();
    let (b, hq, hkv, sq, skv, d) = (1usize, 4usize, 2usize, 37usize, 29usize, 128usize);
    let ty = ElemType::F32;
    let shape = |h: usize, s: usize| [b as u64, h as u64, s as u64, d as u64];
    let (q, k, v) = (
        random(&mut rng, ty, &shape(hq, sq)),
        random(&mut rng, ty, &shape(hkv, skv)),
        random(&mut rng, ty, &shape(hkv, skv)),
    );
    let bits: Vec<bool> = (0..sq * skv).map(|i| i % skv == 0 || rng.random_range(0..4) != 0).collect();
    let m = T::bool(&[sq as u64, skv as u64], &bits);
    let inputs = vec![
        Some(val("q", ty, &q.shape)),
        Some(val("k", ty, &k.shape)),
        Some(val("v", ty, &v.shape)),
        Some(val("m", ElemType::Bool, &m.shape)),
    ];
    let n = node("Attention", 23, inputs, vec![val("y", ty, &shape(hq, sq))], vec![("is_causal", Attr::Int(1))]);
    let c = Case { b, hq, hkv, sq, skv, d, scale: 1.0 / (d as f64).sqrt(), causal: Some(0) };
    let mv = m.values();
    let want = c.reference(&q.values(), &k.values(), &v.values(), &|_, _, i, j| {
        if mv[i * skv + j] == 0.0 {
            f64::NEG_INFINITY
        } else {
            0.0
        }
    });
    for tiles in [(32, 32), (32, 16), (16, 16), (16, 8)] {
        let mut kernel = onnx::kernel(&n).unwrap();
        kernel.tiles = Some(tiles);
        let ins: Vec<_> = [&q, &k, &v, &m].iter().map(|t| gpu.upload(&t.data, "in").unwrap()).collect();
        let out = gpu.storage_buffer((b * hq * sq * d * 4) as u64, "out").unwrap();
        let oshape = shape(hq, sq);
        let io = KernelIo {
            inputs: ins
                .iter()
                .zip([&q, &k, &v, &m])
                .map(|(buf, t)| Some(Tensor { buf, shape: &t.shape, ty: t.ty, constant: false }))
                .collect(),
            outputs: vec![Tensor { buf: &out, shape: &oshape, ty, constant: false }],
        };
        let (options, status) = (ExecOptions::default(), gpu.storage_buffer(4, "status").unwrap());
        let cx = PrepareCx::on(&gpu, &options, &status);
        let fits = attention::storage_bytes(tiles.0, tiles.1, d as u32) <= gpu.caps().max_workgroup_storage_bytes;
        let step = match ep_kernels::ops::Kernel::prepare(&kernel, &cx, &io) {
            Ok(step) => step,
            Err(e) => {
                assert!(!fits && e.to_string().contains("cannot run here"), "{tiles:?}: {e}");
                continue;
            }
        };
        assert!(step.plan.as_deref().is_some_and(|p| p.contains(&format!("tiles {}x{}", tiles.0, tiles.1))));
        gpu.run(&step.dispatches.iter().collect::<Vec<_>>()).unwrap();
        let mut data = gpu.read_buffer(&out).unwrap();
        data.truncate(b * hq * sq * d * 4);
        assert_close(&format!("tiles {tiles:?}"), &T { ty, shape: oshape.to_vec(), data }.values(), &want, ty);
    }
}
