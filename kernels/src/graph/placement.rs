//! Which nodes we claim and how they are grouped into partitions.
//!
//! A node is ours when its op is in the registry (`crate::ops`) and the op's own check passes
//! (element types, attributes, known shapes). Groups must be convex for ONNX Runtime — no path
//! may leave a group and come back, through an unclaimed node or another group — or ORT rejects
//! the whole capability. Nodes are visited in topological order; for each node we track the
//! groups that reach it through a node outside them, and a node only joins a neighbouring group
//! that is not among them. Fusion happens later, inside a partition (`super::fusion`).

use std::collections::{BTreeSet, HashMap};

use super::model::Graph;
use super::offload::worth_offloading;
use super::support::{check_declared_sizes, PlacementOptions};
use crate::ops::lookup;

/// Why a node is ours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A step with GPU work.
    Kernel,
    /// The same GPU buffer under a new shape (Reshape and friends).
    Alias,
}

/// Why a node is not ours, which decides how loudly it is logged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeclineKind {
    /// The op is not in the registry (another provider runs it, as expected).
    NotOurs,
    /// A registered op whose attributes, types or shapes this EP or device cannot run; the
    /// user may act on it (an option, a dtype, an opset).
    Unsupported,
    /// A deliberate cost decision: the CPU EP is faster for this partition.
    Cost,
}

/// The verdict on one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub node: usize,
    pub verdict: Result<Role, String>,
    /// Set when the verdict is a decline.
    pub kind: Option<DeclineKind>,
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

    /// Declines with their kind.
    pub fn declines(&self) -> impl Iterator<Item = (usize, &str, DeclineKind)> {
        self.decisions.iter().filter_map(|d| {
            d.verdict.as_ref().err().map(|e| (d.node, e.as_str(), d.kind.unwrap_or(DeclineKind::Unsupported)))
        })
    }
}

/// Greedy grouping starts a new group at every node none of whose parents is claimed (each
/// branch of inputs and constants), so a model splits into partitions that exchange tensors
/// through host memory. Each connected component of claimed nodes becomes one group when it is
/// convex (no path leaves it and comes back); a component that is not keeps its greedy groups.
fn merge_convex_components(graph: &Graph, order: &[usize], groups: Vec<Vec<usize>>) -> Vec<Vec<usize>> {
    let n = graph.nodes.len();
    let mut group_of = vec![usize::MAX; n];
    for (g, members) in groups.iter().enumerate() {
        for &i in members {
            group_of[i] = g;
        }
    }
    let producers = graph.producers();
    let consumers = graph.consumers();
    let children = |i: usize| -> Vec<usize> {
        graph.nodes[i]
            .outputs
            .iter()
            .flatten()
            .filter_map(|o| consumers.get(o.name.as_str()))
            .flatten()
            .copied()
            .collect()
    };
    let parents = |i: usize| -> Vec<usize> {
        graph.nodes[i].inputs.iter().flatten().filter_map(|v| producers.get(v.name.as_str()).copied()).collect()
    };
    // Connected components of claimed nodes over direct edges.
    let mut component = vec![usize::MAX; n];
    let mut components: Vec<Vec<usize>> = Vec::new();
    for &start in order {
        if group_of[start] == usize::MAX || component[start] != usize::MAX {
            continue;
        }
        let id = components.len();
        let mut stack = vec![start];
        let mut members = Vec::new();
        component[start] = id;
        while let Some(i) = stack.pop() {
            members.push(i);
            for j in children(i).into_iter().chain(parents(i)) {
                if group_of[j] != usize::MAX && component[j] == usize::MAX {
                    component[j] = id;
                    stack.push(j);
                }
            }
        }
        components.push(members);
    }
    let position: Vec<usize> = {
        let mut p = vec![0; n];
        for (k, &i) in order.iter().enumerate() {
            p[i] = k;
        }
        p
    };
    let mut out = Vec::new();
    let mut kept_greedy: BTreeSet<usize> = BTreeSet::new();
    for members in components {
        if is_convex(&members, &component, &children) {
            let mut g = members;
            g.sort_by_key(|&i| position[i]);
            out.push(g);
        } else {
            kept_greedy.extend(members.iter().map(|&i| group_of[i]));
        }
    }
    out.extend(kept_greedy.into_iter().map(|g| groups[g].clone()));
    out
}

/// Whether no path leaves `members` and comes back (`component` labels them all alike).
fn is_convex(members: &[usize], component: &[usize], children: &dyn Fn(usize) -> Vec<usize>) -> bool {
    let Some(&first) = members.first() else { return true };
    let id = component[first];
    let inside = |i: usize| component[i] == id;
    let mut seen = vec![false; component.len()];
    let mut stack: Vec<usize> = members.iter().flat_map(|&m| children(m)).filter(|&c| !inside(c)).collect();
    while let Some(i) = stack.pop() {
        if std::mem::replace(&mut seen[i], true) {
            continue;
        }
        for c in children(i) {
            if inside(c) {
                return false;
            }
            stack.push(c);
        }
    }
    true
}

