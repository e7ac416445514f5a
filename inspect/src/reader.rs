//! ONNX protobuf → `ep_kernels::graph::Graph`, the same plain-data model the EP's
//! `provider/src/graph_reader.rs` builds from ORT's `OrtGraph`: node names, op types, domains,
//! attributes, value types and shapes, and the bytes of constants up to
//! [`SMALL_CONSTANT_BYTES`]. A file ONNX Runtime would refuse is an error here, with its reason.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use ep_kernels::graph::model::SMALL_CONSTANT_BYTES;
use ep_kernels::graph::{Attr, Dim, Graph, Node, ValueInfo};
use protobuf::Message;

use crate::proto::onnx::attribute_proto::AttributeType;
use crate::proto::onnx::tensor_shape_proto::dimension::Value as DimValue;
use crate::proto::onnx::type_proto::Value as TypeValue;
use crate::proto::onnx::{AttributeProto, GraphProto, ModelProto, NodeProto, TensorProto, ValueInfoProto};
use crate::tensor::{read_initializer, Initializer};

/// The newest opset of the default ONNX domain ONNX Runtime 1.32 (and ONNX 1.23, whose
/// `onnx.proto` this reader is generated from) knows; ORT refuses models importing a newer one.
pub const MAX_ONNX_OPSET: i64 = 28;

/// A model read from a file.
#[derive(Clone, Debug)]
pub struct Model {
    pub graph: Graph,
    /// The graph inputs that are not initializers, as declared.
    pub inputs: Vec<ValueInfo>,
    /// Every initializer (and converted Constant node) by name.
    pub initializers: BTreeMap<String, Initializer>,
    /// Imported opsets by domain (`""` for the default ONNX domain).
    pub opsets: BTreeMap<String, i64>,
    pub ir_version: i64,
}

/// Reads the ONNX file at `path` (external data relative to its folder).
pub fn read_model(path: &Path) -> Result<Model, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    parse_model(&bytes, dir).map_err(|e| format!("{}: {e}", path.display()))
}

/// Parses a serialized `ModelProto`; `dir` is where external data files are looked up.
pub fn parse_model(bytes: &[u8], dir: &Path) -> Result<Model, String> {
    let model = ModelProto::parse_from_bytes(bytes)
        .map_err(|e| format!("not a valid ONNX model (truncated or corrupt protobuf): {e}"))?;
    let graph = model.graph.as_ref().ok_or("the model has no graph")?;
    let opsets = read_opsets(&model)?;
    let mut initializers = BTreeMap::new();
    for t in &graph.initializer {
        let init = read_initializer(t, dir, SMALL_CONSTANT_BYTES)?;
        initializers.insert(init.name.clone(), init);
    }
    let mut nodes = Vec::with_capacity(graph.node.len());
    for n in &graph.node {
        match constant_node(n, dir)? {
            Some(init) => drop(initializers.insert(init.name.clone(), init)),
            None => nodes.push(n),
        }
    }
    let types = declared_types(graph);
    let input_names: HashSet<&str> = graph.input.iter().filter_map(|v| v.name.as_deref()).collect();
    let values = Values { types: &types, initializers: &initializers, graph_inputs: &input_names };
    let nodes = nodes.into_iter().map(|n| read_node(n, &opsets, &values)).collect::<Result<Vec<_>, _>>()?;
    let outputs = graph.output.iter().filter_map(|v| v.name.clone()).collect();
    let graph_out = Graph { nodes, outputs };
    check_structure(&graph_out, &input_names, &initializers)?;
    let inputs = graph
        .input
        .iter()
        .filter(|v| v.name.as_deref().is_some_and(|n| !initializers.contains_key(n)))
        .map(|v| values.get(v.name.as_deref().unwrap_or_default()))
        .collect();
    Ok(Model { graph: graph_out, inputs, initializers, opsets, ir_version: model.ir_version.unwrap_or(0) })
}

