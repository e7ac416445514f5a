//! `com.microsoft` `MultiHeadAttention` without a KV cache: query `[B, S, N·H]`, key and value
//! `[B, L, N·H]` or `[B, N, L, H]`, an optional `attention_bias` (additive, broadcast onto
//! `[B, N, S, L]`), `num_heads`, `scale`, `unidirectional` (causal, bottom-right). Declined with
//! a reason: packed QKV/KV, `bias`, `key_padding_mask`, past/present key and value, extra outputs.

use super::kernel::{Causal, FlashKernel, Layout, MaskKind, OutLayout};
use super::unsupported;
use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::graph::model::Node;
use crate::graph::support::PlacementOptions;
use crate::ops::norm::input_type;
use crate::ops::{check_f16, check_types, Kernel, OpDef};
use crate::shader::ShaderVariant;

pub struct MultiHeadAttentionDef;

const KNOWN_ATTRS: &[&str] = &["num_heads", "scale", "unidirectional", "mask_filter_value"];

/// The step of a `MultiHeadAttention` node, or why it cannot run here.
pub fn kernel(node: &Node) -> Result<FlashKernel, String> {
    let ty = input_type(node, 0, "query")?;
    if !ty.is_float() {
        return Err(format!("MultiHeadAttention of {} is not supported", ty.name()));
    }
    if let Some(a) = node.attrs.keys().find(|a| !KNOWN_ATTRS.contains(&a.as_str())) {
        return Err(format!("MultiHeadAttention attribute '{a}' is not supported"));
    }
    let heads = node.int("num_heads").filter(|&h| h > 0).ok_or("MultiHeadAttention needs num_heads")? as u64;
    if !node.has_input(1) || !node.has_input(2) {
        return Err("MultiHeadAttention with packed QKV or KV is not supported".into());
    }
    for (i, what) in [(3, "bias"), (4, "key_padding_mask"), (6, "past_key"), (7, "past_value")] {
        if node.has_input(i) {
            return Err(format!("MultiHeadAttention with {what} is not supported yet"));
        }
    }
    if (8..node.inputs.len()).any(|i| node.has_input(i)) {
        return Err("MultiHeadAttention with past sequence or cache inputs is not supported".into());
    }
    if node.outputs.iter().skip(1).flatten().any(|o| !o.name.is_empty()) {
        return Err("MultiHeadAttention's present_key/present_value/qk outputs are not supported".into());
    }
    let mask = match node.input(5).filter(|v| !v.name.is_empty()) {
        None => MaskKind::None,
        Some(m) if m.elem_type == ty.onnx() => MaskKind::Add,
        Some(m) => return Err(format!("MultiHeadAttention attention_bias of element type {}", m.elem_type)),
    };
    let layout = |i: usize| -> Result<Layout, String> {
        match node.input(i).and_then(|v| v.rank()) {
            Some(3) => Ok(Layout::packed(heads)),
            Some(4) if i > 0 => Ok(Layout::BHSD),
            other => Err(format!("MultiHeadAttention input {i} of rank {other:?} is not supported")),
        }
    };
    let layouts = [layout(0)?, layout(1)?, layout(2)?];
    Ok(FlashKernel {
        scale: node.float("scale").filter(|&s| s != 0.0),
        causal: if node.int("unidirectional").unwrap_or(0) != 0 { Causal::BottomRight } else { Causal::None },
        mask,
        ..FlashKernel::new(&node.name, "MultiHeadAttention", ty, layouts, OutLayout::Packed)
    })
}

impl OpDef for MultiHeadAttentionDef {
    fn names(&self) -> &'static [&'static str] {
        &["MultiHeadAttention"]
    }

    fn domain(&self) -> &'static str {
        "com.microsoft"
    }

    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String> {
        check_types(node, &[ElemType::F32, ElemType::F16])?;
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
            if let Some(m) = shape(5) {
                k.infer(&[Some(&q), Some(&kk), Some(&v), Some(&m)])?;
            }
        } else if let (Some(hidden), Some(h)) =
            (node.input(0).and_then(|v| v.shape.as_ref()?.last()?.fixed()), node.int("num_heads"))
        {
            if let Some(why) =
                u64::try_from(h).ok().filter(|&h| h > 0).and_then(|h| unsupported(hidden / h, &opts.caps))
            {
                return Err(why);
            }
        }
        Ok(())
    }

    fn gpu_inputs(&self, _node: &Node) -> Vec<usize> {
        vec![0, 1, 2, 5]
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