/// The registry's verdict on one node.
fn judge(node: &super::model::Node, opts: &PlacementOptions) -> Result<Role, (String, DeclineKind)> {
    if let Some(ep) = &node.assigned_ep {
        return Err((format!("already assigned to {ep}"), DeclineKind::NotOurs));
    }
    let Some(def) = lookup(node) else {
        let domain = if node.is_onnx() { String::new() } else { format!("{}.", node.domain) };
        return Err((format!("{domain}{} is not an op this EP runs", node.op_type), DeclineKind::NotOurs));
    };
    check_declared_sizes(node).and_then(|()| def.check(node, opts)).map_err(|e| (e, DeclineKind::Unsupported))?;
    Ok(if def.is_alias() { Role::Alias } else { Role::Kernel })
}

/// Nodes that compute a small integer input some op wants computed on the CPU
/// (`OpDef::host_inputs`: `GroupQueryAttention`'s `seqlens_k` and `total_sequence_length`), with
/// the reason: the value's producer and, through integer inputs, the integer arithmetic before it.
fn host_side(graph: &Graph, producers: &HashMap<&str, usize>) -> HashMap<usize, String> {
    let mut out = HashMap::new();
    for node in &graph.nodes {
        let Some(def) = lookup(node) else { continue };
        let mut stack: Vec<&str> =
            def.host_inputs(node).into_iter().filter_map(|k| node.input(k)).map(|v| v.name.as_str()).collect();
        while let Some(name) = stack.pop() {
            let Some(&p) = producers.get(name) else { continue };
            if out.contains_key(&p) {
                continue;
            }
            out.insert(
                p,
                format!(
                    "its output '{name}' feeds {} '{}' as a small integer computed on the CPU (such values size \
                     outputs, or come from inputs that grow every decode step)",
                    node.op_type, node.name
                ),
            );
            let integer = |v: &&super::model::ValueInfo| matches!(crate::dtype::ElemType::from_onnx(v.elem_type), Some(t) if !t.is_float());
            stack.extend(graph.nodes[p].inputs.iter().flatten().filter(integer).map(|v| v.name.as_str()));
        }
    }
    out
}

/// Places every node of `graph`.
pub fn place(graph: &Graph, opts: &PlacementOptions) -> Placement {
    let order = graph.topological_order();
    let producers = graph.producers();
    let consumers = graph.consumers();
    let host = host_side(graph, &producers);
    let mut group_of: HashMap<usize, usize> = HashMap::new();
    let mut reach_bad: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); graph.nodes.len()];
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut decisions = Vec::with_capacity(graph.nodes.len());

    for &i in &order {
        let node = &graph.nodes[i];
        let parents: BTreeSet<usize> =
            node.inputs.iter().flatten().filter_map(|v| producers.get(v.name.as_str()).copied()).collect();
        let bad: BTreeSet<usize> = parents.iter().flat_map(|&p| reach_bad[p].iter().copied()).collect();
        let judged = match host.get(&i) {
            Some(reason) => Err((reason.clone(), DeclineKind::Cost)),
            None => judge(node, opts),
        };
        let (verdict, kind) = match judged {
            Ok(role) => {
                let joinable = parents.iter().filter_map(|p| group_of.get(p)).find(|g| !bad.contains(g));
                let group = match joinable {
                    Some(&g) => g,
                    None => {
                        groups.push(Vec::new());
                        groups.len() - 1
                    }
                };
                group_of.insert(i, group);
                groups[group].push(i);
                (Ok(role), None)
            }
            Err((reason, kind)) => (Err(reason), Some(kind)),
        };
        // A group whose node feeds this one from outside the group (this node is unclaimed, or
        // in another partition) must not be re-entered after it: that path would leave the
        // group and come back.
        let own = group_of.get(&i).copied();
        let mut reach = bad;
        reach.extend(parents.iter().filter_map(|p| group_of.get(p).copied()).filter(|&g| Some(g) != own));
        reach_bad[i] = reach;
        decisions.push(Decision { node: i, verdict, kind });
    }
    groups.retain(|g| !g.is_empty());
    let mut groups = merge_convex_components(graph, &order, groups);
    // Leave partitions whose host traffic outweighs their work to the CPU EP. Dropping a whole
    // group keeps the others convex: paths through another partition were already excluded.
    groups.retain(|group| {
        match worth_offloading(graph, &consumers, group, &opts.caps).or_else(|e| {
            if opts.cost_rule {
                Err(e)
            } else {
                Ok(())
            }
        }) {
            Ok(()) => true,
            Err(reason) => {
                for d in decisions.iter_mut().filter(|d| group.contains(&d.node)) {
                    d.verdict = Err(reason.clone());
                    d.kind = Some(DeclineKind::Cost);
                }
                false
            }
        }
    });
    Placement { decisions, groups }
}
