//! Which nodes of a partition run as one kernel: the single fusion rule of the EP.
//!
//! - A Conv with constant weights absorbs a BatchNormalization with constant operands, folded
//!   into new weights and bias when the program is built (`super::fold`).
//! - A product (MatMul, Gemm, Conv) absorbs the elementwise consumers its store can apply: an
//!   Add of a bias that broadcasts onto its output (MatMul/Gemm, while no bias is set), a Mul or
//!   Div by a constant scalar (MatMul/Gemm: folded into alpha and beta), then one activation
//!   (Relu, or Clip with constant bounds), which may also follow through Reshapes (an
//!   activation commutes with a reshape), or HardSigmoid, HardSwish, LeakyRelu, Swish or the
//!   exported SiLU pair `Mul(x, Sigmoid(x))`, which its `_xact` programs apply, or (MatMul and
//!   Gemm, also through Reshapes) the exported erf GELU `Div → Erf → Add → Mul → Mul`. A Conv also
//!   absorbs a residual `Add(conv, r)` with `r` of the output's shape, before or after the
//!   activation, which its `_res` programs read; a MatMul or untransposed Gemm with a bias (or
//!   followed by a Reshape) and no activation absorbs a residual Add after its epilogue; a MatMul
//!   or untransposed Gemm without an activation absorbs a Mul by a value of its output's shape
//!   (SwiGLU's gate), which multiplies the result after its epilogue.
//! - Remaining elementwise nodes merge into chains: a node joins the chain of a producer whose
//!   only reader it is; the chain runs as one generated kernel over numpy broadcasting.
//!
//! A value is only ever absorbed when nothing else reads it and it does not leave the partition,
//! so fusing never changes what another node or the caller sees.

use std::collections::{HashMap, HashSet};

use super::model::{Dim, Node, ValueInfo};
use super::support::clip_bounds;
use crate::dtype::ElemType;
use crate::gemm::Activation;
use crate::ops::{lookup, ElemNode};

/// Most storage buffers one generated elementwise kernel binds (inputs plus its output): the
/// WebGPU minimum per shader stage, so a fused kernel runs on every device.
pub const MAX_FUSED_BINDINGS: usize = 8;

/// What a product absorbed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Epilogue {
    /// A BatchNormalization folded into the Conv's weights and bias (`super::fold`).
    pub batch_norm: Option<usize>,
    /// The fused Add node and the index of its input that is the bias.
    pub add: Option<(usize, usize)>,
    /// A constant scalar factor: (node, factor, whether it came after the bias).
    pub scale: Option<(usize, f32, bool)>,
    pub activation: Option<(usize, Activation)>,
    /// A residual Add: the node, the index of its other operand (of the output's shape) and
    /// whether it came after the activation (always, for a MatMul or Gemm: after the epilogue).
    pub residual: Option<(usize, usize, bool)>,
    /// The residual node is a Mul (a MatMul's or Gemm's only): the result times the operand.
    pub residual_mul: bool,
}

/// The fusion decisions of one partition (node indices into its node list).
#[derive(Debug, Default)]
pub struct Fusion {
    /// Decomposed patterns rewritten into one op: the last member → the op replacing them.
    pub rewrites: HashMap<usize, Node>,
    /// Every member of each rewrite (the key is its last member).
    pub rewrite_members: HashMap<usize, Vec<usize>>,
    /// Product node → what it absorbed.
    pub epilogues: HashMap<usize, Epilogue>,
    /// Elementwise chains, members in topological order; the last is the root.
    pub chains: Vec<Vec<usize>>,
    /// Nodes that produce no step of their own (absorbed into a product or a chain).
    pub absorbed: HashSet<usize>,
    /// Value names that are another value (an absorbed node's output → the fused result).
    pub renames: HashMap<String, String>,
}

/// The readers of every value among `nodes`.
fn readers(nodes: &[Node]) -> HashMap<&str, Vec<usize>> {
    let mut map: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, n) in nodes.iter().enumerate() {
        for v in n.inputs.iter().flatten().filter(|v| !v.name.is_empty()) {
            map.entry(v.name.as_str()).or_default().push(i);
        }
    }
    map
}

