//! A partition compiled into a list of GPU ops over numbered operands, with no reference to
//! ONNX Runtime objects (the provider copies names and constants at Compile time).

use std::collections::HashMap;

use super::model::Node;
use super::support::{clip_bounds, ComputeOp, EpilogueOp, GemmAttrs};
use crate::dtype::DType;
use crate::gemm::Activation;

/// Where an op reads or writes a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operand {
    /// The i-th input of the fused node (a host tensor each run).
    Input(usize),
    /// A constant uploaded once at compile time.
    Const(usize),
    /// A tensor produced inside the partition (stays on the GPU).
    Temp(usize),
}

/// A weight or other initializer, copied out of ORT's graph at compile time.
#[derive(Clone, Debug, PartialEq)]
pub struct Constant {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<u64>,
    pub data: Vec<u8>,
}

/// One product (MatMul or Gemm) with its fused epilogue.
#[derive(Clone, Debug, PartialEq)]
pub struct ProductOp {
    pub name: String,
    pub kind: ComputeOp,
    pub gemm: GemmAttrs,
    pub dtype: DType,
    pub a: Operand,
    pub b: Operand,
    /// Gemm's C, or the other operand of a fused Add.
    pub bias: Option<Operand>,
    pub activation: Activation,
    /// Always a `Temp`.
    pub out: usize,
}

/// A compiled partition.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// Names of the fused node's inputs, in ORT's order.
    pub inputs: Vec<String>,
    /// Expected element type of each input (checked every run).
    pub input_dtypes: Vec<DType>,
    /// The temp holding each output of the fused node, in ORT's order.
    pub outputs: Vec<usize>,
    pub constants: Vec<Constant>,
    pub ops: Vec<ProductOp>,
    pub temps: usize,
}

/// Builds the program of a partition from its nodes (topologically ordered), the fused node's
/// input and output names, and the constants the nodes read.
pub fn build_program(
    nodes: &[Node],
    inputs: &[String],
    outputs: &[String],
    constants: Vec<Constant>,
) -> Result<Program, String> {
    let mut names: HashMap<String, Operand> = HashMap::new();
    for (i, n) in inputs.iter().enumerate() {
        names.insert(n.clone(), Operand::Input(i));
    }
    for (i, c) in constants.iter().enumerate() {
        names.entry(c.name.clone()).or_insert(Operand::Const(i));
    }
    let mut input_dtypes: Vec<Option<DType>> = vec![None; inputs.len()];
    let mut ops: Vec<ProductOp> = Vec::new();
    // Temp → index of the op producing it, and the value name its result currently has.
    let mut tail: HashMap<usize, String> = HashMap::new();
    let lookup = |names: &HashMap<String, Operand>, node: &Node, i: usize| -> Result<Operand, String> {
        let v = node.input(i).ok_or_else(|| format!("{} '{}' lacks input {i}", node.op_type, node.name))?;
        names.get(&v.name).copied().ok_or_else(|| format!("value '{}' is neither an input nor a constant", v.name))
    };

    for node in nodes {
        let out_name =
            node.output(0).map(|o| o.name.clone()).ok_or_else(|| format!("'{}' has no output", node.name))?;
        if let Some(kind) = ComputeOp::of(node) {
            let dtype = node.input(0).and_then(|v| v.dtype()).ok_or("product input of unsupported type")?;
            let a = lookup(&names, node, 0)?;
            let b = lookup(&names, node, 1)?;
            let bias = match kind {
                ComputeOp::Gemm if node.input(2).is_some_and(|v| !v.name.is_empty()) => Some(lookup(&names, node, 2)?),
                _ => None,
            };
            for (k, op) in [Some(a), Some(b), bias].into_iter().enumerate() {
                if let Some(Operand::Input(i)) = op {
                    input_dtypes[i] = node.input(k).and_then(|v| v.dtype());
                }
            }
            let out = ops.len();
            ops.push(ProductOp {
                name: node.name.clone(),
                kind,
                gemm: GemmAttrs::of(node),
                dtype,
                a,
                b,
                bias,
                activation: Activation::None,
                out,
            });
            tail.insert(out, out_name.clone());
            names.insert(out_name, Operand::Temp(out));
        } else if let Some(op) = EpilogueOp::of(node) {
            let inputs: Vec<(usize, String)> = node
                .inputs
                .iter()
                .enumerate()
                .filter_map(|(k, v)| v.as_ref().filter(|v| !v.name.is_empty()).map(|v| (k, v.name.clone())))
                .collect();
            let (tail_k, t) = inputs
                .iter()
                .find_map(|(k, n)| match names.get(n) {
                    Some(Operand::Temp(t)) if tail.get(t) == Some(n) => Some((*k, *t)),
                    _ => None,
                })
                .ok_or_else(|| {
                    format!("{} '{}' does not follow a product in this partition", node.op_type, node.name)
                })?;
            let product = &mut ops[t];
            match op {
                EpilogueOp::Add => {
                    let other =
                        inputs.iter().find(|(k, _)| *k != tail_k).map(|(k, _)| *k).ok_or("Add with one input")?;
                    let operand = lookup(&names, node, other)?;
                    if let Operand::Input(i) = operand {
                        input_dtypes[i] = node.input(other).and_then(|v| v.dtype());
                    }
                    product.bias = Some(operand);
                    // A Gemm without C ignores beta; the fused Add's operand is added as is.
                    product.gemm.beta = 1.0;
                }
                EpilogueOp::Relu => product.activation = Activation::Relu,
                EpilogueOp::Clip => {
                    let (min, max) = clip_bounds(node)?;
                    product.activation = Activation::Clip { min, max };
                }
            }
            tail.insert(t, out_name.clone());
            names.insert(out_name, Operand::Temp(t));
        } else {
            return Err(format!("{} '{}' cannot run in a partition", node.op_type, node.name));
        }
    }

    let outputs = outputs
        .iter()
        .map(|n| match names.get(n) {
            Some(Operand::Temp(t)) if tail.get(t) == Some(n) => Ok(*t),
            Some(Operand::Temp(_)) => Err(format!("output '{n}' is an intermediate of a fused epilogue")),
            _ => Err(format!("output '{n}' is not produced by the partition")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let input_dtypes = input_dtypes
        .into_iter()
        .zip(inputs)
        .map(|(d, n)| d.ok_or_else(|| format!("input '{n}' is not read by any op")))
        .collect::<Result<Vec<_>, _>>()?;
    let temps = ops.len();
    Ok(Program { inputs: inputs.to_vec(), input_dtypes, outputs, constants, ops, temps })
}
