//! Which nodes we claim and how they are grouped into partitions.
//!
//! Claimed nodes are MatMul/Gemm, an Add/Relu/Clip that directly follows one (fused into its
//! store; an activation may also follow through Reshapes), and Reshapes with a constant shape
//! that touch a claimed node (free on the GPU). Groups must be convex for ONNX Runtime — no
//! path may leave a group and come back, through an unclaimed node or another group — or ORT
//! rejects the whole capability. Nodes are visited in topological order; for each node we track
//! the groups that reach it through a node outside them, and a node only joins a neighbouring
//! group that is not among them.

use std::collections::{BTreeSet, HashMap};

use super::model::Graph;
use super::offload::worth_offloading;
use super::reshape::ReshapeSpec;
use super::support::{
    check_bias_shape, check_compute, clip_bounds, common_dtype, ComputeOp, EpilogueOp, PlacementOptions,
};

/// Why a node is ours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Compute(ComputeOp),
    /// Fused into the store of compute node `producer`.
    Epilogue {
        op: EpilogueOp,
        producer: usize,
    },
    /// A Reshape: the same GPU buffer under a new shape.
    Reshape,
}

/// The verdict on one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub node: usize,
    pub verdict: Result<Role, String>,
}

/// Every node's verdict (in topological order) and the claimed groups.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Placement {
    pub decisions: Vec<Decision>,
    /// Node indices of each partition, in topological order.
    pub groups: Vec<Vec<usize>>,
}

impl Placement {
    pub fn claimed(&self) -> usize {
        self.decisions.iter().filter(|d| d.verdict.is_ok()).count()
    }

    pub fn declined(&self) -> impl Iterator<Item = (usize, &str)> {
        self.decisions.iter().filter_map(|d| d.verdict.as_ref().err().map(|e| (d.node, e.as_str())))
    }
}

/// The compute node a value's (fused) result belongs to, and whether a Reshape lies between.
#[derive(Clone, Copy, Debug)]
struct Tail {
    producer: usize,
    reshaped: bool,
}

/// Epilogue slots already used on a compute node: the bias must come before the activation.
#[derive(Clone, Copy, Debug, Default)]
struct EpilogueState {
    bias: bool,
    activation: bool,
}

/// Places every node of `graph`.
pub fn place(graph: &Graph, opts: &PlacementOptions) -> Placement {
    let order = graph.topological_order();
    let producers = graph.producers();
    let consumers = graph.consumers();
    let mut group_of: HashMap<usize, usize> = HashMap::new();
    let mut reach_bad: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); graph.nodes.len()];
    let mut groups: Vec<Vec<usize>> = Vec::new();
    // The value a compute node's (possibly fused) result currently lives in → that node.
    let mut tail_of: HashMap<String, Tail> = HashMap::new();
    // Compute nodes are judged on their own first, so a Reshape can see whether it feeds one.
    let compute_ok: HashMap<usize, bool> = graph
        .nodes
        .iter()
        .enumerate()
        .filter_map(|(i, n)| ComputeOp::of(n).map(|op| (i, check_compute(n, op, opts).is_ok())))
        .collect();
    let mut state: HashMap<usize, EpilogueState> = HashMap::new();
    let mut decisions = Vec::with_capacity(graph.nodes.len());

    for &i in &order {
        let node = &graph.nodes[i];
        let parents: BTreeSet<usize> =
            node.inputs.iter().flatten().filter_map(|v| producers.get(v.name.as_str()).copied()).collect();
        let bad: BTreeSet<usize> = parents.iter().flat_map(|&p| reach_bad[p].iter().copied()).collect();
        let single_use = |name: &str| consumers.get(name).map_or(0, Vec::len) == 1 && !graph.outputs.contains(name);

        let verdict = if let Some(op) = ComputeOp::of(node) {
            check_compute(node, op, opts).map(|()| Role::Compute(op))
        } else if let Some(op) = EpilogueOp::of(node) {
            epilogue_role(graph, i, op, opts, &tail_of, &state, &single_use)
        } else if node.is_onnx() && node.op_type == "Reshape" {
            let touches_ours = parents.iter().any(|p| group_of.contains_key(p))
                || node
                    .output(0)
                    .and_then(|o| consumers.get(o.name.as_str()))
                    .is_some_and(|cs| cs.iter().any(|c| compute_ok.get(c).copied().unwrap_or(false)));
            reshape_role(node, opts, touches_ours)
        } else {
            Err(format!("{} is not an op this EP runs", node.op_type))
        };

        let verdict = verdict.and_then(|role| {
            let group = match role {
                Role::Epilogue { producer, .. } => {
                    let g = group_of[&producer];
                    if bad.contains(&g) {
                        return Err("fusing it would make the partition non-convex".into());
                    }
                    g
                }
                Role::Compute(_) | Role::Reshape => {
                    let joinable = parents.iter().filter_map(|p| group_of.get(p)).find(|g| !bad.contains(g));
                    match joinable {
                        Some(&g) => g,
                        None => {
                            groups.push(Vec::new());
                            groups.len() - 1
                        }
                    }
                }
            };
            group_of.insert(i, group);
            groups[group].push(i);
            Ok(role)
        });

        match &verdict {
            Ok(Role::Compute(_)) => {
                if let Some(out) = node.output(0) {
                    tail_of.insert(out.name.clone(), Tail { producer: i, reshaped: false });
                }
                // Gemm's C already fills the bias slot; a Conv's bias is per channel (its own input).
                let has_c = matches!(verdict, Ok(Role::Compute(ComputeOp::Gemm))) && node.input(2).is_some()
                    || matches!(verdict, Ok(Role::Compute(ComputeOp::Conv)));
                state.insert(i, EpilogueState { bias: has_c, activation: false });
            }
            Ok(Role::Epilogue { op, producer }) => {
                let st = state.entry(*producer).or_default();
                match op {
                    EpilogueOp::Add => st.bias = true,
                    EpilogueOp::Relu | EpilogueOp::Clip => st.activation = true,
                }
                if let Some(out) = node.output(0) {
                    let reshaped =
                        node.inputs.iter().flatten().any(|v| tail_of.get(&v.name).is_some_and(|t| t.reshaped));
                    tail_of.insert(out.name.clone(), Tail { producer: *producer, reshaped });
                }
            }
            Ok(Role::Reshape) => {
                // An activation may still fuse into the product through this Reshape.
                let input = node.input(0).map(|v| v.name.as_str()).unwrap_or_default();
                if let (Some(t), Some(out)) = (tail_of.get(input).copied(), node.output(0)) {
                    if single_use(input) {
                        tail_of.insert(out.name.clone(), Tail { producer: t.producer, reshaped: true });
                    }
                }
            }
            Err(_) => {}
        }
        // A group whose node feeds this one from outside the group (this node is unclaimed, or
        // in another partition) must not be re-entered after it: that path would leave the
        // group and come back.
        let own = group_of.get(&i).copied();
        let mut reach = bad;
        reach.extend(parents.iter().filter_map(|p| group_of.get(p).copied()).filter(|&g| Some(g) != own));
        reach_bad[i] = reach;
        decisions.push(Decision { node: i, verdict });
    }
    groups.retain(|g| !g.is_empty());
    // Leave partitions whose host traffic outweighs their work to the CPU EP. Dropping a whole
    // group keeps the others convex: paths through another partition were already excluded.
    groups.retain(|group| match worth_offloading(graph, &consumers, group, &opts.caps) {
        Ok(()) => true,
        Err(reason) => {
            for d in decisions.iter_mut().filter(|d| group.contains(&d.node)) {
                d.verdict = Err(reason.clone());
            }
            false
        }
    });
    Placement { decisions, groups }
}