/// Decides the fusion of a partition's `nodes` (topologically ordered); `outputs` are the
/// values that leave the partition.
pub fn plan(nodes: &[Node], outputs: &[String], flash_attention: super::FlashMode) -> Fusion {
    let readers = readers(nodes);
    let rewrites = super::patterns::find(nodes, outputs, flash_attention);
    let outputs: HashSet<&str> = outputs.iter().map(String::as_str).collect();
    // The only reader of `value`, when it has exactly one and stays inside.
    let sole_reader = |value: &str| -> Option<usize> {
        match readers.get(value).map(Vec::as_slice) {
            Some(&[r]) if !outputs.contains(value) => Some(r),
            _ => None,
        }
    };
    let mut fusion = Fusion::default();
    for r in rewrites {
        let buildable = lookup(&r.node).is_some_and(|def| def.build(&r.node).is_ok());
        if let (true, Some(&last)) = (buildable, r.members.last()) {
            fusion.absorbed.extend(r.members.iter().copied().filter(|&m| m != last));
            fusion.rewrites.insert(last, r.node);
            fusion.rewrite_members.insert(last, r.members);
        }
    }
    // Every reader of `value`, when it stays inside.
    let inner_readers = |value: &str| -> Vec<usize> {
        if outputs.contains(value) {
            return Vec::new();
        }
        readers.get(value).cloned().unwrap_or_default()
    };
    for (i, node) in nodes.iter().enumerate() {
        // A MatMul rewritten to read its operands through strides keeps its epilogue.
        let product = fusion.rewrites.get(&i).is_none_or(|r| r.op_type == "MatMul");
        if is_product(node) && product && !fusion.absorbed.contains(&i) {
            fuse_epilogue(nodes, i, (&sole_reader, &inner_readers), &mut fusion);
        } else if node.domain == "com.microsoft" && node.op_type == "MatMulNBits" && !fusion.absorbed.contains(&i) {
            fuse_nbits_epilogue(nodes, i, (&sole_reader, &inner_readers), &mut fusion);
        }
    }
    fuse_chains(nodes, &sole_reader, &mut fusion);
    fusion
}

/// MatMulNBits absorbs the exported SiLU after it or, without one, a gating Mul (SwiGLU's up
/// projection times the gate's SiLU): its kernels apply both after the bias.
fn fuse_nbits_epilogue(nodes: &[Node], p: usize, (sole_reader, readers): Readers<'_>, fusion: &mut Fusion) {
    let Some(tail) = out_name(&nodes[p]).map(str::to_string) else { return };
    let mut epilogue = Epilogue::default();
    let absorbed = match activation_pattern(nodes, &tail, (sole_reader, readers), false, false) {
        Some((members, Activation::Silu)) => {
            epilogue.activation = members.last().map(|&last| (last, Activation::Silu));
            members
        }
        Some(_) => return,
        None => {
            let Some(r) = sole_reader(&tail) else { return };
            let mul = &nodes[r];
            if !mul.is_onnx() || mul.op_type != "Mul" || fusion.absorbed.contains(&r) {
                return;
            }
            let Some(k) = gate_operand(&nodes[p], mul, &tail) else { return };
            epilogue.residual = Some((r, k, true));
            epilogue.residual_mul = true;
            vec![r]
        }
    };
    for &n in &absorbed {
        if let Some(o) = out_name(&nodes[n]) {
            fusion.renames.insert(o.to_string(), tail.clone());
        }
        fusion.absorbed.insert(n);
    }
    fusion.epilogues.insert(p, epilogue);
}

fn is_product(node: &Node) -> bool {
    node.is_onnx() && matches!(node.op_type.as_str(), "MatMul" | "Gemm" | "Conv")
}

fn out_name(node: &Node) -> Option<&str> {
    node.output(0).map(|o| o.name.as_str())
}

type Readers<'a> = (&'a dyn Fn(&str) -> Option<usize>, &'a dyn Fn(&str) -> Vec<usize>);

