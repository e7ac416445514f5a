//! Alias ops (Reshape, Flatten, Squeeze, Unsqueeze, Identity) through the program builder and
//! executor: the same bytes under the shape ONNX gives, for every element type, also when a
//! product reads them.
mod common;

use common::graph::{const_val, node, run_graph, val, T};
use ep_kernels::graph::Attr;
use ep_kernels::ElemType;

#[test]
fn aliases_keep_bytes_and_change_shapes() {
    let x = T::i64(&[2, 1, 3], &[1, -2, 3, 1 << 40, 5, -6]);
    let axes = T::i64(&[1], &[1]);
    let squeeze = node(
        "Squeeze",
        13,
        vec![Some(val("x", ElemType::I64, &[2, 1, 3])), Some(const_val("axes", &axes))],
        vec![val("s", ElemType::I64, &[2, 3])],
        vec![],
    );
    let flatten = node(
        "Flatten",
        13,
        vec![Some(val("s", ElemType::I64, &[2, 3]))],
        vec![val("f", ElemType::I64, &[1, 6])],
        vec![("axis", Attr::Int(0))],
    );
    let got = run_graph(&[squeeze, flatten], &[("x", &x)], &[], &["f", "s"]).unwrap();
    assert_eq!(got[0].shape, vec![1, 6]);
    assert_eq!(got[0].data, x.data);
    assert_eq!(got[1].shape, vec![2, 3]);
}

#[test]
fn reshape_feeds_a_product() {
    let x = T::f32(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let w = T::f32(&[3, 2], &[1.0, 0.0, 0.0, 1.0, 1.0, 1.0]);
    let shape = T::i64(&[2], &[3, 2]);
    let reshape = node(
        "Reshape",
        14,
        vec![Some(val("w", ElemType::F32, &[3, 2])), Some(const_val("shape", &shape))],
        vec![val("w2", ElemType::F32, &[3, 2])],
        vec![],
    );
    let matmul = node(
        "MatMul",
        13,
        vec![Some(val("x", ElemType::F32, &[2, 3])), Some(val("w2", ElemType::F32, &[3, 2]))],
        vec![val("y", ElemType::F32, &[2, 2])],
        vec![],
    );
    let got = run_graph(&[reshape, matmul], &[("x", &x)], &[("w", &w)], &["y"]).unwrap();
    assert_eq!(got[0].values(), vec![4.0, 5.0, 10.0, 11.0]);
}
