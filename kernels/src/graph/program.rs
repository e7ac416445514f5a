//! A partition compiled into a list of GPU steps over numbered values, with no reference to
//! ONNX Runtime objects (the provider copies names and constants at Compile time). Each node
//! becomes a step through its registry entry (`crate::ops`), after the fusion rule
//! (`super::fusion`) has decided which nodes share a kernel.

use std::collections::HashMap;
use std::sync::Arc;

use super::fusion::{self, Fusion};
use super::model::{Node, ValueInfo};
use super::packed_proj::{self, Pack};
use crate::conv::Residual;
use crate::dtype::ElemType;
use crate::ops::conv::ConvKernel;
use crate::ops::elementwise::{fused, Arg, ElemNode};
use crate::ops::matmul::{ProductKernel, ProductKind};
use crate::ops::norm::layer::NormKind;
use crate::ops::norm::skip::SkipNormKernel;
use crate::ops::quant::nbits::{NbitsKernel, GATE, NORM_SKIP, UP_B};
use crate::ops::{lookup, Kernel};

/// Where a step reads or writes a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operand {
    /// The i-th input of the fused node (a host tensor each run).
    Input(usize),
    /// A constant uploaded once at compile time.
    Const(usize),
    /// Value i, computed by a step (stays on the GPU).
    Temp(usize),
}

/// A weight or other initializer, copied out of ORT's graph at compile time.
#[derive(Clone, Debug, PartialEq)]
pub struct Constant {
    pub name: String,
    pub dtype: ElemType,
    pub shape: Vec<u64>,
    pub data: Vec<u8>,
}

/// One step: a kernel, the operands it reads (`None` for omitted optional inputs) and the
/// values it writes.
#[derive(Clone, Debug)]
pub struct Step {
    /// The node's name (the last fused node's, for a chain).
    pub name: String,
    /// The op types it computes, e.g. `MatMul+Add+Relu`.
    pub ops: String,
    pub inputs: Vec<Option<Operand>>,
    /// The values it writes (`Operand::Temp` indices) and their element types.
    pub outputs: Vec<(usize, ElemType)>,
    pub kernel: Arc<dyn Kernel>,
}

impl Step {
    /// Every operand the step reads.
    pub fn operands(&self) -> Vec<Operand> {
        self.inputs.iter().flatten().copied().collect()
    }
}

/// A compiled partition.
#[derive(Clone, Debug)]
pub struct Program {
    /// Names of the fused node's inputs, in ORT's order.
    pub inputs: Vec<String>,
    /// Expected element type of each input (checked every run).
    pub input_dtypes: Vec<ElemType>,
    /// What each output of the fused node is, in ORT's order.
    pub outputs: Vec<Operand>,
    pub constants: Vec<Constant>,
    pub steps: Vec<Step>,
    /// How many `Temp` values the steps write.
    pub values: usize,
}

/// Names → operands while the program is built.
struct Scope<'a> {
    names: HashMap<String, Operand>,
    renames: &'a HashMap<String, String>,
    input_dtypes: Vec<Option<ElemType>>,
    values: usize,
}

impl Scope<'_> {
    fn resolve<'n>(&'n self, mut name: &'n str) -> &'n str {
        while let Some(to) = self.renames.get(name) {
            name = to;
        }
        name
    }

    /// The operand of node input `i` (`None` when omitted).
    fn operand(&mut self, node: &Node, i: usize) -> Result<Option<Operand>, String> {
        let Some(v) = node.input(i).filter(|v| !v.name.is_empty()) else { return Ok(None) };
        let name = self.resolve(&v.name).to_string();
        let op =
            *self.names.get(&name).ok_or_else(|| format!("value '{}' is neither an input nor a constant", v.name))?;
        if let Operand::Input(k) = op {
            self.input_dtypes[k] = ElemType::from_onnx(v.elem_type);
        }
        Ok(Some(op))
    }

    /// A new value named `name` (with its element type).
    fn define(&mut self, node: &Node, out: usize) -> Result<(usize, ElemType), String> {
        let v = node.output(out).ok_or_else(|| format!("'{}' has no output {out}", node.name))?;
        self.define_value(v, &node.name)
    }

    /// A new value `v`, written by `writer`.
    fn define_value(&mut self, v: &ValueInfo, writer: &str) -> Result<(usize, ElemType), String> {
        let ty = ElemType::from_onnx(v.elem_type)
            .ok_or_else(|| format!("output '{}' of '{writer}' has element type {}", v.name, v.elem_type))?;
        let id = self.values;
        self.values += 1;
        self.names.insert(v.name.clone(), Operand::Temp(id));
        Ok((id, ty))
    }
}

