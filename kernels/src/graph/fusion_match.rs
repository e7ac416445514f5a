//! What a product's store can absorb: the operands of bias, residual and gating nodes, and the
//! activation patterns after a product (`super::fusion` walks the graph with these).

use super::fusion::{out_name, Readers};
use super::model::{Dim, Node, ValueInfo};
use crate::dtype::ElemType;
use crate::gemm::Activation;

/// The activation a conv's `ext_act` store applies for `node` (an `Activation::is_extended` one).
pub(super) fn extended_activation(node: &Node) -> Option<Activation> {
    let one_input = node.inputs.iter().flatten().filter(|v| !v.name.is_empty()).count() == 1;
    let act = match node.op_type.as_str() {
        "HardSigmoid" => Activation::HardSigmoid {
            alpha: node.float("alpha").unwrap_or(0.2),
            beta: node.float("beta").unwrap_or(0.5),
        },
        "HardSwish" => Activation::HardSwish,
        "LeakyRelu" => Activation::LeakyRelu { alpha: node.float("alpha").unwrap_or(0.01) },
        "Swish" if node.float("alpha").unwrap_or(1.0) == 1.0 => Activation::Silu,
        _ => return None,
    };
    let same_type = node.input(0).zip(node.output(0)).is_some_and(|(i, o)| i.elem_type == o.elem_type);
    (one_input && same_type).then_some(act)
}

/// A binary node's two present operands where exactly one is `tail`: the other's index, then
/// `tail`'s and the other's value infos.
fn tail_and_other<'a>(node: &'a Node, tail: &str) -> Option<(usize, &'a ValueInfo, &'a ValueInfo)> {
    let present: Vec<(usize, &ValueInfo)> = node
        .inputs
        .iter()
        .enumerate()
        .filter_map(|(k, v)| v.as_ref().filter(|v| !v.name.is_empty()).map(|v| (k, v)))
        .collect();
    let [(ka, a), (kb, b)] = present.as_slice() else { return None };
    match (a.name == tail, b.name == tail) {
        (true, false) => Some((*kb, *a, *b)),
        (false, true) => Some((*ka, *b, *a)),
        _ => None,
    }
}

/// Whether the product writes float32.
pub(super) fn f32_output(product: &Node) -> bool {
    product.output(0).is_some_and(|o| o.elem_type == crate::dtype::ElemType::F32.onnx())
}

/// The index of the Add's operand that a Conv can read as its residual: the other operand, of
/// the (known) shape and type of `tail` (the conv's output, or what its store absorbed since),
/// leading 1s aside, so the output's index addresses it; the Add's output is `tail`'s shape.
pub(super) fn residual_input(add: &Node, tail: &str) -> Option<usize> {
    let (k, this, other) = tail_and_other(add, tail)?;
    let shape = this.fixed_shape()?;
    let out = add.output(0)?;
    let typed = |v: &ValueInfo| v.elem_type == this.elem_type;
    let same = other.fixed_shape().is_some_and(|o| crate::ops::same_elements(&o, &shape));
    (typed(other) && typed(out) && same && out.fixed_shape() == Some(shape)).then_some(k)
}

/// Largest im2col buffer a fused channels-last conv may need: WebGPU's least storage binding
/// (its plan cannot fall back to the implicit GEMM, which reads no im2col buffer).
const CHANNELS_LAST_MAX_COL_BYTES: u64 = 128 << 20;

/// Whether `reshape` merges a 2-D conv's pixels: `[N, M, H, W]` → `[N, M, H·W]` (known shapes).
pub(super) fn flat_pixels(conv: &Node, reshape: &Node) -> bool {
    let (Some(y), Some(r)) =
        (conv.output(0).and_then(|v| v.fixed_shape()), reshape.output(0).and_then(|v| v.fixed_shape()))
    else {
        return false;
    };
    y.len() == 4 && r == [y[0], y[1], y[2] * y[3]]
}

