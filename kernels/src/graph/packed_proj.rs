//! The Q, K and V projections of a fused attention computed as one product.
//!
//! Encoders export three products of the same input, each `MatMul(X, W) [+ b] [· c]` then a
//! Reshape to `[B, S, H, D]` that only the attention reads (BERT, ViT, Whisper). Three thin
//! products fill a large GPU poorly (Whisper-tiny's 1500×384×384 runs at 27 TFLOP/s on the
//! H200, its packed 1500×1152×384 at 57); one product over the packed weights `[K, row]` writes
//! `[B, S, row]`, and the attention reads Q, K and V as column ranges of it (`qkv_*`
//! attributes of `FlashAttention`, bound from their first column). Each range starts at a
//! multiple of 256 bytes (zero columns pad it), so its binding is valid on every device. A
//! scalar factor on Q or K (Whisper scales Q after its bias) moves into the attention's scale.

use super::fusion::Fusion;
use super::model::{Attr, Dim, Node, ValueInfo};
use super::patterns::Ctx;
use super::program::Constant;
use crate::dtype::ElemType;
use crate::ops::attention::fused::OP;
use crate::ops::attention::INTERNAL_DOMAIN;
use crate::runtime::STORAGE_OFFSET_ALIGN;

/// Prefix of the names the packing gives its weights, bias and output.
const PREFIX: &str = "__ep_wgpu_qkv:";

/// One attention whose projections are packed.
#[derive(Clone, Debug)]
pub struct Pack {
    /// Q's product: its step computes the packed projection.
    pub product: usize,
    /// The attention (its rewrite's last member).
    pub attention: usize,
    /// The nodes that no longer run: K's and V's products and every projection's chain (its
    /// Reshapes and scalar factors, a Gemm's input Reshape).
    pub absorbed: Vec<usize>,
    /// X, the input the three products share.
    pub input: ValueInfo,
    /// The packed weights `[K, row]` and bias `[row]`.
    pub weights: Constant,
    pub bias: Constant,
    /// The packed projection `[B, S, row]`.
    pub value: ValueInfo,
    /// The attention reading it.
    pub node: Node,
    /// The constants the three projections read (left unread unless another step reads them).
    pub replaced: Vec<String>,
}

/// One projection as the pattern found it.
struct Projection {
    /// Its MatMul or Gemm.
    product: usize,
    /// The nodes between the product and the attention (Reshapes, a scalar Mul), and a Gemm's
    /// input Reshape: none of them runs once packed.
    chain: Vec<usize>,
    /// X: the MatMul's input, or the 3-D tensor a Gemm's input Reshape flattens.
    input: ValueInfo,
    weights: String,
    /// Weights stored `[W, K]` (Gemm's `transB`).
    transposed: bool,
    bias: Option<String>,
    rows: u64,
    width: u64,
    heads: u64,
    factor: f32,
}

/// The attentions of `fusion` whose projections can be packed (`constants`: the weights, to pack).
pub fn find(nodes: &[Node], outputs: &[String], fusion: &Fusion, constants: &[Constant]) -> Vec<Pack> {
    let ctx = Ctx::new(nodes, outputs);
    let mut found: Vec<Pack> = fusion
        .rewrites
        .iter()
        .filter(|(_, n)| n.op_type == OP && n.domain == INTERNAL_DOMAIN)
        .filter_map(|(&last, node)| pack(&ctx, fusion, constants, last, node))
        .collect();
    found.sort_by_key(|p| p.attention);
    found
}

/// Records `packs` in `fusion`: the nodes they absorb, and the attentions reading the packed
/// projection in place of the three.
pub fn apply(packs: &[Pack], fusion: &mut Fusion) {
    for p in packs {
        fusion.absorbed.extend(p.absorbed.iter().copied());
        fusion.epilogues.remove(&p.product);
        fusion.rewrites.insert(p.attention, p.node.clone());
    }
}

