"""Conv through the real ONNX Runtime on our EP (CPU fallback disabled) against the CPU EP: a randomized sweep
over the attribute space, the Whisper frontend, grouped/depthwise, fused Relu, fp16, the 1-D option, and the
conv_algorithm option (the implicit GEMM forced)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

import models
import seeds

RNG = seeds.rng()


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


def whisper_frontend(dtype):
    """Whisper's conv frontend: conv1 (80→384, k3 p1) with a fused Relu, then conv2 (384→384, k3 s2 p1)."""
    w1 = (RNG.standard_normal((384, 80, 3)) * 0.1).astype(dtype)
    w2 = (RNG.standard_normal((384, 384, 3)) * 0.05).astype(dtype)
    b1, b2 = RNG.standard_normal(384).astype(dtype), RNG.standard_normal(384).astype(dtype)
    nodes = [
        helper.make_node("Conv", ["X", "W1", "B1"], ["c1"], pads=[1, 1], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "W2", "B2"], ["Y"], pads=[1, 1], strides=[2], name="conv2"),
    ]
    inits = [numpy_helper.from_array(v, k) for k, v in dict(W1=w1, B1=b1, W2=w2, B2=b2).items()]
    return models.finish(nodes, [models.tensor("X", dtype, [1, 80, 3000])], [models.tensor("Y", dtype, None)], inits)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_whisper_frontend(make_session, run_cpu, dtype):
    model = whisper_frontend(dtype)
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


@pytest.mark.parametrize("i", range(8))
def test_implicit_gemm_random_convs(make_session, run_cpu, i):
    rng = np.random.default_rng(RNG.integers(1 << 62))
    n, c, m, size, k, attrs = random_case(rng)
    w = rng.standard_normal([m, c // attrs["group"]] + k).astype(np.float32)
    b = rng.standard_normal(m).astype(np.float32) if rng.random() < 0.7 else None
    model = conv_model([n, c] + size, w, b, **attrs)
    x = rng.standard_normal([n, c] + size).astype(np.float32)
    check(make_session, run_cpu, model, x, options={"conv_algorithm": "implicit"})


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_implicit_gemm_whisper_and_2d(make_session, run_cpu, dtype):
    model = whisper_frontend(dtype)
    x = RNG.standard_normal((1, 80, 3000)).astype(dtype)
    check(make_session, run_cpu, model, x, dtype, {"conv_algorithm": "implicit"})
    # An RGB stem (reduction length 27, not a multiple of 4), batch 2, asymmetric pads, stride 2.
    rgb = conv_model([2, 3, 33, 31], RNG.standard_normal((16, 3, 3, 3)), RNG.standard_normal(16), dtype, "Relu", pads=[1, 0, 2, 1], strides=[2, 2])
    check(make_session, run_cpu, rgb, RNG.standard_normal((2, 3, 33, 31)).astype(dtype), dtype, {"conv_algorithm": "implicit"})


def _conv_plan_log(capfd, ep_devices, options, model, feeds):
    so = ort.SessionOptions()
    so.log_severity_level = 1
    so.add_provider_for_devices(ep_devices, options)
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    sess = ort.InferenceSession(model.SerializeToString(), sess_options=so, enable_fallback=0)
    capfd.readouterr()
    out = sess.run(None, feeds)[0]
    del sess
    return out, [line for line in capfd.readouterr().err.splitlines() if "Conv 'conv'" in line]


@pytest.mark.parametrize(
    "algorithm,expected",
    [("auto", "Im2colGemm"), ("im2col", "Im2colGemm"), ("implicit", "Implicit"), ("direct", "Direct")],
)
def test_conv_algorithm_changes_the_plan(ep_devices, run_cpu, capfd, algorithm, expected):
    model = conv_model([1, 8, 20, 20], RNG.standard_normal((12, 8, 3, 3)), RNG.standard_normal(12), pads=[1, 1, 1, 1])
    feeds = {"X": RNG.standard_normal((1, 8, 20, 20)).astype(np.float32)}
    out, lines = _conv_plan_log(capfd, ep_devices, {"conv_algorithm": algorithm}, model, feeds)
    np.testing.assert_allclose(out, run_cpu(model, feeds)[0], rtol=2e-4, atol=2e-4)
    assert lines and f"{expected} " in lines[0], lines
    if algorithm == "implicit":
        assert "_implicit" in lines[0], lines


def test_bad_conv_algorithm_fails_session_creation(make_session):
    model = conv_model([1, 4, 50], RNG.standard_normal((6, 4, 3)))
    with pytest.raises(Exception, match="conv_algorithm"):
        make_session(model, {"conv_algorithm": "winograd"})
