//! Which nodes of a partition run as one kernel: the single fusion rule of the EP (the operand
//! and pattern matching it uses: `super::fusion_match`).
//!
//! - A Conv with constant weights absorbs a BatchNormalization with constant operands, folded
//!   into new weights and bias when the program is built (`super::fold`).
//! - A product (MatMul, Gemm, Conv) absorbs the elementwise consumers its store can apply: an
//!   Add of a bias that broadcasts onto its output (MatMul/Gemm, while no bias is set), a Mul or
//!   Div by a constant scalar (MatMul/Gemm: folded into alpha and beta), then one activation
//!   (Relu, or Clip with constant bounds), which may also follow through Reshapes (an
//!   activation commutes with a reshape), or HardSigmoid, HardSwish, LeakyRelu, Swish or the
//!   exported SiLU pair `Mul(x, Sigmoid(x))`, which its `_xact` programs apply, or the exported
//!   erf GELU `Div → Erf → Add → Mul → Mul` (MatMul and Gemm also through Reshapes). A Conv also
//!   absorbs a residual `Add(conv, r)` with `r` of the output's shape (leading 1s aside), before
//!   or after the activation, which its `_res` programs read, and a Transpose that moves its
//!   channels last (group 1, known shapes; Whisper's `Conv → GELU → Transpose → Add`; also
//!   after a Reshape merging a 2-D conv's pixels, ViT's patch embedding), whose layout its
//!   transposed GEMM stores, the residual then in that layout; a MatMul or untransposed Gemm with a bias (or
//!   followed by a Reshape) and no activation absorbs a residual Add after its epilogue; a MatMul
//!   or untransposed Gemm without an activation absorbs a Mul by a value of its output's shape
//!   (SwiGLU's gate), which multiplies the result after its epilogue.
//! - Remaining elementwise nodes merge into chains: a node joins the chain of a producer whose
//!   only reader it is; the chain runs as one generated kernel over numpy broadcasting.
//!
//! A value is only ever absorbed when nothing else reads it and it does not leave the partition,
//! so fusing never changes what another node or the caller sees.

use std::collections::{HashMap, HashSet};

use super::fusion_match::{
    activation_pattern, bias_input, channels_last_transpose, extended_activation, f32_output, flat_pixels,
    gate_operand, product_residual, residual_input, scalar_factor,
};
use super::model::Node;
use super::support::clip_bounds;
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
    /// SwiGLU's up projection joined to the gate's step (a MatMulNBits of the same A whose only
    /// reader is the gating Mul): the step reads its weights instead of its result.
    pub up: Option<usize>,
    /// A Transpose moving a Conv's channels last, whose layout the conv stores (`[N, L, M]`,
    /// `[N, H, W, M]`): its GEMM stores through transposed strides. With `true`, a Reshape that
    /// merged a 2-D conv's pixels came before it: the output is `[N, H·W, M]`.
    pub channels_last: Option<(usize, bool)>,
    /// A SkipSimplifiedLayerNormalization whose output 0 only this MatMulNBits step reads (its
    /// up projection included), or only MatMul steps that all fold it: folded into the step,
    /// which reads the norm's input, skip and γ (`fusion_match::nbits_norm`, `matmul_norm`).
    pub norm: Option<usize>,
    /// With `norm`: this step also makes the norm's sum output (one step per norm).
    pub norm_sum: bool,
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
    // Products with a SiLU first: SwiGLU's gating Mul joins the gate's store (one product with
    // an epilogue beside a plain one), not the up projection's.
    let silu = |i: usize| {
        let tail = out_name(&nodes[i]).unwrap_or_default();
        matches!(activation_pattern(nodes, tail, (&sole_reader, &inner_readers), false), Some((_, Activation::Silu)))
    };
    let (first, rest): (Vec<usize>, Vec<usize>) = (0..nodes.len()).partition(|&i| silu(i));
    for i in first.into_iter().chain(rest) {
        let node = &nodes[i];
        // A MatMul rewritten to read its operands through strides keeps its epilogue.
        let product = fusion.rewrites.get(&i).is_none_or(|r| r.op_type == "MatMul");
        if is_product(node) && product && !fusion.absorbed.contains(&i) {
            fuse_epilogue(nodes, i, (&sole_reader, &inner_readers), &mut fusion);
        } else if node.domain == "com.microsoft" && node.op_type == "MatMulNBits" && !fusion.absorbed.contains(&i) {
            fuse_nbits_epilogue(nodes, i, (&sole_reader, &inner_readers), &mut fusion);
        }
    }
    for p in 0..nodes.len() {
        let up = fusion.epilogues.get(&p).and_then(|e| e.up);
        let gated = fusion.epilogues.get(&p).is_some_and(|e| e.residual.is_some() && e.up.is_none());
        if fusion.absorbed.contains(&p) || gated || crate::fold_off("nbits") {
            continue;
        }
        if let Some(r) =
            super::fusion_match::nbits_norm(nodes, p, up, &inner_readers).filter(|r| !fusion.absorbed.contains(r))
        {
            fusion.absorbed.insert(r);
            let epilogue = fusion.epilogues.entry(p).or_default();
            (epilogue.norm, epilogue.norm_sum) = (Some(r), true);
        }
    }
    if !crate::fold_off("norm") {
        fold_norms_into_matmuls(nodes, &inner_readers, &mut fusion);
    }
    fuse_chains(nodes, &sole_reader, &mut fusion);
    fusion
}