/// Whether `transpose` moves `conv`'s channels last (`[0, 2, 1]` after a 1-D conv, or after a
/// 2-D one whose pixels a Reshape merged (`flat`), `[0, 2, 3, 1]` after a 2-D one) where the
/// conv can store that layout: group 1, known shapes, an im2col buffer within one storage
/// binding on any device.
pub(super) fn channels_last_transpose(conv: &Node, transpose: &Node, flat: bool) -> bool {
    let shapes = (|| {
        let (x, w, y) = (conv.input(0)?.fixed_shape()?, conv.input(1)?.fixed_shape()?, conv.output(0)?.fixed_shape()?);
        Some((x, w, y))
    })();
    let Some((x, w, y)) = shapes else { return false };
    let perm: &[i64] = match (y.len(), flat) {
        (3, false) | (4, true) => &[0, 2, 1],
        (4, false) => &[0, 2, 3, 1],
        _ => return false,
    };
    let elem = conv.output(0).and_then(|o| ElemType::from_onnx(o.elem_type)).map_or(4, |t| t.size());
    let col_bytes = x[0] * w.iter().skip(1).product::<u64>() * y.iter().skip(2).product::<u64>() * elem;
    conv.int("group").unwrap_or(1) == 1
        && transpose.ints("perm") == Some(perm)
        && col_bytes <= CHANNELS_LAST_MAX_COL_BYTES
}

/// A MatMul, or a Gemm without transposes (MatMulNBits has none either): its output's index
/// is the row-major element of a residual or gate of its shape.
fn plain_product(product: &Node) -> bool {
    product.op_type == "MatMul" || (product.int("transA").unwrap_or(0) == 0 && product.int("transB").unwrap_or(0) == 0)
}

/// The index of the Add's operand that a product (MatMul, or Gemm without transposes) can read
/// as its residual: the other operand, of the Add output's known shape and type, which must also
/// be the shape of `tail` (the product's output, or a Reshape of it): an Add that broadcasts the
/// result to another shape stays a kernel of its own.
pub(super) fn product_residual(product: &Node, add: &Node, tail: &str) -> Option<usize> {
    let plain = plain_product(product);
    let out = add.output(0)?.fixed_shape()?;
    let read = add.inputs.iter().flatten().find(|v| v.name == tail)?.fixed_shape()?;
    if !plain || read != out {
        return None;
    }
    // The other operand has the Add output's shape and type.
    residual_input(add, tail)
}

/// The index of the Mul's operand that gates a product (MatMul, or Gemm without transposes):
/// the other operand, whose shape and type are the Mul output's and `tail`'s (no broadcast).
/// Shapes compare dim by dim, named symbolic dims included (a decoder's `batch_size` and
/// `sequence_length`); the product checks the element counts again at each shape.
pub(super) fn gate_operand(product: &Node, mul: &Node, tail: &str) -> Option<usize> {
    let plain = plain_product(product);
    let (k, read, other) = tail_and_other(mul, tail)?;
    let out = mul.output(0)?;
    let shape = known_dims(out)?;
    let same = |v: &ValueInfo| v.elem_type == out.elem_type && known_dims(v) == Some(shape);
    (plain && same(read) && same(other)).then_some(k)
}

/// A value's dims where each is fixed or a named symbolic dim.
pub(super) fn known_dims(v: &ValueInfo) -> Option<&[Dim]> {
    let dims = v.shape.as_deref()?;
    dims.iter().all(|d| !matches!(d, Dim::Symbolic(n) if n.is_empty())).then_some(dims)
}

