"""NaN, infinities and signed zeros through the activations, alone and fused into a product's or a conv's store,
against ONNX Runtime's CPU EP: the same NaN positions, the same infinities, close values elsewhere.

A GPU driver may assume there is no NaN (Vulkan without SignedZeroInfNanPreserve, which WGSL cannot ask for) and
compile `select(x, 0, x < 0)` or a clamp as a hardware max/min, which returns the other operand for NaN: on an
H100, a product's fused Relu and Clip turned NaN into 0 or into a bound where llvmpipe kept it. These cases run
on whichever adapter the tests get (llvmpipe in CI, the real GPU on the device machine)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper

import models
from test_bad_input import assert_same

ALL = {"offload": "all"}
SPECIAL = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e30, -1e30, 0.5, -0.5, 3.0, -3.0, 7.0]

# op, attributes, extra initializer inputs (as a function of dtype)
ACTIVATIONS = [
    ("Relu", {}, []),
    ("LeakyRelu", {"alpha": 0.1}, []),
    ("HardSigmoid", {"alpha": 0.2, "beta": 0.5}, []),
    ("HardSwish", {}, []),
    ("Elu", {"alpha": 1.0}, []),
    ("Selu", {}, []),
    ("Sigmoid", {}, []),
    ("Tanh", {}, []),
    ("Softplus", {}, []),
    ("Clip", {}, [("lo", -1.0), ("hi", 2.0)]),
    ("Clip", {}, []),
    ("Abs", {}, []),
    ("Neg", {}, []),
]


def special_input(shape, dtype):
    """The special values first, then random values, in a shape that is not a tile multiple."""
    x = np.random.default_rng(7).uniform(-4, 4, size=int(np.prod(shape))).astype(dtype)
    with np.errstate(over="ignore"):  # ±1e30 is ±inf in float16
        x[: len(SPECIAL)] = np.array(SPECIAL).astype(dtype)
    return x.reshape(shape)


def act_id(case):
    op, _, extra = case
    return op + ("_bounds" if extra else "")


@pytest.mark.parametrize("shape", [(3, 37), (3, 40)], ids=["scalar_form", "vector_form"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("case", ACTIVATIONS, ids=[act_id(c) for c in ACTIVATIONS])
def test_activation_alone_keeps_special_values_like_cpu(make_session, run_cpu, case, dtype, shape):
    """Alone, in the elementwise kernel's scalar form (111 elements) and its vector form (120: whole groups)."""
    op, attrs, extra = case
    names = ["X"] + [n for n, _ in extra]
    inits = [numpy_helper.from_array(np.array(v, dtype), n) for n, v in extra]
    node = helper.make_node(op, names, ["Y"], **attrs)
    model = models.finish([node], [models.tensor("X", dtype, list(shape))], [models.tensor("Y", dtype, None)], inits)
    feeds = {"X": special_input(shape, dtype)}
    assert_same(make_session(model, ALL).run(None, feeds)[0], run_cpu(model, feeds)[0], dtype)


EPILOGUES = [c for c in ACTIVATIONS if c[0] in ("Relu", "LeakyRelu", "HardSigmoid", "HardSwish", "Clip")]


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("case", EPILOGUES, ids=[act_id(c) for c in EPILOGUES])
def test_product_epilogue_keeps_special_values_like_cpu(make_session, run_cpu, case, dtype):
    """MatMul → Add(bias) → activation, fused into the product's store (K and N not tile multiples). A NaN in a row
    of X makes that row NaN (NaN · 0 is NaN), which the activation must keep."""
    op, attrs, extra = case
    k, n = 40, 37
    rng = np.random.default_rng(5)
    nodes = [
        helper.make_node("MatMul", ["X", "W"], ["m"]),
        helper.make_node("Add", ["m", "B"], ["a"]),
        helper.make_node(op, ["a"] + [nm for nm, _ in extra], ["Y"], **attrs),
    ]
    inits = [numpy_helper.from_array(rng.uniform(-1, 1, (k, n)).astype(dtype), "W")]
    inits.append(numpy_helper.from_array(rng.uniform(-1, 1, n).astype(dtype), "B"))
    inits += [numpy_helper.from_array(np.array(v, dtype), nm) for nm, v in extra]
    model = models.finish(nodes, [models.tensor("X", dtype, [2, 9, k])], [models.tensor("Y", dtype, None)], inits)
    x = rng.uniform(-2, 2, (2, 9, k)).astype(dtype)
    x[0, 0, :] = np.nan
    x[1, 4, 7] = np.nan
    feeds = {"X": x}
    assert_same(make_session(model, ALL).run(None, feeds)[0], run_cpu(model, feeds)[0], dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("act", ["Relu", "Clip"])
def test_conv_epilogue_keeps_nan_like_cpu(make_session, run_cpu, act, dtype):
    """A 1×1 conv with an identity kernel and a bias, then the activation, fused into the conv's store."""
    c = 8
    w = np.eye(c, dtype=dtype).reshape(c, c, 1, 1)
    nodes = [helper.make_node("Conv", ["X", "W", "B"], ["y"]), helper.make_node(act, ["y", "lo", "hi"][: 1 if act == "Relu" else 3], ["Y"])]
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(np.zeros(c, dtype), "B")]
    inits += [numpy_helper.from_array(np.array(-1.0, dtype), "lo"), numpy_helper.from_array(np.array(2.0, dtype), "hi")]
    model = models.finish(nodes, [models.tensor("X", dtype, [1, c, 5, 7])], [models.tensor("Y", dtype, None)], inits)
    x = np.random.default_rng(3).uniform(-3, 3, size=(1, c, 5, 7)).astype(dtype)
    x[0, :, 0, 0] = np.nan
    x[0, 2, 1, :] = np.nan
    feeds = {"X": x}
    assert_same(make_session(model, ALL).run(None, feeds)[0], run_cpu(model, feeds)[0], dtype)


@pytest.mark.parametrize("op", ["Sin", "Cos", "SinOverX"])
def test_sin_and_cos_are_as_accurate_as_cpu(make_session, run_cpu, op):
    """Sin and Cos to a few f32 ulps (WGSL lets a driver's sin be exact only to 2^-11 absolutely: the NVIDIA
    driver's sin(x)/x near 0 was 1% off), on small arguments, multiples of π/2 and rotary-table positions."""
    rng = np.random.default_rng(11)
    x = np.concatenate(
        [
            rng.uniform(-1e-3, 1e-3, 200),
            rng.uniform(-10, 10, 200),
            np.arange(1, 60) * (np.pi / 2),
            rng.uniform(0, 16384, 200),
        ]
    ).astype(np.float32)
    x[x == 0] = 1e-7
    if op == "SinOverX":
        nodes = [helper.make_node("Sin", ["X"], ["s"]), helper.make_node("Div", ["s", "X"], ["Y"])]
    else:
        nodes = [helper.make_node(op, ["X"], ["Y"])]
    model = models.finish(nodes, [models.tensor("X", np.float32, [len(x)])], [models.tensor("Y", np.float32, None)])
    feeds = {"X": x}
    got = make_session(model, ALL).run(None, feeds)[0]
    want = run_cpu(model, feeds)[0]
    # Beyond a few ulps of the result, the reduced argument's rounding: 2^-24 of |x| · 2^-8.
    bound = 4 * np.finfo(np.float32).eps * np.abs(want) + 1e-9 * np.maximum(np.abs(x), 1)
    err = np.abs(got.astype(np.float64) - want)
    assert (err <= bound).all(), f"{op}: worst at x={x[np.argmax(err - bound)]}: {err.max():.3e}"
