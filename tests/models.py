"""Small ONNX models built with onnx.helper for the end-to-end tests."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
NP_TO_ONNX = {
    np.float32: TensorProto.FLOAT,
    np.float16: TensorProto.FLOAT16,
    np.int32: TensorProto.INT32,
    np.int64: TensorProto.INT64,
}


def elem(dtype) -> int:
    return NP_TO_ONNX[np.dtype(dtype).type]


def finish(nodes, inputs, outputs, initializers=(), opset=OPSET):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def tensor(name, dtype, shape):
    return helper.make_tensor_value_info(name, elem(dtype), shape)


def matmul(a_shape, b_shape, dtype=np.float32, b_value=None, dims=None):
    """Y = A @ B. With `b_value`, B is a constant initializer; `dims` overrides declared shapes."""
    a_decl, b_decl = dims or (a_shape, b_shape)
    inputs = [tensor("A", dtype, a_decl)]
    inits = []
    if b_value is None:
        inputs.append(tensor("B", dtype, b_decl))
    else:
        inits.append(numpy_helper.from_array(b_value.astype(dtype), "B"))
    node = helper.make_node("MatMul", ["A", "B"], ["Y"], name="matmul")
    return finish([node], inputs, [tensor("Y", dtype, None)], inits)


def gemm(a_shape, b_shape, c_shape, dtype=np.float32, c_value=None, **attrs):
    """Y = alpha·op(A)·op(B) + beta·C with C an input (or a constant when `c_value` is given, or absent)."""
    inputs = [tensor("A", dtype, a_shape), tensor("B", dtype, b_shape)]
    names = ["A", "B"]
    inits = []
    if c_value is not None:
        inits.append(numpy_helper.from_array(c_value.astype(dtype), "C"))
        names.append("C")
    elif c_shape is not None:
        inputs.append(tensor("C", dtype, c_shape))
        names.append("C")
    node = helper.make_node("Gemm", names, ["Y"], name="gemm", **attrs)
    return finish([node], inputs, [tensor("Y", dtype, None)], inits)


def mlp(batch_shape, widths, dtype=np.float32, rng=None, activation="Relu", clip=(-0.5, 0.5)):
    """X[batch…, widths[0]] → (MatMul W_i, Add b_i, activation) per layer. 3-D inputs keep ORT from turning
    MatMul+Add into Gemm, so the EP's own Add/Relu/Clip fusion runs."""
    rng = rng or np.random.default_rng()
    nodes, inits = [], []
    prev = "X"
    last = len(widths) - 2
    for i, (k, n) in enumerate(zip(widths[:-1], widths[1:])):
        inits.append(numpy_helper.from_array((rng.standard_normal((k, n)) / np.sqrt(k)).astype(dtype), f"W{i}"))
        inits.append(numpy_helper.from_array(rng.standard_normal((n,)).astype(dtype), f"b{i}"))
        nodes.append(helper.make_node("MatMul", [prev, f"W{i}"], [f"m{i}"], name=f"matmul{i}"))
        out = "Y" if i == last else f"h{i}"
        nodes.append(helper.make_node("Add", [f"m{i}", f"b{i}"], [out if activation is None else f"a{i}"], name=f"add{i}"))
        if activation == "Relu":
            nodes.append(helper.make_node("Relu", [f"a{i}"], [out], name=f"relu{i}"))
        elif activation == "Clip":
            lo, hi = f"lo{i}", f"hi{i}"
            inits.append(numpy_helper.from_array(np.array(clip[0], dtype=dtype), lo))
            inits.append(numpy_helper.from_array(np.array(clip[1], dtype=dtype), hi))
            nodes.append(helper.make_node("Clip", [f"a{i}", lo, hi], [out], name=f"clip{i}"))
        prev = out
    x = tensor("X", dtype, list(batch_shape) + [widths[0]])
    return finish(nodes, [x], [tensor("Y", dtype, None)], inits)
