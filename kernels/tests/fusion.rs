//! The fusion rule on plain partitions: which nodes share a kernel, and that a value another
//! node (or the caller) reads is never absorbed.

mod common;

use common::graph::{const_val, node, val, T};
use ep_kernels::graph::{build_program, Node, Program};
use ep_kernels::ElemType::F32;

fn mm(name: &str, a: &str, b: &str, out: &str, shape: &[u64]) -> Node {
    let mut n = node(
        "MatMul",
        13,
        vec![Some(val(a, F32, &[4, 8])), Some(val(b, F32, &[8, 8]))],
        vec![val(out, F32, shape)],
        vec![],
    );
    n.name = name.into();
    n
}

fn unary(op: &str, x: &str, out: &str) -> Node {
    let mut n = node(op, 14, vec![Some(val(x, F32, &[4, 8]))], vec![val(out, F32, &[4, 8])], vec![]);
    n.name = out.into();
    n
}

fn binary(op: &str, a: &str, b: &str, b_shape: &[u64], out: &str) -> Node {
    let mut n = node(
        op,
        14,
        vec![Some(val(a, F32, &[4, 8])), Some(val(b, F32, b_shape))],
        vec![val(out, F32, &[4, 8])],
        vec![],
    );
    n.name = out.into();
    n
}

fn program(nodes: &[Node], inputs: &[&str], outputs: &[&str]) -> Program {
    let inputs: Vec<String> = inputs.iter().map(|s| s.to_string()).collect();
    let outputs: Vec<String> = outputs.iter().map(|s| s.to_string()).collect();
    build_program(nodes, &inputs, &outputs, vec![]).unwrap_or_else(|e| panic!("{e}"))
}

fn step_ops(p: &Program) -> Vec<String> {
    p.steps.iter().map(|s| s.ops.clone()).collect()
}

#[test]
fn bias_and_activation_fold_into_the_product() {
    let nodes = [mm("m", "x", "w", "m", &[4, 8]), binary("Add", "m", "b", &[8], "a"), unary("Relu", "a", "y")];
    let p = program(&nodes, &["x", "w", "b"], &["y"]);
    assert_eq!(step_ops(&p), ["MatMul+Add+Relu"]);
}

#[test]
fn a_value_read_elsewhere_is_not_absorbed() {
    // `m` leaves the partition, so Relu cannot overwrite it in the product's store.
    let nodes = [mm("m", "x", "w", "m", &[4, 8]), unary("Relu", "m", "y")];
    let p = program(&nodes, &["x", "w"], &["y", "m"]);
    assert_eq!(step_ops(&p), ["MatMul", "Relu"]);
    // A second reader inside the partition keeps it too.
    let nodes = [mm("m", "x", "w", "m", &[4, 8]), unary("Relu", "m", "r"), binary("Add", "m", "r", &[4, 8], "y")];
    let p = program(&nodes, &["x", "w"], &["y"]);
    assert_eq!(step_ops(&p), ["MatMul", "Relu+Add"]);
}

#[test]
fn an_add_that_broadcasts_the_output_is_not_a_bias() {
    // [4,8] + [2,4,8] grows the output: it runs as its own kernel.
    let mut add = binary("Add", "m", "b", &[2, 4, 8], "y");
    add.outputs[0] = Some(val("y", F32, &[2, 4, 8]));
    let nodes = [mm("m", "x", "w", "m", &[4, 8]), add];
    let p = program(&nodes, &["x", "w", "b"], &["y"]);
    assert_eq!(step_ops(&p), ["MatMul", "Add"]);
}

#[test]
fn erf_gelu_is_one_kernel() {
    let c = |name: &str, v: f32| const_val(name, &T::f32(&[], &[v]));
    let mut div = node(
        "Div",
        14,
        vec![Some(val("x", F32, &[4, 8])), Some(c("sqrt2", 1.4142135))],
        vec![val("d", F32, &[4, 8])],
        vec![],
    );
    div.name = "div".into();
    let erf = unary("Erf", "d", "e");
    let mut add =
        node("Add", 14, vec![Some(val("e", F32, &[4, 8])), Some(c("one", 1.0))], vec![val("a", F32, &[4, 8])], vec![]);
    add.name = "add".into();
    let mul = binary("Mul", "x", "a", &[4, 8], "m");
    let mut half =
        node("Mul", 14, vec![Some(val("m", F32, &[4, 8])), Some(c("half", 0.5))], vec![val("y", F32, &[4, 8])], vec![]);
    half.name = "half".into();
    let nodes = [div, erf, add, mul, half];
    let inputs: Vec<String> = ["x"].iter().map(|s| s.to_string()).collect();
    let consts = ["sqrt2", "one", "half"]
        .iter()
        .zip([1.4142135f32, 1.0, 0.5])
        .map(|(n, v)| ep_kernels::graph::Constant {
            name: n.to_string(),
            dtype: F32,
            shape: vec![],
            data: v.to_le_bytes().to_vec(),
        })
        .collect();
    let p = build_program(&nodes, &inputs, &["y".to_string()], consts).unwrap();
    assert_eq!(step_ops(&p), ["Div+Erf+Add+Mul+Mul"]);
}