/// The packing of attention `node` (the rewrite ending at `last`), when its three operands are
/// projections of one input in the `[B, S, H, D]` view and only a factor on Q or K moves.
fn pack(ctx: &Ctx<'_>, fusion: &Fusion, constants: &[Constant], last: usize, node: &Node) -> Option<Pack> {
    if node.ints("qkv_widths").is_some() {
        return None;
    }
    let members = fusion.rewrite_members.get(&last)?;
    let ty = ElemType::from_onnx(node.input(0)?.elem_type).filter(|t| matches!(t, ElemType::F16 | ElemType::F32))?;
    let mut parts = Vec::with_capacity(3);
    for (j, perm) in ["q_perm", "k_perm", "v_perm"].into_iter().enumerate() {
        if node.ints(perm)? != [0, 2, 1, 3] {
            return None;
        }
        parts.push(projection(ctx, fusion, node.input(j)?, members, ty)?);
    }
    // A projection that folds a norm reads that norm's input, not X.
    if parts.iter().any(|p| fusion.epilogues.get(&p.product).is_some_and(|e| e.norm.is_some())) {
        return None;
    }
    let (q, k, v) = (&parts[0], &parts[1], &parts[2]);
    let same_input =
        parts.iter().all(|p| p.input.name == q.input.name && p.rows == q.rows && p.input.shape == q.input.shape);
    let distinct = q.product != k.product && k.product != v.product && q.product != v.product;
    if !same_input || !distinct || v.factor != 1.0 {
        return None;
    }
    // Each range starts at a multiple of 256 bytes; rows stay multiples of 8 elements.
    let align = STORAGE_OFFSET_ALIGN / ty.size();
    let offsets =
        [0, q.width.next_multiple_of(align), (q.width.next_multiple_of(align) + k.width).next_multiple_of(align)];
    let row = (offsets[2] + v.width).next_multiple_of(8);
    let x = q.input.shape.as_ref()?;
    let packing = Packing { name: &node.name, offsets, row, ty };
    let weights = packed_weights(constants, &parts, &packing)?;
    let bias = packed_bias(constants, &parts, &packing)?;
    let value = ValueInfo {
        name: format!("{PREFIX}{}", node.name),
        elem_type: node.input(0)?.elem_type,
        shape: Some(vec![x[0].clone(), x[1].clone(), Dim::Fixed(row)]),
        constant: false,
        small_data: None,
    };
    let mut attention = node.clone();
    for input in attention.inputs.iter_mut().take(3) {
        *input = Some(value.clone());
    }
    let ints = |f: &dyn Fn(&Projection, usize) -> u64| Attr::Ints((0..3).map(|j| f(&parts[j], j) as i64).collect());
    attention.attrs.insert("qkv_heads".into(), ints(&|p, _| p.heads));
    attention.attrs.insert("qkv_offsets".into(), ints(&|_, j| offsets[j]));
    attention.attrs.insert("qkv_widths".into(), ints(&|p, _| p.width));
    let scale = node.float("scale")? * q.factor * k.factor;
    attention.attrs.insert("scale".into(), Attr::Float(scale));
    crate::ops::attention::fused::kernel(&attention).ok()?;
    let mut absorbed = vec![k.product, v.product];
    absorbed.extend(parts.iter().flat_map(|p| p.chain.iter().copied()));
    let mut replaced: Vec<String> =
        parts.iter().flat_map(|p| [Some(p.weights.clone()), p.bias.clone()]).flatten().collect();
    // The Reshapes' shapes and the factors.
    replaced.extend(
        absorbed
            .iter()
            .flat_map(|&n| ctx.nodes[n].inputs.iter().flatten().filter(|v| v.constant))
            .map(|v| v.name.clone()),
    );
    Some(Pack {
        product: q.product,
        attention: last,
        absorbed,
        input: q.input.clone(),
        weights,
        bias,
        value,
        node: attention,
        replaced,
    })
}

