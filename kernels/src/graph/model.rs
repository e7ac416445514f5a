//! A plain-data view of the ONNX graph ONNX Runtime offers us: the provider copies ORT's graph
//! objects into these types at the boundary, so every decision below is ordinary testable Rust.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::dtype::DType;

/// ONNX `TensorProto.DataType` codes we care about.
pub const ONNX_FLOAT: i32 = 1;
pub const ONNX_FLOAT16: i32 = 10;
pub const ONNX_INT64: i32 = 7;

/// Constants up to this size are copied into [`ValueInfo::small_data`] (Clip bounds, Reshape
/// shapes) by every graph reader: the provider's and the `inspect` tool's.
pub const SMALL_CONSTANT_BYTES: usize = 4096;

/// Our storage type for an ONNX element type, if we handle it.
pub fn dtype_of(onnx_elem_type: i32) -> Option<DType> {
    match onnx_elem_type {
        ONNX_FLOAT => Some(DType::F32),
        ONNX_FLOAT16 => Some(DType::F16),
        _ => None,
    }
}

/// One dimension of a static shape: a number, or a symbolic/unknown size.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    Fixed(u64),
    Symbolic(String),
}

impl Dim {
    pub fn fixed(&self) -> Option<u64> {
        match self {
            Dim::Fixed(v) => Some(*v),
            Dim::Symbolic(_) => None,
        }
    }
}

/// A tensor value as the graph declares it.
#[derive(Clone, Debug, PartialEq)]
pub struct ValueInfo {
    pub name: String,
    /// ONNX element type code (0 when unknown or not a tensor).
    pub elem_type: i32,
    /// `None` when the rank is unknown.
    pub shape: Option<Vec<Dim>>,
    /// A constant initializer (weights).
    pub constant: bool,
    /// Contents of small constants (scalars such as Clip bounds), little-endian bytes.
    pub small_data: Option<Vec<u8>>,
}

impl ValueInfo {
    pub fn dtype(&self) -> Option<DType> {
        dtype_of(self.elem_type)
    }

    pub fn rank(&self) -> Option<usize> {
        self.shape.as_ref().map(Vec::len)
    }

    /// The shape when every dimension is known.
    pub fn fixed_shape(&self) -> Option<Vec<u64>> {
        self.shape.as_ref()?.iter().map(Dim::fixed).collect()
    }

    /// The values of a small int64 constant (a Reshape's shape).
    pub fn ints(&self) -> Option<Vec<i64>> {
        if self.elem_type != ONNX_INT64 {
            return None;
        }
        let data = self.small_data.as_ref()?;
        Some(
            data.chunks_exact(8)
                .map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect(),
        )
    }

    /// The value of a scalar (or one-element) f32/f16 constant.
    pub fn scalar_f32(&self) -> Option<f32> {
        let data = self.small_data.as_ref()?;
        match self.dtype()? {
            DType::F32 if data.len() == 4 => Some(f32::from_le_bytes([data[0], data[1], data[2], data[3]])),
            DType::F16 if data.len() == 2 => Some(half::f16::from_le_bytes([data[0], data[1]]).to_f32()),
            _ => None,
        }
    }
}

/// A node attribute.
#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    Int(i64),
    Ints(Vec<i64>),
    Float(f32),
    Floats(Vec<f32>),
    String(String),
    /// Present, but of a kind we never read (graphs, tensors, strings lists).
    Other,
}

/// One node, with everything placement and compilation read from it.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub name: String,
    pub op_type: String,
    pub domain: String,
    pub since_version: i32,
    /// `None` for omitted optional inputs.
    pub inputs: Vec<Option<ValueInfo>>,
    pub outputs: Vec<Option<ValueInfo>>,
    pub attrs: BTreeMap<String, Attr>,
    /// The execution provider ORT already assigned, if any.
    pub assigned_ep: Option<String>,
}

impl Node {
    pub fn int(&self, name: &str) -> Option<i64> {
        match self.attrs.get(name) {
            Some(Attr::Int(v)) => Some(*v),
            _ => None,
        }
    }

    pub fn float(&self, name: &str) -> Option<f32> {
        match self.attrs.get(name) {
            Some(Attr::Float(v)) => Some(*v),
            _ => None,
        }
    }

    pub fn ints(&self, name: &str) -> Option<&[i64]> {
        match self.attrs.get(name) {
            Some(Attr::Ints(v)) => Some(v),
            _ => None,
        }
    }

    pub fn string(&self, name: &str) -> Option<&str> {
        match self.attrs.get(name) {
            Some(Attr::String(v)) => Some(v),
            _ => None,
        }
    }

    pub fn input(&self, i: usize) -> Option<&ValueInfo> {
        self.inputs.get(i).and_then(Option::as_ref)
    }

    /// Whether optional input `i` is given (present and not the empty name).
    pub fn has_input(&self, i: usize) -> bool {
        self.input(i).is_some_and(|v| !v.name.is_empty())
    }

    pub fn output(&self, i: usize) -> Option<&ValueInfo> {
        self.outputs.get(i).and_then(Option::as_ref)
    }

    /// True for the default ONNX domain.
    pub fn is_onnx(&self) -> bool {
        self.domain.is_empty() || self.domain == "ai.onnx"
    }
}

/// The nodes of one graph and which values leave it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Graph {
    pub nodes: Vec<Node>,
    pub outputs: HashSet<String>,
}

impl Graph {
    /// Producer node of each value name.
    pub fn producers(&self) -> HashMap<&str, usize> {
        let mut map = HashMap::new();
        for (i, n) in self.nodes.iter().enumerate() {
            for o in n.outputs.iter().flatten() {
                map.insert(o.name.as_str(), i);
            }
        }
        map
    }

    /// Consumer nodes of each value name.
    pub fn consumers(&self) -> HashMap<&str, Vec<usize>> {
        let mut map: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, n) in self.nodes.iter().enumerate() {
            for v in n.inputs.iter().flatten() {
                map.entry(v.name.as_str()).or_default().push(i);
            }
        }
        map
    }

    /// Node indices in a topological order (ORT usually lists them so already; a cycle — which
    /// a valid graph never has — leaves the remaining nodes in list order at the end).
    pub fn topological_order(&self) -> Vec<usize> {
        let producers = self.producers();
        let mut indegree = vec![0usize; self.nodes.len()];
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); self.nodes.len()];
        for (i, n) in self.nodes.iter().enumerate() {
            let mut parents: Vec<usize> =
                n.inputs.iter().flatten().filter_map(|v| producers.get(v.name.as_str()).copied()).collect();
            parents.sort_unstable();
            parents.dedup();
            for p in parents {
                indegree[i] += 1;
                children[p].push(i);
            }
        }
        let mut ready: std::collections::VecDeque<usize> =
            (0..self.nodes.len()).filter(|&i| indegree[i] == 0).collect();
        let mut order = Vec::with_capacity(self.nodes.len());
        while let Some(i) = ready.pop_front() {
            order.push(i);
            for &c in &children[i] {
                indegree[c] -= 1;
                if indegree[c] == 0 {
                    ready.push_back(c);
                }
            }
        }
        if order.len() < self.nodes.len() {
            let seen: HashSet<usize> = order.iter().copied().collect();
            order.extend((0..self.nodes.len()).filter(|i| !seen.contains(i)));
        }
        order
    }
}
