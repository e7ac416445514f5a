//! `FlashAttention` (domain [`super::INTERNAL_DOMAIN`]): the node the exported attention pattern
//! is rewritten into (`graph/attention.rs`). Inputs Q, K, V and an optional mask (additive, or
//! boolean); attributes `q_perm`, `k_perm`, `v_perm` (each operand's logical (batch, head, seq,
//! dim) as dims of its stored tensor, leading 1s added up to rank 4), `scale` and `out_rank`.

use super::kernel::{Causal, Engine, FlashKernel, Layout, MaskKind, OutLayout};
use super::{unsupported, INTERNAL_DOMAIN};
use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::graph::model::Node;
use crate::graph::support::PlacementOptions;
use crate::ops::norm::input_type;
use crate::ops::{check_f16, check_types, Kernel, OpDef};
use crate::shader::ShaderVariant;

pub struct FlashAttentionDef;

/// The op type of the rewritten node.
pub const OP: &str = "FlashAttention";

fn perm(node: &Node, name: &str) -> Result<[usize; 4], String> {
    let p = node.ints(name).ok_or_else(|| format!("{OP} '{}' lacks {name}", node.name))?;
    let mut out = [0usize; 4];
    for (o, &x) in out.iter_mut().zip(p) {
        *o = usize::try_from(x).ok().filter(|&x| x < 4).ok_or_else(|| format!("{OP}: bad {name} {p:?}"))?;
    }
    let mut seen = out;
    seen.sort_unstable();
    (p.len() == 4 && seen == [0, 1, 2, 3]).then_some(out).ok_or_else(|| format!("{OP}: bad {name} {p:?}"))
}

/// The step of a `FlashAttention` node.
pub fn kernel(node: &Node) -> Result<FlashKernel, String> {
    let ty = input_type(node, 0, "Q")?;
    let mask = match node.input(3).filter(|v| !v.name.is_empty()) {
        None => MaskKind::None,
        Some(m) if m.elem_type == ElemType::Bool.onnx() => MaskKind::Bool,
        Some(m) if m.elem_type == ty.onnx() => MaskKind::Add,
        Some(m) => return Err(format!("{OP} '{}': mask of element type {}", node.name, m.elem_type)),
    };
    let layout = |name| perm(node, name).map(|perm| Layout { perm, packed_heads: None });
    let rank = node.int("out_rank").and_then(|r| usize::try_from(r).ok()).unwrap_or(4);
    Ok(FlashKernel {
        name: node.name.clone(),
        op: OP,
        ty,
        scale: node.float("scale"),
        causal: Causal::None,
        mask,
        q: layout("q_perm")?,
        k: layout("k_perm")?,
        v: layout("v_perm")?,
        out: OutLayout::Plain(rank),
        tiles: None,
        engine: Engine::Auto,
        splits: None,
    })
}

impl OpDef for FlashAttentionDef {
    fn names(&self) -> &'static [&'static str] {
        &[OP]
    }

    fn domain(&self) -> &'static str {
        INTERNAL_DOMAIN
    }

    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String> {
        let types: Vec<ElemType> = [ElemType::F32, ElemType::F16, ElemType::Bool].into();
        check_types(node, &types)?;
        check_f16(node, opts)?;
        let k = kernel(node)?;
        super::flash_enabled(opts, k.ty)?;
        if let (Some(q), Some(kk), Some(v)) = (
            node.input(0).and_then(|v| v.fixed_shape()),
            node.input(1).and_then(|v| v.fixed_shape()),
            node.input(2).and_then(|v| v.fixed_shape()),
        ) {
            let g = k.geometry(&q, &kk, &v)?;
            if let Some(why) = unsupported(g.d, &opts.caps) {
                return Err(why);
            }
        }
        Ok(())
    }

    fn build(&self, node: &Node) -> Result<Box<dyn Kernel>, String> {
        Ok(Box::new(kernel(node)?))
    }

    fn flops(&self, node: &Node) -> Option<f64> {
        let q: u64 = node.input(0)?.fixed_shape()?.iter().product();
        let kv = node.input(1)?.fixed_shape()?;
        let skv = kv.get(kernel(node).ok()?.k.perm[2].checked_sub(4usize.checked_sub(kv.len())?)?)?;
        Some(4.0 * q as f64 * *skv as f64)
    }

    fn variants(&self, caps: &DeviceCaps) -> Vec<ShaderVariant> {
        super::variants(caps)
    }
}
