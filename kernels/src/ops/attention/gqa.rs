//! `com.microsoft` `GroupQueryAttention` as onnxruntime-genai's model builder emits it: causal
//! attention of `num_heads` query heads over `kv_num_heads` K/V heads, a KV cache
//! (`past_key`/`past_value` in, `present_key`/`present_value` out, `[B, H_kv, T, D]`, the buffer
//! shared when ORT binds both to one), rotary embedding of Q and K (`do_rotary`, cos/sin caches),
//! `local_window_size`, `softcap` (Gemma-2), packed QKV, per-head RMS norms of Q and K (`q_norm_weight`,
//! `k_norm_weight`: Qwen3). Per batch, `seqlens_k[b] + 1` keys are valid; the new tokens
//! follow the cached ones. `total_sequence_length` sizes the present cache
//! (`max(total, past length)`), so its value is read on the host ([`Kernel::value_inputs`]).
//!
//! Preparation (`wgsl/gqa_prep.wgsl.j2`: rotated Q; the present K and V; with a local window, a
//! boolean mask of causality, padding and the window), then the flash kernels
//! ([`super::FlashKernel`]: tensor cores, SIMT or split-KV decode) over Q and the present cache.
//! Without a window the flash kernels read `seqlens_k` itself ([`MaskKind::SeqLens`]): each
//! batch's causal offset is its past length, so no mask is written or read.
//! Declined with a reason: `smooth_softmax`, non-causal, quantized or window-sized caches,
//! `position_ids`, `attention_bias`, `head_sink`, per-head Q/K norms, head sizes the flash kernels lack.

use super::kernel::{Causal, Engine, FlashKernel, Layout, MaskKind, OutLayout};
use super::unsupported;
use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::graph::model::Node;
use crate::graph::support::PlacementOptions;
use crate::graph::ExecOptions;
use crate::ops::norm::{check_bindings, input_type};
use crate::ops::planned::step_plan;
use crate::ops::{check_f16, Kernel, KernelIo, OpDef, PrepareCx, PreparedStep, StepPlan, Tensor};
use crate::runtime::GpuBuffer;
use crate::shader::ShaderVariant;

#[path = "gqa_decode.rs"]
mod decode_prep;
#[path = "gqa_prep.rs"]
mod prep;
pub use prep::{variants, GqaPrepSource};

pub struct GroupQueryAttentionDef;

/// Attributes read or accepted at their defaults (ONNX Runtime 1.32 lists every attribute with
/// its default; `check_defaults` declines other values of the ones we do not implement).
const KNOWN_ATTRS: &[&str] = &[
    "num_heads",
    "kv_num_heads",
    "scale",
    "local_window_size",
    "do_rotary",
    "rotary_interleaved",
    "softcap",
    "smooth_softmax",
    "qk_output",
    "causal",
    "sliding_window_cache",
    "kv_cache_bit_width",
    "k_quant_type",
    "v_quant_type",
    "qk_norm_epsilon",
    "q_norm_epsilon",
    "k_norm_epsilon",
];

/// Declines attributes that ask for what is not implemented (their defaults pass).
fn check_defaults(node: &Node) -> Result<(), String> {
    if let Some(a) = node.attrs.keys().find(|a| !KNOWN_ATTRS.contains(&a.as_str())) {
        return Err(format!("GroupQueryAttention attribute '{a}' is not supported"));
    }
    let int_not = |a: &str, ok: &[i64]| node.int(a).is_some_and(|v| !ok.contains(&v));
    for (a, ok, what) in [
        ("causal", &[1][..], "non-causal attention (causal=0)"),
        ("smooth_softmax", &[-1, 0][..], "smooth_softmax"),
        ("qk_output", &[0][..], "the output_qk output"),
        ("sliding_window_cache", &[0][..], "a window-sized cache (sliding_window_cache)"),
        ("kv_cache_bit_width", &[0, 16][..], "a quantized KV cache (kv_cache_bit_width)"),
    ] {
        if int_not(a, ok) {
            return Err(format!("GroupQueryAttention with {what} is not supported yet"));
        }
    }
    for a in ["k_quant_type", "v_quant_type"] {
        if node.string(a).is_some_and(|v| v != "NONE") {
            return Err(format!("GroupQueryAttention with a quantized KV cache ({a}) is not supported yet"));
        }
    }
    if node.float("softcap").is_some_and(|c| !c.is_finite()) {
        return Err("GroupQueryAttention's softcap must be finite".into());
    }
    Ok(())
}

