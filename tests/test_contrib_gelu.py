"""onnxruntime's `com.microsoft` GELU family — Gelu, FastGelu and BiasGelu (as its transformer optimizer emits them for
BERT-style models) and QuickGelu (CLIP's, genai's gegelu) — against ONNX Runtime's CPU EP on fresh random data, in
float32 and float16, with every node ours (CPU fallback disabled), alone and fused after a MatMul; shapes that are not
tile multiples, with and without the optional bias."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper

from test_llm_ops import OURS, TOL, model_of, new_seed, rel_err, vi

SHAPE = (2, 7, 37)


def gelu_model(op, dtype, bias, attrs, matmul=False):
    inputs = [vi("x", dtype, list(SHAPE))]
    inits, nodes, src = [], [], "x"
    if matmul:
        inits.append(numpy_helper.from_array((np.random.default_rng(1).uniform(-1, 1, (37, 37)) / 6).astype(dtype), "w"))
        nodes.append(helper.make_node("MatMul", ["x", "w"], ["h"]))
        src = "h"
    names = [src]
    if bias:
        inputs.append(vi("b", dtype, [SHAPE[-1]]))
        names.append("b")
    nodes.append(helper.make_node(op, names, ["y"], domain="com.microsoft", **attrs))
    return model_of(nodes, inputs, [vi("y", dtype, None)], inits)


CASES = {
    "gelu": ("Gelu", False, {}),
    "fast_gelu": ("FastGelu", False, {}),
    "fast_gelu_bias": ("FastGelu", True, {}),
    "bias_gelu": ("BiasGelu", True, {}),
    "quick_gelu": ("QuickGelu", False, {}),
    "quick_gelu_alpha": ("QuickGelu", False, {"alpha": 1.0}),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("matmul", [False, True], ids=["alone", "after_matmul"])
def test_gelu_family_matches_cpu(make_session, run_cpu, dtype, case, matmul):
    op, bias, attrs = CASES[case]
    seed = new_seed()
    rng = np.random.default_rng(seed)
    model = gelu_model(op, dtype, bias, attrs, matmul)
    feeds = {"x": rng.uniform(-4, 4, SHAPE).astype(dtype)}
    if bias:
        feeds["b"] = rng.uniform(-1, 1, SHAPE[-1]).astype(dtype)
    got = make_session(model, OURS).run(None, feeds)[0]
    want = run_cpu(model, feeds)[0]
    assert got.shape == want.shape and got.dtype == want.dtype
    assert rel_err(got, want) <= TOL[dtype], f"{op} {dtype.__name__}: relative error {rel_err(got, want)} (seed {seed})"

