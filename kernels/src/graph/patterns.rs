//! Decomposed patterns that exporters emit, rewritten into the one op they compute, which the
//! registry then runs as one kernel:
//!
//! - LayerNorm: `ReduceMean(x) → Sub(x, ·) → Pow(·, 2) | Mul(d, d) → ReduceMean → Add(·, eps) → Sqrt →
//!   Div(d, ·)`, then optionally `Mul(·, γ)` and `Add(·, β)` — `LayerNormalization`;
//! - RMSNorm: `Pow(x, 2) | Mul(x, x) → ReduceMean → Add(·, eps) → Sqrt → Div(x, ·)` (or `Reciprocal` then
//!   `Mul(x, ·)`), then optionally `Mul(·, γ)` — `RMSNormalization`.
//!
//! - attention: `MatMul(Q, Kᵀ) → [Mul/Div scale] → [Add mask] → Softmax → MatMul(·, V)` —
//!   the EP's `FlashAttention` (`graph/attention.rs`);
//! - packed QKV: `Split(qkv) → GroupQueryAttention(q, k, v, …)` — the attention on `qkv` in its
//!   packed form (`graph/packed_qkv.rs`).
//!
//! The reductions must cover trailing axes; every intermediate must be read only inside the
//! pattern, so nothing another node reads disappears.

use std::collections::HashMap;

use super::model::{Attr, Dim, Node, ValueInfo};
use crate::ops::layout::resolve_perm;

/// A matched pattern: its nodes (indices into the partition's node list) and the single node
/// that replaces them, computing the last member's output.
#[derive(Clone, Debug)]
pub struct Rewrite {
    pub members: Vec<usize>,
    pub node: Node,
}

pub(super) struct Ctx<'a> {
    pub(super) nodes: &'a [Node],
    producer: HashMap<&'a str, usize>,
    readers: HashMap<&'a str, Vec<usize>>,
    outputs: &'a [String],
}

impl<'a> Ctx<'a> {
    pub(super) fn new(nodes: &'a [Node], outputs: &'a [String]) -> Ctx<'a> {
        let mut producer = HashMap::new();
        let mut readers: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, n) in nodes.iter().enumerate() {
            for o in n.outputs.iter().flatten() {
                producer.insert(o.name.as_str(), i);
            }
            for v in n.inputs.iter().flatten().filter(|v| !v.name.is_empty()) {
                readers.entry(v.name.as_str()).or_default().push(i);
            }
        }
        Ctx { nodes, producer, readers, outputs }
    }

    pub(super) fn op(&self, i: usize, op: &str) -> bool {
        self.nodes[i].is_onnx() && self.nodes[i].op_type == op
    }

    /// The node producing input `k` of node `i`, if it is in the partition.
    pub(super) fn input_node(&self, i: usize, k: usize) -> Option<usize> {
        let v = self.nodes[i].input(k)?;
        self.producer.get(v.name.as_str()).copied()
    }

    /// The node producing `value`, if it is in the partition.
    pub(super) fn producer(&self, value: &str) -> Option<usize> {
        self.producer.get(value).copied()
    }

    pub(super) fn input_name(&self, i: usize, k: usize) -> Option<&'a str> {
        self.nodes[i].input(k).map(|v| v.name.as_str())
    }

    /// The one node reading `value`, when it has exactly one and the value stays inside.
    pub(super) fn only_reader(&self, value: &str) -> Option<usize> {
        match self.readers.get(value).map(Vec::as_slice) {
            Some(&[r]) if !self.outputs.iter().any(|n| n == value) => Some(r),
            _ => None,
        }
    }

    pub(super) fn out(&self, i: usize) -> Option<&'a str> {
        self.nodes[i].output(0).map(|o| o.name.as_str())
    }

    /// Whether node `i`'s output is read only by `allowed` and does not leave the partition.
    pub(super) fn private(&self, i: usize, allowed: &[usize]) -> bool {
        let Some(o) = self.out(i) else { return false };
        !self.outputs.iter().any(|n| n == o)
            && self.readers.get(o).is_some_and(|rs| rs.iter().all(|r| allowed.contains(r)))
    }

    /// The other input of a binary node `i` besides the value `name`, with its index.
    pub(super) fn other(&self, i: usize, name: &str) -> Option<(usize, &'a ValueInfo)> {
        let n = &self.nodes[i];
        match (n.input(0), n.input(1)) {
            (Some(a), Some(b)) if a.name == name && b.name != name => Some((1, b)),
            (Some(a), Some(b)) if b.name == name && a.name != name => Some((0, a)),
            _ => None,
        }
    }

    /// The sole reader of node `i`'s output.
    pub(super) fn next(&self, i: usize) -> Option<usize> {
        match self.readers.get(self.out(i)?).map(Vec::as_slice) {
            Some(&[r]) => Some(r),
            _ => None,
        }
    }
}