/// Node input `seqlens_k`.
const SEQLENS_INPUT: usize = 5;

/// Node input `total_sequence_length`, whose value sizes the present cache.
const TOTAL_INPUT: usize = 6;

/// One `GroupQueryAttention` node.
#[derive(Clone, Debug, PartialEq)]
pub struct GqaKernel {
    pub name: String,
    pub ty: ElemType,
    pub heads: u64,
    pub kv_heads: u64,
    /// `None`: 1/√D.
    pub scale: Option<f32>,
    /// Keys before the diagonal a token still sees (`local_window_size`; ≤ 0: all).
    pub window: i64,
    /// Scaled scores become `softcap · tanh(s / softcap)` where it is positive (as ONNX Runtime's CPU EP).
    pub softcap: f32,
    pub rotary: bool,
    pub interleaved: bool,
    /// Per-head RMS norm of Q and of K (inputs `q_norm_weight`, `k_norm_weight`) and their epsilons.
    pub q_norm: Option<f32>,
    pub k_norm: Option<f32>,
    /// Which flash kernel runs prefill (tests force the emulated tensor-core one).
    pub engine: Engine,
}

impl GqaKernel {
    /// The step of a node, or why it cannot run here.
    pub fn of(node: &Node) -> Result<GqaKernel, String> {
        let ty = input_type(node, 0, "query")?;
        if !ty.is_float() {
            return Err(format!("GroupQueryAttention of {} is not supported", ty.name()));
        }
        check_defaults(node)?;
        if node.outputs.len() > 3 && node.outputs[3..].iter().flatten().any(|o| !o.name.is_empty()) {
            return Err("GroupQueryAttention's output_qk is not supported".into());
        }
        let extra = [
            (9, "position_ids"),
            (10, "attention_bias"),
            (11, "head_sink"),
            (12, "k_scale"),
            (13, "v_scale"),
            (16, "query_seqlens"),
        ];
        for (i, what) in extra {
            if node.has_input(i) {
                return Err(format!("GroupQueryAttention with {what} is not supported yet"));
            }
        }
        if !node.has_input(5) || !node.has_input(TOTAL_INPUT) {
            return Err("GroupQueryAttention needs seqlens_k and total_sequence_length".into());
        }
        if node.has_input(1) != node.has_input(2) || node.has_input(3) != node.has_input(4) {
            return Err("GroupQueryAttention needs key and value (and past_key and past_value) together".into());
        }
        if node.outputs.iter().take(3).any(|o| o.as_ref().is_none_or(|o| o.name.is_empty())) {
            return Err("GroupQueryAttention without present_key/present_value outputs is not supported".into());
        }
        let positive = |a: &str| node.int(a).filter(|&h| h > 0).map(|h| h as u64);
        let heads = positive("num_heads").ok_or("GroupQueryAttention needs num_heads > 0")?;
        let kv_heads = positive("kv_num_heads").ok_or("GroupQueryAttention needs kv_num_heads > 0")?;
        if heads % kv_heads != 0 {
            return Err(format!("num_heads {heads} is not a multiple of kv_num_heads {kv_heads}"));
        }
        let rotary = node.int("do_rotary").unwrap_or(0) != 0;
        let eps = node.float("qk_norm_epsilon").unwrap_or(1e-6);
        let q_norm = node.has_input(14).then(|| node.float("q_norm_epsilon").unwrap_or(eps));
        let k_norm = node.has_input(15).then(|| node.float("k_norm_epsilon").unwrap_or(eps));
        if rotary && !(node.has_input(7) && node.has_input(8)) {
            return Err("GroupQueryAttention with do_rotary needs cos_cache and sin_cache".into());
        }
        Ok(GqaKernel {
            name: node.name.clone(),
            ty,
            heads,
            kv_heads,
            scale: node.float("scale").filter(|&s| s != 0.0),
            window: node.int("local_window_size").unwrap_or(-1),
            softcap: node.float("softcap").unwrap_or(0.0).max(0.0),
            rotary,
            interleaved: node.int("rotary_interleaved").unwrap_or(0) != 0,
            q_norm,
            k_norm,
            engine: Engine::Auto,
        })
    }

