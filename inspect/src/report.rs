//! What the EP would do with a model: the EP's own `graph::place` over the graph, then for
//! each partition the EP's `graph::build_program`, each step's `Kernel::infer` in run order
//! (as the executor does) and its `Kernel::plan` (what `prepare` would choose).

use std::collections::{BTreeSet, HashMap, HashSet};

use ep_kernels::graph::support::check_declared_sizes;
use ep_kernels::graph::{build_program_with, place, Constant, DeclineKind, Graph, Operand, Program, Role};
use ep_kernels::ops::{lookup, StepPlan};
use ep_kernels::options::EpOptions;
use ep_kernels::{DeviceCaps, ElemType};

use crate::reader::Model;
use crate::tensor::elem_size;

/// The verdict on one node.
#[derive(Clone, Debug)]
pub struct NodeReport {
    pub name: String,
    pub op: String,
    /// `Ok((partition, role))` or `Err((kind, reason))`.
    pub verdict: Result<(usize, Role), (DeclineKind, String)>,
    pub flops: Option<f64>,
    /// Bytes of its inputs and outputs, when every shape is known.
    pub bytes: Option<u64>,
}

/// One step of a partition's program.
#[derive(Clone, Debug)]
pub struct StepReport {
    pub name: String,
    pub ops: String,
    pub inputs: Vec<Option<Vec<u64>>>,
    pub outputs: Vec<Option<Vec<u64>>>,
    pub bytes: Option<u64>,
    /// The planner's choice (`Ok(None)`: no planner choice; `Err`: the run would fail).
    pub plan: Result<Option<StepPlan>, String>,
}

/// One partition (one fused node in ORT).
#[derive(Clone, Debug)]
pub struct PartitionReport {
    pub nodes: Vec<usize>,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    pub flops: Option<f64>,
    /// The program's steps, or why `build_program` (the EP's Compile) fails.
    pub steps: Result<Vec<StepReport>, String>,
}

/// The whole answer.
#[derive(Clone, Debug)]
pub struct Report {
    pub nodes: Vec<NodeReport>,
    pub partitions: Vec<PartitionReport>,
    /// Graph inputs with a dim that is still symbolic: `(input, dims as written)`.
    pub symbolic: Vec<(String, String)>,
}

impl Report {
    pub fn claimed(&self) -> usize {
        self.nodes.iter().filter(|n| n.verdict.is_ok()).count()
    }
}

/// Runs placement and program building for `model` on `caps` with `options`.
pub fn inspect(model: &Model, options: &EpOptions, caps: &DeviceCaps) -> Report {
    let graph = &model.graph;
    let placement = place(graph, &options.placement_options(caps.clone()));
    let mut verdicts: Vec<Result<(usize, Role), (DeclineKind, String)>> =
        vec![Err((DeclineKind::NotOurs, String::new())); graph.nodes.len()];
    let group_of: HashMap<usize, usize> =
        placement.groups.iter().enumerate().flat_map(|(p, g)| g.iter().map(move |&i| (i, p))).collect();
    for d in &placement.decisions {
        verdicts[d.node] = match (&d.verdict, group_of.get(&d.node)) {
            (Ok(role), Some(&p)) => Ok((p, *role)),
            (Ok(_), None) => Err((DeclineKind::Unsupported, "claimed but in no partition".into())),
            (Err(reason), _) => Err((d.kind.unwrap_or(DeclineKind::Unsupported), reason.clone())),
        };
    }
    let nodes = graph
        .nodes
        .iter()
        .zip(verdicts)
        .map(|(n, verdict)| NodeReport {
            name: n.name.clone(),
            op: if n.is_onnx() { n.op_type.clone() } else { format!("{}.{}", n.domain, n.op_type) },
            verdict,
            flops: lookup(n).filter(|_| check_declared_sizes(n).is_ok()).and_then(|d| d.flops(n)),
            bytes: checked_sum(
                n.inputs.iter().chain(&n.outputs).flatten().filter(|v| !v.name.is_empty()).map(value_bytes),
            ),
        })
        .collect();
    let exec = options.exec_options();
    let flash = options.flash_mode(caps);
    let partitions = placement.groups.iter().map(|g| partition(model, g, caps, &exec, flash)).collect();
    Report { nodes, partitions, symbolic: symbolic_inputs(model) }
}

fn value_bytes(v: &ep_kernels::graph::ValueInfo) -> Option<u64> {
    let elems = v.fixed_shape()?.iter().try_fold(1u64, |a, &d| a.checked_mul(d))?;
    elems.checked_mul(elem_size(v.elem_type)?)
}

/// The sum when every term is known and it fits (a file may declare absurd sizes).
fn checked_sum(mut terms: impl Iterator<Item = Option<u64>>) -> Option<u64> {
    terms.try_fold(0u64, |acc, t| acc.checked_add(t?))
}

fn symbolic_inputs(model: &Model) -> Vec<(String, String)> {
    let show = |d: &ep_kernels::graph::Dim| match d {
        ep_kernels::graph::Dim::Fixed(n) => n.to_string(),
        ep_kernels::graph::Dim::Symbolic(s) if s.is_empty() => "?".into(),
        ep_kernels::graph::Dim::Symbolic(s) => s.clone(),
    };
    model
        .inputs
        .iter()
        .filter_map(|v| {
            let shape = v.shape.as_ref()?;
            v.fixed_shape().is_none().then(|| (v.name.clone(), shape.iter().map(show).collect::<Vec<_>>().join(", ")))
        })
        .collect()
}