/// Builds the program of a partition from its nodes (topologically ordered), the fused node's
/// input and output names, and the constants the nodes read; attention runs unfused.
pub fn build_program(
    nodes: &[Node],
    inputs: &[String],
    outputs: &[String],
    constants: Vec<Constant>,
) -> Result<Program, String> {
    build_program_with(nodes, inputs, outputs, constants, super::FlashMode::Off)
}

/// [`build_program`], with the exported attention pattern rewritten into the flash kernel when
/// `flash_attention` is set (the `attention=flash` option).
pub fn build_program_with(
    nodes: &[Node],
    inputs: &[String],
    outputs: &[String],
    mut constants: Vec<Constant>,
    flash_attention: super::FlashMode,
) -> Result<Program, String> {
    let mut fusion = fusion::plan(nodes, outputs, flash_attention);
    for node in fusion.rewrites.values() {
        constants.extend(synthesised_constant(node)?);
    }
    // Q, K and V projections of a fused attention → one product.
    let mut packs = packed_proj::find(nodes, outputs, &fusion, &constants);
    packed_proj::apply(&packs, &mut fusion);
    // Bounds on the split f32 kernels' operands, where the constants give them.
    let annotated = super::bounds::annotate(nodes, &mut fusion, &mut packs, &constants);
    let nodes = annotated.as_slice();
    let mut displaced = Vec::new();
    for p in &packs {
        constants.extend([p.weights.clone(), p.bias.clone()]);
        displaced.extend(p.replaced.iter().cloned());
    }
    let packs: HashMap<usize, &Pack> = packs.iter().map(|p| (p.product, p)).collect();
    // Conv → weights and bias with a BatchNormalization folded in.
    let mut folds: HashMap<usize, (String, String)> = HashMap::new();
    for (&p, epilogue) in &fusion.epilogues {
        if let Some(bn) = epilogue.batch_norm {
            let (w, b) = super::fold::fold(&nodes[p], &nodes[bn], &constants)?;
            folds.insert(p, (w.name.clone(), b.name.clone()));
            constants.extend([w, b]);
            displaced.extend((1..3).filter_map(|k| nodes[p].input(k)).map(|v| v.name.clone()));
            displaced.extend((1..5).filter_map(|k| nodes[bn].input(k)).map(|v| v.name.clone()));
        }
    }
    let mut scope =
        Scope { names: HashMap::new(), renames: &fusion.renames, input_dtypes: vec![None; inputs.len()], values: 0 };
    for (i, n) in inputs.iter().enumerate() {
        scope.names.insert(n.clone(), Operand::Input(i));
    }
    for (i, c) in constants.iter().enumerate() {
        scope.names.entry(c.name.clone()).or_insert(Operand::Const(i));
    }
    // Every value is named before any step reads it, so a fused product may read a bias
    // computed after it; `run_order` then sorts the steps.
    let chain_of_root: HashMap<usize, &Vec<usize>> =
        fusion.chains.iter().filter_map(|c| c.last().map(|&r| (r, c))).collect();
    let mut pending = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        if fusion.absorbed.contains(&i) {
            continue;
        }
        let mut outs = match packs.get(&i) {
            Some(p) => vec![scope.define_value(&p.value, &node.name)?],
            None => (0..node.outputs.len())
                .filter(|&k| node.output(k).is_some_and(|o| !o.name.is_empty()))
                .map(|k| scope.define(node, k))
                .collect::<Result<Vec<_>, _>>()?,
        };
        // A folded norm's sum output is made by the product's step.
        if let Some(r) = fusion.epilogues.get(&i).filter(|e| e.norm_sum).and_then(|e| e.norm) {
            if nodes[r].output(3).is_some_and(|o| !o.name.is_empty()) {
                outs.push(scope.define(&nodes[r], 3)?);
            }
        }
        pending.push((i, outs));
    }
    let mut steps = Vec::with_capacity(pending.len());
    for (i, outs) in pending {
        let step = match (chain_of_root.get(&i), packs.get(&i)) {
            (Some(chain), _) => chain_step(nodes, chain, &mut scope, outs)?,
            (None, Some(pack)) => packed_step(&nodes[i], pack, &mut scope, outs)?,
            (None, None) => node_step(nodes, i, (&fusion, &folds), &mut scope, outs)?,
        };
        steps.push(step);
    }
    let outputs = outputs
        .iter()
        .map(|n| {
            scope
                .names
                .get(scope.resolve(n))
                .copied()
                .ok_or_else(|| format!("output '{n}' is not produced by the partition"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let input_dtypes = scope
        .input_dtypes
        .into_iter()
        .zip(inputs)
        .map(|(d, n)| d.ok_or_else(|| format!("input '{n}' is not read by any step")))
        .collect::<Result<Vec<_>, _>>()?;
    let mut program = Program {
        inputs: inputs.to_vec(),
        input_dtypes,
        outputs,
        constants,
        steps: run_order(steps)?,
        values: scope.values,
    };
    drop_unread_constants(&mut program, &displaced);
    Ok(program)
}

/// Removes the constants named in `candidates` that no step reads and no output is (the weights
/// a fold replaced), so they are not uploaded next to their folded copies.
fn drop_unread_constants(program: &mut Program, candidates: &[String]) {
    let read: std::collections::HashSet<usize> = program
        .steps
        .iter()
        .flat_map(Step::operands)
        .chain(program.outputs.iter().copied())
        .filter_map(|o| if let Operand::Const(i) = o { Some(i) } else { None })
        .collect();
    let keep: Vec<bool> =
        program.constants.iter().enumerate().map(|(i, c)| read.contains(&i) || !candidates.contains(&c.name)).collect();
    if keep.iter().all(|&k| k) {
        return;
    }
    // Old index → new index of each kept constant.
    let mut renumber = HashMap::new();
    for (old, _) in keep.iter().enumerate().filter(|(_, &k)| k) {
        renumber.insert(old, renumber.len());
    }
    let remap = |o: &mut Operand| {
        if let Operand::Const(i) = o {
            *i = renumber[i];
        }
    };
    program.steps.iter_mut().flat_map(|s| s.inputs.iter_mut().flatten()).for_each(remap);
    program.outputs.iter_mut().for_each(remap);
    let mut k = keep.into_iter();
    program.constants.retain(|_| k.next().unwrap_or(true));
}

/// The product of a [`Pack`]: X by the packed weights (named after Q's product `node`), with the
/// packed bias.
fn packed_step(
    node: &Node,
    pack: &Pack,
    scope: &mut Scope<'_>,
    outputs: Vec<(usize, ElemType)>,
) -> Result<Step, String> {
    let product = Node {
        name: node.name.clone(),
        op_type: "MatMul".into(),
        domain: String::new(),
        since_version: 13,
        inputs: vec![Some(pack.input.clone())],
        outputs: vec![Some(pack.value.clone())],
        // The bound on X, if any (`graph/bounds.rs`).
        attrs: node
            .attrs
            .iter()
            .filter(|(k, _)| *k == super::bounds::A_BOUND)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        assigned_ep: None,
    };
    let mut kernel = ProductKernel::of(&product, ProductKind::MatMul)?;
    kernel.add_bias();
    let constant = |c: &Constant| {
        scope.names.get(&c.name).copied().ok_or_else(|| format!("the packed constant '{}' is missing", c.name))
    };
    let (w, b) = (constant(&pack.weights)?, constant(&pack.bias)?);
    let inputs = vec![scope.operand(&product, 0)?, Some(w), Some(b)];
    Ok(Step { name: node.name.clone(), ops: "MatMul+Add(Q/K/V)".into(), inputs, outputs, kernel: Arc::new(kernel) })
}

/// The all-ones scale a rewritten norm without γ reads.
fn synthesised_constant(node: &Node) -> Result<Option<Constant>, String> {
    let Some(v) = node.inputs.iter().flatten().find(|v| v.name.starts_with(super::patterns::ONES_PREFIX)) else {
        return Ok(None);
    };
    let shape = v.fixed_shape().ok_or("a synthesised scale needs a known shape")?;
    let ty = ElemType::from_onnx(v.elem_type).ok_or("a synthesised scale of an unsupported type")?;
    let count: u64 = shape.iter().product();
    let one: Vec<u8> = match ty {
        ElemType::F16 => half::f16::ONE.to_le_bytes().to_vec(),
        ElemType::F32 => 1f32.to_le_bytes().to_vec(),
        other => return Err(format!("a synthesised scale of type {other}")),
    };
    let data = one.iter().copied().cycle().take(one.len() * count as usize).collect();
    Ok(Some(Constant { name: v.name.clone(), dtype: ty, shape, data }))
}

/// The step of one node (with what its product absorbed and, for a Conv that absorbed a
/// BatchNormalization, the names of its folded weights and bias).
fn node_step(
    nodes: &[Node],
    i: usize,
    (fusion, folds): (&Fusion, &HashMap<usize, (String, String)>),
    scope: &mut Scope<'_>,
    outputs: Vec<(usize, ElemType)>,
) -> Result<Step, String> {
    let node = fusion.rewrites.get(&i).unwrap_or(&nodes[i]);
    let def = lookup(node).ok_or_else(|| format!("{} '{}' cannot run in a partition", node.op_type, node.name))?;
    let mut ops = node.op_type.clone();
    // A folded norm's output is never made: the step reads the norm's input instead.
    let norm = fusion.epilogues.get(&i).and_then(|e| e.norm);
    let operand = |scope: &mut Scope<'_>, k: usize| match norm {
        Some(r) if k == 0 => scope.operand(&nodes[r], 0),
        _ => scope.operand(node, k),
    };
    let mut inputs = def.gpu_inputs(node).into_iter().map(|k| operand(scope, k)).collect::<Result<Vec<_>, _>>()?;
    if fusion.rewrites.contains_key(&i) {
        // A MatMul that absorbed Transposes of its operands, or a pattern's one op.
        ops = match node.op_type.as_str() {
            "MatMul" => "Transpose+MatMul".to_string(),
            op => format!("{op}(fused)"),
        };
    }
    let kernel: Arc<dyn Kernel> = match fusion.epilogues.get(&i) {
        None => Arc::from(def.build(node)?),
        Some(epilogue) => {
            let activation = epilogue.activation.map(|(a, act)| {
                // The exported SiLU and GELU are recorded by their last Mul.
                let op = nodes[a].op_type.as_str();
                ops.push('+');
                ops.push_str(match act {
                    crate::gemm::Activation::Silu if op == "Mul" => "Sigmoid+Mul",
                    crate::gemm::Activation::Gelu => "Div+Erf+Add+Mul+Mul",
                    _ => op,
                });
                act
            });
            if node.op_type == "MatMulNBits" {
                let mut nbits = NbitsKernel::of(node)?;
                nbits.silu = activation == Some(crate::gemm::Activation::Silu);
                if let (Some(_), Some(u)) = (epilogue.residual, epilogue.up) {
                    // The node's own inputs, an empty gate slot, then the up projection's weights.
                    nbits.up = Some(Box::new(NbitsKernel::of(&nodes[u])?));
                    inputs.resize(UP_B, None);
                    inputs.push(scope.operand(&nodes[u], 1)?);
                    inputs.push(scope.operand(&nodes[u], 2)?);
                    ops.insert_str(0, "MatMulNBits+");
                    ops.push_str("+Mul");
                } else if let Some((mul, k, _)) = epilogue.residual {
                    // The node's own inputs, then the gate.
                    nbits.gate = true;
                    inputs.resize(GATE, None);
                    inputs.push(scope.operand(&nodes[mul], k)?);
                    ops.push_str("+Mul");
                }
                if let Some(r) = epilogue.norm {
                    nbits.norm =
                        Some(fold_norm(nodes, (r, epilogue.norm_sum, NORM_SKIP), scope, &mut inputs, &mut ops)?);
                }
                Arc::new(nbits)
            } else if node.op_type == "Conv" {
                let mut conv = ConvKernel::of(node)?;
                conv.activation = activation.unwrap_or_default();
                let fused = FusedConv { nodes, epilogue, fold: folds.get(&i) };
                fused.apply(&mut conv, scope, &mut inputs, &mut ops)?;
                Arc::new(conv)
            } else {
                let kind = if node.op_type == "Gemm" { ProductKind::Gemm } else { ProductKind::MatMul };
                let mut product = ProductKernel::of(node, kind)?;
                product.activation = activation.unwrap_or_default();
                if let Some((add, k)) = epilogue.add {
                    product.add_bias();
                    inputs.truncate(2);
                    inputs.push(scope.operand(&nodes[add], k)?);
                }
                if let Some((_, factor, after_bias)) = epilogue.scale {
                    product.gemm.alpha *= factor;
                    if after_bias {
                        product.gemm.beta *= factor;
                    }
                }
                let mut fused: Vec<usize> =
                    epilogue.add.map(|a| a.0).into_iter().chain(epilogue.scale.map(|s| s.0)).collect();
                fused.sort_unstable();
                let names: String = fused.iter().map(|&f| format!("+{}", nodes[f].op_type)).collect();
                let at = ops.find(node.op_type.as_str()).map_or(0, |p| p + node.op_type.len());
                ops.insert_str(at, &names);
                let up = epilogue.up.filter(|_| epilogue.residual.is_some());
                if let Some((add, k, _)) = epilogue.residual.filter(|_| up.is_none()) {
                    // A, B, the bias (omitted without one), then the residual.
                    product.residual = true;
                    product.residual_mul = epilogue.residual_mul;
                    inputs.resize(3, None);
                    inputs.push(scope.operand(&nodes[add], k)?);
                    ops.push_str(if epilogue.residual_mul { "+Mul" } else { "+Add" });
                }
                if let Some(r) = epilogue.norm {
                    let at = crate::ops::matmul::NORM_SKIP;
                    product.norm = Some(fold_norm(nodes, (r, epilogue.norm_sum, at), scope, &mut inputs, &mut ops)?);
                }
                if let Some(u) = up {
                    // The up projection's weights after the norm's slots; its gating Mul joined.
                    product.up = true;
                    inputs.resize(crate::ops::matmul::UP_B, None);
                    inputs.push(scope.operand(&nodes[u], 1)?);
                    let at = ops.find("MatMul").unwrap_or(0);
                    ops.insert_str(at, "MatMul+");
                    ops.push_str("+Mul");
                }
                Arc::new(product)
            }
        }
    };
    Ok(Step { name: node.name.clone(), ops, inputs, outputs, kernel })
}

/// Norm `r` folded into a step: its kernel (making the sum where `sum`), its skip and γ read
/// from input `at` on.
fn fold_norm(
    nodes: &[Node],
    (r, sum, at): (usize, bool, usize),
    scope: &mut Scope<'_>,
    inputs: &mut Vec<Option<Operand>>,
    ops: &mut String,
) -> Result<Box<SkipNormKernel>, String> {
    let mut norm = SkipNormKernel::of(&nodes[r], NormKind::Rms)?;
    norm.outputs[3] &= sum;
    inputs.resize(at, None);
    inputs.push(scope.operand(&nodes[r], 1)?);
    inputs.push(scope.operand(&nodes[r], 2)?);
    ops.insert_str(0, "SkipSimplifiedLayerNormalization+");
    Ok(Box::new(norm))
}

/// What a Conv absorbed beyond its activation: a residual Add, a folded BatchNormalization
/// (the names of its new weights and bias).
struct FusedConv<'a> {
    nodes: &'a [Node],
    epilogue: &'a fusion::Epilogue,
    fold: Option<&'a (String, String)>,
}

impl FusedConv<'_> {
    /// Sets them on `conv`, its operands (the residual fourth, the folded constants as W and
    /// B) and the step's op names.
    fn apply(
        &self,
        conv: &mut ConvKernel,
        scope: &mut Scope<'_>,
        inputs: &mut Vec<Option<Operand>>,
        ops: &mut String,
    ) -> Result<(), String> {
        let base = conv_name_len(ops);
        if let Some((_, flat)) = self.epilogue.channels_last {
            conv.channels_last = Some(flat);
            ops.push_str(if flat { "+Reshape+Transpose" } else { "+Transpose" });
        }
        if let Some((add, k, after)) = self.epilogue.residual {
            conv.residual = if after { Residual::AfterActivation } else { Residual::BeforeActivation };
            inputs.resize(3, None); // X, W and B (omitted without a bias), then the residual
            inputs.push(scope.operand(&self.nodes[add], k)?);
            // After the activation's name when it followed it (and after the Transpose).
            let at = if after || conv.channels_last.is_some() { ops.len() } else { base };
            ops.insert_str(at, "+Add");
        }
        if let (Some(bn), Some((w, b))) = (self.epilogue.batch_norm, self.fold) {
            let folded = |name: &str| scope.names.get(name).copied().ok_or("a folded constant is missing");
            if inputs.len() < 3 {
                inputs.resize(3, None);
            }
            inputs[1] = Some(folded(w)?);
            inputs[2] = Some(folded(b)?);
            conv.has_bias = true;
            ops.insert_str(base, &format!("+{}", self.nodes[bn].op_type));
        }
        Ok(())
    }
}

