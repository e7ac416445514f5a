"""ONNX's own node tests for the ops we claim, run on our EP with CPU fallback disabled."""

from __future__ import annotations

import numpy as np
import pytest
from onnx.backend.test.case.node import collect_testcases

OPS = {"MatMul", "Gemm", "Conv"}
# collect_testcases' op filter only applies on its first call (it imports the case modules once), so
# collect everything and keep the single-op models of the ops we claim.
CASES = [
    case
    for case in collect_testcases()
    if case.kind == "node" and {n.op_type for n in case.model.graph.node} <= OPS
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_node_case(make_session, case):
    sess = make_session(case.model)
    for inputs, outputs in case.data_sets:
        names = [i.name for i in case.model.graph.input]
        got = sess.run(None, dict(zip(names, inputs)))
        for g, w in zip(got, outputs):
            rtol = case.rtol if case.rtol is not None else 1e-3
            atol = case.atol if case.atol is not None else 1e-6
            np.testing.assert_allclose(g, w, rtol=max(rtol, 1e-4), atol=max(atol, 1e-5))


def test_cases_were_collected():
    names = {c.name for c in CASES}
    for prefix in ("test_matmul", "test_gemm", "test_conv", "test_basic_conv"):
        assert any(n.startswith(prefix) for n in names), (prefix, names)
