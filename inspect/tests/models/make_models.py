#!/usr/bin/env python3
"""Writes the small models of the inspector's placement goldens and bad-file tests (run from the repository root:
`.venv/bin/python inspect/tests/models/make_models.py`). Weights come from fixed seeds, so the files are
reproducible; every model is saved after ONNX shape inference, so it declares the types and shapes ONNX Runtime
infers when it loads it."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "tests"))
import models  # noqa: E402  (tests/models.py: the end-to-end tests' model builders)

F = TensorProto.FLOAT


def weight(rng, name, shape):
    return numpy_helper.from_array((rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32), name)


def finish(nodes, inputs, outputs, inits, opset=17):
    model = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, inits),
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return onnx.shape_inference.infer_shapes(model)


def mlp():
    """X[batch, 24] -> MatMul + Add + Relu -> MatMul + Add -> Softmax; the batch is symbolic."""
    rng = np.random.default_rng(1)
    inits = [weight(rng, "w1", (24, 48)), weight(rng, "b1", (48,)), weight(rng, "w2", (48, 10)), weight(rng, "b2", (10,))]
    nodes = [
        helper.make_node("MatMul", ["X", "w1"], ["h1"], "fc1"),
        helper.make_node("Add", ["h1", "b1"], ["h2"], "fc1_bias"),
        helper.make_node("Relu", ["h2"], ["h3"], "relu"),
        helper.make_node("MatMul", ["h3", "w2"], ["h4"], "fc2"),
        helper.make_node("Add", ["h4", "b2"], ["h5"], "fc2_bias"),
        helper.make_node("Softmax", ["h5"], ["Y"], "softmax", axis=-1),
    ]
    return finish(nodes, [helper.make_tensor_value_info("X", F, ["batch", 24])],
                  [helper.make_tensor_value_info("Y", F, ["batch", 10])], inits)


def whisper_frontend():
    """tools/run_model.py's sample at a small size: Conv1d + Relu, Conv1d s2 + Relu, Transpose, MatMul + Relu,
    MatMul + bias."""
    rng = np.random.default_rng(2)
    d_in, d, ff, frames = 16, 32, 64, 50
    inits = [weight(rng, "conv1.w", (d, d_in, 3)), weight(rng, "conv1.b", (d,)), weight(rng, "conv2.w", (d, d, 3)),
             weight(rng, "conv2.b", (d,)), weight(rng, "fc1.w", (d, ff)), weight(rng, "fc2.w", (ff, d)),
             weight(rng, "fc2.b", (d,))]
    nodes = [
        helper.make_node("Conv", ["X", "conv1.w", "conv1.b"], ["c1"], "conv1", kernel_shape=[3], pads=[1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], "relu1"),
        helper.make_node("Conv", ["r1", "conv2.w", "conv2.b"], ["c2"], "conv2", kernel_shape=[3], pads=[1, 1], strides=[2]),
        helper.make_node("Relu", ["c2"], ["r2"], "relu2"),
        helper.make_node("Transpose", ["r2"], ["t"], "transpose", perm=[0, 2, 1]),
        helper.make_node("MatMul", ["t", "fc1.w"], ["m1"], "fc1"),
        helper.make_node("Relu", ["m1"], ["r3"], "relu3"),
        helper.make_node("MatMul", ["r3", "fc2.w"], ["m2"], "fc2"),
        helper.make_node("Add", ["m2", "fc2.b"], ["Y"], "fc2_bias"),
    ]
    return finish(nodes, [helper.make_tensor_value_info("X", F, [1, d_in, frames])],
                  [helper.make_tensor_value_info("Y", F, [1, frames // 2, d])], inits)


def convnet():
    """Conv 3->8 + Relu, MaxPool (not an op of ours), depthwise Conv + Relu, pointwise Conv, GlobalAveragePool,
    Flatten, Gemm 16->10."""
    rng = np.random.default_rng(3)
    inits = [weight(rng, "c1.w", (8, 3, 3, 3)), weight(rng, "c1.b", (8,)), weight(rng, "dw.w", (8, 1, 3, 3)),
             weight(rng, "pw.w", (16, 8, 1, 1)), weight(rng, "fc.w", (16, 10)), weight(rng, "fc.b", (10,))]
    nodes = [
        helper.make_node("Conv", ["X", "c1.w", "c1.b"], ["a1"], "conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["a1"], ["a2"], "relu1"),
        helper.make_node("MaxPool", ["a2"], ["a3"], "pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["a3", "dw.w"], ["a4"], "depthwise", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=8),
        helper.make_node("Relu", ["a4"], ["a5"], "relu2"),
        helper.make_node("Conv", ["a5", "pw.w"], ["a6"], "pointwise", kernel_shape=[1, 1]),
        helper.make_node("GlobalAveragePool", ["a6"], ["a7"], "gap"),
        helper.make_node("Flatten", ["a7"], ["a8"], "flatten"),
        helper.make_node("Gemm", ["a8", "fc.w", "fc.b"], ["Y"], "fc"),
    ]
    return finish(nodes, [helper.make_tensor_value_info("X", F, [2, 3, 18, 18])],
                  [helper.make_tensor_value_info("Y", F, [2, 10])], inits)


def transformer():
    """tests/models.py's BERT encoder, one post-LN layer, small: embeddings (Gather), the extended attention mask,
    attention, MLP with erf GELU, the pooler."""
    params = models.Params(np.random.default_rng(4))
    m = models.bert_encoder(params, batch=1, seq=7, d=16, heads=2, ffn=32, layers=1, vocab=20, max_positions=8)
    return onnx.shape_inference.infer_shapes(m)


def transformer_f16():
    """The same block in float16 (declined where f16 is off or the device lacks it)."""
    params = models.Params(np.random.default_rng(4))
    m = models.bert_encoder(params, dtype=np.float16, batch=1, seq=7, d=16, heads=2, ffn=32, layers=1, vocab=20,
                            max_positions=8)
    return onnx.shape_inference.infer_shapes(m)


def cycle():
    """Two Relus reading each other's output: ONNX Runtime refuses it."""
    nodes = [helper.make_node("Add", ["X", "b"], ["a"], "first"), helper.make_node("Relu", ["a"], ["b"], "second")]
    model = helper.make_model(helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", F, [2])],
                                                [helper.make_tensor_value_info("a", F, [2])]),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def unknown_opset():
    model = finish([helper.make_node("Relu", ["X"], ["Y"], "relu")], [helper.make_tensor_value_info("X", F, [2])],
                   [helper.make_tensor_value_info("Y", F, [2])], [])
    model.opset_import[0].version = 99
    return model