/// The length of the leading op name of a step's `ops` ("Conv" of "Conv+Relu").
fn conv_name_len(ops: &str) -> usize {
    ops.find('+').unwrap_or(ops.len())
}

/// The step of an elementwise chain: its members' IR nodes over the chain's external inputs.
fn chain_step(
    nodes: &[Node],
    chain: &[usize],
    scope: &mut Scope<'_>,
    outputs: Vec<(usize, ElemType)>,
) -> Result<Step, String> {
    let mut external: Vec<(String, Operand, ElemType)> = Vec::new();
    let mut ir: Vec<ElemNode> = Vec::new();
    // The IR node holding each member's value.
    let mut value_of: HashMap<&str, usize> = HashMap::new();
    for &m in chain {
        let node = &nodes[m];
        let own = fusion::elementwise(node).ok_or_else(|| format!("'{}' is not elementwise", node.name))?;
        let base = ir.len();
        for mut n in own {
            for arg in n.args.iter_mut() {
                *arg = match *arg {
                    Arg::Node(j) => Arg::Node(base + j),
                    Arg::Input(k) => {
                        let v = node.input(k).ok_or_else(|| format!("'{}' lacks input {k}", node.name))?;
                        if let Some(&j) = value_of.get(v.name.as_str()) {
                            Arg::Node(j)
                        } else {
                            let slot = match external.iter().position(|(n, ..)| n == &v.name) {
                                Some(p) => p,
                                None => {
                                    let op = scope.operand(node, k)?.ok_or("an elementwise operand is omitted")?;
                                    let ty = ElemType::from_onnx(v.elem_type).ok_or("unsupported element type")?;
                                    external.push((v.name.clone(), op, ty));
                                    external.len() - 1
                                }
                            };
                            Arg::Input(slot)
                        }
                    }
                };
            }
            ir.push(n);
        }
        if let Some(o) = node.output(0) {
            value_of.insert(o.name.as_str(), ir.len() - 1);
        }
    }
    let root = &nodes[*chain.last().ok_or("empty chain")?];
    let types = external.iter().map(|e| e.2).collect();
    let kernel = fused(types, ir)?;
    let ops: Vec<&str> = chain.iter().map(|&m| nodes[m].op_type.as_str()).collect();
    Ok(Step {
        name: root.name.clone(),
        ops: ops.join("+"),
        inputs: external.into_iter().map(|e| Some(e.1)).collect(),
        outputs,
        kernel: Arc::from(kernel),
    })
}

