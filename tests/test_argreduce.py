"""ArgMax and ArgMin against ONNX Runtime's CPU EP, exactly, with every node ours (CPU fallback disabled): float32,
float16 and int32 data drawn from a few levels so that ties are common (the first index, or the last with
select_last_index), every axis (negative too), keepdims on and off, and long contiguous axes (the workgroup-per-output
kernel: LLM logits, segmentation classes)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from test_llm_ops import OURS, model_of, new_seed, vi

TYPES = {"f32": (np.float32, TensorProto.FLOAT), "f16": (np.float16, TensorProto.FLOAT16), "i32": (np.int32, TensorProto.INT32)}


def arg_model(op, elem, shape, axis, keepdims, last):
    node = helper.make_node(op, ["x"], ["y"], axis=axis, keepdims=keepdims, select_last_index=last)
    return model_of([node], [vi("x", elem, shape)], [vi("y", TensorProto.INT64, None)])


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("ty", sorted(TYPES))
@pytest.mark.parametrize("shape,axis", [((3, 37, 5), 1), ((3, 37, 5), 0), ((3, 37, 5), -1), ((2, 3000), 1),
                                        ((4, 1, 129), -1), ((7,), 0)])
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("last", [0, 1])
def test_arg_reductions_match_cpu(make_session, run_cpu, op, ty, shape, axis, keepdims, last):
    dtype, elem = TYPES[ty]
    seed = new_seed()
    rng = np.random.default_rng(seed)
    x = rng.integers(-6, 7, size=shape).astype(dtype) * dtype(0.5 if dtype != np.int32 else 1)
    model = arg_model(op, elem, list(shape), axis, keepdims, last)
    got = make_session(model, OURS).run(None, {"x": x})[0]
    want = run_cpu(model, {"x": x})[0]
    assert got.dtype == np.int64 and got.shape == want.shape
    np.testing.assert_array_equal(got, want, err_msg=f"seed {seed}")


def test_arg_reduction_over_an_empty_axis_is_declined(make_session, capfd):
    model = arg_model("ArgMax", TensorProto.FLOAT, [3, 0, 2], 1, 1, 0)
    with pytest.raises(Exception):
        make_session(model, OURS)
    assert "has no index to give" in capfd.readouterr().err