    fn err(&self, m: impl std::fmt::Display) -> String {
        format!("GroupQueryAttention '{}': {m}", self.name)
    }
}

/// The problem at one set of shapes and `total_sequence_length`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GqaGeometry {
    pub batch: u64,
    pub seq: u64,
    pub d: u64,
    pub packed: bool,
    /// Rows of the past cache (0 without one) and of the present cache.
    pub past: u64,
    pub present: u64,
    /// Rotation half-width (the caches' row length) and the caches' rows; 0 without rotation.
    pub half: u64,
    pub max_seq: u64,
}

impl GqaKernel {
    /// Sizes from the inputs' shapes (query, key, value, past key, past value, seqlens_k,
    /// total_sequence_length, cos, sin), checked as ONNX Runtime does; the present length is the
    /// past's until [`GqaKernel::sized`] sets it.
    pub fn geometry(&self, s: &[Option<&[u64]>]) -> Result<GqaGeometry, String> {
        let get = |i: usize| s.get(i).copied().flatten();
        let &[batch, seq, width] = get(0).ok_or_else(|| self.err("query is missing"))? else {
            return Err(self.err("query must be [batch, sequence, hidden]"));
        };
        let packed = get(1).is_none();
        let d = if packed { width / (self.heads + 2 * self.kv_heads) } else { width / self.heads };
        let want = if packed { d * (self.heads + 2 * self.kv_heads) } else { d * self.heads };
        if d == 0 || d % 8 != 0 || want != width {
            return Err(self.err(format!("query width {width} does not split into heads of a multiple of 8")));
        }
        for i in [1, 2].into_iter().filter(|_| !packed) {
            if get(i) != Some(&[batch, seq, self.kv_heads * d][..]) {
                return Err(self.err(format!(
                    "input {i} {:?} must be [{batch}, {seq}, {}]",
                    get(i),
                    self.kv_heads * d
                )));
            }
        }
        let past = match (get(3), get(4)) {
            (Some(k), Some(v)) if k == v && k.len() == 4 && k[0] == batch && k[1] == self.kv_heads && k[3] == d => k[2],
            (None, None) => 0,
            (k, v) => {
                let want = format!("[{batch}, {}, T, {d}]", self.kv_heads);
                return Err(self.err(format!("past_key {k:?} and past_value {v:?} must be {want}")));
            }
        };
        for (i, on) in [(14, self.q_norm.is_some()), (15, self.k_norm.is_some())] {
            if on && get(i) != Some(&[d][..]) {
                return Err(self.err(format!("norm weights {:?} must be [{d}]", get(i))));
            }
        }
        if get(5).is_none_or(|k| k.iter().product::<u64>() != batch) {
            return Err(self.err(format!("seqlens_k {:?} must hold {batch} lengths", get(5))));
        }
        let (half, max_seq) = match (self.rotary, get(7), get(8)) {
            (false, ..) => (0, 0),
            (true, Some(c), Some(sn)) if c == sn && c.len() == 2 => {
                if d % 16 != 0 || c[1] > d / 16 * 8 || c[1] % 8 != 0 || c[1] == 0 {
                    return Err(self.err(format!("cos_cache {c:?} does not fit head size {d}")));
                }
                (c[1], c[0])
            }
            (true, c, sn) => return Err(self.err(format!("cos_cache {c:?} and sin_cache {sn:?} must be equal 2-D"))),
        };
        Ok(GqaGeometry { batch, seq, d, packed, past, present: past, half, max_seq })
    }

    /// `g` with the present length `total_sequence_length` gives, checked as ONNX Runtime does.
    pub fn sized(&self, mut g: GqaGeometry, total: i64) -> Result<GqaGeometry, String> {
        let total = u64::try_from(total).map_err(|_| self.err(format!("total_sequence_length {total} is negative")))?;
        if g.seq > 1 && g.seq != total && g.batch != 1 {
            return Err(self.err("batch_size must be 1 when sequence_length > 1 and past context is given"));
        }
        if self.rotary && g.max_seq < total {
            return Err(self.err(format!("cos_cache has {} rows, fewer than the {total} tokens", g.max_seq)));
        }
        g.present = total.max(g.past);
        Ok(g)
    }