/// A SkipSimplifiedLayerNormalization read only by MatMuls of constant weights with long rows (A
/// their input 0, no absorbed Transposes) folds into each of them; the first also makes its sum.
fn fold_norms_into_matmuls(nodes: &[Node], readers: &dyn Fn(&str) -> Vec<usize>, fusion: &mut Fusion) {
    // An up projection joined to its gate's step reads the norm there.
    let ups: HashSet<usize> = fusion.epilogues.values().filter_map(|e| e.up).collect();
    let readers = |v: &str| readers(v).into_iter().filter(|u| !ups.contains(u)).collect::<Vec<_>>();
    let readers: &dyn Fn(&str) -> Vec<usize> = &readers;
    for r in 0..nodes.len() {
        let found = {
            let qualifies = |p: usize| {
                let n = &nodes[p];
                n.op_type == "MatMul"
                    && n.domain.is_empty()
                    && n.input(1).is_some_and(|v| v.constant && long_rows(v))
                    && !fusion.absorbed.contains(&p)
                    && !fusion.rewrites.contains_key(&p)
            };
            if fusion.absorbed.contains(&r) {
                None
            } else {
                super::fusion_match::matmul_norm(nodes, r, readers, &qualifies)
            }
        };
        if let Some(products) = found {
            fusion.absorbed.insert(r);
            for (j, p) in products.into_iter().enumerate() {
                let epilogue = fusion.epilogues.entry(p).or_default();
                (epilogue.norm, epilogue.norm_sum) = (Some(r), j == 0);
            }
        }
    }
}

/// Whether weights `[K, N]` have rows long enough for the narrow one-row GEMV, which takes a
/// folded norm (elsewhere the norm runs first, once per product that reads it).
fn long_rows(b: &super::model::ValueInfo) -> bool {
    let narrow = crate::gemm::GemvVec {
        dtype: crate::dtype::DType::F32,
        rows: 1,
        split_k: false,
        columns: crate::gemm::GemvVec::NARROW,
        threads: crate::gemm::GemvVec::INVOCATIONS,
    };
    matches!(b.fixed_shape().as_deref(), Some(&[k, _]) if k >= u64::from(narrow.k_lanes() * crate::gemm::GemvVec::UNROLL))
}