fn read_opsets(model: &ModelProto) -> Result<BTreeMap<String, i64>, String> {
    let mut opsets = BTreeMap::new();
    for o in &model.opset_import {
        let domain = normalize_domain(o.domain.as_deref().unwrap_or_default());
        opsets.insert(domain.to_string(), o.version.unwrap_or(0));
    }
    match opsets.get("") {
        None => Err("the model imports no opset of the default ONNX domain".into()),
        Some(&v) if !(1..=MAX_ONNX_OPSET).contains(&v) => {
            Err(format!("unknown opset {v} of the default ONNX domain (this build knows 1 to {MAX_ONNX_OPSET})"))
        }
        Some(_) => Ok(opsets),
    }
}

fn normalize_domain(domain: &str) -> &str {
    if domain == "ai.onnx" {
        ""
    } else {
        domain
    }
}

/// ONNX Runtime turns Constant nodes into initializers when it loads a model; so do we.
fn constant_node(n: &NodeProto, dir: &Path) -> Result<Option<Initializer>, String> {
    if n.op_type.as_deref() != Some("Constant") || !normalize_domain(n.domain.as_deref().unwrap_or("")).is_empty() {
        return Ok(None);
    }
    let (Some(out), Some(a)) = (n.output.first(), n.attribute.first()) else { return Ok(None) };
    let mut t = TensorProto::new();
    match a.name.as_deref() {
        Some("value") if a.t.is_some() => t = a.t.as_ref().cloned().unwrap_or_default(),
        Some("value_float") => (t.data_type, t.float_data) = (Some(1), vec![a.f.unwrap_or(0.0)]),
        Some("value_floats") => {
            (t.data_type, t.dims, t.float_data) = (Some(1), vec![a.floats.len() as i64], a.floats.clone())
        }
        Some("value_int") => (t.data_type, t.int64_data) = (Some(7), vec![a.i.unwrap_or(0)]),
        Some("value_ints") => {
            (t.data_type, t.dims, t.int64_data) = (Some(7), vec![a.ints.len() as i64], a.ints.clone())
        }
        _ => return Ok(None),
    }
    t.name = Some(out.clone());
    read_initializer(&t, dir, SMALL_CONSTANT_BYTES).map(Some)
}

/// A declared element type and shape.
type Declared = (i32, Option<Vec<Dim>>);
type TypeMap = HashMap<String, Declared>;

/// Element type and shape of every value the graph declares (inputs, outputs, value_info).
fn declared_types(graph: &GraphProto) -> TypeMap {
    graph.input.iter().chain(&graph.output).chain(&graph.value_info).filter_map(value_type).collect()
}

fn value_type(v: &ValueInfoProto) -> Option<(String, Declared)> {
    let name = v.name.clone()?;
    let Some(TypeValue::TensorType(t)) = v.type_.as_ref().and_then(|t| t.value.as_ref()) else {
        return Some((name, (0, None)));
    };
    let shape = t.shape.as_ref().map(|s| {
        s.dim
            .iter()
            .map(|d| match &d.value {
                Some(DimValue::DimValue(v)) if *v >= 0 => Dim::Fixed(*v as u64),
                Some(DimValue::DimParam(p)) => Dim::Symbolic(p.clone()),
                _ => Dim::Symbolic(String::new()),
            })
            .collect()
    });
    Some((name, (t.elem_type.unwrap_or(0), shape)))
}

/// What the reader knows about each value name.
struct Values<'a> {
    types: &'a TypeMap,
    initializers: &'a BTreeMap<String, Initializer>,
    graph_inputs: &'a HashSet<&'a str>,
}

impl Values<'_> {
    fn get(&self, name: &str) -> ValueInfo {
        if let Some(init) = self.initializers.get(name) {
            // An initializer that is also a graph input may be overridden: not a constant.
            let constant = !self.graph_inputs.contains(name);
            return ValueInfo {
                name: name.to_string(),
                elem_type: init.elem_type,
                shape: Some(init.dims.iter().map(|&d| Dim::Fixed(d)).collect()),
                constant,
                small_data: if constant { init.small_data.clone() } else { None },
            };
        }
        let (elem_type, shape) = self.types.get(name).cloned().unwrap_or((0, None));
        ValueInfo { name: name.to_string(), elem_type, shape, constant: false, small_data: None }
    }

    fn optional(&self, name: &str) -> Option<ValueInfo> {
        (!name.is_empty()).then(|| self.get(name))
    }
}