    /// What limits the keys a token sees: `seqlens_k` itself (batch b's token s sees keys up to
    /// `past_b + s`), or with a local window the boolean mask the preparation writes.
    pub(super) fn mask_kind(&self) -> MaskKind {
        if self.window > 0 {
            MaskKind::Bool
        } else {
            MaskKind::SeqLens
        }
    }

    /// The flash step's mask operand: `[B, 1, S, T]` bytes, or `seqlens_k`'s `[B]`.
    fn mask_shape(&self, g: &GqaGeometry) -> Vec<u64> {
        match self.mask_kind() {
            MaskKind::Bool => vec![g.batch, 1, g.seq, g.present],
            _ => vec![g.batch],
        }
    }

    /// The flash step over Q `[B, S, H·D]` and the present cache, with the mask or `seqlens_k`.
    ///
    /// Causal: with `seqlens_k`, batch b's offset is its past length `past_b`, so key tiles past
    /// each batch's last key are never loaded (a prompt's past the diagonal, a shared cache's past
    /// the keys written so far). With the mask, bottom-right as well: the checks (host and
    /// device) hold every `past_b + S` within the present cache, so `past_b ≤ T − S`, the
    /// bottom-right offset, and no key the mask lets in is cut.
    fn flash(&self) -> FlashKernel {
        let layouts = [Layout::packed(self.heads), Layout::BHSD, Layout::BHSD];
        FlashKernel {
            scale: self.scale,
            softcap: self.softcap,
            causal: Causal::BottomRight,
            mask: self.mask_kind(),
            engine: self.engine,
            ..FlashKernel::new(&self.name, "GroupQueryAttention", self.ty, layouts, OutLayout::Packed)
        }
    }
}

impl Kernel for GqaKernel {
    fn infer(&self, _inputs: &[Option<&[u64]>]) -> Result<Vec<Vec<u64>>, String> {
        Err(self.err("the present cache's length needs the value of total_sequence_length"))
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[TOTAL_INPUT]
    }

    fn infer_values(&self, inputs: &[Option<&[u64]>], values: &[Option<&[i64]>]) -> Result<Vec<Vec<u64>>, String> {
        let total = match values.first().copied().flatten() {
            Some(&[t]) => t,
            other => return Err(self.err(format!("total_sequence_length must hold one value, got {other:?}"))),
        };
        let g = self.sized(self.geometry(inputs)?, total)?;
        let cache = vec![g.batch, self.kv_heads, g.present, g.d];
        Ok(vec![vec![g.batch, g.seq, self.heads * g.d], cache.clone(), cache])
    }

    fn checks(&self) -> bool {
        true
    }

    /// Without the value of total_sequence_length, the present cache is taken as long as the past
    /// (genai's shared buffer), or as the new tokens without a past.
    fn plan(
        &self,
        inputs: &[Option<&[u64]>],
        caps: &DeviceCaps,
        options: &ExecOptions,
    ) -> Result<Option<StepPlan>, String> {
        let mut g = self.geometry(inputs)?;
        g.present = if g.past > 0 { g.past } else { g.seq };
        if self.folds_prep(&g, caps, options) {
            return self.plan_folded(&g, caps).map(Some);
        }
        let prep = self.prep_dispatches(&g, caps, 0, [false; 2]).map_err(|e| self.err(e))?;
        let q = [g.batch, g.seq, self.heads * g.d];
        let kv = [g.batch, self.kv_heads, g.present, g.d];
        let m = self.mask_shape(&g);
        let flash = self.flash().plan(&[Some(&q), Some(&kv), Some(&kv), Some(&m)], caps, options)?;
        let mut plan = step_plan(String::new(), "", &prep);
        if let Some(f) = flash {
            plan.line = format!("{} (present length {})", f.line, g.present);
            plan.tiling = f.tiling;
            plan.dispatches.extend(f.dispatches);
        }
        Ok(Some(plan))
    }

