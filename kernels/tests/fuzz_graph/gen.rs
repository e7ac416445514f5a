//! The random graphs of `fuzz_graph.rs`: small graphs of the ops ORT shows us, with random shapes, constants,
//! element types and symbolic dims (`random_graph`).

use std::collections::{BTreeMap, HashSet};

use ep_kernels::graph::{Attr, Dim, Graph, Node, ValueInfo};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

pub const FLOAT: i32 = 1;
const INT32: i32 = 6;
pub const INT64: i32 = 7;
const FLOAT16: i32 = 10;

/// A value while the graph is generated: its declared info and its true shape (which the
/// declared one may hide behind symbolic dims).
#[derive(Clone)]
struct Val {
    info: ValueInfo,
    shape: Vec<u64>,
}

struct Gen {
    rng: StdRng,
    vals: Vec<Val>,
    nodes: Vec<Node>,
    count: usize,
}

impl Gen {
    fn name(&mut self, prefix: &str) -> String {
        self.count += 1;
        format!("{prefix}{}", self.count)
    }

    fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p)
    }

    fn dim(&mut self) -> u64 {
        if self.chance(0.05) {
            0
        } else {
            self.rng.random_range(1..24)
        }
    }

    /// The declared shape: known, partly symbolic, or of unknown rank.
    fn declare(&mut self, shape: &[u64]) -> Option<Vec<Dim>> {
        match self.rng.random_range(0..10) {
            0 => None,
            1..=3 => Some(
                shape
                    .iter()
                    .enumerate()
                    .map(|(i, &d)| if self.chance(0.5) { Dim::Symbolic(format!("d{i}")) } else { Dim::Fixed(d) })
                    .collect(),
            ),
            _ => Some(shape.iter().map(|&d| Dim::Fixed(d)).collect()),
        }
    }

    fn float_type(&mut self) -> i32 {
        match self.rng.random_range(0..20) {
            0 => INT32,
            1 => INT64,
            2..=4 => FLOAT16,
            _ => FLOAT,
        }
    }

    /// A new graph input, or a constant initializer (with its bytes when small, as ORT gives).
    fn leaf(&mut self, elem_type: i32, shape: Vec<u64>, constant: bool) -> Val {
        let name = self.name(if constant { "w" } else { "in" });
        let bytes = shape.iter().product::<u64>() as usize * elem_size(elem_type);
        let small_data = (constant && bytes <= 64).then(|| vec![0u8; bytes]);
        let shape_decl =
            if constant { Some(shape.iter().map(|&d| Dim::Fixed(d)).collect()) } else { self.declare(&shape) };
        let info = ValueInfo { name, elem_type, shape: shape_decl, constant, small_data };
        let v = Val { info, shape };
        self.vals.push(v.clone());
        v
    }

    fn scalar_f32(&mut self, value: f32) -> Val {
        let name = self.name("c");
        let info = ValueInfo {
            name,
            elem_type: FLOAT,
            shape: Some(vec![]),
            constant: true,
            small_data: Some(value.to_le_bytes().to_vec()),
        };
        let v = Val { info, shape: vec![] };
        self.vals.push(v.clone());
        v
    }

    fn shape_const(&mut self, dims: &[i64]) -> Val {
        let name = self.name("shape");
        let info = ValueInfo {
            name,
            elem_type: INT64,
            shape: Some(vec![Dim::Fixed(dims.len() as u64)]),
            constant: true,
            small_data: Some(dims.iter().flat_map(|d| d.to_le_bytes()).collect()),
        };
        Val { info, shape: vec![dims.len() as u64] }
    }

    /// An existing non-constant value, recent ones more likely.
    fn pick(&mut self) -> Val {
        let live: Vec<usize> = (0..self.vals.len()).filter(|&i| !self.vals[i].info.constant).collect();
        let k = live.len();
        let i = if self.chance(0.45) { k - 1 } else { self.rng.random_range(0..k) };
        self.vals[live[i]].clone()
    }

    /// Another computed value with `x`'s shape (or any, if there is none).
    fn pick_like(&mut self, x: &Val) -> Val {
        let same: Vec<usize> = (0..self.vals.len())
            .filter(|&i| {
                let v = &self.vals[i];
                !v.info.constant && v.shape == x.shape && v.info.name != x.info.name
            })
            .collect();
        if same.is_empty() {
            return self.pick();
        }
        self.vals[same[self.rng.random_range(0..same.len())]].clone()
    }

    fn node(&mut self, op: &str, inputs: Vec<Option<ValueInfo>>, out_type: i32, out_shape: Vec<u64>) -> Val {
        let out = ValueInfo {
            name: self.name("v"),
            elem_type: out_type,
            shape: self.declare(&out_shape),
            constant: false,
            small_data: None,
        };
        let name = self.name(&op.to_lowercase());
        let assigned_ep = self.chance(0.03).then(|| "CPUExecutionProvider".to_string());
        self.nodes.push(Node {
            name,
            op_type: op.into(),
            domain: String::new(),
            since_version: 17,
            inputs,
            outputs: vec![Some(out.clone())],
            attrs: BTreeMap::new(),
            assigned_ep,
        });
        let v = Val { info: out, shape: out_shape };
        self.vals.push(v.clone());
        v
    }

    fn set_attr(&mut self, name: &str, attr: Attr) {
        if let Some(n) = self.nodes.last_mut() {
            n.attrs.insert(name.into(), attr);
        }
    }

    fn matmul(&mut self) {
        let a = self.pick();
        let ty = if self.chance(0.95) { a.info.elem_type } else { self.float_type() };
        let k = a.shape.last().copied().unwrap_or(1);
        let k = if self.chance(0.08) { k + 1 } else { k };
        let n = self.dim();
        let b_shape = match self.rng.random_range(0..6) {
            0 => vec![k],
            1 => vec![self.rng.random_range(1..4), k, n],
            _ => vec![k, n],
        };
        // B is sometimes another computed value (two computed parents join or split groups),
        // declared with unknown dims so that placement cannot rule it out by shape.
        let b = if self.chance(0.35) {
            let wanted = Val { shape: b_shape.clone(), ..a.clone() };
            let v = self.pick_like(&wanted);
            Val {
                info: ValueInfo {
                    shape: v.info.shape.as_ref().map(|s| vec![Dim::Symbolic("b".into()); s.len()]),
                    ..v.info
                },
                shape: b_shape.clone(),
            }
        } else {
            let constant = self.chance(0.6);
            self.leaf(ty, b_shape.clone(), constant)
        };
        let out = matmul_shape(&a.shape, &b_shape).unwrap_or_default();
        self.node("MatMul", vec![Some(a.info), Some(b.info)], ty, out);
    }

    /// Two products of one value, summed (gated and residual blocks).
    fn fork_join(&mut self) {
        let x = self.pick();
        let k = x.shape.last().copied().unwrap_or(1);
        let n = self.dim();
        let mut outs = Vec::new();
        for _ in 0..2 {
            let w = self.leaf(x.info.elem_type, vec![k, n], true);
            let out = matmul_shape(&x.shape, &[k, n]).unwrap_or_default();
            outs.push(self.node("MatMul", vec![Some(x.info.clone()), Some(w.info)], x.info.elem_type, out));
        }
        if self.chance(0.5) {
            outs.reverse();
        }
        let shape = outs[0].shape.clone();
        self.node("Add", outs.into_iter().map(|v| Some(v.info)).collect(), x.info.elem_type, shape);
    }

    /// A product of two computed values (two partitions may meet here).
    fn cross(&mut self) {
        let (a, b) = (self.pick(), self.pick());
        let out = matmul_shape(&a.shape, &b.shape).unwrap_or_default();
        let unknown = |v: &Val| ValueInfo { shape: None, ..v.info.clone() };
        self.node("MatMul", vec![Some(unknown(&a)), Some(unknown(&b))], a.info.elem_type, out);
    }

    fn gemm(&mut self) {
        let a = self.pick();
        let (trans_a, trans_b) = (self.chance(0.3), self.chance(0.4));
        let (m, k) = match a.shape.as_slice() {
            [r, c] if trans_a => (*c, *r),
            [r, c] => (*r, *c),
            _ => (1, 1),
        };
        let n = self.dim();
        let constant = self.chance(0.7);
        let b = self.leaf(a.info.elem_type, if trans_b { vec![n, k] } else { vec![k, n] }, constant);
        let mut inputs = vec![Some(a.info.clone()), Some(b.info)];
        match self.rng.random_range(0..8) {
            0 => {}
            1 => inputs.push(None),
            c => {
                let shape = match c {
                    2 => vec![n],
                    3 => vec![1, n],
                    4 => vec![m, n],
                    5 => vec![m, 1],
                    6 => vec![],
                    _ => vec![n + 1],
                };
                let constant = self.chance(0.6);
                inputs.push(Some(self.leaf(a.info.elem_type, shape, constant).info));
            }
        }
        self.node("Gemm", inputs, a.info.elem_type, vec![m, n]);
        let pick = |r: &mut StdRng| [1.0f32, 0.5, 0.0, -2.0][r.random_range(0..4)];
        let (alpha, beta) = (pick(&mut self.rng), pick(&mut self.rng));
        self.set_attr("transA", Attr::Int(trans_a as i64));
        self.set_attr("transB", Attr::Int(trans_b as i64));
        self.set_attr("alpha", Attr::Float(alpha));
        self.set_attr("beta", Attr::Float(beta));
    }

    fn add(&mut self) {
        let x = self.pick();
        let other = match self.rng.random_range(0..7) {
            0 => self.pick(),
            // Another computed value of the same shape: sums of two products, residuals.
            1 => self.pick_like(&x),
            2 => self.leaf(x.info.elem_type, x.shape.clone(), false),
            3 => self.leaf(x.info.elem_type, vec![], true),
            4 => self.leaf(x.info.elem_type, vec![x.shape.last().copied().unwrap_or(1) + 1], true),
            _ => self.leaf(x.info.elem_type, vec![x.shape.last().copied().unwrap_or(1)], true),
        };
        let out = ep_kernels::gemm::broadcast_shapes(&x.shape, &other.shape).unwrap_or_default();
        let inputs = if self.chance(0.5) { vec![x.info, other.info] } else { vec![other.info, x.info] };
        let ty = inputs[0].elem_type;
        self.node("Add", inputs.into_iter().map(Some).collect(), ty, out);
    }

    /// A Conv over a rank-3/4 value (1-D or 2-D), sometimes grouped, with or without bias; the
    /// output shape follows ONNX when it is valid and is arbitrary otherwise.
    fn conv(&mut self) {
        let x = self.pick();
        let rank = x.shape.len().clamp(3, 4);
        let c = x.shape.get(1).copied().unwrap_or(1).max(1);
        let group = if c % 2 == 0 && self.chance(0.3) { 2 } else { 1 };
        let m = group * self.rng.random_range(1..4);
        let k: Vec<u64> = (2..rank).map(|_| self.rng.random_range(1..4)).collect();
        let mut w_shape = vec![m, (c / group).max(1)];
        w_shape.extend(&k);
        let constant = self.chance(0.9);
        let w = self.leaf(x.info.elem_type, w_shape, constant);
        let mut inputs = vec![Some(x.info.clone()), Some(w.info)];
        if self.chance(0.5) {
            inputs.push(Some(self.leaf(x.info.elem_type, vec![m], true).info));
        }
        let mut out = vec![x.shape.first().copied().unwrap_or(1), m];
        for (i, kk) in k.iter().enumerate() {
            out.push(x.shape.get(2 + i).copied().unwrap_or(1).saturating_sub(kk - 1).max(1));
        }
        self.node("Conv", inputs, x.info.elem_type, out);
        self.set_attr("group", Attr::Int(group as i64));
    }

    fn unary(&mut self, op: &str) {
        let x = self.pick();
        self.node(op, vec![Some(x.info.clone())], x.info.elem_type, x.shape);
    }

    fn clip(&mut self) {
        let x = self.pick();
        let mut inputs = vec![Some(x.info.clone())];
        let opset6 = self.chance(0.2);
        if !opset6 {
            match self.rng.random_range(0..4) {
                0 => {}
                1 => inputs.push(Some(self.scalar_f32(-0.5).info)),
                2 => {
                    inputs.push(Some(ValueInfo { name: String::new(), ..self.scalar_f32(0.0).info }));
                    inputs.push(Some(self.scalar_f32(0.5).info));
                }
                _ => inputs.push(Some(self.leaf(FLOAT, vec![], false).info)),
            }
        }
        self.node("Clip", inputs, x.info.elem_type, x.shape);
        if opset6 {
            if let Some(n) = self.nodes.last_mut() {
                n.since_version = 6;
            }
            self.set_attr("min", Attr::Float(-1.0));
        }
    }

    fn reshape(&mut self) {
        let x = self.pick();
        let total: u64 = x.shape.iter().product();
        let last = x.shape.last().copied().unwrap_or(1).max(1);
        let (target, out): (Vec<i64>, Vec<u64>) = match self.rng.random_range(0..4) {
            0 => (vec![-1, last as i64], vec![total / last, last]),
            1 => (vec![-1], vec![total]),
            2 => {
                let first = x.shape.first().copied().unwrap_or(1);
                (vec![0, -1], vec![first, total.checked_div(first).unwrap_or(0)])
            }
            _ => (vec![total as i64 + 1], vec![total + 1]),
        };
        let shape = if self.chance(0.9) { self.shape_const(&target) } else { self.leaf(INT64, vec![2], false) };
        self.node("Reshape", vec![Some(x.info.clone()), Some(shape.info)], x.info.elem_type, out);
    }

    fn transpose(&mut self) {
        let x = self.pick();
        if self.chance(0.5) {
            let out: Vec<u64> = x.shape.iter().rev().copied().collect();
            self.node("Transpose", vec![Some(x.info.clone())], x.info.elem_type, out);
            return;
        }
        let mut perm: Vec<usize> = (0..x.shape.len()).collect();
        if matches!(perm.len(), 3 | 4) && self.chance(0.3) {
            // Channels last (after a conv, the store absorbs it).
            let c = perm.remove(1);
            perm.push(c);
        } else {
            for i in (1..perm.len()).rev() {
                let j = self.rng.random_range(0..=i);
                perm.swap(i, j);
            }
        }
        let out = perm.iter().map(|&p| x.shape[p]).collect();
        self.node("Transpose", vec![Some(x.info.clone())], x.info.elem_type, out);
        self.set_attr("perm", Attr::Ints(perm.iter().map(|&p| p as i64).collect()));
    }

    /// An axis of a rank-`rank` value, sometimes negative, rarely out of range.
    fn axis(&mut self, rank: usize) -> i64 {
        let r = rank.max(1) as i64;
        match self.rng.random_range(0..10) {
            0 => r + 1,
            1..=3 => -self.rng.random_range(1..=r),
            _ => self.rng.random_range(0..r),
        }
    }

    /// A binary elementwise op with a broadcasting second operand (mask and scale arithmetic).
    fn binary(&mut self) {
        let op = ["Mul", "Sub", "Div", "Max", "Pow"][self.rng.random_range(0..5)];
        let x = self.pick();
        let other = match self.rng.random_range(0..4) {
            0 => self.scalar_f32(0.5),
            1 => self.pick_like(&x),
            _ => {
                let constant = self.chance(0.5);
                self.leaf(x.info.elem_type, vec![x.shape.last().copied().unwrap_or(1)], constant)
            }
        };
        let out = ep_kernels::gemm::broadcast_shapes(&x.shape, &other.shape).unwrap_or_default();
        self.node(op, vec![Some(x.info.clone()), Some(other.info)], x.info.elem_type, out);
    }

    /// Softmax or LayerNormalization over a random axis.
    fn normalise(&mut self) {
        let x = self.pick();
        let axis = self.axis(x.shape.len());
        if self.chance(0.5) {
            self.node("Softmax", vec![Some(x.info.clone())], x.info.elem_type, x.shape.clone());
        } else {
            let a = usize::try_from(if axis < 0 { axis + x.shape.len() as i64 } else { axis }).unwrap_or(0);
            let norm: Vec<u64> = x.shape.get(a.min(x.shape.len())..).unwrap_or_default().to_vec();
            let scale = self.leaf(x.info.elem_type, norm.clone(), true);
            let mut inputs = vec![Some(x.info.clone()), Some(scale.info)];
            if self.chance(0.5) {
                inputs.push(Some(self.leaf(x.info.elem_type, norm, true).info));
            }
            self.node("LayerNormalization", inputs, x.info.elem_type, x.shape.clone());
        }
        self.set_attr("axis", Attr::Int(axis));
    }

    fn reduce_mean(&mut self) {
        let x = self.pick();
        let axis = self.axis(x.shape.len());
        let keep = self.chance(0.7);
        let a = usize::try_from(if axis < 0 { axis + x.shape.len() as i64 } else { axis }).unwrap_or(usize::MAX);
        let out: Vec<u64> =
            x.shape.iter().enumerate().filter_map(|(i, &d)| if i == a { keep.then_some(1) } else { Some(d) }).collect();
        self.node("ReduceMean", vec![Some(x.info.clone())], x.info.elem_type, out);
        self.set_attr("axes", Attr::Ints(vec![axis]));
        self.set_attr("keepdims", Attr::Int(keep as i64));
    }

    /// Concat of a value with itself or another, Unsqueeze, Slice or Gather with constant operands.
    fn layout(&mut self) {
        let x = self.pick();
        let rank = x.shape.len();
        let axis = self.axis(rank);
        let a =
            usize::try_from(if axis < 0 { axis + rank as i64 } else { axis }).unwrap_or(0).min(rank.saturating_sub(1));
        match self.rng.random_range(0..4) {
            0 => {
                let y = self.pick_like(&x);
                let mut out = x.shape.clone();
                if let Some(d) = out.get_mut(a) {
                    *d += y.shape.get(a).copied().unwrap_or(0);
                }
                self.node("Concat", vec![Some(x.info.clone()), Some(y.info)], x.info.elem_type, out);
                self.set_attr("axis", Attr::Int(axis));
            }
            1 => {
                let axes = self.shape_const(&[axis]);
                let mut out = x.shape.clone();
                out.insert(a.min(out.len()), 1);
                self.node("Unsqueeze", vec![Some(x.info.clone()), Some(axes.info)], x.info.elem_type, out);
            }
            2 => {
                let dim = x.shape.get(a).copied().unwrap_or(1) as i64;
                let (start, end) = (self.rng.random_range(-dim - 1..=dim), self.rng.random_range(-dim - 1..=dim + 2));
                let (starts, ends, axes) =
                    (self.shape_const(&[start]), self.shape_const(&[end]), self.shape_const(&[axis]));
                let mut out = x.shape.clone();
                let clamp = |v: i64| (if v < 0 { v + dim } else { v }).clamp(0, dim);
                if let Some(d) = out.get_mut(a) {
                    *d = (clamp(end) - clamp(start)).max(0) as u64;
                }
                let inputs = vec![Some(x.info.clone()), Some(starts.info), Some(ends.info), Some(axes.info)];
                self.node("Slice", inputs, x.info.elem_type, out);
            }
            _ => {
                let dim = x.shape.get(a).copied().unwrap_or(1).max(1) as i64;
                let idx: Vec<i64> =
                    (0..self.rng.random_range(1..4)).map(|_| self.rng.random_range(-dim..dim)).collect();
                let indices = self.shape_const(&idx);
                let mut out: Vec<u64> = x.shape[..a.min(rank)].to_vec();
                out.push(idx.len() as u64);
                out.extend(x.shape.get(a + 1..).unwrap_or_default());
                self.node("Gather", vec![Some(x.info.clone()), Some(indices.info)], x.info.elem_type, out);
                self.set_attr("axis", Attr::Int(axis));
            }
        }
    }
}