fn read_node(n: &NodeProto, opsets: &BTreeMap<String, i64>, values: &Values<'_>) -> Result<Node, String> {
    let name = n.name.clone().unwrap_or_default();
    let op_type = n.op_type.clone().unwrap_or_default();
    let domain = normalize_domain(n.domain.as_deref().unwrap_or_default()).to_string();
    let version = *opsets
        .get(&domain)
        .ok_or_else(|| format!("node '{name}' ({op_type}) is in domain '{domain}', which the model does not import"))?;
    Ok(Node {
        // Each registry check compares the version with ones at which the op changed, so the
        // domain's opset gives the same verdict as the schema's since-version ORT reports.
        since_version: i32::try_from(version).map_err(|_| format!("opset {version} of '{domain}' is out of range"))?,
        inputs: n.input.iter().map(|v| values.optional(v)).collect(),
        outputs: n.output.iter().map(|v| values.optional(v)).collect(),
        attrs: n.attribute.iter().map(|a| (a.name.clone().unwrap_or_default(), attr(a))).collect(),
        assigned_ep: None,
        name,
        op_type,
        domain,
    })
}

fn attr(a: &AttributeProto) -> Attr {
    let kind = a.type_.map(|t| t.enum_value_or_default());
    match kind {
        Some(AttributeType::INT) => Attr::Int(a.i.unwrap_or(0)),
        Some(AttributeType::INTS) => Attr::Ints(a.ints.clone()),
        Some(AttributeType::FLOAT) => Attr::Float(a.f.unwrap_or(0.0)),
        Some(AttributeType::FLOATS) => Attr::Floats(a.floats.clone()),
        Some(AttributeType::STRING) => {
            Attr::String(String::from_utf8_lossy(a.s.as_deref().unwrap_or_default()).trim_end_matches('\0').to_string())
        }
        _ => Attr::Other,
    }
}

/// Every value read is defined once (a graph input, an initializer or one node's output) and
/// the nodes have no cycle: what ONNX Runtime checks before any EP sees the graph.
fn check_structure(
    graph: &Graph,
    inputs: &HashSet<&str>,
    initializers: &BTreeMap<String, Initializer>,
) -> Result<(), String> {
    let mut defined: HashSet<&str> = inputs.iter().copied().chain(initializers.keys().map(String::as_str)).collect();
    let mut produced = HashSet::new();
    for n in &graph.nodes {
        for o in n.outputs.iter().flatten() {
            if !produced.insert(o.name.as_str()) || inputs.contains(o.name.as_str()) {
                return Err(format!("value '{}' is produced twice (node '{}')", o.name, n.name));
            }
        }
    }
    defined.extend(produced.iter().copied());
    for n in &graph.nodes {
        if let Some(v) = n.inputs.iter().flatten().find(|v| !defined.contains(v.name.as_str())) {
            return Err(format!("node '{}' reads '{}', which no node, input or initializer defines", n.name, v.name));
        }
    }
    if let Some(o) = graph.outputs.iter().find(|o| !defined.contains(o.as_str())) {
        return Err(format!("graph output '{o}' is never produced"));
    }
    find_cycle(graph).map_or(Ok(()), |i| Err(format!("the graph has a cycle through node '{}'", graph.nodes[i].name)))
}

/// A node on a cycle, if the graph has one (Kahn's algorithm leaves it unvisited).
fn find_cycle(graph: &Graph) -> Option<usize> {
    let producers = graph.producers();
    let mut indegree = vec![0usize; graph.nodes.len()];
    let mut children = vec![Vec::new(); graph.nodes.len()];
    for (i, n) in graph.nodes.iter().enumerate() {
        let mut parents: Vec<usize> =
            n.inputs.iter().flatten().filter_map(|v| producers.get(v.name.as_str()).copied()).collect();
        parents.sort_unstable();
        parents.dedup();
        indegree[i] = parents.len();
        parents.into_iter().for_each(|p| children[p].push(i));
    }
    let mut ready: Vec<usize> = (0..graph.nodes.len()).filter(|&i| indegree[i] == 0).collect();
    while let Some(i) = ready.pop() {
        for &c in &children[i] {
            indegree[c] -= 1;
            if indegree[c] == 0 {
                ready.push(c);
            }
        }
    }
    indegree.iter().position(|&d| d > 0)
}