/// The exported SiLU after `tail`: `Sigmoid(tail)` and `Mul(tail, sigmoid)` (either operand
/// order) are `tail`'s only readers, and the Mul the Sigmoid's only reader.
pub(super) fn silu_pair(
    nodes: &[Node],
    tail: &str,
    sole_reader: &dyn Fn(&str) -> Option<usize>,
    readers: Vec<usize>,
) -> Option<(usize, usize)> {
    let [a, b] = readers.as_slice() else { return None };
    let (sigmoid, mul) = if nodes[*a].op_type == "Sigmoid" { (*a, *b) } else { (*b, *a) };
    let (s, m) = (&nodes[sigmoid], &nodes[mul]);
    let s_out = out_name(s)?;
    let operands: Vec<&str> = m.inputs.iter().flatten().map(|v| v.name.as_str()).collect();
    let ok = s.is_onnx()
        && m.is_onnx()
        && s.op_type == "Sigmoid"
        && m.op_type == "Mul"
        && s.input(0).is_some_and(|v| v.name == tail)
        && (operands == [tail, s_out] || operands == [s_out, tail])
        && sole_reader(s_out) == Some(mul)
        && m.output(0).zip(s.input(0)).is_some_and(|(o, i)| o.elem_type == i.elem_type && o.shape == i.shape);
    ok.then_some((sigmoid, mul))
}

/// A multi-node activation reading `tail` and the nodes it spans: the exported erf GELU (like
/// Relu and Clip also through Reshapes, since ORT's MatMulAddFusion turns a 3-D Linear into
/// Reshape → Gemm → Reshape before it), or the exported SiLU pair.
pub(super) fn activation_pattern(
    nodes: &[Node],
    tail: &str,
    (sole_reader, readers): Readers<'_>,
    through_reshape: bool,
) -> Option<(Vec<usize>, Activation)> {
    if let Some(members) = gelu_erf(nodes, tail, sole_reader, readers(tail)) {
        return Some((members, Activation::Gelu));
    }
    if through_reshape {
        return None;
    }
    let (sigmoid, mul) = silu_pair(nodes, tail, sole_reader, readers(tail))?;
    Some((vec![sigmoid, mul], Activation::Silu))
}

/// The erf GELU torch exports after `tail`: `Div(x, √2) → Erf → Add(1) → Mul(x, ·) → Mul(0.5)`
/// (either operand order of each Add and Mul, `Mul(x, 1/√2)` for the Div, and the 0.5 applied
/// to `x` before the product instead of after it). Returns its members, the last one's output
/// being the GELU; every intermediate value has one reader and the output keeps x's type and
/// shape.
pub(super) fn gelu_erf(
    nodes: &[Node],
    tail: &str,
    sole_reader: &dyn Fn(&str) -> Option<usize>,
    readers: Vec<usize>,
) -> Option<Vec<usize>> {
    let [a, b] = readers.as_slice() else { return None };
    // The constants as stored: √2 in f16 is 1.4140625.
    let f16 = nodes[*a].inputs.iter().flatten().any(|v| v.name == tail && v.elem_type == ElemType::F16.onnx());
    let tolerance = if f16 { 1e-3 } else { 1e-6 };
    let near = |f: f32, want: f64| (f64::from(f) - want).abs() <= tolerance * want;
    let is_scale = |n: usize, want: f64| scalar_factor(&nodes[n], tail).is_some_and(|f| near(f, want));
    // The branch into erf: x/√2, and the other reader: x·(…) or x·0.5.
    let (div, other) = if is_scale(*a, std::f64::consts::FRAC_1_SQRT_2) { (*a, *b) } else { (*b, *a) };
    if !is_scale(div, std::f64::consts::FRAC_1_SQRT_2) || !nodes[other].is_onnx() || nodes[other].op_type != "Mul" {
        return None;
    }
    let erf = only_onnx_reader(nodes, sole_reader, div, "Erf")?;
    let add = only_onnx_reader(nodes, sole_reader, erf, "Add")?;
    let one = other_operand(&nodes[add], out_name(&nodes[erf])?)?;
    if one.scalar_f32() != Some(1.0) || !one.constant {
        return None;
    }
    let (add_out, other_out) = (out_name(&nodes[add])?, out_name(&nodes[other])?);
    let last = sole_reader(other_out)?;
    let joined = |m: usize, a: &str, b: &str| mul_operands(&nodes[m]).is_some_and(|o| o == [a, b] || o == [b, a]);
    let ok = if is_scale(other, 0.5) {
        // 0.5·x first, then (0.5·x)·(1 + erf).
        sole_reader(add_out) == Some(last) && joined(last, other_out, add_out)
    } else {
        // x·(1 + erf), then ·0.5.
        sole_reader(add_out) == Some(other)
            && joined(other, tail, add_out)
            && scalar_factor(&nodes[last], other_out).is_some_and(|f| near(f, 0.5))
    };
    let members = ok.then(|| vec![div, erf, add, other, last])?;
    let (x, y) = (nodes[div].input(0)?, nodes[*members.last()?].output(0)?);
    (x.elem_type == y.elem_type && x.shape == y.shape).then_some(members)
}

