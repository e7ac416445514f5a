//! One ONNX `Attention` node prepared straight from its kernel on the test adapter (so a test can
//! force an engine or key splits and read the plan line), run on poisoned output against float64.

use super::{assert_close_terms, random, Case};
use crate::common;
use common::graph::{val, T};
use ep_kernels::graph::{Attr, ExecOptions};
use ep_kernels::ops::attention::{onnx, FlashKernel, Layout, MaskKind};
use ep_kernels::ops::{Kernel, KernelIo, PrepareCx, Tensor};
use ep_kernels::ElemType;
use rand::Rng;

/// What one run varies besides the problem.
pub struct Direct<'a> {
    pub ty: ElemType,
    /// "none", "add" ([B, 1, Sq, Skv]), "bool" ([Sq, Skv]) or "seqlens" (GroupQueryAttention's
    /// `seqlens_k`, [B]: batch b's causal offset is `max(seqlens_k[b] + 1 − Sq, 0)`; such cases
    /// take `causal: None`, the offsets being the causal rule).
    pub mask: &'a str,
    /// K is stored transposed, `[B, H, D, S]`.
    pub kt: bool,
    /// GroupQueryAttention's softcap (0: none).
    pub softcap: f64,
    /// Factors on the random values of Q (0), K (1) and V (2) by sequence position (magnitudes
    /// far from 1, or growing along the keys); `None`: values in [-1, 1).
    pub gain: Option<fn(usize, usize) -> f32>,
}

