//! The exported attention pattern, rewritten into the EP's `FlashAttention` node:
//!
//! `MatMul(Q, Kᵀ) → [Mul(·, c) | Div(·, c)] → [Add(·, mask)] → [Cast f32] → Softmax(last axis) →
//! [Cast back, or Cast f32 → Cast f16] → MatMul(·, V)`
//!
//! with Q, Kᵀ, V of rank 3 or 4, equal batch dims and a head size the kernel has (else the ops run
//! unfused). A Transpose feeding Q, Kᵀ or V that only the pattern reads is absorbed into that
//! operand's strides, so both layouts of K (`Kᵀ` computed by the graph, or `Transpose(K)`) and the
//! usual `[B, S, H, D] → [B, H, S, D]` transposes cost nothing, and so does the `Transpose(0, 2,
//! 1, 3)` back to `[B, S, H, D]` after it (the kernel stores that layout). As for every rewrite,
//! each intermediate must be read only inside the pattern.

use super::model::{Attr, Dim, Node, ValueInfo};
use super::patterns::{scalar, Ctx, Rewrite};
use crate::ops::attention::fused::OP;
use crate::ops::attention::{INTERNAL_DOMAIN, REWRITE_HEAD_SIZES};

/// The pattern around Softmax node `s`.
pub(super) fn flash(ctx: &Ctx<'_>, s: usize, mode: super::FlashMode) -> Option<Rewrite> {
    let softmax = &ctx.nodes[s];
    let rank = softmax.input(0)?.rank()?;
    let last_axis = if softmax.since_version < 13 { rank as i64 - 1 } else { -1 };
    let axis = softmax.int("axis").unwrap_or(if softmax.since_version < 13 { 1 } else { -1 });
    if !(rank == 3 || rank == 4) || (axis != last_axis && axis != rank as i64 - 1) {
        return None;
    }
    let mut members = vec![s];
    // After: up to two Casts between float types (back to the input's type, or the exported
    // f16 → f32 → f16 round trip), then MatMul(P, V).
    let mut p = s;
    let mut mm2 = ctx.next(p)?;
    for _ in 0..2 {
        if !ctx.op(mm2, "Cast") || !float_cast(&ctx.nodes[mm2]) {
            break;
        }
        members.push(mm2);
        p = mm2;
        mm2 = ctx.next(p)?;
    }
    if !ctx.op(mm2, "MatMul") || ctx.input_name(mm2, 0) != ctx.out(p) {
        return None;
    }
    members.push(mm2);
    // Before: an optional Cast to f32, Add(mask), Mul/Div(scale), then MatMul(Q, Kᵀ).
    let mut at = ctx.input_node(s, 0)?;
    if ctx.op(at, "Cast") {
        members.push(at);
        at = ctx.input_node(at, 0)?;
    }
    let mut mask = None;
    if ctx.op(at, "Add") {
        let (k, src) = [0, 1].into_iter().find_map(|k| {
            let src = ctx.input_node(at, k)?;
            let scaled = (ctx.op(src, "Mul") || ctx.op(src, "Div"))
                && (0..2).any(|j| ctx.input_node(src, j).is_some_and(|m| ctx.op(m, "MatMul")));
            (ctx.op(src, "MatMul") || scaled).then_some((k, src))
        })?;
        mask = Some(ctx.nodes[at].input(1 - k)?.clone());
        members.push(at);
        at = src;
    }
    let mut scale = 1.0f32;
    if ctx.op(at, "Mul") || ctx.op(at, "Div") {
        let (k, src) = [0, 1].into_iter().find_map(|k| {
            let src = ctx.input_node(at, k)?;
            ctx.op(src, "MatMul").then_some((k, src))
        })?;
        let c = scalar(ctx.nodes[at].input(1 - k)?).filter(|c| c.is_finite() && *c != 0.0)?;
        let c_shape = ctx.nodes[at].input(1 - k)?.fixed_shape()?;
        if c_shape.iter().product::<u64>() != 1 || c_shape.len() > rank || (ctx.op(at, "Div") && k != 0) {
            return None;
        }
        scale = if ctx.op(at, "Div") { 1.0 / c } else { c };
        members.push(at);
        at = src;
    }
    let mm1 = at;
    if !ctx.op(mm1, "MatMul") {
        return None;
    }
    members.push(mm1);
    // Only the element types (and f32 head sizes) the mode fuses.
    let ty = crate::dtype::ElemType::from_onnx(ctx.nodes[mm1].input(0)?.elem_type)?;
    mode.allows().ok()?;
    let rewrite = finish(ctx, members, mm1, mm2, mask, scale, rank)?;
    let d = dims(ctx.nodes[mm1].input(0)?)?.last()?.fixed()?;
    mode.allows_head(ty, d).ok()?;
    Some(rewrite)
}

/// Whether a Cast goes to f16 or f32.
fn float_cast(cast: &Node) -> bool {
    let to = cast.int("to").and_then(|t| i32::try_from(t).ok()).and_then(crate::dtype::ElemType::from_onnx);
    matches!(to, Some(crate::dtype::ElemType::F16 | crate::dtype::ElemType::F32))
}

