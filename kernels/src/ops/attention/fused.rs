//! `FlashAttention` (domain [`super::INTERNAL_DOMAIN`]): the node the exported attention pattern
//! is rewritten into (`graph/attention.rs`). Inputs Q, K, V and an optional mask (additive, or
//! boolean); attributes `q_perm`, `k_perm`, `v_perm` (each operand's logical (batch, head, seq,
//! dim) as dims of its stored tensor, leading 1s added up to rank 4), `scale` and `out_rank`, or
//! `out_heads` = 1 for an output stored `[B, S, H, D]`.

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

/// With `qkv_heads`, `qkv_offsets` and `qkv_widths` (three each): Q, K and V are column ranges
/// of one `[B, S, row]` input (`graph/packed_proj.rs`), read in its `[B, S, H, D]` view.
fn packed(node: &Node) -> Result<Option<[Layout; 3]>, String> {
    let get = |name| node.ints(name).filter(|v| v.len() == 3 && v.iter().all(|&x| x >= 0));
    match (get("qkv_heads"), get("qkv_offsets"), get("qkv_widths")) {
        (Some(h), Some(o), Some(w)) => {
            Ok(Some([0, 1, 2].map(|j| Layout::columns(h[j] as u64, o[j] as u64, w[j] as u64))))
        }
        (None, None, None) => Ok(None),
        _ => Err(format!("{OP} '{}': bad packed Q/K/V attributes", node.name)),
    }
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
    let layout = |name| perm(node, name).map(|perm| Layout { perm, packed_heads: None, columns: None });
    let [q, k, v] = match packed(node)? {
        Some(columns) => columns,
        None => [layout("q_perm")?, layout("k_perm")?, layout("v_perm")?],
    };
    let rank = node.int("out_rank").and_then(|r| usize::try_from(r).ok()).unwrap_or(4);
    Ok(FlashKernel {
        name: node.name.clone(),
        op: OP,
        ty,
        scale: node.float("scale"),
        softcap: 0.0,
        causal: Causal::None,
        mask,
        q,
        k,
        v,
        out: if node.int("out_heads") == Some(1) { OutLayout::Heads } else { OutLayout::Plain(rank) },
        tiles: None,
        engine: Engine::Auto,
        splits: None,
        lanes: None,
        kv_bound: match node.attrs.get(crate::graph::bounds::KV_BOUND) {
            Some(crate::graph::Attr::Floats(b)) => <[f32; 2]>::try_from(b.as_slice()).ok(),
            _ => None,
        },
        prep: None,
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
        super::flash_enabled(opts, k.ty, None)?;
        if let (Some(q), Some(kk), Some(v)) = (
            node.input(0).and_then(|v| v.fixed_shape()),
            node.input(1).and_then(|v| v.fixed_shape()),
            node.input(2).and_then(|v| v.fixed_shape()),
        ) {
            let g = k.geometry(&q, &kk, &v)?;
            super::flash_enabled(opts, k.ty, Some(g.d))?;
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
        let shape = |i: usize| node.input(i).and_then(|v| v.fixed_shape());
        let g = kernel(node).ok()?.geometry(&shape(0)?, &shape(1)?, &shape(2)?).ok()?;
        Some(4.0 * (g.batch * g.heads * g.sq * g.skv * g.d) as f64)
    }

    fn variants(&self, caps: &DeviceCaps) -> Vec<ShaderVariant> {
        super::variants(caps)
    }
}