/// The sole reader of node `n`'s output, when it is an ONNX `op`.
pub(super) fn only_onnx_reader(
    nodes: &[Node],
    sole_reader: &dyn Fn(&str) -> Option<usize>,
    n: usize,
    op: &str,
) -> Option<usize> {
    let r = sole_reader(out_name(&nodes[n])?)?;
    (nodes[r].is_onnx() && nodes[r].op_type == op).then_some(r)
}

/// A binary node's operand that is not `value`.
pub(super) fn other_operand<'a>(node: &'a Node, value: &str) -> Option<&'a ValueInfo> {
    let (a, b) = (node.input(0)?, node.input(1)?);
    match (a.name == value, b.name == value) {
        (true, false) => Some(b),
        (false, true) => Some(a),
        _ => None,
    }
}

/// The operand names of a Mul.
pub(super) fn mul_operands(node: &Node) -> Option<[&str; 2]> {
    (node.is_onnx() && node.op_type == "Mul").then_some([node.input(0)?.name.as_str(), node.input(1)?.name.as_str()])
}

/// The factor of `Mul(tail, c)`, `Mul(c, tail)` or `Div(tail, c)` with `c` a constant scalar.
pub(super) fn scalar_factor(node: &Node, tail: &str) -> Option<f32> {
    let (a, b) = (node.input(0)?, node.input(1)?);
    let constant =
        |v: &ValueInfo| if v.constant && v.fixed_shape()?.iter().product::<u64>() == 1 { v.scalar_f32() } else { None };
    let factor = match node.op_type.as_str() {
        "Mul" if a.name == tail && b.name != tail => constant(b)?,
        "Mul" if b.name == tail && a.name != tail => constant(a)?,
        "Div" if a.name == tail && b.name != tail => 1.0 / constant(b)?,
        _ => return None,
    };
    // The output keeps the product's shape and type only when the scalar has no more dimensions
    // and the same element type.
    let (t, c) = if a.name == tail { (a, b) } else { (b, a) };
    let same_type = c.elem_type == t.elem_type && node.output(0)?.elem_type == t.elem_type;
    (factor.is_finite() && same_type && c.rank()? <= t.rank()?).then_some(factor)
}

/// The index of the Add's input that can be the product's bias: the other operand, of a rank
/// no larger than the output's, each dimension 1 or provably the output's.
pub(super) fn bias_input(product: &Node, add: &Node, tail: &str) -> Option<usize> {
    let (k, _, bias) = tail_and_other(add, tail)?;
    if bias.elem_type != product.input(0)?.elem_type {
        return None;
    }
    // A 1-D MatMul operand drops an output dimension, so the bias could not be laid out.
    if product.op_type == "MatMul" && (0..2).any(|i| product.input(i).and_then(ValueInfo::rank).is_none_or(|r| r < 2)) {
        return None;
    }
    let out = product.output(0)?.shape.as_ref()?;
    let bias_shape = bias.shape.as_ref()?;
    if bias_shape.len() > out.len() {
        return None;
    }
    let fits = bias_shape.iter().rev().zip(out.iter().rev()).all(|(b, o)| b == &Dim::Fixed(1) || b == o);
    // The GEMM lays a bias out per batch only when it varies with every batch dim or with none
    // (the product may merge its batch dims): a mask [B,1,1,S] over scores [B,H,S,S] stays apart.
    let offset = out.len() - bias_shape.len();
    let no_batch = bias_shape.iter().enumerate().all(|(i, d)| i + offset + 2 >= out.len() || d == &Dim::Fixed(1));
    (fits && (bias_shape == out || no_batch)).then_some(k)
}