/// The projection feeding attention operand `v` (`[B, S, H, D]`): a product by constant weights
/// whose result reaches the attention through Reshapes and scalar factors that nothing else
/// reads. The product is a 3-D MatMul (its fused epilogue at most a constant bias and a factor
/// after it) or, as ONNX Runtime's MatMul+Add fusion leaves it, a Gemm of a 3-D input flattened
/// by a Reshape.
fn projection(ctx: &Ctx<'_>, fusion: &Fusion, v: &ValueInfo, members: &[usize], ty: ElemType) -> Option<Projection> {
    let od = v.shape.as_deref().filter(|d| d.len() == 4)?;
    let (heads, d) = (od[2].fixed()?, od[3].fixed()?);
    let free = |i: usize| !fusion.absorbed.contains(&i) && !fusion.rewrites.contains_key(&i);
    let mut chain = Vec::new();
    let mut factor = 1.0f32;
    let mut name = v.name.as_str();
    let product = loop {
        let n = ctx.producer(name)?;
        // The value must reach only the attention's members (first) or the chain's last node.
        let private = match chain.last() {
            None => ctx.private(n, members),
            Some(&next) => ctx.only_reader(name) == Some(next),
        };
        if !private {
            return None;
        }
        // An epilogue's tail: its nodes are absorbed and their outputs renamed to the product's.
        if fusion.renames.contains_key(name) {
            let mut to = name;
            while let Some(t) = fusion.renames.get(to) {
                to = t;
            }
            let p = ctx.producer(to)?;
            if ctx.nodes[p].output(0)?.name != to {
                return None;
            }
            break p;
        }
        if !free(n) {
            return None;
        }
        let node = &ctx.nodes[n];
        if ctx.op(n, "MatMul") || ctx.op(n, "Gemm") {
            break n;
        } else if ctx.op(n, "Reshape") {
            name = &node.input(0)?.name;
        } else if (ctx.op(n, "Mul") || ctx.op(n, "Div")) && !in_longer_chain(fusion, n) {
            let data = if ctx.op(n, "Div") {
                0
            } else {
                [0, 1].into_iter().find(|&k| node.input(1 - k).is_some_and(|c| c.constant))?
            };
            let x = node.input(data)?;
            factor *= super::fusion_match::scalar_factor(node, &x.name)?;
            name = &x.name;
        } else {
            return None;
        }
        chain.push(n);
    };
    if !free(product) {
        return None;
    }
    let mm = &ctx.nodes[product];
    let typed = |v: &ValueInfo| ElemType::from_onnx(v.elem_type) == Some(ty);
    let w = mm.input(1).filter(|w| w.constant && typed(w))?;
    let w_dims = w.fixed_shape().filter(|d| d.len() == 2)?;
    let (input, transposed, gemm_bias, gemm_factor) = if ctx.op(product, "Gemm") {
        let (input, flatten) = flattened_input(ctx, product, w_dims[usize::from(mm.int("transB").unwrap_or(0) != 0)])?;
        chain.extend(flatten);
        let (bias, f) = gemm_bias(mm)?;
        (input, mm.int("transB").unwrap_or(0) != 0, bias, f)
    } else {
        (mm.input(0)?.clone(), false, None, 1.0)
    };
    let (k, width) = if transposed { (w_dims[1], w_dims[0]) } else { (w_dims[0], w_dims[1]) };
    let x = input.shape.as_deref()?;
    if heads * d != width || x.len() != 3 || x[..2] != od[..2] || x[2] != Dim::Fixed(k) || !typed(&input) {
        return None;
    }
    let (epilogue_bias, epilogue_factor) = epilogue(ctx, fusion, product, width, gemm_bias.is_some())?;
    Some(Projection {
        product,
        chain,
        input,
        weights: w.name.clone(),
        transposed,
        bias: gemm_bias.or(epilogue_bias),
        rows: k,
        width,
        heads,
        factor: factor * gemm_factor * epilogue_factor,
    })
}

/// Whether node `n` is part of an elementwise chain with other nodes (which then reads it).
fn in_longer_chain(fusion: &Fusion, n: usize) -> bool {
    fusion.chains.iter().any(|c| c.len() > 1 && c.contains(&n))
}

/// A Gemm's input `A` (`[B·S, K]`, untransposed) as the Reshape of a 3-D tensor that only
/// this Gemm reads: that tensor, and the Reshape.
fn flattened_input(ctx: &Ctx<'_>, g: usize, k: u64) -> Option<(ValueInfo, Option<usize>)> {
    let gemm = &ctx.nodes[g];
    if gemm.int("transA").unwrap_or(0) != 0 {
        return None;
    }
    let a = gemm.input(0)?;
    let r = ctx.producer(&a.name).filter(|&r| ctx.op(r, "Reshape"))?;
    let x = ctx.nodes[r].input(0)?;
    let dims = x.fixed_shape().filter(|d| d.len() == 3 && d[2] == k)?;
    let flat = a.fixed_shape()?;
    if flat != [dims[0] * dims[1], k] {
        return None;
    }
    // The Reshape stays when something else reads it.
    Some((x.clone(), (ctx.only_reader(&a.name) == Some(g)).then_some(r)))
}

/// A Gemm's constant C `[N]` (or `[1, N]`) and the factor alpha, when beta equals it (so
/// `alpha·(A·B + C)`); no C: `(None, alpha)`.
fn gemm_bias(gemm: &Node) -> Option<(Option<String>, f32)> {
    let (alpha, beta) = (gemm.float("alpha").unwrap_or(1.0), gemm.float("beta").unwrap_or(1.0));
    match gemm.input(2).filter(|c| !c.name.is_empty()) {
        None => Some((None, alpha)),
        Some(c) if c.constant && alpha == beta => {
            let dims = c.fixed_shape()?;
            (dims.len() <= 2 && dims.iter().rev().skip(1).all(|&x| x == 1)).then(|| (Some(c.name.clone()), alpha))
        }
        Some(_) => None,
    }
}

