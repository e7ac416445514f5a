"""Conv epilogue fusion in a real ONNX Runtime session: with ORT's own optimisations off (so its Conv+BatchNormalization
fold does not run first), a BatchNormalization after a Conv with constant weights folds into the Conv's weights and
bias and the activation after it runs in the Conv's store: no BatchNormalization step runs, and the result matches
the CPU EP (fp32 and fp16, CPU fallback disabled, shapes that are no tile multiples). HardSwish, HardSigmoid,
LeakyRelu, the exported SiLU (Sigmoid + Mul), the exported erf GELU (Whisper's frontend) and a residual Add also run in
the conv's store."""

from __future__ import annotations

import json
import os

import numpy as np
import onnxruntime as ort
import pytest

from conftest import model_arg
from test_cnn import Net

pytestmark = pytest.mark.smoke


def resnet_block(dtype, seed, width=6, image=13):
    """Conv → BN → Relu → Conv → BN → Add(skip) → Relu (ResNet's basic block), then a 1×1 Conv → BN."""
    net = Net(dtype, np.random.default_rng(seed))
    x = net.conv("X", 5, width, 3, act=None)
    y = net.op("Relu", [net.batch_norm(net.conv(x, width, width, 3, act=None), width)])
    y = net.batch_norm(net.conv(y, width, width, 3, act=None), width)
    x = net.op("Relu", [net.op("Add", [y, x])])
    x = net.batch_norm(net.conv(x, width, 2 * width, 1, act=None), 2 * width)
    return net.finish(x, [2, 5, image, image + 2])


def mobilenet_block(dtype, seed, width=6, image=11):
    """Conv → BN → Clip (ReLU6), depthwise Conv → BN → Relu, 1×1 Conv → BN."""
    net = Net(dtype, np.random.default_rng(seed))
    x = net.batch_norm(net.conv("X", 3, width, 3, stride=2, act=None), width)
    x = net.op("Clip", [x, net.constant(0, dtype), net.constant(6, dtype)])
    x = net.op("Relu", [net.batch_norm(net.conv(x, width, width, 3, group=width, act=None), width)])
    x = net.batch_norm(net.conv(x, width, 2 * width, 1, act=None), 2 * width)
    return net.finish(x, [2, 3, image, image + 4])


def activations_block(dtype, seed, width=6, image=11):
    """Conv → BN → HardSwish, Conv → SiLU (Sigmoid + Mul), depthwise Conv → HardSigmoid, Conv → BN → LeakyRelu."""
    net = Net(dtype, np.random.default_rng(seed))
    x = net.op("HardSwish", [net.batch_norm(net.conv("X", 3, width, 3, act=None), width)])
    y = net.conv(x, width, width, 3, act=None)
    x = net.op("Mul", [y, net.op("Sigmoid", [y])])
    x = net.conv(x, width, width, 3, group=width, act="HardSigmoid")
    x = net.op("LeakyRelu", [net.batch_norm(net.conv(x, width, 2 * width, 1, act=None), 2 * width)], alpha=0.2)
    return net.finish(x, [2, 3, image, image + 3])


def gelu(net, x, dtype):
    """The erf GELU as torch exports it: Div(x, √2) → Erf → Add(1) → Mul(x, ·) → Mul(0.5)."""
    e = net.op("Erf", [net.op("Div", [x, net.constant(np.sqrt(2.0), dtype)])])
    return net.op("Mul", [net.op("Mul", [x, net.op("Add", [e, net.constant(1.0, dtype)])]), net.constant(0.5, dtype)])


def gelu_block(dtype, seed, width=6, image=11):
    """Conv → GELU, depthwise Conv → GELU, Conv → BN → GELU."""
    net = Net(dtype, np.random.default_rng(seed))
    x = gelu(net, net.conv("X", 3, width, 3, act=None), dtype)
    x = gelu(net, net.conv(x, width, width, 3, group=width, act=None), dtype)
    x = gelu(net, net.batch_norm(net.conv(x, width, 2 * width, 1, act=None), 2 * width), dtype)
    return net.finish(x, [2, 3, image, image + 5])


def session(ep_devices, model):
    so = ort.SessionOptions()
    # offload=all: these blocks are small, and the offload rule leaves them to the CPU EP on a discrete GPU.
    so.add_provider_for_devices(ep_devices, {"offload": "all"})
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model_arg(model), sess_options=so, enable_fallback=0)


@pytest.mark.parametrize("build", [resnet_block, mobilenet_block, activations_block, gelu_block])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_batch_norm_folds_into_the_conv(ep_devices, run_cpu, build, dtype, tmp_path):
    seed = int(np.random.default_rng().integers(1 << 31))
    model = build(dtype, seed)
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float16)
    sess = session(ep_devices, model)
    path = tmp_path / "profile.jsonl"
    os.environ["ONNXRUNTIME_EP_WGPU_PROFILE"] = str(path)
    try:
        got = sess.run(None, {"X": x.astype(dtype)})[0]
    finally:
        del os.environ["ONNXRUNTIME_EP_WGPU_PROFILE"]
    steps = [json.loads(line) for line in path.read_text().splitlines()]
    ops = [s["ops"] for s in steps]
    assert not any(o.startswith("BatchNormalization") for o in ops), ops
    bns = sum(n.op_type == "BatchNormalization" for n in model.graph.node)
    assert sum(o.startswith("Conv+BatchNormalization") for o in ops) == bns, ops
    assert any(o.startswith("Conv+BatchNormalization+") for o in ops), ops  # with its activation
    assert len(steps) <= len(model.graph.node) - bns - 1, ops
    if build is resnet_block and dtype == np.float32:  # the residual Add between the BN and the Relu: in the store
        assert "Conv+BatchNormalization+Add+Relu" in ops, ops
        assert not any(o.startswith("Add") for o in ops), ops
    if build is resnet_block and dtype == np.float16:  # f16 (tensor cores): the residual Add stays a step
        assert "Add+Relu" in ops, ops
    if build is activations_block:  # every activation in the conv's store: one step per conv
        assert ops == ["Conv+BatchNormalization+HardSwish", "Conv+Sigmoid+Mul", "Conv+HardSigmoid",
                       "Conv+BatchNormalization+LeakyRelu"], ops
    if build is gelu_block:
        assert ops == ["Conv+Div+Erf+Add+Mul+Mul", "Conv+Div+Erf+Add+Mul+Mul",
                       "Conv+BatchNormalization+Div+Erf+Add+Mul+Mul"], ops
    want = run_cpu(build(np.float32, seed), {"X": x.astype(np.float32)})[0]
    tol = 3e-2 if dtype == np.float16 else 1e-4
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol * np.abs(want).max(),
                               err_msg=f"seed {seed}")
