//! Running small graphs through the real program builder and executor on the test adapter, the
//! path ONNX Runtime's Compute takes: an op's tests build a node, feed tensors and compare.
#![allow(dead_code)]

use std::collections::BTreeMap;

use ep_kernels::graph::{build_program, Attr, Constant, Dim, ExecOptions, Executable, HostTensor, Node, ValueInfo};
use ep_kernels::ElemType;

/// A tensor in host memory: element type, shape and ONNX Runtime's bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct T {
    pub ty: ElemType,
    pub shape: Vec<u64>,
    pub data: Vec<u8>,
}

impl T {
    pub fn f32(shape: &[u64], v: &[f32]) -> T {
        T { ty: ElemType::F32, shape: shape.to_vec(), data: bytemuck::cast_slice(v).to_vec() }
    }

    pub fn f16(shape: &[u64], v: &[f32]) -> T {
        T {
            ty: ElemType::F16,
            shape: shape.to_vec(),
            data: v.iter().flat_map(|&x| half::f16::from_f32(x).to_le_bytes()).collect(),
        }
    }

    pub fn i64(shape: &[u64], v: &[i64]) -> T {
        T { ty: ElemType::I64, shape: shape.to_vec(), data: v.iter().flat_map(|x| x.to_le_bytes()).collect() }
    }

    pub fn i32(shape: &[u64], v: &[i32]) -> T {
        T { ty: ElemType::I32, shape: shape.to_vec(), data: v.iter().flat_map(|x| x.to_le_bytes()).collect() }
    }

    pub fn bool(shape: &[u64], v: &[bool]) -> T {
        T { ty: ElemType::Bool, shape: shape.to_vec(), data: v.iter().map(|&b| b as u8).collect() }
    }

    pub fn u8(shape: &[u64], v: &[u8]) -> T {
        T { ty: ElemType::U8, shape: shape.to_vec(), data: v.to_vec() }
    }

    /// Uniform random floats in (-scale, scale) of type `ty` (F32 or F16), from the calling
    /// test thread's seeded stream (`super::rng`: its seed is printed, `EP_WGPU_TEST_SEED`
    /// replays it).
    pub fn random(ty: ElemType, shape: &[u64], scale: f32) -> T {
        use rand::Rng;
        thread_local! {
            static STREAM: std::cell::RefCell<Option<rand::rngs::StdRng>> = const { std::cell::RefCell::new(None) };
        }
        let v: Vec<f32> = STREAM.with_borrow_mut(|stream| {
            let rng = stream.get_or_insert_with(|| super::rng("T::random"));
            (0..shape.iter().product::<u64>()).map(|_| rng.random_range(-scale..scale)).collect()
        });
        if ty == ElemType::F16 {
            T::f16(shape, &v)
        } else {
            T::f32(shape, &v)
        }
    }

    /// The values as f64 (floats and integers; booleans as 0/1).
    pub fn values(&self) -> Vec<f64> {
        let d = &self.data;
        match self.ty {
            ElemType::F32 => d.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64).collect(),
            ElemType::F16 => d.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f64()).collect(),
            ElemType::I32 => d.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64).collect(),
            ElemType::I64 => d.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap()) as f64).collect(),
            ElemType::Bool | ElemType::U8 => d.iter().map(|&b| b as f64).collect(),
        }
    }
}

/// The ops of each step of the program built from `nodes` (what the fusion rule joined).
pub fn step_ops(nodes: &[Node], inputs: &[&str], outputs: &[&str]) -> Vec<String> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let p = build_program(nodes, &s(inputs), &s(outputs), vec![]).unwrap_or_else(|e| panic!("{e}"));
    p.steps.iter().map(|s| s.ops.clone()).collect()
}

/// A value of the graph with its type and (static) shape.
pub fn val(name: &str, ty: ElemType, shape: &[u64]) -> ValueInfo {
    ValueInfo {
        name: name.into(),
        elem_type: ty.onnx(),
        shape: Some(shape.iter().map(|&d| Dim::Fixed(d)).collect()),
        constant: false,
        small_data: None,
    }
}

/// An f32 value of `rank` symbolic dims, named `{name}0`, `{name}1`, ...
pub fn symbolic(name: &str, rank: usize) -> ValueInfo {
    ValueInfo {
        name: name.into(),
        elem_type: 1,
        shape: Some((0..rank).map(|i| Dim::Symbolic(format!("{name}{i}"))).collect()),
        constant: false,
        small_data: None,
    }
}

/// A constant value whose bytes placement and building may read (axes, shapes, bounds).
pub fn const_val(name: &str, t: &T) -> ValueInfo {
    ValueInfo { constant: true, small_data: Some(t.data.clone()), ..val(name, t.ty, &t.shape) }
}

/// A node of the default domain at `opset`.
pub fn node(
    op: &str,
    opset: i32,
    inputs: Vec<Option<ValueInfo>>,
    outputs: Vec<ValueInfo>,
    attrs: Vec<(&str, Attr)>,
) -> Node {
    Node {
        name: format!("{op}_node"),
        op_type: op.into(),
        domain: String::new(),
        since_version: opset,
        inputs,
        outputs: outputs.into_iter().map(Some).collect(),
        attrs: attrs.into_iter().map(|(k, v)| (k.to_string(), v)).collect::<BTreeMap<_, _>>(),
        assigned_ep: None,
    }
}

/// Builds the program of `nodes` (topologically ordered) and runs it once: `inputs` are the
/// partition's inputs in order, `constants` its initializers, `outputs` the values read back.
pub fn run_graph(
    nodes: &[Node],
    inputs: &[(&str, &T)],
    constants: &[(&str, &T)],
    outputs: &[&str],
) -> Result<Vec<T>, String> {
    run_graph_with(nodes, inputs, constants, outputs, ExecOptions::default())
}

/// [`run_graph`] under these executor options.
pub fn run_graph_with(
    nodes: &[Node],
    inputs: &[(&str, &T)],
    constants: &[(&str, &T)],
    outputs: &[&str],
    options: ExecOptions,
) -> Result<Vec<T>, String> {
    let names: Vec<String> = inputs.iter().map(|(n, _)| n.to_string()).collect();
    let outs: Vec<String> = outputs.iter().map(|n| n.to_string()).collect();
    let consts = constants
        .iter()
        .map(|(n, t)| Constant { name: n.to_string(), dtype: t.ty, shape: t.shape.clone(), data: t.data.clone() })
        .collect();
    let program = build_program(nodes, &names, &outs, consts)?;
    let out_types: Vec<ElemType> = outputs
        .iter()
        .map(|o| {
            nodes
                .iter()
                .flat_map(|n| n.outputs.iter().flatten())
                .chain(nodes.iter().flat_map(|n| n.inputs.iter().flatten()))
                .find(|v| v.name == *o)
                .and_then(|v| ElemType::from_onnx(v.elem_type))
                .unwrap_or(ElemType::F32)
        })
        .collect();
    let exec = Executable::new(super::gpu(), program, options).map_err(|e| e.to_string())?;
    let host: Vec<HostTensor> =
        inputs.iter().map(|(_, t)| HostTensor { dtype: t.ty, shape: &t.shape, data: &t.data }).collect();
    let mut got: Vec<Option<T>> = vec![None; outputs.len()];
    exec.run(&host, &mut |i, shape, bytes| {
        got[i] = Some(T { ty: out_types[i], shape: shape.to_vec(), data: bytes.to_vec() });
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    got.into_iter().enumerate().map(|(i, t)| t.ok_or_else(|| format!("output {i} was not delivered"))).collect()
}
