//! `Split(qkv, last axis) → GroupQueryAttention(q, k, v, …)`, as onnxruntime-genai's builder
//! emits it after a fused QKV projection (Qwen3): GroupQueryAttention reads a packed projection
//! itself (query of `(heads + 2·kv_heads)·d` columns, key and value omitted), so the rewrite
//! drops the Split and its three copies (three dispatches per layer at decode).

use super::model::{Dim, Node, ValueInfo};
use super::patterns::{Ctx, Rewrite};

/// The rewrite from Split `s`, when its three outputs are exactly the query, key and value of
/// one GroupQueryAttention, read by nothing else, split along the last axis into `heads·d`,
/// `kv_heads·d`, `kv_heads·d` columns (from the outputs' declared shapes).
pub(super) fn gqa_reads_packed(ctx: &Ctx<'_>, s: usize) -> Option<Rewrite> {
    let split = &ctx.nodes[s];
    let outs: Vec<&ValueInfo> = split.outputs.iter().map(Option::as_ref).collect::<Option<_>>()?;
    if outs.len() != 3 {
        return None;
    }
    let g = ctx.only_reader(&outs[0].name)?;
    let gqa = &ctx.nodes[g];
    if gqa.op_type != "GroupQueryAttention" || gqa.domain != "com.microsoft" {
        return None;
    }
    for (k, out) in outs.iter().enumerate() {
        if ctx.only_reader(&out.name) != Some(g) || ctx.input_name(g, k) != Some(out.name.as_str()) {
            return None;
        }
    }
    let x = split.input(0)?;
    if !last_axis(split, x)? || !widths_fit(gqa, &outs)? {
        return None;
    }
    let mut node: Node = gqa.clone();
    node.name = format!("{}_packed", gqa.name);
    node.inputs[0] = Some(x.clone());
    node.inputs[1] = None;
    node.inputs[2] = None;
    Some(Rewrite { members: vec![s, g], node })
}

/// Whether the Split cuts X's last axis.
fn last_axis(split: &Node, x: &ValueInfo) -> Option<bool> {
    let rank = i64::try_from(x.shape.as_ref()?.len()).ok()?;
    let axis = split.int("axis").unwrap_or(0);
    Some(axis == -1 || axis == rank - 1)
}

/// Whether the three widths are `heads·d`, `kv_heads·d`, `kv_heads·d`.
fn widths_fit(gqa: &Node, outs: &[&ValueInfo]) -> Option<bool> {
    let last = |v: &ValueInfo| match v.shape.as_ref()?.last()? {
        Dim::Fixed(d) => Some(*d),
        _ => None,
    };
    let (q, k, v) = (last(outs[0])?, last(outs[1])?, last(outs[2])?);
    let heads = u64::try_from(gqa.int("num_heads")?).ok().filter(|&h| h > 0)?;
    let kv = u64::try_from(gqa.int("kv_num_heads")?).ok()?;
    let d = q / heads;
    Some(q % heads == 0 && k == kv * d && v == kv * d)
}