    fn check_message(&self) -> &'static str {
        "seqlens_k asks for more keys than the caches hold (past/present length, or cos/sin cache rows)"
    }

    /// `seqlens_k` in host memory (genai's graph computes it on the CPU) is checked there.
    fn host_checked(&self) -> &'static [usize] {
        &[SEQLENS_INPUT]
    }

    /// What the rows stage checks on the device (`wgsl/gqa_prep.wgsl.j2`), per batch.
    fn host_check(&self, inputs: &[Option<&[u64]>], outputs: &[&[u64]], values: &[&[i64]]) -> Result<(), String> {
        let g = self.geometry(inputs)?;
        let present = outputs.get(1).and_then(|s| s.get(2)).copied().ok_or_else(|| self.err("present rank"))?;
        let seqlens = values.first().copied().unwrap_or_default();
        if seqlens.len() as u64 != g.batch {
            return Err(self.err(format!("seqlens_k holds {} lengths for batch {}", seqlens.len(), g.batch)));
        }
        let seq = i64::try_from(g.seq).unwrap_or(i64::MAX);
        for &k in seqlens {
            let total = k.saturating_add(1);
            let past_b = u64::try_from((total - seq).max(0)).unwrap_or(u64::MAX);
            let fits = past_b.saturating_add(g.seq) <= present && past_b <= g.past;
            let rotates = g.half == 0 || past_b.saturating_add(g.seq) <= g.max_seq;
            if total < 1 || !fits || !rotates {
                return Err(self.check_message().into());
            }
        }
        Ok(())
    }

    /// The present caches may be the past caches' ranges (genai's shared buffer).
    fn shares_input(&self, output: usize) -> Option<usize> {
        match output {
            1 => Some(3),
            2 => Some(4),
            _ => None,
        }
    }

    fn prepare(&self, cx: &PrepareCx<'_>, io: &KernelIo<'_>) -> Result<PreparedStep, GpuError> {
        let shapes: Vec<Option<&[u64]>> = io.inputs.iter().map(|t| t.map(|t| t.shape)).collect();
        let (present_k, present_v, out) = (io.output(1)?, io.output(2)?, io.output(0)?);
        // The present cache's length is what inference made of total_sequence_length.
        let present = present_k.shape.get(2).copied().ok_or_else(|| GpuError::Internal(self.err("present rank")))?;
        let mut g = self.geometry(&shapes).map_err(GpuError::Invalid)?;
        g.present = present;
        if let Some(why) = unsupported(g.d, cx.caps()) {
            return Err(GpuError::Invalid(self.err(why)));
        }
        let query = io.input(0)?;
        let spare = cx.gpu.unused_input()?;
        let buf = |i: usize| io.inputs.get(i).copied().flatten().map_or(spare, |t| t.buf);
        let seqlens = io.input(5)?;
        let bound: Vec<Tensor<'_>> = io.inputs.iter().flatten().copied().chain(io.outputs.iter().copied()).collect();
        check_bindings(&bound, cx.caps())?;
        // A past bound to exactly its present's range (`shares_input`): its rows are already
        // there, so the stage binds the present alone and writes the new rows and the tail.
        let shared = |past: &GpuBuffer, present: &GpuBuffer| {
            g.past == g.present && past.buffer == present.buffer && past.offset == present.offset
        };
        let (k_past, v_past) = (buf(3), buf(4));
        let in_place = [shared(k_past, present_k.buf), shared(v_past, present_v.buf)];
        if self.folds_prep(&g, cx.caps(), cx.options) {
            return self.prepare_folded(cx, io, &g, in_place);
        }
        let q_tmp =
            cx.gpu.storage_buffer(g.batch * g.seq * self.heads * g.d * self.ty.size(), "GroupQueryAttention Q")?;
        let m_shape = self.mask_shape(&g);
        let mask_bytes = if self.mask_kind() == MaskKind::Bool { m_shape.iter().product::<u64>() } else { 4 };
        let mask = cx.gpu.storage_buffer(mask_bytes.next_multiple_of(4), "GroupQueryAttention mask")?;
        let key_src = if g.packed { query.buf } else { buf(1) };
        let value_src = if g.packed { query.buf } else { buf(2) };
        let rows_in = |src, past, norm| [src, past, seqlens.buf, buf(7), buf(8), norm];
        let prep = self.prep_dispatches(&g, cx.caps(), cx.status_code, in_place)?;
        let (k_past, v_past) = (if in_place[0] { spare } else { k_past }, if in_place[1] { spare } else { v_past });
        let mut dispatches = match prep.as_slice() {
            [all] => vec![all.bind(
                cx.gpu,
                &[query.buf, key_src, value_src, k_past, v_past, seqlens.buf, buf(7), buf(8), buf(14), buf(15)],
                &[&q_tmp, present_k.buf, present_v.buf, &mask, cx.status],
            )?],
            [q_rows, k_rows, v_rows, mask_words @ ..] => {
                let mut out = vec![
                    q_rows.bind(cx.gpu, &rows_in(query.buf, spare, buf(14)), &[&q_tmp, cx.status])?,
                    k_rows.bind(cx.gpu, &rows_in(key_src, k_past, buf(15)), &[present_k.buf, cx.status])?,
                    v_rows.bind(cx.gpu, &rows_in(value_src, v_past, spare), &[present_v.buf, cx.status])?,
                ];
                for words in mask_words {
                    out.push(words.bind(cx.gpu, &[seqlens.buf], &[&mask])?);
                }
                out
            }
            _ => return Err(GpuError::Internal(self.err("unexpected preparation dispatches"))),
        };
        if g.seq == 1 && crate::exp_skip("gqa_prep") {
            dispatches.clear();
        }
        let qd = self.heads * g.d;
        let q_shape = [g.batch, g.seq, qd];
        let flash_io = KernelIo {
            inputs: vec![
                Some(Tensor { buf: &q_tmp, shape: &q_shape, ty: self.ty, constant: false }),
                Some(present_k),
                Some(present_v),
                Some(match self.mask_kind() {
                    MaskKind::Bool => Tensor { buf: &mask, shape: &m_shape, ty: ElemType::Bool, constant: false },
                    _ => Tensor { buf: seqlens.buf, shape: &m_shape, ty: ElemType::I32, constant: false },
                }),
            ],
            outputs: vec![out],
        };
        let flash = self.flash().prepare(cx, &flash_io)?;
        dispatches.extend(flash.dispatches);
        Ok(PreparedStep { dispatches, plan: flash.plan })
    }
}

