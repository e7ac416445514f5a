"""Conv through the real ONNX Runtime on our EP (CPU fallback disabled) against the CPU EP: a randomized sweep
over the attribute space, the Whisper frontend, grouped/depthwise, fused Relu, fp16, and the 1-D option."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper

import models

RNG = np.random.default_rng()


def conv_model(x_shape, w, b=None, dtype=np.float32, activation=None, **attrs):
    inits = [numpy_helper.from_array(w.astype(dtype), "W")]
    names = ["X", "W"]
    if b is not None:
        inits.append(numpy_helper.from_array(b.astype(dtype), "B"))
        names.append("B")
    out = "Y" if activation is None else "c"
    nodes = [helper.make_node("Conv", names, [out], name="conv", **attrs)]
    if activation == "Relu":
        nodes.append(helper.make_node("Relu", ["c"], ["Y"], name="relu"))
    return models.finish(nodes, [models.tensor("X", dtype, list(x_shape))], [models.tensor("Y", dtype, None)], inits)


def check(make_session, run_cpu, model, x, dtype=np.float32, options=None):
    feeds = {"X": x}
    got = make_session(model, options).run(None, feeds)[0]
    want = run_cpu(model, feeds)[0]
    assert got.shape == want.shape
    tol = 2e-2 if dtype == np.float16 else 2e-4
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


def random_case(rng):
    one_d = rng.random() < 0.5
    nd = 1 if one_d else 2
    group = int(rng.choice([1, 1, 2, 3]))
    cpg = int(rng.integers(1, 6))
    c = group * cpg
    depthwise = rng.random() < 0.2
    if depthwise:
        group, c = c, c
    m = group * int(rng.integers(1, 5))
    k = [int(rng.integers(1, 8)) for _ in range(nd)]
    stride = [int(rng.integers(1, 4)) for _ in range(nd)]
    dil = [int(rng.integers(1, 3)) for _ in range(nd)]
    size = [int(rng.integers(1, 300 if one_d else 40)) + (k[i] - 1) * dil[i] for i in range(nd)]
    auto_pad = str(rng.choice(["NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"]))
    attrs = dict(strides=stride, dilations=dil, group=group)
    if auto_pad == "NOTSET":
        attrs["pads"] = [int(rng.integers(0, k[i])) for i in range(nd)] + [int(rng.integers(0, k[i])) for i in range(nd)]
    else:
        attrs["auto_pad"] = auto_pad
    if auto_pad.startswith("SAME"):
        attrs["dilations"] = [1] * nd  # ORT's CPU EP rejects SAME with dilation > 1
    n = int(rng.choice([1, 3]))
    return n, c, m, size, k, attrs


@pytest.mark.parametrize("i", range(40))
def test_random_conv_sweep(make_session, run_cpu, i):
    rng = np.random.default_rng(RNG.integers(1 << 62))
    n, c, m, size, k, attrs = random_case(rng)
    w = rng.standard_normal([m, c // attrs["group"]] + k).astype(np.float32)
    b = rng.standard_normal(m).astype(np.float32) if rng.random() < 0.7 else None
    model = conv_model([n, c] + size, w, b, activation="Relu" if rng.random() < 0.3 else None, **attrs)
    check(make_session, run_cpu, model, rng.standard_normal([n, c] + size).astype(np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_whisper_frontend(make_session, run_cpu, dtype):
    w1 = (RNG.standard_normal((384, 80, 3)) * 0.1).astype(dtype)
    w2 = (RNG.standard_normal((384, 384, 3)) * 0.05).astype(dtype)
    b1, b2 = RNG.standard_normal(384).astype(dtype), RNG.standard_normal(384).astype(dtype)
    nodes = [
        helper.make_node("Conv", ["X", "W1", "B1"], ["c1"], pads=[1, 1], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "W2", "B2"], ["Y"], pads=[1, 1], strides=[2], name="conv2"),
    ]
    inits = [numpy_helper.from_array(v, k) for k, v in dict(W1=w1, B1=b1, W2=w2, B2=b2).items()]
    model = models.finish(nodes, [models.tensor("X", dtype, [1, 80, 3000])], [models.tensor("Y", dtype, None)], inits)
    check(make_session, run_cpu, model, RNG.standard_normal((1, 80, 3000)).astype(dtype), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_depthwise_and_pointwise_2d(make_session, run_cpu, dtype):
    c = 32
    dw = conv_model([1, c, 57, 55], RNG.standard_normal((c, 1, 3, 3)), RNG.standard_normal(c), dtype, pads=[1, 1, 1, 1], group=c)
    check(make_session, run_cpu, dw, RNG.standard_normal((1, c, 57, 55)).astype(dtype), dtype)
    pw = conv_model([2, c, 13, 11], RNG.standard_normal((67, c, 1, 1)), None, dtype, "Relu")
    check(make_session, run_cpu, pw, RNG.standard_normal((2, c, 13, 11)).astype(dtype), dtype)


def test_conv1d_option_off_declines_1d(make_session, run_cpu):
    model = conv_model([1, 4, 50], RNG.standard_normal((6, 4, 3)))
    with pytest.raises(Exception):
        make_session(model, {"conv1d_as_conv2d": "0"})
    x = RNG.standard_normal((1, 4, 50)).astype(np.float32)
    got = make_session(model, {"conv1d_as_conv2d": "0"}, fallback=True).run(None, {"X": x})[0]
    np.testing.assert_allclose(got, run_cpu(model, {"X": x})[0], rtol=1e-4, atol=1e-4)


def test_3d_conv_is_declined(make_session):
    model = conv_model([1, 2, 4, 4, 4], RNG.standard_normal((3, 2, 2, 2, 2)))
    with pytest.raises(Exception):
        make_session(model)
