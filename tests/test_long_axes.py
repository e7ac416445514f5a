"""Reductions, Softmax/LogSoftmax and ArgMax/ArgMin along long axes, and pools over large windows, through ONNX
Runtime with every node ours (CPU fallback disabled), against float64 (reductions) or the CPU EP: a long axis that is
not the last (its elements strided), a long contiguous one with few outputs, and windows of up to 90000 positions.
Their kernels walked each output's elements in one invocation; llvmpipe stops an invocation's loops after 65535
iterations, so an axis of 100000 came out wrong there (a sum of the first 65535 rows, a window's maximum missed), and
on a GPU three outputs ran on three invocations. Now a workgroup shares each output's walk, and long reductions split
over several workgroups and a last pass (docs/OPS.md)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from dispatch_profile import run_dispatches
from test_llm_ops import OURS, new_seed

ELEMS = {np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16}
REDUCTIONS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceSumSquare", "ReduceL1", "ReduceL2",
              "ReduceProd"]


def model(op, dtype, shape, axes=None, out_type=None, **attrs):
    inputs, inits = ["x"], []
    if axes is not None:
        inits.append(helper.make_tensor("axes", TensorProto.INT64, [len(axes)], axes))
        inputs.append("axes")
    node = helper.make_node(op, inputs, ["y"], **attrs)
    graph = helper.make_graph([node], "long", [helper.make_tensor_value_info("x", ELEMS[dtype], list(shape))],
                              [helper.make_tensor_value_info("y", out_type or ELEMS[dtype], None)], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 9
    return m


def data(op, dtype, shape, axis, rng):
    """Values in [0, 1) (sums without cancellation), with the extreme at the far end of the axis for max and min,
    and near 1 for products."""
    x = rng.random(shape)
    if op == "ReduceProd":
        x = 1 + 1e-4 * (x - 0.5)
    last = [slice(None)] * len(shape)
    last[axis] = -1
    if op == "ReduceMax":
        x[tuple(last)] = 2.0
    if op == "ReduceMin":
        x[tuple(last)] = -1.0
    return x.astype(dtype)


def reference(op, x, axis):
    """The reduction in float64 (the CPU EP's sums of 100000 float32 values are themselves 1e-5 off)."""
    x = x.astype(np.float64)
    return {
        "ReduceSum": lambda: x.sum(axis), "ReduceMean": lambda: x.mean(axis), "ReduceMax": lambda: x.max(axis),
        "ReduceMin": lambda: x.min(axis), "ReduceSumSquare": lambda: (x * x).sum(axis),
        "ReduceL1": lambda: np.abs(x).sum(axis), "ReduceL2": lambda: np.sqrt((x * x).sum(axis)),
        "ReduceProd": lambda: x.prod(axis),
    }[op]()


@pytest.mark.parametrize("op", REDUCTIONS)
@pytest.mark.parametrize("shape,axis", [((100_000, 3), 0), ((3, 200_000), 1), ((3, 200_002), 1), ((70_000, 2, 3), 0)])
def test_long_reductions_match_float64(make_session, op, shape, axis):
    seed = new_seed()
    x = data(op, np.float32, shape, axis, np.random.default_rng(seed))
    m = model(op, np.float32, shape, axes=[axis], keepdims=0)
    got = make_session(m, OURS).run(None, {"x": x})[0]
    # A product of n values rounds by up to n · 2^-24 of itself (llvmpipe's is 9e-4 off at 200000, the CPU EP's 1e-4).
    rtol = shape[axis] * 2.0**-24 if op == "ReduceProd" else 2e-6
    np.testing.assert_allclose(got, reference(op, x, axis), rtol=rtol, err_msg=f"seed {seed}")


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("shape,vector", [((32, 262_400), True), ((5, 70_002), False)])
def test_few_long_rows_spread_over_the_device(make_session, tmp_path, dtype, shape, vector):
    """Few contiguous rows split into chunks of about 8192 (32 rows of 262 400: 32 chunks each, loaded as vec4s),
    then a last pass; a row that is not whole vec4s walks its chunks element by element."""
    seed = new_seed()
    x = (data("ReduceSum", np.float32, shape, 1, np.random.default_rng(seed)) * 0.1).astype(dtype)  # f16 sums < 65504
    m = model("ReduceSum", dtype, shape, axes=[1], keepdims=0)
    got, ops = run_dispatches(make_session(m, OURS), {"x": x}, tmp_path)
    rtol = 2e-6 if dtype == np.float32 else 1e-3
    np.testing.assert_allclose(got[0].astype(np.float64), reference("ReduceSum", x, 1), rtol=rtol, err_msg=f"seed {seed}")
    wide = [o for o in ops if "_wide_part" in o]
    assert len(wide) == 1 and ("_wide_part_v4" in wide[0]) == vector, ops
    assert any("_final" in o for o in ops), ops


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("shape,axis", [((100_000, 3), 0), ((2, 700, 5), 1)])
def test_softmax_along_a_long_strided_axis_matches_cpu(make_session, run_cpu, op, dtype, shape, axis):
    seed = new_seed()
    x = (8 * np.random.default_rng(seed).standard_normal(shape)).astype(dtype)
    m = model(op, dtype, shape, axis=axis)
    got = make_session(m, OURS).run(None, {"x": x})[0].astype(np.float64)
    want = run_cpu(m, {"x": x})[0].astype(np.float64)
    if op == "Softmax":
        # Each column sums to 1; compare relative to the column's largest probability.
        scale = want.max(axis=axis, keepdims=True)
        err = np.abs(got - want) / scale
    else:
        err = np.abs(got - want) / np.maximum(np.abs(want), 1)
    assert err.max() <= (2e-3 if dtype == np.float16 else 1e-5), f"seed {seed}: {err.max()}"


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("shape,axis", [((100_000, 3), 0), ((2, 700, 5), 1)])
def test_arg_reductions_along_a_long_strided_axis_match_cpu(make_session, run_cpu, op, shape, axis):
    seed = new_seed()
    x = data("ReduceMax" if op == "ArgMax" else "ReduceMin", np.float32, shape, axis, np.random.default_rng(seed))
    m = model(op, np.float32, shape, out_type=TensorProto.INT64, axis=axis, keepdims=0)
    got = make_session(m, OURS).run(None, {"x": x})[0]
    np.testing.assert_array_equal(got, run_cpu(m, {"x": x})[0], err_msg=f"seed {seed}")


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
@pytest.mark.parametrize("shape,kernel", [((1, 2, 300, 300), [300, 300]), ((1, 1, 90_000), [90_000]),
                                          ((2, 3, 40, 30), [20, 15])])
def test_large_pool_windows_match_cpu(make_session, run_cpu, op, shape, kernel):
    """A window's extreme, or its one non-zero value, at its far end (the last position an invocation would reach)."""
    seed = new_seed()
    x = (np.random.default_rng(seed).random(shape) * (op == "MaxPool")).astype(np.float32)
    x[..., -1] = 5.0
    m = model(op, np.float32, shape, kernel_shape=kernel)
    got = make_session(m, OURS).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, run_cpu(m, {"x": x})[0], rtol=1e-5, err_msg=f"seed {seed}")