/// A constant scalar's value.
pub(super) fn scalar(v: &ValueInfo) -> Option<f32> {
    if !v.constant {
        return None;
    }
    v.scalar_f32()
}

/// The first reduced axis of a ReduceMean over trailing axes of a rank-`rank` input.
fn trailing_axis(node: &Node, rank: usize) -> Option<i64> {
    let axes: Vec<i64> = if node.since_version < 18 {
        node.ints("axes")?.to_vec()
    } else {
        node.input(1).filter(|v| v.constant)?.ints()?
    };
    if node.int("keepdims").unwrap_or(1) != 1 || axes.is_empty() {
        return None;
    }
    let mut norm: Vec<usize> = axes
        .iter()
        .map(|&a| usize::try_from(if a < 0 { a + rank as i64 } else { a }).ok().filter(|&a| a < rank))
        .collect::<Option<_>>()?;
    norm.sort_unstable();
    let first = *norm.first()?;
    (norm.iter().enumerate().all(|(k, &a)| a == first + k) && *norm.last()? == rank - 1).then_some(first as i64)
}

/// `x²` of `x` at node `i`: `Pow(x, 2)` or `Mul(x, x)`.
fn is_square_of(ctx: &Ctx<'_>, i: usize, x: &str) -> bool {
    let n = &ctx.nodes[i];
    if ctx.op(i, "Pow") {
        return n.input(0).is_some_and(|v| v.name == x) && n.input(1).and_then(scalar) == Some(2.0);
    }
    ctx.op(i, "Mul") && n.input(0).is_some_and(|v| v.name == x) && n.input(1).is_some_and(|v| v.name == x)
}

/// From `ms` = ReduceMean(x²): `Add(eps) → Sqrt → Div(x, ·)` or `… → Sqrt → Reciprocal → Mul(x, ·)`.
/// Returns (eps, members, the node holding the normalised value).
fn rsqrt_tail(ctx: &Ctx<'_>, ms: usize, x: &str) -> Option<(f32, Vec<usize>, usize)> {
    let add = ctx.next(ms).filter(|&a| ctx.op(a, "Add"))?;
    let eps = scalar(ctx.other(add, ctx.out(ms)?)?.1)?;
    let sqrt = ctx.next(add).filter(|&s| ctx.op(s, "Sqrt"))?;
    let after = ctx.next(sqrt)?;
    if ctx.op(after, "Div") && ctx.input_name(after, 0) == Some(x) && ctx.input_name(after, 1) == ctx.out(sqrt) {
        return Some((eps, vec![add, sqrt, after], after));
    }
    if ctx.op(after, "Reciprocal") {
        let mul = ctx.next(after).filter(|&m| ctx.op(m, "Mul"))?;
        let (_, other) = ctx.other(mul, ctx.out(after)?)?;
        return (other.name == x).then_some((eps, vec![add, sqrt, after, mul], mul));
    }
    None
}

/// An optional `Mul(·, γ)` then (LayerNorm only) `Add(·, β)` after node `last`, with γ/β
/// constants of the normalised shape.
fn affine(ctx: &Ctx<'_>, last: usize, with_bias: bool) -> (Vec<usize>, Option<ValueInfo>, Option<ValueInfo>) {
    let mut members = Vec::new();
    let (mut gamma, mut beta) = (None, None);
    let mut tail = last;
    if let Some(m) = ctx.next(tail).filter(|&m| ctx.op(m, "Mul")) {
        if let Some((_, g)) = ctx.out(tail).and_then(|o| ctx.other(m, o)).filter(|(_, g)| g.constant) {
            gamma = Some(g.clone());
            members.push(m);
            tail = m;
            if with_bias {
                if let Some(a) = ctx.next(tail).filter(|&a| ctx.op(a, "Add")) {
                    if let Some((_, b)) = ctx.out(tail).and_then(|o| ctx.other(a, o)).filter(|(_, b)| b.constant) {
                        beta = Some(b.clone());
                        members.push(a);
                    }
                }
            }
        }
    }
    (members, gamma, beta)
}