/// Absorbs a bias Add and an activation after product `p`; `sole_reader` and `readers` see only
/// values that stay inside the partition.
fn fuse_epilogue(nodes: &[Node], p: usize, (sole_reader, readers): Readers<'_>, fusion: &mut Fusion) {
    let product = &nodes[p];
    let Some(mut tail) = out_name(product).map(str::to_string) else { return };
    let mut epilogue = Epilogue::default();
    let mut has_bias = product.op_type == "Conv" || product.input(2).is_some_and(|v| !v.name.is_empty());
    let mut through_reshape = false;
    let is_conv = product.op_type == "Conv";
    loop {
        let pattern = match epilogue.activation {
            None => activation_pattern(nodes, &tail, (sole_reader, readers), is_conv, through_reshape),
            Some(_) => None,
        };
        if let Some((members, act)) = pattern {
            for &n in &members {
                if let Some(o) = out_name(&nodes[n]) {
                    fusion.renames.insert(o.to_string(), tail.clone());
                }
                fusion.absorbed.insert(n);
            }
            // Recorded by its last node.
            epilogue.activation = members.last().map(|&last| (last, act));
            break;
        }
        let Some(r) = sole_reader(&tail) else { break };
        let reader = &nodes[r];
        // Another product already absorbed it (the sum of two products).
        if !reader.is_onnx() || fusion.absorbed.contains(&r) {
            break;
        }
        match reader.op_type.as_str() {
            "BatchNormalization"
                if product.op_type == "Conv"
                    && epilogue == Epilogue::default()
                    && !through_reshape
                    && super::fold::foldable(product, reader, &tail) =>
            {
                epilogue.batch_norm = Some(r);
            }
            // f32 only: an f16 conv runs on tensor cores, whose strided store makes reading the
            // residual there cost more than a separate Add (ResNet-50 batch 32 fp16 on the H200:
            // 11.6 ms with the residual in the store, 10.3 ms without; batch 1 unchanged).
            "Add" if is_conv && epilogue.residual.is_none() && !through_reshape && f32_output(product) => {
                let Some(k) = residual_input(product, reader, &tail) else { break };
                epilogue.residual = Some((r, k, epilogue.activation.is_some()));
            }
            "Add" if !has_bias && !through_reshape && epilogue.activation.is_none() => {
                let Some(k) = bias_input(product, reader, &tail) else { break };
                epilogue.add = Some((r, k));
                has_bias = true;
            }
            // A transformer's residual after its biased projection (also through the Reshape that
            // ORT's MatMul+Add fusion leaves after a Gemm): added after the whole epilogue.
            "Add"
                if !is_conv
                    && epilogue.residual.is_none()
                    && epilogue.activation.is_none()
                    && (has_bias || through_reshape) =>
            {
                let Some(k) = product_residual(product, reader, &tail) else { break };
                epilogue.residual = Some((r, k, true));
            }
            // A gated product (SwiGLU's up projection times the gate's SiLU): the other operand
            // of the output's shape multiplies the result after the whole epilogue.
            "Mul"
                if !is_conv
                    && epilogue.residual.is_none()
                    && epilogue.activation.is_none()
                    && gate_operand(product, reader, &tail).is_some() =>
            {
                let Some(k) = gate_operand(product, reader, &tail) else { break };
                epilogue.residual = Some((r, k, true));
                epilogue.residual_mul = true;
            }
            "Mul" | "Div"
                if product.op_type != "Conv"
                    && !through_reshape
                    && epilogue.scale.is_none()
                    && epilogue.activation.is_none() =>
            {
                let Some(factor) = scalar_factor(reader, &tail) else { break };
                epilogue.scale = Some((r, factor, has_bias));
            }
            "Relu" | "Clip" if epilogue.activation.is_none() => {
                let act = if reader.op_type == "Relu" {
                    Activation::Relu
                } else {
                    match clip_bounds(reader) {
                        Ok((min, max)) => Activation::Clip { min, max },
                        Err(_) => break,
                    }
                };
                epilogue.activation = Some((r, act));
            }
            "HardSigmoid" | "HardSwish" | "LeakyRelu" | "Swish"
                if epilogue.activation.is_none() && !through_reshape =>
            {
                let Some(act) = extended_activation(reader) else { break };
                epilogue.activation = Some((r, act));
            }
            "Reshape" if epilogue.activation.is_none() => {
                through_reshape = true;
                match out_name(reader) {
                    Some(o) => tail = o.to_string(),
                    None => break,
                }
                continue;
            }
            _ => break,
        }
        let Some(o) = out_name(reader) else { break };
        // The absorbed node's output is the (updated) value it read.
        fusion.renames.insert(o.to_string(), tail.clone());
        fusion.absorbed.insert(r);
        tail = o.to_string();
        // A Conv's residual Add may still follow its activation; nothing follows a product's.
        if (epilogue.activation.is_some() && !(is_conv && epilogue.residual.is_none()))
            || (!is_conv && epilogue.residual.is_some())
        {
            break;
        }
    }
    if epilogue != Epilogue::default() {
        fusion.epilogues.insert(p, epilogue);
    }
}