/// Orders steps so each runs after the values it reads. Nodes arrive in topological order, but
/// a fused Add makes its product read the Add's other operand, which may be computed after the
/// product (`MatMul(z, W1) + MatMul(z, W2)`); the product's result has no other reader, so
/// running it later is safe. Keeps the given order where it can.
fn run_order(steps: Vec<Step>) -> Result<Vec<Step>, String> {
    let writer: HashMap<usize, usize> =
        steps.iter().enumerate().flat_map(|(s, step)| step.outputs.iter().map(move |&(v, _)| (v, s))).collect();
    let deps: Vec<Vec<usize>> = steps
        .iter()
        .map(|s| {
            s.operands()
                .into_iter()
                .filter_map(|o| if let Operand::Temp(v) = o { writer.get(&v).copied() } else { None })
                .collect()
        })
        .collect();
    let n = steps.len();
    let mut placed = vec![false; n];
    let mut order = Vec::with_capacity(n);
    while order.len() < n {
        let next = (0..n)
            .find(|&i| !placed[i] && deps[i].iter().all(|&d| placed[d]))
            .ok_or("the partition's steps depend on each other in a cycle")?;
        placed[next] = true;
        order.push(next);
    }
    let mut slots: Vec<Option<Step>> = steps.into_iter().map(Some).collect();
    order.into_iter().map(|i| slots[i].take().ok_or_else(|| "a step was ordered twice".to_string())).collect()
}