/// Finds the patterns among a partition's `nodes` (topologically ordered); `outputs` leave it.
pub fn find(nodes: &[Node], outputs: &[String], flash_attention: super::FlashMode) -> Vec<Rewrite> {
    let ctx = Ctx::new(nodes, outputs);
    let mut taken = vec![false; nodes.len()];
    let mut found = Vec::new();
    for i in 0..nodes.len() {
        let rewrite = if taken[i] {
            None
        } else if ctx.op(i, "ReduceMean") {
            layer_norm(&ctx, i).or_else(|| rms_norm(&ctx, i))
        } else if flash_attention != super::FlashMode::Off && ctx.op(i, "Softmax") {
            super::attention::flash(&ctx, i, flash_attention)
        } else if ctx.op(i, "Split") {
            super::packed_qkv::gqa_reads_packed(&ctx, i)
        } else {
            None
        };
        if let Some(r) = rewrite.filter(|r| r.members.iter().all(|&m| !taken[m])) {
            r.members.iter().for_each(|&m| taken[m] = true);
            found.push(r);
        }
    }
    // After the patterns above, which absorb their own Transposes.
    for i in 0..nodes.len() {
        if !taken[i] && ctx.op(i, "MatMul") {
            if let Some(r) = transposed_operands(&ctx, i, &taken) {
                r.members.iter().for_each(|&m| taken[m] = true);
                found.push(r);
            }
        }
    }
    found
}

/// MatMul `mm` reading A or B through Transposes that only it reads (a chain composes): the
/// MatMul reads the first Transpose's input through strides instead (`ops/matmul.rs`,
/// `OPERAND_PERMS`), where that input's contiguous dim stays one of the operand's two matrix
/// dims (the kernels step one of them by 1).
fn transposed_operands(ctx: &Ctx<'_>, mm: usize, taken: &[bool]) -> Option<Rewrite> {
    let mut node = ctx.nodes[mm].clone();
    let mut members = Vec::new();
    for k in 0..2 {
        let Some(rank) = ctx.nodes[mm].input(k).and_then(ValueInfo::rank).filter(|&r| r >= 2) else { continue };
        // The operand's dim j is `src`'s dim perm[j].
        let mut perm: Vec<usize> = (0..rank).collect();
        let (mut reader, mut slot, mut chain) = (mm, k, Vec::new());
        let mut src = None;
        while let Some(t) = ctx.input_node(reader, slot).filter(|&t| !taken[t] && ctx.op(t, "Transpose")) {
            let (Some(input), Ok(p)) = (ctx.nodes[t].input(0), resolve_perm(ctx.nodes[t].ints("perm"), rank)) else {
                break;
            };
            if input.rank() != Some(rank) || !ctx.private(t, &[reader]) {
                break;
            }
            perm = perm.iter().map(|&j| p[j]).collect();
            chain.push(t);
            src = Some(input);
            (reader, slot) = (t, 0);
        }
        // The contiguous dim must stay a matrix dim; a chain that cannot is left whole.
        let Some(src) = src.filter(|_| perm[rank - 2..].contains(&(rank - 1))) else { continue };
        node.inputs[k] = Some(src.clone());
        let ints = perm.iter().map(|&x| x as i64).collect();
        node.attrs.insert(crate::ops::matmul::OPERAND_PERMS[k].to_string(), Attr::Ints(ints));
        members.extend(chain);
    }
    if members.is_empty() {
        return None;
    }
    members.push(mm);
    // One Transpose may feed both operands.
    members.sort_unstable();
    members.dedup();
    Some(Rewrite { members, node })
}

fn rank_of(v: &ValueInfo) -> Option<usize> {
    v.shape.as_ref().map(Vec::len)
}

