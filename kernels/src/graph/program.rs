//! A partition compiled into a list of GPU steps over numbered operands, with no reference to
//! ONNX Runtime objects (the provider copies names and constants at Compile time).

use std::collections::{HashMap, HashSet};

use super::model::Node;
use super::reshape::ReshapeSpec;
use super::support::{clip_bounds, conv_attrs, ComputeOp, EpilogueOp, GemmAttrs};
use crate::conv::ConvAttrs;
use crate::dtype::DType;
use crate::gemm::Activation;

/// Where a step reads or writes a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operand {
    /// The i-th input of the fused node (a host tensor each run).
    Input(usize),
    /// A constant uploaded once at compile time.
    Const(usize),
    /// The result of step i (stays on the GPU).
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
}

/// One Conv (1-D or 2-D; 1-D runs as 2-D with height 1) with its fused activation.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvOp {
    pub name: String,
    pub dtype: DType,
    pub x: Operand,
    pub w: Operand,
    pub bias: Option<Operand>,
    pub attrs: ConvAttrs,
    pub activation: Activation,
}

/// One step of a program; step i writes `Operand::Temp(i)`.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    Product(ProductOp),
    Conv(ConvOp),
    /// The input's buffer under a new shape (no GPU work).
    Reshape {
        name: String,
        input: Operand,
        spec: ReshapeSpec,
    },
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
    pub steps: Vec<Step>,
}

/// The product step a value's (fused) result lives in, and whether a Reshape lies between.
#[derive(Clone, Copy)]
struct Tail {
    step: usize,
    reshaped: bool,
}

/// Names of values, and which product's buffer each fused result lives in.
#[derive(Default)]
struct Scope {
    names: HashMap<String, Operand>,
    /// Value name → the product whose (fused) result it is.
    tail: HashMap<String, Tail>,
    /// Names that alias a product's buffer whose contents a later fused op changed.
    stale: HashSet<String>,
    input_dtypes: Vec<Option<DType>>,
}

impl Scope {
    fn operand(&mut self, node: &Node, i: usize) -> Result<Operand, String> {
        let v = node.input(i).ok_or_else(|| format!("{} '{}' lacks input {i}", node.op_type, node.name))?;
        let op =
            *self.names.get(&v.name).ok_or_else(|| format!("value '{}' is neither an input nor a constant", v.name))?;
        if self.stale.contains(&v.name) {
            return Err(format!("'{}' reads '{}', which a fused op overwrote", node.name, v.name));
        }
        if let Operand::Input(k) = op {
            self.input_dtypes[k] = v.dtype();
        }
        Ok(op)
    }

    /// Marks every name aliasing the buffer of `tail`'s product stale, then names `out` its result.
    fn fuse(&mut self, tail: Tail, input: &str, out: String) {
        let aliases: Vec<String> =
            self.tail.iter().filter(|(_, t)| t.step == tail.step).map(|(n, _)| n.clone()).collect();
        self.stale.extend(aliases);
        let operand = self.names[input];
        self.names.insert(out.clone(), operand);
        self.tail.insert(out, tail);
    }
}