/// SwiGLU's up projection for gate product `p` whose gating Mul `mul` reads the up value as
/// operand `k`: the node making that value, when it reads the gate's A, only `mul` reads its
/// result and `same` accepts it beside the gate (the two then run as one step).
fn up_projection(
    nodes: &[Node],
    p: usize,
    (mul, k): (usize, usize),
    sole_reader: &dyn Fn(&str) -> Option<usize>,
    same: &dyn Fn(&Node, &Node) -> bool,
) -> Option<usize> {
    let up_value = &nodes[mul].input(k)?.name;
    let u = nodes.iter().position(|n| n.output(0).is_some_and(|o| &o.name == up_value))?;
    let (gate, up) = (&nodes[p], &nodes[u]);
    let shared_a = gate.input(0).map(|v| &v.name) == up.input(0).map(|v| &v.name);
    (u != p && shared_a && sole_reader(up_value) == Some(mul) && same(gate, up)).then_some(u)
}

/// [`up_projection`] of a MatMulNBits gate: a MatMulNBits with the same K, N, bits and block
/// size, neither with zero points or act-order, the up one without a bias (one kernel for one
/// row of A).
pub(super) fn nbits_up_projection(
    nodes: &[Node],
    p: usize,
    mul: (usize, usize),
    sole_reader: &dyn Fn(&str) -> Option<usize>,
) -> Option<usize> {
    let nbits = |n: &Node| n.domain == "com.microsoft" && n.op_type == "MatMulNBits" && n.outputs.len() == 1;
    let absent = |n: &Node, i: usize| n.input(i).is_none_or(|v| v.name.is_empty());
    let plain = |n: &Node| nbits(n) && absent(n, 3) && absent(n, 4);
    let same = |gate: &Node, up: &Node| {
        ["K", "N", "block_size"].iter().all(|a| gate.int(a).is_some() && gate.int(a) == up.int(a))
            && gate.int("bits").unwrap_or(4) == up.int("bits").unwrap_or(4)
            && plain(gate)
            && plain(up)
            && absent(up, 5)
    };
    up_projection(nodes, p, mul, sole_reader, &same)
}

/// [`up_projection`] of a MatMul gate: a MatMul by constant 2-D weights of the gate's shape and
/// type. Its step then reads both weights (`ops/matmul_dual.rs`).
pub(super) fn matmul_up_projection(
    nodes: &[Node],
    p: usize,
    mul: (usize, usize),
    sole_reader: &dyn Fn(&str) -> Option<usize>,
) -> Option<usize> {
    let matmul = |n: &Node| n.is_onnx() && n.op_type == "MatMul" && n.outputs.len() == 1;
    let weights = |n: &Node| n.input(1).filter(|v| v.constant).and_then(|v| Some((v.fixed_shape()?, v.elem_type)));
    let same = |gate: &Node, up: &Node| {
        matmul(gate)
            && matmul(up)
            && weights(gate).is_some_and(|(shape, ty)| shape.len() == 2 && weights(up) == Some((shape, ty)))
    };
    up_projection(nodes, p, mul, sole_reader, &same)
}