impl Direct<'_> {
    /// Runs `c` (4-D Q/K/V) through the kernel `configure` adjusts, hands its plan line to
    /// `check_plan`, and compares the output with the float64 reference.
    pub fn check(
        &self,
        rng: &mut impl Rng,
        c: &Case,
        configure: impl FnOnce(&mut FlashKernel),
        check_plan: impl FnOnce(&str),
    ) {
        let (gpu, ty, mask) = (common::gpu(), self.ty, self.mask);
        let shape = |h: usize, s: usize| [c.b as u64, h as u64, s as u64, c.d as u64];
        let (q, k, v) = (
            self.scaled(0, random(rng, ty, &shape(c.hq, c.sq)), c.sq, c.d),
            self.scaled(1, random(rng, ty, &shape(c.hkv, c.skv)), c.skv, c.d),
            self.scaled(2, random(rng, ty, &shape(c.hkv, c.skv)), c.skv, c.d),
        );
        let (sq, skv) = (c.sq, c.skv);
        let m = match mask {
            "bool" => {
                let bits: Vec<bool> = (0..sq * skv).map(|i| i % skv == 0 || rng.random_range(0..4) != 0).collect();
                Some(T::bool(&[sq as u64, skv as u64], &bits))
            }
            "add" => {
                let add: Vec<f32> = (0..c.b * sq * skv).map(|_| rng.random_range(-2.0f32..1.0)).collect();
                let shape = [c.b as u64, 1, sq as u64, skv as u64];
                Some(if ty == ElemType::F16 { T::f16(&shape, &add) } else { T::f32(&shape, &add) })
            }
            // Batch 0 sees every key; the others fewer (a shared cache's unwritten tail, whose
            // keys must not be read), some fewer than the queries (a padded prompt: offset 0).
            "seqlens" => {
                let lens: Vec<i32> =
                    (0..c.b).map(|b| if b == 0 { skv as i32 - 1 } else { rng.random_range(0..skv as i32) }).collect();
                Some(T::i32(&[c.b as u64], &lens))
            }
            _ => None,
        };
        let seqlens = mask == "seqlens";
        assert!(!seqlens || c.causal.is_none(), "seqlens cases set no causal offset of their own");
        let mut inputs = vec![Some(val("q", ty, &q.shape)), Some(val("k", ty, &k.shape)), Some(val("v", ty, &v.shape))];
        if let Some(m) = m.as_ref().filter(|_| !seqlens) {
            inputs.push(Some(val("m", m.ty, &m.shape)));
        }
        let mut attrs = vec![("scale", Attr::Float(c.scale as f32))];
        if c.causal.is_some() || seqlens {
            attrs.push(("is_causal", Attr::Int(1)));
        }
        let n = common::graph::node("Attention", 23, inputs, vec![val("y", ty, &shape(c.hq, sq))], attrs);
        let mv = m.as_ref().map(|m| m.values());
        let bias = |b: usize, _: usize, i: usize, j: usize| match (mask, &mv) {
            ("bool", Some(mv)) if mv[i * skv + j] == 0.0 => f64::NEG_INFINITY,
            ("add", Some(mv)) => mv[(b * sq + i) * skv + j],
            ("seqlens", Some(mv)) if j as f64 > i as f64 + (mv[b] + 1.0 - sq as f64).max(0.0) => f64::NEG_INFINITY,
            _ => 0.0,
        };
        // Σ p·|v| per element: the size of the terms an output sums, which bounds f32's error
        // where they cancel (V growing along the keys).
        let v_abs: Vec<f64> = v.values().iter().map(|x| x.abs()).collect();
        let mut kernel = onnx::kernel(&n).unwrap();
        kernel.softcap = self.softcap as f32;
        if seqlens {
            kernel.mask = MaskKind::SeqLens;
        }
        configure(&mut kernel);
        // The kernel reads K through its layout; what it is handed is K stored transposed.
        let k_stored = if self.kt {
            kernel.k = Layout { perm: [0, 1, 3, 2], packed_heads: None, columns: None };
            transposed(&k, c.b * c.hkv, c.skv, c.d)
        } else {
            k.clone()
        };
        let mut tensors = vec![&q, &k_stored, &v];
        tensors.extend(m.as_ref());
        let ins: Vec<_> = tensors.iter().map(|t| gpu.upload(&t.data, "in").unwrap()).collect();
        let bytes = (c.b * c.hq * sq * c.d) as u64 * ty.size();
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
        let cx = PrepareCx::on(&gpu, &options, &status);
        let step = kernel.prepare(&cx, &io).unwrap();
        let plan = step.plan.clone().unwrap_or_default();
        check_plan(&plan);
        // Twice, poisoned before each, the second time with a new Q: what a run leaves behind (the
        // chunk counters of the decode kernel and of the split tensor-core kernel, partials) must
        // not change the next.
        let mut q = q;
        for round in 0..2 {
            if round == 1 {
                q = self.scaled(0, random(rng, ty, &q.shape), c.sq, c.d);
                gpu.upload_at(&ins[0].buffer, 0, &q.data).unwrap();
            }
            let want = c.reference_capped(self.softcap, &q.values(), &k.values(), &v.values(), &bias);
            let terms = c.reference_capped(self.softcap, &q.values(), &k.values(), &v_abs, &bias);
            let sizes = c.score_sizes(&q.values(), &k.values());
            let poison = vec![0xffu8; bytes.next_multiple_of(4) as usize];
            gpu.upload_at(&out.buffer, 0, &poison).unwrap();
            gpu.run(&step.dispatches.iter().collect::<Vec<_>>()).unwrap();
            let mut data = gpu.read_buffer(&out).unwrap();
            data.truncate(bytes as usize);
            let what = format!(
                "{ty} d={} H{}/{} sq={sq} skv={skv} mask {mask} causal {:?} softcap {}, run {round}: {plan}",
                c.d, c.hq, c.hkv, c.causal, self.softcap
            );
            let got = T { ty, shape: oshape.to_vec(), data }.values();
            assert_close_terms(&what, &got, &want, &terms, &sizes, ty);
        }
    }
}

impl Direct<'_> {
    /// `x` ([…, s, d]) times the gain of tensor `which` at each row's position.
    fn scaled(&self, which: usize, x: T, s: usize, d: usize) -> T {
        let Some(gain) = self.gain else { return x };
        let v: Vec<f32> = x.values().iter().enumerate().map(|(i, &e)| e as f32 * gain(which, (i / d) % s)).collect();
        if x.ty == ElemType::F16 {
            T::f16(&x.shape, &v)
        } else {
            T::f32(&x.shape, &v)
        }
    }
}

/// `x` ([n, s, d]) stored as [n, d, s].
fn transposed(x: &T, n: usize, s: usize, d: usize) -> T {
    let xv = x.values();
    let mut t = vec![0f32; xv.len()];
    for bh in 0..n {
        for si in 0..s {
            for di in 0..d {
                t[(bh * d + di) * s + si] = xv[(bh * s + si) * d + di] as f32;
            }
        }
    }
    let shape = [x.shape[0], x.shape[1], d as u64, s as u64];
    if x.ty == ElemType::F16 {
        T::f16(&shape, &t)
    } else {
        T::f32(&shape, &t)
    }
}