/// LayerNorm from its first ReduceMean `m1` (over x).
fn layer_norm(ctx: &Ctx<'_>, m1: usize) -> Option<Rewrite> {
    let xv = ctx.nodes[m1].input(0)?;
    let x = xv.name.as_str();
    let axis = trailing_axis(&ctx.nodes[m1], rank_of(xv)?)?;
    let sub = ctx.next(m1).filter(|&s| ctx.op(s, "Sub"))?;
    if ctx.input_name(sub, 0) != Some(x) || ctx.input_name(sub, 1) != ctx.out(m1) {
        return None;
    }
    let d = ctx.out(sub)?;
    let readers = ctx.readers.get(d)?;
    let sq = *readers.iter().find(|&&r| is_square_of(ctx, r, d))?;
    let m2 = ctx.next(sq).filter(|&m| ctx.op(m, "ReduceMean"))?;
    if trailing_axis(&ctx.nodes[m2], rank_of(xv)?) != Some(axis) {
        return None;
    }
    let (eps, tail_members, norm) = rsqrt_tail(ctx, m2, d)?;
    let (affine_members, gamma, beta) = affine(ctx, norm, true);
    let mut members = vec![m1, sub, sq, m2];
    members.extend(&tail_members);
    members.extend(&affine_members);
    finish(ctx, members, "LayerNormalization", 17, xv, axis, eps, gamma, beta)
}

/// RMSNorm from its ReduceMean `m` (over x²).
fn rms_norm(ctx: &Ctx<'_>, m: usize) -> Option<Rewrite> {
    let sq = ctx.input_node(m, 0)?;
    let xv = ctx.nodes[sq].input(0)?;
    let x = xv.name.as_str();
    if !is_square_of(ctx, sq, x) {
        return None;
    }
    let axis = trailing_axis(&ctx.nodes[m], rank_of(xv)?)?;
    let (eps, tail_members, norm) = rsqrt_tail(ctx, m, x)?;
    let (affine_members, gamma, _) = affine(ctx, norm, false);
    let mut members = vec![sq, m];
    members.extend(&tail_members);
    members.extend(&affine_members);
    finish(ctx, members, "RMSNormalization", 23, xv, axis, eps, gamma, None)
}

#[allow(clippy::too_many_arguments)]
fn finish(
    ctx: &Ctx<'_>,
    mut members: Vec<usize>,
    op: &str,
    opset: i32,
    x: &ValueInfo,
    axis: i64,
    eps: f32,
    gamma: Option<ValueInfo>,
    beta: Option<ValueInfo>,
) -> Option<Rewrite> {
    members.sort_unstable();
    let last = *members.last()?;
    // Every intermediate is read only inside the pattern.
    let inner: Vec<usize> = members.iter().copied().filter(|&k| k != last).collect();
    if !inner.iter().all(|&k| ctx.private(k, &members)) {
        return None;
    }
    // Without γ the normalised value is scaled by ones: a synthesised constant input.
    let gamma = match gamma {
        Some(g) => g,
        None => ones(x, axis)?,
    };
    let out = ctx.nodes[last].output(0)?.clone();
    let mut inputs = vec![Some(x.clone()), Some(gamma)];
    inputs.extend(beta.map(Some));
    let node = Node {
        name: format!("{}_fused", ctx.nodes[last].name),
        op_type: op.into(),
        domain: String::new(),
        since_version: opset,
        inputs,
        outputs: vec![Some(out)],
        attrs: [("axis".to_string(), Attr::Int(axis)), ("epsilon".to_string(), Attr::Float(eps))].into_iter().collect(),
        assigned_ep: None,
    };
    Some(Rewrite { members, node })
}

/// The name of the synthesised all-ones scale of `x` normalised from `axis`.
pub const ONES_PREFIX: &str = "__ones_scale_";

/// A constant of ones over the normalised dims of `x` (which must be known).
fn ones(x: &ValueInfo, axis: i64) -> Option<ValueInfo> {
    let dims = x.shape.as_ref()?.get(usize::try_from(axis).ok()?..)?.to_vec();
    if dims.iter().any(|d| !matches!(d, Dim::Fixed(_))) {
        return None;
    }
    Some(ValueInfo {
        name: format!("{ONES_PREFIX}{}", x.name),
        elem_type: x.elem_type,
        shape: Some(dims),
        constant: true,
        small_data: None,
    })
}
