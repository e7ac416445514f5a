"""Convolutional networks entirely on our EP (CPU fallback disabled) against the CPU EP: a reduced-width
ResNet-like net (stem, MaxPool, residual blocks, BatchNormalization, AveragePool, GlobalAveragePool, Flatten, Gemm)
a MobileNetV3-like net (depthwise convs, HardSwish, a squeeze-excite block with HardSigmoid, PRelu, Mish,
Softplus, Elu, Selu, GlobalMaxPool) and a small UNet (GroupNorm, SiLU, strided-conv downsampling, Resize
upsampling and ConvTranspose, Concat skips, reflect Pad, InstanceNormalization), in fp32 and fp16. The fp16 reference is the fp32 model on the CPU EP over the
same (fp16-rounded) weights and inputs."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

import models

OPSET = 18
pytestmark = pytest.mark.smoke  # about a second; also run on the oldest supported ONNX Runtime


class Net:
    """Builds a graph node by node; weights are random and kept in fp32 (rounded to the model's dtype)."""

    def __init__(self, dtype, rng):
        self.dtype, self.rng = dtype, rng
        self.nodes, self.inits, self.count = [], [], 0

    def name(self, op):
        self.count += 1
        return f"{op.lower()}{self.count}"

    def weight(self, shape, scale=1.0, positive=False):
        v = self.rng.standard_normal(shape) * scale
        v = np.abs(v) + 0.5 if positive else v
        name = self.name("w")
        self.inits.append(numpy_helper.from_array(v.astype(np.float16).astype(self.dtype), name))
        return name

    def op(self, op, inputs, **attrs):
        out = self.name(op)
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def conv(self, x, c_in, c_out, k, stride=1, group=1, act="Relu"):
        w = self.weight([c_out, c_in // group, k, k], scale=(2.0 / (c_in // group * k * k)) ** 0.5)
        y = self.op("Conv", [x, w, self.weight([c_out], 0.1)], pads=[k // 2] * 4, strides=[stride] * 2, group=group)
        return self.op(act, [y]) if act else y

    def batch_norm(self, x, c):
        args = [self.weight([c], 0.2, positive=True), self.weight([c], 0.1), self.weight([c], 0.1)]
        return self.op("BatchNormalization", [x, *args, self.weight([c], 0.2, positive=True)], epsilon=1e-3)

    def constant(self, values, dtype):
        name = self.name("c")
        self.inits.append(numpy_helper.from_array(np.asarray(values, dtype=dtype), name))
        return name

    def finish(self, y, x_shape, opset=OPSET):
        model = models.finish(
            self.nodes,
            [models.tensor("X", self.dtype, list(x_shape))],
            [models.tensor(y, self.dtype, None)],
            self.inits,
            opset=opset,
        )
        model.ir_version = 10  # opset 21 needs IR 10
        return model


def with_value_shapes(model, x_shape):
    """The model with every intermediate's shape declared (ONNX and ONNX Runtime infer none past a
    GroupNormalization, a function op), taken from one CPU EP run of the fp32 graph."""
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    names = [o for n in probe.graph.node for o in n.output]
    del probe.graph.output[:]
    probe.graph.output.extend(helper.make_empty_tensor_value_info(n) for n in names)
    for init in probe.graph.initializer:
        if init.data_type == onnx.TensorProto.FLOAT16:
            init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init).astype(np.float32), init.name))
    probe.graph.input[0].type.tensor_type.elem_type = onnx.TensorProto.FLOAT
    outs = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"X": np.zeros(x_shape, np.float32)}
    )
    elem = model.graph.input[0].type.tensor_type.elem_type
    model.graph.value_info.extend(
        helper.make_tensor_value_info(n, elem, list(o.shape)) for n, o in zip(names[:-1], outs[:-1])
    )
    return model


def resnet_like(dtype, seed, width=8, image=29):
    net = Net(dtype, np.random.default_rng(seed))
    x = net.conv("X", 3, width, 7, stride=2)
    x = net.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    for c_in, c_out, stride in [(width, width, 1), (width, 2 * width, 2)]:
        y = net.conv(x, c_in, c_out, 3, stride=stride)
        y = net.conv(y, c_out, c_out, 3, act=None)
        skip = x if stride == 1 else net.conv(x, c_in, c_out, 1, stride=stride, act=None)
        x = net.op("Relu", [net.op("Add", [y, skip])])
    # A BatchNormalization ONNX Runtime cannot fold (no Conv before it), an AveragePool counting its padding.
    x = net.batch_norm(x, 2 * width)
    x = net.op("AveragePool", [x], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1, ceil_mode=1)
    x = net.op("Flatten", [net.op("GlobalAveragePool", [x])])
    y = net.op("Gemm", [x, net.weight([10, 2 * width], 0.3), net.weight([10], 0.1)], transB=1)
    return net.finish(y, [2, 3, image, image])


