"""GroupNormalization and InstanceNormalization in each of their kernels' forms, against float64: one workgroup per
(n, group) row or few long rows split into chunks, each with X read element by element or, where the spatial size
is a multiple of 4, as whole vec4s (256 invocations). The dispatch profile names the kernels that ran, so a case
meant for one form fails if another ran. Shapes are not multiples of the workgroup's span; values have a large
common offset, so a variance taken as a running sum of squares would show."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper

import models
import seeds
from dispatch_profile import run_dispatches

ALL = {"offload": "all"}


def reference(x, groups, scale, bias, eps):
    """GroupNormalization-18 in float64: scale and bias per group."""
    n, c = x.shape[:2]
    g = x.astype(np.float64).reshape(n, groups, -1)
    y = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)
    y = y * scale.astype(np.float64)[None, :, None] + bias.astype(np.float64)[None, :, None]
    return y.reshape(x.shape)


# shape, groups, split into chunks, vec4s
CASES = [
    ([2, 8, 10, 12], 4, False, True),  # 120 spatial: whole rows as vec4s
    ([2, 6, 7, 5], 3, False, False),  # 35 spatial: element by element
    ([1, 4, 128, 130], 2, True, True),  # 2 rows of 33280: chunks of whole vec4s
    ([1, 4, 127, 129], 2, True, False),  # 2 rows of 32766: chunks element by element
]


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("case", CASES, ids=[str(c[0]) for c in CASES])
def test_group_norm_forms_match_float64(make_session, tmp_path, case, dtype):
    shape, groups, split, vec = case
    rng = seeds.rng()
    x = (rng.standard_normal(shape) * 2 + 30).astype(dtype)
    scale = rng.uniform(0.5, 1.5, groups).astype(dtype)
    bias = rng.uniform(-1, 1, groups).astype(dtype)
    eps = 1e-5
    node = helper.make_node("GroupNormalization", ["X", "s", "b"], ["Y"], num_groups=groups, epsilon=eps)
    inits = [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(bias, "b")]
    model = models.finish([node], [models.tensor("X", dtype, shape)], [models.tensor("Y", dtype, None)], inits,
                          opset=18)
    got, ops = run_dispatches(make_session(model, ALL), {"X": x}, tmp_path)
    want = reference(x, groups, scale, bias, eps)
    tol = 2e-4 if dtype == np.float32 else 2e-2
    np.testing.assert_allclose(got[0].astype(np.float64), want, rtol=tol, atol=tol)
    names = [o.split("[", 1)[1] for o in ops if "[norm_group" in o]
    stages = ["norm_group_stats_", "norm_group_apply_"] if split else ["norm_group_f"]
    assert [n[: len(s)] for n, s in zip(names, stages)] == stages and len(names) == len(stages), ops
    assert all(("_v4_" in n) == vec for n in names), ops


def test_instance_norm_takes_the_vector_form(make_session, tmp_path):
    """InstanceNormalization (a group per channel, scale and bias per channel) over 4 × 6² = 36 spatial."""
    rng = seeds.rng()
    x = (rng.standard_normal([3, 5, 4, 9]) + 10).astype(np.float32)
    scale, bias = rng.uniform(0.5, 1.5, 5).astype(np.float32), rng.uniform(-1, 1, 5).astype(np.float32)
    node = helper.make_node("InstanceNormalization", ["X", "s", "b"], ["Y"], epsilon=1e-5)
    inits = [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(bias, "b")]
    model = models.finish([node], [models.tensor("X", np.float32, list(x.shape))],
                          [models.tensor("Y", np.float32, None)], inits)
    got, ops = run_dispatches(make_session(model, ALL), {"X": x}, tmp_path)
    np.testing.assert_allclose(got[0], reference(x, 5, scale, bias, 1e-5), rtol=2e-4, atol=2e-4)
    assert any("[norm_group_f32_v4_t256" in o for o in ops), ops


@pytest.mark.parametrize("shape", [[2, 8, 10, 12], [1, 4, 128, 130]], ids=["whole", "split"])
def test_per_channel_scale_in_the_vector_form(make_session, tmp_path, shape):
    """GroupNormalization-21: scale and bias per channel, so each vec4 must find its own channel (2 per group)."""
    rng = seeds.rng()
    c, groups = shape[1], shape[1] // 2
    x = (rng.standard_normal(shape) + 5).astype(np.float32)
    scale, bias = rng.uniform(0.5, 1.5, c).astype(np.float32), rng.uniform(-1, 1, c).astype(np.float32)
    node = helper.make_node("GroupNormalization", ["X", "s", "b"], ["Y"], num_groups=groups, epsilon=1e-5)
    inits = [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(bias, "b")]
    model = models.finish([node], [models.tensor("X", np.float32, shape)], [models.tensor("Y", np.float32, None)],
                          inits, opset=21)
    model.ir_version = 10
    got, ops = run_dispatches(make_session(model, ALL), {"X": x}, tmp_path)
    normed = reference(x, groups, np.ones(groups), np.zeros(groups), 1e-5)
    want = normed * scale[None, :, None, None] + bias[None, :, None, None]
    np.testing.assert_allclose(got[0], want, rtol=2e-4, atol=2e-4)
    assert any("_v4_t256" in o for o in ops), ops