/// MatMulNBits absorbs the exported SiLU after it or, without one, a gating Mul (SwiGLU's up
/// projection times the gate's SiLU): its kernels apply both after the bias.
fn fuse_nbits_epilogue(nodes: &[Node], p: usize, (sole_reader, readers): Readers<'_>, fusion: &mut Fusion) {
    let Some(tail) = out_name(&nodes[p]).map(str::to_string) else { return };
    let mut epilogue = Epilogue::default();
    let absorbed = match activation_pattern(nodes, &tail, (sole_reader, readers), false) {
        Some((mut members, Activation::Silu)) => {
            epilogue.activation = members.last().map(|&last| (last, Activation::Silu));
            let mul = gate_after_silu(nodes, p, &members, sole_reader, fusion, &mut epilogue);
            if let Some((mul, k, _)) = epilogue.residual.filter(|_| mul.is_some()) {
                epilogue.up = crate::graph::fusion_match::nbits_up_projection(nodes, p, (mul, k), sole_reader)
                    .filter(|u| !fusion.absorbed.contains(u));
            }
            members.extend(mul);
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
        fusion.absorb(nodes, n, &tail);
    }
    if let Some(u) = epilogue.up {
        // Its result is never made: the gating Mul, its only reader, joined the step.
        fusion.absorbed.insert(u);
    }
    fusion.epilogues.insert(p, epilogue);
}

/// SwiGLU's gating Mul after product `p`'s SiLU (`members`, the SiLU's nodes): the other operand (the
/// up projection, which then runs plain) multiplies the activated result in the store, so only one
/// of the two products carries an epilogue beyond the plain store (each such epilogue made the
/// H200's 128×256 tensor-core kernel about 10% slower). Returns the Mul when it joins.
fn gate_after_silu(
    nodes: &[Node],
    p: usize,
    members: &[usize],
    sole_reader: &dyn Fn(&str) -> Option<usize>,
    fusion: &Fusion,
    epilogue: &mut Epilogue,
) -> Option<usize> {
    let silu_out = out_name(&nodes[*members.last()?])?;
    let r = sole_reader(silu_out)?;
    let mul = &nodes[r];
    if !mul.is_onnx() || mul.op_type != "Mul" || fusion.absorbed.contains(&r) || members.contains(&r) {
        return None;
    }
    let k = gate_operand(&nodes[p], mul, silu_out)?;
    epilogue.residual = Some((r, k, true));
    epilogue.residual_mul = true;
    Some(r)
}

impl Fusion {
    /// Node `n` joins a product's step: its output becomes `tail`, the value it read.
    fn absorb(&mut self, nodes: &[Node], n: usize, tail: &str) {
        if let Some(o) = out_name(&nodes[n]) {
            self.renames.insert(o.to_string(), tail.to_string());
        }
        self.absorbed.insert(n);
    }
}

fn is_product(node: &Node) -> bool {
    node.is_onnx() && matches!(node.op_type.as_str(), "MatMul" | "Gemm" | "Conv")
}

pub(super) fn out_name(node: &Node) -> Option<&str> {
    node.output(0).map(|o| o.name.as_str())
}

pub(super) type Readers<'a> = (&'a dyn Fn(&str) -> Option<usize>, &'a dyn Fn(&str) -> Vec<usize>);

/// Absorbs a bias Add and an activation after product `p`; `sole_reader` and `readers` see only
/// values that stay inside the partition.
fn fuse_epilogue(nodes: &[Node], p: usize, (sole_reader, readers): Readers<'_>, fusion: &mut Fusion) {
    let product = &nodes[p];
    let Some(mut tail) = out_name(product).map(str::to_string) else { return };
    let mut epilogue = Epilogue::default();
    let mut has_bias = product.op_type == "Conv" || product.input(2).is_some_and(|v| !v.name.is_empty());
    let mut through_reshape = false;
    // The Reshape passed through and the value it read (a conv's pixels merged: `flat_pixels`).
    let mut reshaped: Option<(usize, String)> = None;
    let is_conv = product.op_type == "Conv";
    loop {
        let pattern = match epilogue.activation {
            None => activation_pattern(nodes, &tail, (sole_reader, readers), through_reshape),
            Some(_) => None,
        };
        if let Some((mut members, act)) = pattern {
            // Recorded by its last node.
            epilogue.activation = members.last().map(|&last| (last, act));
            if act == Activation::Silu && !is_conv {
                let mul = gate_after_silu(nodes, p, &members, sole_reader, fusion, &mut epilogue);
                if let (Some(m), Some((_, k, _))) = (mul, epilogue.residual) {
                    epilogue.up = super::fusion_match::matmul_up_projection(nodes, p, (m, k), sole_reader)
                        .filter(|u| !fusion.absorbed.contains(u) && !fusion.rewrites.contains_key(u))
                        .filter(|_| !fusion.rewrites.contains_key(&p) && !crate::fold_off("dual"));
                }
                members.extend(mul);
            }
            for &n in &members {
                fusion.absorb(nodes, n, &tail);
            }
            // A Conv's store may still absorb a Transpose and a residual Add after it.
            match members.last().and_then(|&last| out_name(&nodes[last])) {
                Some(o) if is_conv && epilogue.residual.is_none() => {
                    tail = o.to_string();
                    continue;
                }
                _ => break,
            }
        }
        let Some(r) = sole_reader(&tail) else { break };
        let reader = &nodes[r];
        // Another product already absorbed it (the sum of two products).
        if !reader.is_onnx() || fusion.absorbed.contains(&r) {
            break;
        }
        // A gated product's factor (SwiGLU's up projection times the gate's SiLU).
        let gate = if reader.op_type == "Mul" { gate_operand(product, reader, &tail) } else { None };
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
            // Channels last, the store is a plain product's (contiguous rows), f16 too.
            "Add"
                if is_conv
                    && epilogue.residual.is_none()
                    && !through_reshape
                    && (f32_output(product) || epilogue.channels_last.is_some()) =>
            {
                let Some(k) = residual_input(reader, &tail) else { break };
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
            // The gate (of the output's shape) multiplies the result after the whole epilogue.
            "Mul" if !is_conv && epilogue.residual.is_none() && epilogue.activation.is_none() && gate.is_some() => {
                epilogue.residual = gate.map(|k| (r, k, true));
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
            "Transpose"
                if is_conv
                    && epilogue.channels_last.is_none()
                    && epilogue.residual.is_none()
                    && !through_reshape
                    && channels_last_transpose(product, reader, false) =>
            {
                epilogue.channels_last = Some((r, false));
            }
            // ViT's patch embedding: Conv → Reshape merging the pixels → Transpose(0, 2, 1).
            "Transpose"
                if is_conv
                    && epilogue.channels_last.is_none()
                    && epilogue.residual.is_none()
                    && reshaped.as_ref().is_some_and(|(m, _)| flat_pixels(product, &nodes[*m]))
                    && channels_last_transpose(product, reader, true) =>
            {
                if let Some((m, read)) = reshaped.take() {
                    fusion.absorb(nodes, m, &read);
                }
                epilogue.channels_last = Some((r, true));
                through_reshape = false;
            }
            "Reshape" if epilogue.activation.is_none() => {
                reshaped = (reshaped.is_none() && !through_reshape).then(|| (r, tail.clone()));
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
        fusion.absorb(nodes, r, &tail);
        tail = o.to_string();
        // A Conv's residual Add may still follow its activation; nothing follows a product's.
        if (epilogue.activation.is_some() && !(is_conv && epilogue.residual.is_none()))
            || (!is_conv && epilogue.residual.is_some())
        {
            break;
        }
    }
    if let Some(u) = epilogue.up {
        // Its result is never made: the gating Mul, its only reader, joined the step.
        fusion.absorbed.insert(u);
    }
    if epilogue != Epilogue::default() {
        fusion.epilogues.insert(p, epilogue);
    }
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