fn elem_size(elem_type: i32) -> usize {
    match elem_type {
        FLOAT16 => 2,
        INT64 => 8,
        _ => 4,
    }
}

fn matmul_shape(a: &[u64], b: &[u64]) -> Option<Vec<u64>> {
    ep_kernels::gemm::matmul_problem(a, b, ep_kernels::DType::F32).ok().map(|(_, s)| s)
}

/// A random graph from `ops` (op codes) and `seed`.
pub fn random_graph(ops: &[u8], seed: u64) -> Graph {
    let mut g = Gen { rng: StdRng::seed_from_u64(seed), vals: Vec::new(), nodes: Vec::new(), count: 0 };
    for _ in 0..g.rng.random_range(1..4) {
        let rank = g.rng.random_range(1..5);
        let shape: Vec<u64> = (0..rank).map(|_| g.dim()).collect();
        let ty = g.float_type();
        g.leaf(ty, shape, false);
    }
    for &op in ops {
        match op % 17 {
            0 | 1 => g.matmul(),
            11 => g.conv(),
            2 => g.gemm(),
            3 => g.add(),
            4 => g.unary("Relu"),
            5 => g.clip(),
            6 => g.reshape(),
            7 => g.unary(["Sigmoid", "Relu", "Erf", "Tanh", "Exp"][op as usize % 5]),
            8 => g.transpose(),
            9 => g.fork_join(),
            12 => g.binary(),
            13 => g.normalise(),
            14 => g.reduce_mean(),
            15 => g.layout(),
            16 => g.unary("Sqrt"),
            _ => g.cross(),
        }
    }
    let mut outputs: HashSet<String> =
        g.nodes.last().and_then(|n| n.output(0)).map(|o| o.name.clone()).into_iter().collect();
    for n in &g.nodes {
        if g.rng.random_bool(0.15) {
            outputs.extend(n.output(0).map(|o| o.name.clone()));
        }
    }
    Graph { nodes: g.nodes, outputs }
}