def external():
    """A MatMul whose weight lives in `external.bin` (written next to it); `missing_external.onnx` names a file that
    does not exist."""
    rng = np.random.default_rng(5)
    w = weight(rng, "w", (8, 4))
    model = finish([helper.make_node("MatMul", ["X", "w"], ["Y"], "mm")], [helper.make_tensor_value_info("X", F, [3, 8])],
                   [helper.make_tensor_value_info("Y", F, [3, 4])], [w])
    (HERE / "external.bin").unlink(missing_ok=True)  # onnx appends to an existing file
    onnx.save_model(model, HERE / "external.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
                    location="external.bin", size_threshold=0)
    missing = onnx.load(HERE / "external.onnx", load_external_data=False)
    for e in missing.graph.initializer[0].external_data:
        if e.key == "location":
            e.value = "missing.bin"
    onnx.save_model(missing, HERE / "bad" / "missing_external.onnx")
    (HERE / "external.bin").chmod(0o644)


def main():
    (HERE / "bad").mkdir(exist_ok=True)
    for name, build in [("mlp", mlp), ("whisper_frontend", whisper_frontend), ("convnet", convnet),
                        ("transformer", transformer), ("transformer_f16", transformer_f16)]:
        model = build()
        onnx.checker.check_model(model)
        onnx.save_model(model, HERE / f"{name}.onnx")
    bad = HERE / "bad"
    onnx.save_model(cycle(), bad / "cycle.onnx")
    onnx.save_model(unknown_opset(), bad / "unknown_opset.onnx")
    external()


if __name__ == "__main__":
    main()