/// Builds the program of a partition from its nodes (topologically ordered), the fused node's
/// input and output names, and the constants the nodes read.
pub fn build_program(
    nodes: &[Node],
    inputs: &[String],
    outputs: &[String],
    constants: Vec<Constant>,
) -> Result<Program, String> {
    let mut scope = Scope { input_dtypes: vec![None; inputs.len()], ..Scope::default() };
    for (i, n) in inputs.iter().enumerate() {
        scope.names.insert(n.clone(), Operand::Input(i));
    }
    for (i, c) in constants.iter().enumerate() {
        scope.names.entry(c.name.clone()).or_insert(Operand::Const(i));
    }
    let mut steps: Vec<Step> = Vec::new();
    for node in nodes {
        let out = node.output(0).map(|o| o.name.clone()).ok_or_else(|| format!("'{}' has no output", node.name))?;
        if ComputeOp::of(node) == Some(ComputeOp::Conv) {
            let dtype = node.input(0).and_then(|v| v.dtype()).ok_or("Conv input of unsupported type")?;
            let x = scope.operand(node, 0)?;
            let w = scope.operand(node, 1)?;
            let bias =
                if node.input(2).is_some_and(|v| !v.name.is_empty()) { Some(scope.operand(node, 2)?) } else { None };
            let k = steps.len();
            let attrs = conv_attrs(node)?;
            steps.push(Step::Conv(ConvOp {
                name: node.name.clone(),
                dtype,
                x,
                w,
                bias,
                attrs,
                activation: Activation::None,
            }));
            scope.names.insert(out.clone(), Operand::Temp(k));
            scope.tail.insert(out, Tail { step: k, reshaped: false });
        } else if let Some(kind) = ComputeOp::of(node) {
            let dtype = node.input(0).and_then(|v| v.dtype()).ok_or("product input of unsupported type")?;
            let a = scope.operand(node, 0)?;
            let b = scope.operand(node, 1)?;
            let has_c = kind == ComputeOp::Gemm && node.input(2).is_some_and(|v| !v.name.is_empty());
            let bias = if has_c { Some(scope.operand(node, 2)?) } else { None };
            let k = steps.len();
            steps.push(Step::Product(ProductOp {
                name: node.name.clone(),
                kind,
                gemm: GemmAttrs::of(node),
                dtype,
                a,
                b,
                bias,
                activation: Activation::None,
            }));
            scope.names.insert(out.clone(), Operand::Temp(k));
            scope.tail.insert(out, Tail { step: k, reshaped: false });
        } else if let Some(op) = EpilogueOp::of(node) {
            let present: Vec<(usize, String)> = node
                .inputs
                .iter()
                .enumerate()
                .filter_map(|(k, v)| v.as_ref().filter(|v| !v.name.is_empty()).map(|v| (k, v.name.clone())))
                .collect();
            // The same rule as placement: an Add fuses only into a product it directly follows
            // (a bias cannot be laid out through a Reshape), an activation also through Reshapes.
            let fusable = |t: &Tail| op != EpilogueOp::Add || !t.reshaped;
            let (tail_k, tail_name, tail) = present
                .iter()
                .find_map(|(i, n)| scope.tail.get(n).filter(|t| fusable(t)).map(|&t| (*i, n.clone(), t)))
                .ok_or_else(|| {
                    format!("{} '{}' does not follow a product in this partition", node.op_type, node.name)
                })?;
            let k = tail.step;
            let update = match op {
                EpilogueOp::Add => {
                    let other =
                        present.iter().find(|(i, _)| *i != tail_k).map(|(i, _)| *i).ok_or("Add with one input")?;
                    // The operand may be computed after the product (two products summed):
                    // `run_order` below moves the product after it.
                    Some(scope.operand(node, other)?)
                }
                _ => None,
            };
            let activation = match op {
                EpilogueOp::Relu => Some(Activation::Relu),
                EpilogueOp::Clip => {
                    let (min, max) = clip_bounds(node)?;
                    Some(Activation::Clip { min, max })
                }
                EpilogueOp::Add => None,
            };
            match (steps.get_mut(k), activation) {
                (Some(Step::Conv(conv)), Some(activation)) => conv.activation = activation,
                (Some(Step::Conv(_)), None) => return Err(format!("Add '{}' cannot fuse into a Conv", node.name)),
                (Some(Step::Product(product)), Some(activation)) => product.activation = activation,
                (Some(Step::Product(product)), None) => {
                    product.bias = update;
                    // A Gemm without C ignores beta; the fused Add's operand is added as is.
                    product.gemm.beta = 1.0;
                }
                _ => return Err(format!("'{}' fuses into a step that is not a product", node.name)),
            }
            scope.fuse(tail, &tail_name, out);
        } else if node.is_onnx() && node.op_type == "Reshape" {
            let input = scope.operand(node, 0)?;
            let spec = ReshapeSpec::of(node)?;
            let t = steps.len();
            steps.push(Step::Reshape { name: node.name.clone(), input, spec });
            let in_name = node.input(0).map(|v| v.name.clone()).unwrap_or_default();
            if let Some(&t) = scope.tail.get(&in_name) {
                scope.tail.insert(out.clone(), Tail { reshaped: true, ..t });
            }
            scope.names.insert(out, Operand::Temp(t));
        } else {
            return Err(format!("{} '{}' cannot run in a partition", node.op_type, node.name));
        }
    }

    let outputs = outputs
        .iter()
        .map(|n| match scope.names.get(n) {
            _ if scope.stale.contains(n) => Err(format!("output '{n}' was overwritten by a fused op")),
            Some(Operand::Temp(t)) => Ok(*t),
            _ => Err(format!("output '{n}' is not produced by the partition")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let input_dtypes = scope
        .input_dtypes
        .into_iter()
        .zip(inputs)
        .map(|(d, n)| d.ok_or_else(|| format!("input '{n}' is not read by any step")))
        .collect::<Result<Vec<_>, _>>()?;
    let (steps, outputs) = run_order(steps, outputs)?;
    Ok(Program { inputs: inputs.to_vec(), input_dtypes, outputs, constants, steps })
}

/// The temps a step reads.
fn reads(step: &Step) -> Vec<usize> {
    step.operands().into_iter().filter_map(|o| if let Operand::Temp(t) = o { Some(t) } else { None }).collect()
}

impl Step {
    /// Every operand the step reads.
    pub fn operands(&self) -> Vec<Operand> {
        let operands = match self {
            Step::Product(p) => vec![Some(p.a), Some(p.b), p.bias],
            Step::Conv(c) => vec![Some(c.x), Some(c.w), c.bias],
            Step::Reshape { input, .. } => vec![Some(*input)],
        };
        operands.into_iter().flatten().collect()
    }

    /// [`Step::operands`], to rewrite in place.
    fn operands_mut(&mut self) -> Vec<&mut Operand> {
        let operands = match self {
            Step::Product(p) => vec![Some(&mut p.a), Some(&mut p.b), p.bias.as_mut()],
            Step::Conv(c) => vec![Some(&mut c.x), Some(&mut c.w), c.bias.as_mut()],
            Step::Reshape { input, .. } => vec![Some(input)],
        };
        operands.into_iter().flatten().collect()
    }
}

/// Reorders steps so each runs after the temps it reads, renumbering `Temp`s. Nodes arrive in
/// topological order, but a fused Add makes its product read the Add's other operand, which
/// may be computed after the product (`MatMul(z, W1) + MatMul(z, W2)`); the product's result
/// has no other reader, so running it later is safe. Keeps the given order where it can.
fn run_order(steps: Vec<Step>, outputs: Vec<usize>) -> Result<(Vec<Step>, Vec<usize>), String> {
    let n = steps.len();
    let deps: Vec<Vec<usize>> = steps.iter().map(reads).collect();
    let mut order = Vec::with_capacity(n);
    let mut placed = vec![false; n];
    while order.len() < n {
        let next = (0..n)
            .find(|&i| !placed[i] && deps[i].iter().all(|&d| d < n && placed[d]))
            .ok_or("the partition's steps depend on each other in a cycle")?;
        placed[next] = true;
        order.push(next);
    }
    let mut new_index = vec![0; n];
    for (new, &old) in order.iter().enumerate() {
        new_index[old] = new;
    }
    let renumber = |o: &mut Operand| {
        if let Operand::Temp(t) = o {
            *t = new_index[*t];
        }
    };
    let mut slots: Vec<Option<Step>> = steps.into_iter().map(Some).collect();
    let mut ordered = Vec::with_capacity(n);
    for &old in &order {
        let mut step = slots[old].take().ok_or("a step was ordered twice")?;
        step.operands_mut().into_iter().for_each(renumber);
        ordered.push(step);
    }
    Ok((ordered, outputs.into_iter().map(|t| new_index[t]).collect()))
}