def mobilenet_like(dtype, seed, width=8, image=23):
    net = Net(dtype, np.random.default_rng(seed))
    x = net.conv("X", 3, width, 3, stride=2, act="HardSwish")
    # Depthwise-separable block with squeeze-excite.
    y = net.conv(x, width, width, 3, group=width, act="HardSwish")
    s = net.op("GlobalAveragePool", [y])
    s = net.conv(s, width, width // 2, 1)
    s = net.conv(s, width // 2, width, 1, act="HardSigmoid")
    y = net.op("Mul", [y, s])
    y = net.conv(y, width, width, 1, act=None)
    x = net.op("Add", [x, y])
    x = net.op("PRelu", [x, net.weight([width, 1, 1], 0.3)])
    x = net.op("Mish", [net.conv(x, width, 2 * width, 3, act=None)])
    x = net.op("Elu", [net.op("Softplus", [x])], alpha=0.7)
    x = net.op("Selu", [net.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)])
    x = net.op("Flatten", [net.op("GlobalMaxPool", [x])])
    return net.finish(x, [2, 3, image, image])


def unet_like(dtype, seed, width=8, image=20, declare_shapes=True):
    net = Net(dtype, np.random.default_rng(seed))

    def block(x, c_in, c_out):
        y = net.conv(x, c_in, c_out, 3, act=None)
        g = net.op("GroupNormalization", [y, net.weight([c_out], 0.3, positive=True), net.weight([c_out], 0.1)],
                   num_groups=2, epsilon=1e-5)
        return net.op("Mul", [g, net.op("Sigmoid", [g])])  # SiLU

    x0 = block("X", 3, width)
    x1 = block(net.conv(x0, width, width, 3, stride=2, act=None), width, 2 * width)
    x2 = block(net.conv(x1, 2 * width, 2 * width, 3, stride=2, act=None), 2 * width, 2 * width)
    no_roi = ""
    up = net.op("Resize", [x2, no_roi, net.constant([1, 1, 2, 2], np.float32)], mode="nearest")
    w = net.weight([2 * width, 2 * width, 2, 2], 0.2)
    up = net.op("Add", [up, net.op("ConvTranspose", [x2, w, net.weight([2 * width], 0.1)], strides=[2, 2])])
    y = block(net.op("Concat", [up, x1], axis=1), 4 * width, width)
    up = net.op("Resize", [y, no_roi, net.constant([1, 1, 2, 2], np.float32)], mode="linear")
    y = net.op("Concat", [up, x0], axis=1)
    y = net.op("Pad", [y, net.constant([0, 0, 1, 1, 0, 0, 1, 1], np.int64)], mode="reflect")
    w = net.weight([3, 2 * width, 3, 3], 0.2)
    y = net.op("Conv", [y, w])
    y = net.op("InstanceNormalization", [y, net.weight([3], 0.3, positive=True), net.weight([3], 0.1)])
    model = net.finish(y, [2, 3, image, image], opset=21)
    return with_value_shapes(model, [2, 3, image, image]) if declare_shapes else model


@pytest.mark.parametrize("build", [resnet_like, mobilenet_like, unet_like])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_cnn_runs_entirely_on_our_ep(make_session, run_cpu, build, dtype):
    seed = int(np.random.default_rng().integers(1 << 31))
    rng = np.random.default_rng(seed)
    model = build(dtype, seed)
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    x = rng.standard_normal(shape).astype(np.float16)
    got = make_session(model).run(None, {"X": x.astype(dtype)})[0]
    want = run_cpu(build(np.float32, seed), {"X": x.astype(np.float32)})[0]
    assert got.shape == want.shape
    tol = 3e-2 if dtype == np.float16 else 1e-4
    scale = np.abs(want).max()
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol * scale, err_msg=f"seed {seed}")


def test_values_without_an_inferred_shape_are_unknown_not_scalars(make_session, run_cpu):
    # Past GroupNormalization-21 (a function op) ORT infers no shapes: those values must read as unknown, never
    # as 0-D tensors (which declined the Conv after it as "0-D"); every node is ours (CPU fallback disabled) and
    # the result matches the CPU EP.
    seed = int(np.random.default_rng().integers(1 << 31))
    model = unet_like(np.float32, seed, declare_shapes=False)
    x = np.random.default_rng(seed).standard_normal([2, 3, 20, 20]).astype(np.float32)
    got = make_session(model).run(None, {"X": x})[0]
    want = run_cpu(model, {"X": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max(), err_msg=f"seed {seed}")