/// A product's fused epilogue: a constant bias `[W]` (or `[…, 1, W]`; not after a Gemm's own
/// C) and the scalar factor after it; `None` when it holds anything else.
fn epilogue(
    ctx: &Ctx<'_>,
    fusion: &Fusion,
    product: usize,
    width: u64,
    has_bias: bool,
) -> Option<(Option<String>, f32)> {
    let Some(e) = fusion.epilogues.get(&product) else { return Some((None, 1.0)) };
    if e.activation.is_some() || e.residual.is_some() || e.batch_norm.is_some() || (has_bias && e.add.is_some()) {
        return None;
    }
    let bias = match e.add {
        None => None,
        Some((add, k)) => {
            let b = ctx.nodes[add].input(k)?;
            let dims = b.fixed_shape()?;
            if !b.constant || dims.last() != Some(&width) || dims.iter().product::<u64>() != width {
                return None;
            }
            Some(b.name.clone())
        }
    };
    let factor = match e.scale {
        None => 1.0,
        // (X·W)·c + b cannot move into the attention's scale.
        Some((_, _, false)) if bias.is_some() || has_bias => return None,
        Some((_, f, _)) => f,
    };
    Some((bias, factor))
}

/// Where the projections go in a packed row, and the attention the packing is named after.
struct Packing<'a> {
    name: &'a str,
    offsets: [u64; 3],
    row: u64,
    ty: ElemType,
}

/// `[K, row]`: each row of the three weights at its offset, zeros between.
fn packed_weights(constants: &[Constant], parts: &[Projection], packing: &Packing<'_>) -> Option<Constant> {
    let Packing { offsets, row, ty, .. } = *packing;
    let size = ty.size() as usize;
    let rows = parts[0].rows as usize;
    let sources =
        parts.iter().map(|p| constant(constants, &p.weights, ty, p.rows * p.width)).collect::<Option<Vec<_>>>()?;
    let mut data = Vec::new();
    // The offline inspector plans without the weights' bytes.
    if sources.iter().all(|w| !w.is_empty()) {
        data = vec![0u8; rows * row as usize * size];
        for ((p, offset), w) in parts.iter().zip(offsets).zip(&sources) {
            let width = p.width as usize;
            for r in 0..rows {
                let at = (r * row as usize + offset as usize) * size;
                if p.transposed {
                    // Stored [W, K]: element (r, c) at c·K + r.
                    for c in 0..width {
                        let from = (c * rows + r) * size;
                        data[at + c * size..at + (c + 1) * size].copy_from_slice(&w[from..from + size]);
                    }
                } else {
                    data[at..at + width * size].copy_from_slice(&w[r * width * size..(r + 1) * width * size]);
                }
            }
        }
    }
    let name = format!("{PREFIX}{}:weights", packing.name);
    Some(Constant { name, dtype: ty, shape: vec![parts[0].rows, row], data })
}

/// `[row]`: the three biases (zeros where a projection has none) at their offsets.
fn packed_bias(constants: &[Constant], parts: &[Projection], packing: &Packing<'_>) -> Option<Constant> {
    let Packing { offsets, row, ty, .. } = *packing;
    let size = ty.size() as usize;
    let mut data = vec![0u8; row as usize * size];
    for (p, offset) in parts.iter().zip(offsets) {
        if let Some(b) = &p.bias {
            let b = constant(constants, b, ty, p.width)?;
            let at = offset as usize * size;
            data[at..at + b.len()].copy_from_slice(b);
        }
    }
    let name = format!("{PREFIX}{}:bias", packing.name);
    Some(Constant { name, dtype: ty, shape: vec![row], data })
}

/// The bytes of constant `name` of type `ty` holding `count` elements (empty where the offline
/// inspector left them out); `None` when it is not such a constant.
fn constant<'c>(constants: &'c [Constant], name: &str, ty: ElemType, count: u64) -> Option<&'c [u8]> {
    let c = constants.iter().find(|c| c.name == name).filter(|c| c.dtype == ty)?;
    let len = c.data.len() as u64;
    (len == count * ty.size() || (len == 0 && c.shape.iter().product::<u64>() == count)).then_some(c.data.as_slice())
}