/// The activation a conv's `ext_act` store applies for `node` (an `Activation::is_extended` one).
fn extended_activation(node: &Node) -> Option<Activation> {
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

/// Whether the product writes float32.
fn f32_output(product: &Node) -> bool {
    product.output(0).is_some_and(|o| o.elem_type == crate::dtype::ElemType::F32.onnx())
}

/// The index of the Add's operand that a Conv can read as its residual: the other operand,
/// of the conv output's (known) shape and type, so the output's index addresses it.
fn residual_input(conv: &Node, add: &Node, tail: &str) -> Option<usize> {
    let present: Vec<(usize, &ValueInfo)> = add
        .inputs
        .iter()
        .enumerate()
        .filter_map(|(k, v)| v.as_ref().filter(|v| !v.name.is_empty()).map(|v| (k, v)))
        .collect();
    let [(ka, a), (kb, b)] = present.as_slice() else { return None };
    let (k, other) = match (a.name == tail, b.name == tail) {
        (true, false) => (*kb, *b),
        (false, true) => (*ka, *a),
        _ => return None,
    };
    let out = conv.output(0)?;
    let shape = out.fixed_shape()?;
    let same = |v: &ValueInfo| v.elem_type == out.elem_type && v.fixed_shape().as_ref() == Some(&shape);
    (same(other) && same(add.output(0)?)).then_some(k)
}

/// The index of the Add's operand that a product (MatMul, or Gemm without transposes) can read
/// as its residual: the other operand, of the Add output's known shape and type, which must also
/// be the shape of `tail` (the product's output, or a Reshape of it): an Add that broadcasts the
/// result to another shape stays a kernel of its own.
fn product_residual(product: &Node, add: &Node, tail: &str) -> Option<usize> {
    let plain = product.op_type == "MatMul"
        || (product.int("transA").unwrap_or(0) == 0 && product.int("transB").unwrap_or(0) == 0);
    let out = add.output(0)?.fixed_shape()?;
    let read = add.inputs.iter().flatten().find(|v| v.name == tail)?.fixed_shape()?;
    if !plain || read != out {
        return None;
    }
    // The other operand has the Add output's shape and type.
    residual_input(add, add, tail)
}

/// The index of the Mul's operand that gates a product (MatMul, or Gemm without transposes):
/// the other operand, whose shape and type are the Mul output's and `tail`'s (no broadcast).
/// Shapes compare dim by dim, named symbolic dims included (a decoder's `batch_size` and
/// `sequence_length`); the product checks the element counts again at each shape.
fn gate_operand(product: &Node, mul: &Node, tail: &str) -> Option<usize> {
    let plain = product.op_type == "MatMul"
        || (product.int("transA").unwrap_or(0) == 0 && product.int("transB").unwrap_or(0) == 0);
    let present: Vec<(usize, &ValueInfo)> = mul
        .inputs
        .iter()
        .enumerate()
        .filter_map(|(k, v)| v.as_ref().filter(|v| !v.name.is_empty()).map(|v| (k, v)))
        .collect();
    let [(ka, a), (kb, b)] = present.as_slice() else { return None };
    let (k, read, other) = match (a.name == tail, b.name == tail) {
        (true, false) => (*kb, *a, *b),
        (false, true) => (*ka, *b, *a),
        _ => return None,
    };
    let out = mul.output(0)?;
    let shape = known_dims(out)?;
    let same = |v: &ValueInfo| v.elem_type == out.elem_type && known_dims(v) == Some(shape);
    (plain && same(read) && same(other)).then_some(k)
}

/// A value's dims where each is fixed or a named symbolic dim.
fn known_dims(v: &ValueInfo) -> Option<&[Dim]> {
    let dims = v.shape.as_deref()?;
    dims.iter().all(|d| !matches!(d, Dim::Symbolic(n) if n.is_empty())).then_some(dims)
}

/// The exported SiLU after `tail`: `Sigmoid(tail)` and `Mul(tail, sigmoid)` (either operand
/// order) are `tail`'s only readers, and the Mul the Sigmoid's only reader.
fn silu_pair(
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

/// A multi-node activation reading `tail` and the nodes it spans: the exported erf GELU (MatMul
/// and Gemm only; like Relu and Clip also through Reshapes, since ORT's MatMulAddFusion turns a
/// 3-D Linear into Reshape → Gemm → Reshape before it), or the exported SiLU pair.
fn activation_pattern(
    nodes: &[Node],
    tail: &str,
    (sole_reader, readers): Readers<'_>,
    conv: bool,
    through_reshape: bool,
) -> Option<(Vec<usize>, Activation)> {
    if let Some(members) = (!conv).then(|| gelu_erf(nodes, tail, sole_reader, readers(tail))).flatten() {
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
fn gelu_erf(
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
fn only_onnx_reader(nodes: &[Node], sole_reader: &dyn Fn(&str) -> Option<usize>, n: usize, op: &str) -> Option<usize> {
    let r = sole_reader(out_name(&nodes[n])?)?;
    (nodes[r].is_onnx() && nodes[r].op_type == op).then_some(r)
}

/// A binary node's operand that is not `value`.
fn other_operand<'a>(node: &'a Node, value: &str) -> Option<&'a ValueInfo> {
    let (a, b) = (node.input(0)?, node.input(1)?);
    match (a.name == value, b.name == value) {
        (true, false) => Some(b),
        (false, true) => Some(a),
        _ => None,
    }
}

/// The operand names of a Mul.
fn mul_operands(node: &Node) -> Option<[&str; 2]> {
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
fn bias_input(product: &Node, add: &Node, tail: &str) -> Option<usize> {
    let present: Vec<(usize, &ValueInfo)> = add
        .inputs
        .iter()
        .enumerate()
        .filter_map(|(k, v)| v.as_ref().filter(|v| !v.name.is_empty()).map(|v| (k, v)))
        .collect();
    let [(ka, a), (kb, b)] = present.as_slice() else { return None };
    let (k, bias) = if a.name == tail && b.name != tail {
        (*kb, *b)
    } else if b.name == tail && a.name != tail {
        (*ka, *a)
    } else {
        return None;
    };
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

/// Groups the elementwise nodes that no product absorbed into chains.
fn fuse_chains(nodes: &[Node], sole_reader: &dyn Fn(&str) -> Option<usize>, fusion: &mut Fusion) {
    // Chain id of each member, and each chain's members.
    let mut chain_of: HashMap<usize, usize> = HashMap::new();
    let mut chains: Vec<Vec<usize>> = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        if fusion.absorbed.contains(&i) || fusion.rewrites.contains_key(&i) || elementwise(node).is_none() {
            continue;
        }
        let producers: Vec<usize> = (0..i)
            .filter(|&p| chain_of.contains_key(&p))
            .filter(|&p| out_name(&nodes[p]).is_some_and(|o| sole_reader(o) == Some(i)))
            .collect();
        let mut members = vec![i];
        for p in producers {
            let c = chain_of[&p];
            if chains[c].last() != Some(&p) {
                continue; // not the root of its chain
            }
            let mut merged: Vec<usize> = members.iter().chain(&chains[c]).copied().collect();
            merged.sort_unstable();
            if external_inputs(nodes, &merged) < MAX_FUSED_BINDINGS {
                members = merged;
                chains[c].clear();
            }
        }
        let id = chains.len();
        for &m in &members {
            chain_of.insert(m, id);
        }
        chains.push(members);
    }
    for chain in chains.into_iter().filter(|c| c.len() > 1) {
        fusion.absorbed.extend(&chain[..chain.len() - 1]);
        fusion.chains.push(chain);
    }
}

/// The IR form of an elementwise node, if its op has one.
pub fn elementwise(node: &Node) -> Option<Vec<ElemNode>> {
    lookup(node).and_then(|def| def.elementwise(node))
}

/// Distinct values the `members` read from outside themselves.
pub fn external_inputs(nodes: &[Node], members: &[usize]) -> usize {
    let produced: HashSet<&str> = members.iter().filter_map(|&m| out_name(&nodes[m])).collect();
    let read: HashSet<&str> = members
        .iter()
        .flat_map(|&m| nodes[m].inputs.iter().flatten())
        .map(|v| v.name.as_str())
        .filter(|n| !n.is_empty() && !produced.contains(n))
        .collect();
    read.len()
}
