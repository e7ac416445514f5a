//! `--shape` overrides and shape propagation. A graph input's symbolic dims take the given
//! sizes (and so does every other value using the same symbol); then each registered op's own
//! `Kernel::infer` — the function the executor runs — fills in the outputs the file leaves
//! symbolic, in topological order. Values no registered op produces keep what the file says.

use std::collections::HashMap;

use ep_kernels::graph::support::check_declared_sizes;
use ep_kernels::graph::{Dim, Graph, ValueInfo};
use ep_kernels::ops::lookup;

use crate::reader::Model;

/// A `--shape` argument: an input name (or a symbolic dim's name) and its sizes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShapeArg {
    pub name: String,
    pub dims: Vec<u64>,
}

impl std::str::FromStr for ShapeArg {
    type Err = String;

    /// `NAME=2,80,3000` (or `NAME=2x80x3000`); a symbol takes one size: `batch=2`.
    fn from_str(s: &str) -> Result<ShapeArg, String> {
        let (name, dims) = s.split_once('=').ok_or_else(|| format!("--shape '{s}' is not NAME=dims"))?;
        let dims = dims
            .split([',', 'x'])
            .map(|d| d.trim().parse::<u64>().map_err(|_| format!("--shape '{s}': '{d}' is not a size")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ShapeArg { name: name.trim().to_string(), dims })
    }
}

/// Applies the overrides to `model`, then propagates shapes through registered ops.
pub fn apply(model: &mut Model, args: &[ShapeArg]) -> Result<(), String> {
    let mut symbols: HashMap<String, u64> = HashMap::new();
    let mut inputs: HashMap<String, Vec<u64>> = HashMap::new();
    for a in args {
        match model.inputs.iter().find(|v| v.name == a.name) {
            Some(v) => {
                bind_input(v, &a.dims, &mut symbols)?;
                inputs.insert(a.name.clone(), a.dims.clone());
            }
            None if a.dims.len() == 1 && uses_symbol(model, &a.name) => drop(symbols.insert(a.name.clone(), a.dims[0])),
            None => return Err(format!("--shape {}: no graph input (or symbolic dim) has that name", a.name)),
        }
    }
    let fix = |v: &mut ValueInfo| {
        if let Some(dims) = inputs.get(&v.name) {
            v.shape = Some(dims.iter().map(|&d| Dim::Fixed(d)).collect());
        } else if let Some(shape) = v.shape.as_mut() {
            for d in shape.iter_mut() {
                if let Dim::Symbolic(s) = d {
                    if let Some(&n) = symbols.get(s.as_str()) {
                        *d = Dim::Fixed(n);
                    }
                }
            }
        }
    };
    model.inputs.iter_mut().for_each(fix);
    all_values(&mut model.graph).for_each(fix);
    propagate(&mut model.graph);
    Ok(())
}

fn bind_input(v: &ValueInfo, dims: &[u64], symbols: &mut HashMap<String, u64>) -> Result<(), String> {
    let Some(declared) = &v.shape else { return Ok(()) };
    if declared.len() != dims.len() {
        return Err(format!("--shape {}: {} dims given, the input has rank {}", v.name, dims.len(), declared.len()));
    }
    for (d, &n) in declared.iter().zip(dims) {
        match d {
            Dim::Fixed(f) if *f != n => {
                return Err(format!("--shape {}: the model fixes a dim to {f}, {n} given", v.name));
            }
            Dim::Symbolic(s) if !s.is_empty() => {
                if let Some(old) = symbols.insert(s.clone(), n).filter(|&old| old != n) {
                    return Err(format!("--shape {}: symbol '{s}' is already {old}, {n} given", v.name));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn uses_symbol(model: &Model, symbol: &str) -> bool {
    let values = model.graph.nodes.iter().flat_map(|n| n.inputs.iter().chain(&n.outputs).flatten());
    model.inputs.iter().chain(values).any(|v| v.shape.iter().flatten().any(|d| *d == Dim::Symbolic(symbol.into())))
}

fn all_values(graph: &mut Graph) -> impl Iterator<Item = &mut ValueInfo> {
    graph.nodes.iter_mut().flat_map(|n| n.inputs.iter_mut().chain(n.outputs.iter_mut()).flatten())
}

/// Fills in output shapes with each registered op's `Kernel::infer`, in topological order.
fn propagate(graph: &mut Graph) {
    let mut known: HashMap<String, Vec<u64>> = HashMap::new();
    for i in graph.topological_order() {
        let node = &mut graph.nodes[i];
        for v in node.inputs.iter_mut().flatten() {
            if let (None, Some(s)) = (v.fixed_shape(), known.get(&v.name)) {
                v.shape = Some(s.iter().map(|&d| Dim::Fixed(d)).collect());
            }
        }
        if node.outputs.iter().flatten().all(|o| o.fixed_shape().is_some()) {
            continue;
        }
        let Some(outs) = infer(node) else { continue };
        for (o, shape) in node.outputs.iter_mut().zip(outs) {
            if let Some(o) = o.as_mut().filter(|o| o.fixed_shape().is_none() && !o.name.is_empty()) {
                o.shape = Some(shape.iter().map(|&d| Dim::Fixed(d)).collect());
                known.insert(o.name.clone(), shape);
            }
        }
    }
}

/// The output shapes the op's kernel infers from the node's known input shapes.
fn infer(node: &ep_kernels::graph::Node) -> Option<Vec<Vec<u64>>> {
    let def = lookup(node)?;
    check_declared_sizes(node).ok()?;
    let shapes: Vec<Option<Vec<u64>>> = def
        .gpu_inputs(node)
        .into_iter()
        .map(|k| match node.input(k).filter(|v| !v.name.is_empty()) {
            None => Some(None),
            Some(v) => v.fixed_shape().map(Some),
        })
        .collect::<Option<_>>()?;
    let kernel = def.build(node).ok()?;
    let refs: Vec<Option<&[u64]>> = shapes.iter().map(|s| s.as_deref()).collect();
    kernel.infer(&refs).ok()
}