impl OpDef for GroupQueryAttentionDef {
    fn names(&self) -> &'static [&'static str] {
        &["GroupQueryAttention"]
    }

    fn domain(&self) -> &'static str {
        "com.microsoft"
    }

    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String> {
        check_f16(node, opts)?;
        let k = GqaKernel::of(node)?;
        for (i, v) in node.inputs.iter().enumerate().filter_map(|(i, v)| Some((i, v.as_ref()?))) {
            let want = if i == 5 || i == TOTAL_INPUT { ElemType::I32 } else { k.ty };
            if !v.name.is_empty() && v.elem_type != want.onnx() {
                return Err(format!("GroupQueryAttention input {i} '{}' must be {}", v.name, want.name()));
            }
        }
        let width = node.input(0).and_then(|v| v.shape.as_ref()?.last()?.fixed());
        if let Some(width) = width {
            let heads = if node.has_input(1) { k.heads } else { k.heads + 2 * k.kv_heads };
            if let Some(why) = unsupported(width / heads, &opts.caps) {
                return Err(why);
            }
        }
        Ok(())
    }

    fn gpu_inputs(&self, _node: &Node) -> Vec<usize> {
        (0..16).collect()
    }

    fn host_inputs(&self, _node: &Node) -> Vec<usize> {
        // seqlens_k is read on the GPU, but genai computes it from the attention mask, which grows
        // every decode step.
        vec![5, TOTAL_INPUT]
    }

    fn build(&self, node: &Node) -> Result<Box<dyn Kernel>, String> {
        Ok(Box::new(GqaKernel::of(node)?))
    }

    fn flops(&self, node: &Node) -> Option<f64> {
        let q: u64 = node.input(0)?.fixed_shape()?.iter().product();
        let past = node.input(3).and_then(|v| v.fixed_shape()).map_or(0, |s| s.get(2).copied().unwrap_or(0));
        let seq = node.input(0)?.fixed_shape()?.get(1).copied()?;
        Some(4.0 * q as f64 * (past + seq) as f64)
    }

    fn variants(&self, caps: &DeviceCaps) -> Vec<ShaderVariant> {
        variants(caps)
    }
}