/// The SkipSimplifiedLayerNormalization that MatMulNBits `p` (and its fused up projection `up`)
/// may fold: the producer of A, without a bias or its mean and inv_std_var outputs, whose
/// output 0 stays inside and is read by nothing else. `p` has no zero points and constant
/// weights (so the step reads nothing computed after the norm's sum, which it now makes).
pub(super) fn nbits_norm(
    nodes: &[Node],
    p: usize,
    up: Option<usize>,
    readers: &dyn Fn(&str) -> Vec<usize>,
) -> Option<usize> {
    let product = &nodes[p];
    let given = |n: &Node, i: usize| n.input(i).is_some_and(|v| !v.name.is_empty());
    let constant = |i: usize| product.input(i).is_some_and(|v| v.constant);
    if product.domain != "com.microsoft" || product.op_type != "MatMulNBits" || given(product, 3) || given(product, 4) {
        return None;
    }
    if !constant(1) || !constant(2) {
        return None;
    }
    // The packed weights (uint8) the step reads, both products' for SwiGLU's pair.
    let bytes = product.input(1)?.fixed_shape().map_or(0, |s| s.iter().product::<u64>());
    if bytes * if up.is_some() { 2 } else { 1 } > NBITS_NORM_MAX_WEIGHT_BYTES {
        return None;
    }
    let a = &product.input(0)?.name;
    let r = nodes.iter().position(|n| n.output(0).is_some_and(|o| &o.name == a))?;
    if !foldable_norm(&nodes[r]) {
        return None;
    }
    let ours: Vec<usize> = std::iter::once(p).chain(up).collect();
    let inner = readers(a);
    (!inner.is_empty() && inner.iter().all(|i| ours.contains(i))).then_some(r)
}

/// The most packed weight bytes a MatMulNBits step takes a folded norm for. Each workgroup of the
/// folded kernel reads the norm's whole row again, which pays where the separate norm's dispatch
/// (about 4 µs) is a large share of the product, and costs where thousands of workgroups share one
/// row: on an H100, Llama-3.2-1B int4's LM head (125 MiB, 4008 workgroups) took 96–100 µs folded
/// against 68 + 4 apart, while its Q/K/V (3 MiB) took 8.6–9.5 folded against 5.8 + 4.3 and the gate
/// and up pair (16 MiB) 16.1–16.5 against 14.5 + 4.3 (`docs/PERFORMANCE.md`, "Each decode product
/// on its own").
pub(super) const NBITS_NORM_MAX_WEIGHT_BYTES: u64 = 64 << 20;

/// A SkipSimplifiedLayerNormalization a product may fold: no bias, no mean or inv_std_var output.
fn foldable_norm(norm: &Node) -> bool {
    let given = |i: usize| norm.input(i).is_some_and(|v| !v.name.is_empty());
    let listed = |i: usize| norm.output(i).is_some_and(|v| !v.name.is_empty());
    norm.domain == "com.microsoft"
        && norm.op_type == "SkipSimplifiedLayerNormalization"
        && !given(3)
        && !listed(1)
        && !listed(2)
}

/// The MatMuls that fold SkipSimplifiedLayerNormalization `r`: every step reading its output 0,
/// each as A and each accepted by `qualifies`; `None` where one is not.
pub(super) fn matmul_norm(
    nodes: &[Node],
    r: usize,
    readers: &dyn Fn(&str) -> Vec<usize>,
    qualifies: &dyn Fn(usize) -> bool,
) -> Option<Vec<usize>> {
    if !foldable_norm(&nodes[r]) {
        return None;
    }
    let out = &nodes[r].output(0)?.name;
    let mut found = readers(out);
    found.sort_unstable();
    found.dedup();
    let as_a = |p: usize| {
        qualifies(p)
            && nodes[p].input(0).is_some_and(|v| &v.name == out)
            && nodes[p].input(1).is_some_and(|v| &v.name != out)
    };
    (!out.is_empty() && !found.is_empty() && found.iter().all(|&p| as_a(p))).then_some(found)
}