/// The fused node's inputs (non-constant values read from outside), outputs (values read
/// outside or leaving the graph) and constants, as ORT hands them to Compile.
fn boundary(graph: &Graph, group: &[usize]) -> (Vec<String>, Vec<String>, Vec<Constant>) {
    let members: HashSet<usize> = group.iter().copied().collect();
    let produced: HashSet<&str> =
        group.iter().flat_map(|&i| graph.nodes[i].outputs.iter().flatten().map(|o| o.name.as_str())).collect();
    let consumers = graph.consumers();
    let (mut inputs, mut outputs, mut constants) = (Vec::new(), Vec::new(), Vec::new());
    let mut seen = BTreeSet::new();
    for &i in group {
        for v in graph.nodes[i].inputs.iter().flatten().filter(|v| !v.name.is_empty()) {
            if produced.contains(v.name.as_str()) || !seen.insert(v.name.clone()) {
                continue;
            }
            match (v.constant, ElemType::from_onnx(v.elem_type), v.fixed_shape()) {
                (true, Some(dtype), Some(shape)) => {
                    let data = v.small_data.clone().unwrap_or_default();
                    constants.push(Constant { name: v.name.clone(), dtype, shape, data });
                }
                (true, ..) => {}
                _ => inputs.push(v.name.clone()),
            }
        }
        for o in graph.nodes[i].outputs.iter().flatten().filter(|o| !o.name.is_empty()) {
            let read_outside = consumers.get(o.name.as_str()).is_some_and(|c| c.iter().any(|j| !members.contains(j)));
            if graph.outputs.contains(&o.name) || read_outside {
                outputs.push(o.name.clone());
            }
        }
    }
    (inputs, outputs, constants)
}

fn partition(
    model: &Model,
    group: &[usize],
    caps: &DeviceCaps,
    exec: &ep_kernels::graph::ExecOptions,
    flash_attention: ep_kernels::graph::FlashMode,
) -> PartitionReport {
    let graph = &model.graph;
    let (inputs, outputs, constants) = boundary(graph, group);
    let flops = group.iter().map(|&i| lookup(&graph.nodes[i]).map_or(Some(0.0), |d| d.flops(&graph.nodes[i]))).sum();
    let nodes: Vec<_> = group.iter().map(|&i| graph.nodes[i].clone()).collect();
    let steps = build_program_with(&nodes, &inputs, &outputs, constants, flash_attention).map(|program| {
        let input_shapes: Vec<Option<Vec<u64>>> = inputs.iter().map(|n| shape_of(graph, n)).collect();
        steps(&program, &input_shapes, caps, exec)
    });
    PartitionReport { nodes: group.to_vec(), inputs, outputs, flops, steps }
}

fn shape_of(graph: &Graph, name: &str) -> Option<Vec<u64>> {
    graph.nodes.iter().flat_map(|n| n.inputs.iter().flatten()).find(|v| v.name == name)?.fixed_shape()
}

/// A value's shape and element type.
type Typed = (Vec<u64>, ElemType);

/// Each step's shapes (inferred in run order, as the executor does) and plan.
fn steps(
    program: &Program,
    input_shapes: &[Option<Vec<u64>>],
    caps: &DeviceCaps,
    exec: &ep_kernels::graph::ExecOptions,
) -> Vec<StepReport> {
    let mut temps: HashMap<usize, Typed> = HashMap::new();
    let typed = |o: Operand, temps: &HashMap<usize, Typed>| -> Option<Typed> {
        match o {
            Operand::Input(i) => Some((input_shapes.get(i)?.clone()?, *program.input_dtypes.get(i)?)),
            Operand::Const(i) => program.constants.get(i).map(|c| (c.shape.clone(), c.dtype)),
            Operand::Temp(v) => temps.get(&v).cloned(),
        }
    };
    let mut out = Vec::with_capacity(program.steps.len());
    for step in &program.steps {
        // Per input: `None` omitted, `Some(None)` shape unknown.
        let ins: Vec<Option<Option<Typed>>> = step.inputs.iter().map(|o| o.map(|o| typed(o, &temps))).collect();
        let known: Option<Vec<Option<&[u64]>>> =
            ins.iter().map(|i| i.as_ref().map_or(Some(None), |t| t.as_ref().map(|t| Some(t.0.as_slice())))).collect();
        let (outputs, plan) = match known {
            None => (vec![None; step.outputs.len()], Ok(None)),
            Some(shapes) => match step.kernel.infer(&shapes) {
                Err(e) => (vec![None; step.outputs.len()], Err(e)),
                Ok(outs) => {
                    for (shape, &(v, ty)) in outs.iter().zip(&step.outputs) {
                        temps.insert(v, (shape.clone(), ty));
                    }
                    (outs.into_iter().map(Some).collect(), step.kernel.plan(&shapes, caps, exec))
                }
            },
        };
        let sizes = ins
            .iter()
            .flatten()
            .map(|t| t.as_ref().and_then(|(s, ty)| bytes(s, *ty)))
            .chain(outputs.iter().zip(&step.outputs).map(|(s, &(_, ty))| bytes(s.as_ref()?, ty)));
        out.push(StepReport {
            name: step.name.clone(),
            ops: step.ops.clone(),
            inputs: ins.iter().map(|i| i.as_ref().and_then(|t| t.as_ref().map(|t| t.0.clone()))).collect(),
            bytes: checked_sum(sizes),
            outputs,
            plan,
        });
    }
    out
}

fn bytes(shape: &[u64], ty: ElemType) -> Option<u64> {
    shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d))?.checked_mul(elem_size(ty.onnx())?)
}