/// An operand of the pattern: its source (through the Transposes feeding it that only the pattern
/// reads, absorbed) and the map from the operand's 4-D view dims to the source's.
fn operand(ctx: &Ctx<'_>, node: usize, k: usize, members: &mut Vec<usize>) -> Option<(ValueInfo, [usize; 4])> {
    let mut v = ctx.nodes[node].input(k)?;
    let rank = v.rank()?;
    let pad = 4usize.checked_sub(rank)?;
    let mut map = [0, 1, 2, 3];
    let mut reader = node;
    let mut slot = k;
    while let Some(t) = ctx.input_node(reader, slot).filter(|&t| ctx.op(t, "Transpose")) {
        let src = ctx.nodes[t].input(0)?;
        let perm: Vec<usize> = match ctx.nodes[t].ints("perm") {
            Some(p) => p.iter().map(|&x| usize::try_from(x).ok()).collect::<Option<_>>()?,
            None => (0..rank).rev().collect(),
        };
        let mut with = members.clone();
        with.push(t);
        if perm.len() != rank || src.rank() != Some(rank) || perm.iter().any(|&x| x >= rank) || !ctx.private(t, &with) {
            break;
        }
        // The Transpose's output view dim j is its input's view dim perm[j − pad] + pad.
        for m in map.iter_mut().filter(|m| **m >= pad) {
            *m = perm[*m - pad] + pad;
        }
        members.push(t);
        (v, reader, slot) = (src, t, 0);
    }
    Some((v.clone(), map))
}

fn dims(v: &ValueInfo) -> Option<&[Dim]> {
    v.shape.as_deref()
}

fn finish(
    ctx: &Ctx<'_>,
    mut members: Vec<usize>,
    mm1: usize,
    mm2: usize,
    mask: Option<ValueInfo>,
    scale: f32,
    rank: usize,
) -> Option<Rewrite> {
    let (qv, ktv, vv) = (ctx.nodes[mm1].input(0)?, ctx.nodes[mm1].input(1)?, ctx.nodes[mm2].input(1)?);
    let (q, kt, v) = (dims(qv)?, dims(ktv)?, dims(vv)?);
    if q.len() != rank
        || kt.len() != rank
        || v.len() != rank
        || q[..rank - 2] != kt[..rank - 2]
        || q[..rank - 2] != v[..rank - 2]
    {
        return None;
    }
    let d = q[rank - 1].fixed()?;
    if !REWRITE_HEAD_SIZES.contains(&d)
        || kt[rank - 2] != Dim::Fixed(d)
        || v[rank - 1] != Dim::Fixed(d)
        || kt[rank - 1] != v[rank - 2]
    {
        return None;
    }
    let ty = qv.elem_type;
    if ktv.elem_type != ty || vv.elem_type != ty || ctx.nodes[mm2].output(0)?.elem_type != ty {
        return None;
    }
    if let Some(m) = &mask {
        // The mask must broadcast onto the scores [batch…, Sq, Skv] without widening them.
        let scores: Vec<&Dim> = q[..rank - 1].iter().chain(std::iter::once(&kt[rank - 1])).collect();
        let md = dims(m)?;
        let onto =
            md.len() <= rank && md.iter().rev().zip(scores.iter().rev()).all(|(a, b)| a == *b || *a == Dim::Fixed(1));
        if !onto || m.elem_type != ty {
            return None;
        }
    }
    let (qs, qmap) = operand(ctx, mm1, 0, &mut members)?;
    let (ks, ktmap) = operand(ctx, mm1, 1, &mut members)?;
    let (vs, vmap) = operand(ctx, mm2, 1, &mut members)?;
    // Logical K (b, h, s, d) is Kᵀ's view dims (0, 1, 3, 2).
    let kmap = [ktmap[0], ktmap[1], ktmap[3], ktmap[2]];
    // The exported `Transpose(0, 2, 1, 3)` back to [B, S, H, D]: the kernel stores that layout.
    let heads_out = ctx
        .next(mm2)
        .filter(|&t| rank == 4 && ctx.op(t, "Transpose") && ctx.nodes[t].ints("perm") == Some(&[0, 2, 1, 3][..]));
    let tail = heads_out.unwrap_or(mm2);
    members.extend(heads_out);
    members.sort_unstable();
    members.dedup();
    let last = *members.last()?;
    if last != tail || !members.iter().filter(|&&m| m != last).all(|&m| ctx.private(m, &members)) {
        return None;
    }
    let perm = |m: [usize; 4]| Attr::Ints(m.iter().map(|&x| x as i64).collect());
    let node = Node {
        name: format!("{}_flash", ctx.nodes[mm2].name),
        op_type: OP.into(),
        domain: INTERNAL_DOMAIN.into(),
        since_version: 1,
        inputs: vec![Some(qs), Some(ks), Some(vs), mask],
        outputs: vec![Some(ctx.nodes[tail].output(0)?.clone())],
        attrs: [
            ("q_perm".to_string(), perm(qmap)),
            ("k_perm".to_string(), perm(kmap)),
            ("v_perm".to_string(), perm(vmap)),
            ("scale".to_string(), Attr::Float(scale)),
            ("out_rank".to_string(), Attr::Int(rank as i64)),
        ]
        .into_iter()
        .chain(heads_out.map(|_| ("out_heads".to_string(), Attr::Int(1))))
        .collect(),
        assigned_ep: None,
    };
    Some(Rewrite { members, node })
}
