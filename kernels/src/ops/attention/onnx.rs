//! ONNX `Attention` (opset 23): Q, K, V as `[B, H, S, D]` or `[B, S, H·D]` (with `q_num_heads`,
//! `kv_num_heads`), an optional boolean or additive `attn_mask`, `is_causal` (top-left: query i
//! sees keys 0..=i), `scale`. Declined with a reason: past key/value inputs, the present and
//! QK outputs, `softcap`, a V head size unlike Q's, head sizes the kernel lacks.

use super::kernel::{Causal, FlashKernel, Layout, MaskKind, OutLayout};
use super::unsupported;
use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::graph::model::Node;
use crate::graph::support::PlacementOptions;
use crate::ops::norm::input_type;
use crate::ops::{check_f16, check_types, Kernel, OpDef};
use crate::shader::ShaderVariant;

pub struct AttentionDef;

/// The attributes of opset 23/24 (`softmax_precision` only asks for at least the input's precision: we
/// accumulate in f32). Any other declines, so none is silently ignored.
const KNOWN_ATTRS: &[&str] =
    &["is_causal", "kv_num_heads", "q_num_heads", "qk_matmul_output_mode", "scale", "softcap", "softmax_precision"];

/// The step of an `Attention` node, or why it cannot run here.
pub fn kernel(node: &Node) -> Result<FlashKernel, String> {
    let ty = input_type(node, 0, "Q")?;
    if !ty.is_float() {
        return Err(format!("Attention of {} is not supported", ty.name()));
    }
    if let Some(a) = node.attrs.keys().find(|a| !KNOWN_ATTRS.contains(&a.as_str())) {
        return Err(format!("Attention attribute '{a}' is not supported"));
    }
    if node.int("qk_matmul_output_mode").is_some_and(|m| m != 0) {
        return Err("Attention with qk_matmul_output_mode other than 0 is not supported".into());
    }
    if (4..7).any(|i| node.has_input(i)) {
        return Err("Attention with past_key/past_value (or nonpad_kv_seqlen) inputs is not supported yet".into());
    }
    if node.outputs.iter().skip(1).flatten().any(|o| !o.name.is_empty()) {
        return Err("Attention's present_key/present_value/qk_matmul_output outputs are not supported".into());
    }
    if node.float("softcap").is_some_and(|c| c != 0.0) {
        return Err("Attention with softcap is not supported".into());
    }
    let mask = match node.input(3).filter(|v| !v.name.is_empty()) {
        None => MaskKind::None,
        Some(m) if m.elem_type == ElemType::Bool.onnx() => MaskKind::Bool,
        Some(m) if m.elem_type == ty.onnx() => MaskKind::Add,
        Some(m) => return Err(format!("Attention mask of element type {} is not supported", m.elem_type)),
    };
    let rank = |i: usize| node.input(i).and_then(|v| v.rank());
    let layout = |i: usize, heads: &str| -> Result<Layout, String> {
        match rank(i) {
            Some(4) => Ok(Layout::BHSD),
            Some(3) => {
                let h =
                    node.int(heads).filter(|&h| h > 0).ok_or_else(|| format!("3-D Attention inputs need {heads}"))?;
                Ok(Layout::packed(h as u64))
            }
            other => Err(format!("Attention inputs of rank {other:?} are not supported")),
        }
    };
    let q = layout(0, "q_num_heads")?;
    let out = if q.packed_heads.is_some() { OutLayout::Packed } else { OutLayout::Plain(4) };
    let layouts = [q, layout(1, "kv_num_heads")?, layout(2, "kv_num_heads")?];
    Ok(FlashKernel {
        scale: node.float("scale"),
        causal: if node.int("is_causal").unwrap_or(0) != 0 { Causal::TopLeft } else { Causal::None },
        mask,
        ..FlashKernel::new(&node.name, "Attention", ty, layouts, out)
    })
}

impl OpDef for AttentionDef {
    fn names(&self) -> &'static [&'static str] {
        &["Attention"]
    }

    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String> {
        check_types(node, &[ElemType::F32, ElemType::F16, ElemType::Bool])?;
        check_f16(node, opts)?;
        let k = kernel(node)?;
        super::flash_enabled(opts, k.ty, None)?;
        let shape = |i: usize| node.input(i).and_then(|v| v.fixed_shape());
        if let (Some(q), Some(kk), Some(v)) = (shape(0), shape(1), shape(2)) {
            let g = k.geometry(&q, &kk, &v)?;
            super::flash_enabled(opts, k.ty, Some(g.d))?;
            if let Some(why) = unsupported(g.d, &opts.caps) {
                return Err(why);
            }
            if let Some(m) = shape(3) {
                k.infer(&[Some(&q), Some(&kk), Some(&v), Some(&m)])?;
            }
        } else if let Some(d) = node.input(0).and_then(|v| v.shape.as_ref()?.last()?.fixed()) {
            // A 4-D Q's last dim is the head size.
            if k.q.packed_heads.is_none() {
                if let Some(why) = unsupported(d, &opts.caps) {
                    return Err(why);
                }
            }
        }
        Ok(())
    }

    fn gpu_inputs(&self, _node: &Node) -> Vec<usize> {
        vec![0, 1, 2, 3]
    }

    fn build(&self, node: &Node) -> Result<Box<dyn Kernel>, String> {
        Ok(Box::new(kernel(node)?))
    }

    fn flops(&self, node: &Node) -> Option<f64> {
        let q: u64 = node.input(0)?.fixed_shape()?.iter().product();
        let k = node.input(1)?.fixed_shape()?;
        let skv = if k.len() == 4 { k[2] } else { *k.get(1)? };
        Some(4.0 * q as f64 * skv as f64)
    }

    fn variants(&self, _caps: &DeviceCaps) -> Vec<ShaderVariant> {
        Vec::new()
    }
}