fn reshape_role(node: &super::model::Node, opts: &PlacementOptions, touches_ours: bool) -> Result<Role, String> {
    if !touches_ours {
        return Err("Reshape not next to a node this EP runs".into());
    }
    let data = node.input(0).ok_or("Reshape without data")?;
    common_dtype(node, &[data], opts)?;
    ReshapeSpec::of(node)?;
    Ok(Role::Reshape)
}

fn epilogue_role(
    graph: &Graph,
    i: usize,
    op: EpilogueOp,
    opts: &PlacementOptions,
    tail_of: &HashMap<String, Tail>,
    state: &HashMap<usize, EpilogueState>,
    single_use: &dyn Fn(&str) -> bool,
) -> Result<Role, String> {
    let node = &graph.nodes[i];
    let not_fusable = || format!("{} not directly after a MatMul/Gemm/Conv this EP runs", node.op_type);
    let inputs: Vec<_> = node.inputs.iter().flatten().filter(|v| !v.name.is_empty()).collect();
    let (tail_index, Tail { producer, reshaped }) =
        inputs.iter().enumerate().find_map(|(k, v)| tail_of.get(&v.name).map(|&t| (k, t))).ok_or_else(not_fusable)?;
    let tail = inputs[tail_index];
    if !single_use(&tail.name) {
        return Err(format!("'{}' has other consumers, so it cannot be fused", tail.name));
    }
    let st = state.get(&producer).copied().unwrap_or_default();
    match op {
        EpilogueOp::Relu | EpilogueOp::Clip => {
            if st.activation {
                return Err("the product already has a fused activation".into());
            }
            common_dtype(node, &[tail], opts)?;
            if op == EpilogueOp::Clip {
                clip_bounds(node)?;
            }
        }
        EpilogueOp::Add => {
            if st.bias || st.activation {
                return Err("the product already has a fused bias or activation".into());
            }
            if reshaped {
                return Err("an Add after a Reshape of the product is not fused".into());
            }
            if inputs.len() != 2 || inputs[0].name == inputs[1].name {
                return Err(not_fusable());
            }
            let bias = inputs[1 - tail_index];
            common_dtype(node, &[tail, bias], opts)?;
            let product = &graph.nodes[producer];
            // A 1-D MatMul operand drops an output dimension, so the bias could not be laid out
            // over [batch…, M, N]; require both ranks known and ≥ 2.
            if ComputeOp::of(product) == Some(ComputeOp::MatMul)
                && (0..2).any(|k| product.input(k).and_then(|v| v.rank()).is_none_or(|r| r < 2))
            {
                return Err("Add after a MatMul with a 1-D or unknown-rank operand is not fused".into());
            }
            let out = product.output(0);
            check_bias_shape(bias, out.and_then(|o| o.fixed_shape()).as_deref(), out.and_then(|o| o.rank()))?;
        }
    }
    Ok(Role::Epilogue { op, producer })
}
