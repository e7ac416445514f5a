"""The elementwise kernels' vector form (issue 13's streaming floor): an invocation computes 4 consecutive elements
(8 where the output and every input of its shape are f16), loading and storing whole vec4s, wherever the output
and the innermost broadcast dimension are whole multiples of that; other shapes keep one element per invocation.

Each case runs on our EP (CPU fallback disabled) against the CPU EP on fresh random data, with the dispatch profile
naming the kernel that ran, so a case meant for the vector form fails if the scalar one ran instead (and the other
way round)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper

import models
from dispatch_profile import run_dispatches
import seeds
from test_bad_input import assert_same

ALL = {"offload": "all"}


def chain(dtype, x_shape, b_shape):
    """Y = Relu((X + B) · X) · 0.5, with B broadcast onto X: one fused kernel."""
    half = numpy_helper.from_array(np.array(0.5, dtype), "half")
    nodes = [
        helper.make_node("Add", ["X", "B"], ["s"]),
        helper.make_node("Mul", ["s", "X"], ["p"]),
        helper.make_node("Relu", ["p"], ["r"]),
        helper.make_node("Mul", ["r", "half"], ["Y"]),
    ]
    ins = [models.tensor("X", dtype, x_shape), models.tensor("B", dtype, b_shape)]
    return models.finish(nodes, ins, [models.tensor("Y", dtype, None)], [half])


def widths(ops):
    """The elements per invocation of each elementwise dispatch that ran (1 for the scalar form)."""
    out = []
    for op in ops:
        if "[ew_" not in op:
            continue
        name = op.split("[ew_", 1)[1].split("]", 1)[0]
        out.append(int(name.rsplit("__w", 1)[1]) if "__w" in name else 1)
    return out


# x shape, b shape, expected width for f32, for f16
SHAPES = [
    ([6, 40], [6, 40], 4, 8),  # same shapes
    ([3, 12], [3, 12], 4, 1),  # 36 elements: whole vec4s, not whole groups of 8
    ([5, 7], [5, 7], 1, 1),  # 35 elements
    ([4, 6, 16], [16], 4, 8),  # a row broadcast (innermost stride 1)
    ([4, 6, 16], [4, 6, 1], 4, 8),  # a column broadcast (innermost stride 0)
    ([4, 6, 10], [10], 1, 1),  # 240 elements, but groups would straddle the rows
    ([3, 8], [1], 4, 8),  # one element
]


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("case", SHAPES, ids=[f"{c[0]}+{c[1]}" for c in SHAPES])
def test_a_fused_chain_takes_the_vector_form_where_shapes_allow(make_session, run_cpu, tmp_path, case, dtype):
    x_shape, b_shape, w32, w16 = case
    rng = seeds.rng()
    model = chain(dtype, x_shape, b_shape)
    feeds = {
        "X": rng.uniform(-2, 2, x_shape).astype(dtype),
        "B": rng.uniform(-2, 2, b_shape).astype(dtype),
    }
    sess = make_session(model, ALL)
    got, ops = run_dispatches(sess, feeds, tmp_path)
    assert_same(got[0], run_cpu(model, feeds)[0], dtype)
    assert widths(ops) == [w32 if dtype == np.float32 else w16], ops


@pytest.mark.parametrize(
    "op,src,dst,width",
    [
        ("Add", np.int32, np.int32, 4),
        ("Max", np.int32, np.int32, 4),
        ("Cast", np.float16, np.float32, 4),  # an f32 output: groups of 4
        ("Cast", np.float32, np.float16, 4),  # an f32 input of the output's shape: groups of 4
        ("Cast", np.int32, np.float16, 4),
        ("Cast", np.float32, np.int64, 1),  # i64 has no vector form
        ("Cast", np.float32, np.bool_, 1),  # nor bool
    ],
)
def test_types_take_the_vector_form_or_not(make_session, run_cpu, tmp_path, op, src, dst, width):
    rng = seeds.rng()
    shape = [5, 24]
    if op == "Cast":
        node = helper.make_node("Cast", ["A"], ["Y"], to=helper.np_dtype_to_tensor_dtype(np.dtype(dst)))
        ins = [models.tensor("A", src, shape)]
        feeds = {"A": rng.uniform(-50, 50, shape).astype(src)}
    else:
        node = helper.make_node(op, ["A", "B"], ["Y"])
        ins = [models.tensor("A", src, shape), models.tensor("B", src, shape)]
        feeds = {k: rng.integers(-1000, 1000, shape).astype(src) for k in ("A", "B")}
    model = models.finish([node], ins, [models.tensor("Y", dst, None)])
    got, ops = run_dispatches(make_session(model, ALL), feeds, tmp_path)
    want = run_cpu(model, feeds)[0]
    if np.issubdtype(np.dtype(dst), np.floating):
        assert_same(got[0], want, dst)
    else:
        np.testing.assert_array_equal(got[0], want)
    assert widths(ops) == [width], ops


def test_each_group_element_lands_in_its_place(make_session, run_cpu, tmp_path):
    """Distinct values at every position of a long f16 tensor (8 per invocation) and of its f32 twin: a swapped
    component or a group written to the wrong place shows as a mismatch, not as a rounding error."""
    for dtype, want_width in ((np.float16, 8), (np.float32, 4)):
        n = 4096 * 8
        x = (np.arange(n) % 2000 - 1000).astype(dtype).reshape(64, -1)
        node = helper.make_node("Neg", ["X"], ["Y"])
        model = models.finish([node], [models.tensor("X", dtype, list(x.shape))], [models.tensor("Y", dtype, None)])
        got, ops = run_dispatches(make_session(model, ALL), {"X": x}, tmp_path)
        np.testing.assert_array_equal(got[0], -x)
        assert widths(ops) == [want_width], ops
