"""MatMul reading A or B through a Transpose that only it reads (`graph/patterns.rs`, `transposed_operands`): the
product reads the Transpose's input through strides, and the Transpose runs no kernel. Through ONNX Runtime with CPU
fallback disabled, against the CPU EP on fresh random data (shapes no tile multiple):

- the unfused attention's `[B, S, H, D] → [B, H, S, D]` transposes of Q and V and the chain `[B, S, H, D] →
  [B, H, S, D] → [B, H, D, S]` of K, with the scale folded into the first product;
- 2-D transposes of either operand (A read column-major, a constant weight read transposed);
- permutations that keep a Transpose: its input's contiguous dim moved into the batch dims, a Transpose with a
  second reader; and one whose batch dims cannot merge (the strides must keep them apart).

The step profile (`ONNXRUNTIME_EP_WGPU_PROFILE`) shows which Transposes were absorbed."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper

import models
from test_attention import profiled_ops

TOL = {np.float32: 1e-4, np.float16: 1e-2}
# Single small products: the offload rule would hand them to the CPU EP on a discrete GPU.
ALL = {"offload": "all"}


def new_seed() -> int:
    return int(np.random.default_rng().integers(0, 2**31))


def rel_err(got, want) -> float:
    want64 = want.astype(np.float64)
    return float(np.abs(got.astype(np.float64) - want64).max() / max(np.abs(want64).max(), 1e-30))


def check(make_session, run_cpu, model, feeds, dtype, seed, tmp_path):
    sess = make_session(model, ALL)
    got, ops = profiled_ops(sess, feeds, tmp_path)
    want = run_cpu(model, feeds)
    for g, w in zip(got, want):
        assert g.shape == w.shape, (g.shape, w.shape)
        assert rel_err(g, w) <= TOL[dtype], f"relative error {rel_err(g, w):.3g} (seed {seed})"
    return ops


def transpose(name, src, perm):
    return helper.make_node("Transpose", [src], [name], perm=perm, name=f"t_{name}")


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_attention_transposes_fold_into_the_products(make_session, run_cpu, dtype, tmp_path):
    seed = new_seed()
    rng = np.random.default_rng(seed)
    b, sq, skv, h, d = 2, 37, 29, 3, 12
    nodes = [
        transpose("qt", "Q", [0, 2, 1, 3]),
        # Kᵀ as exporters write it: [B, S, H, D] → [B, H, S, D] → [B, H, D, S] (the chain composes).
        transpose("kh", "K", [0, 2, 1, 3]),
        transpose("kt", "kh", [0, 1, 3, 2]),
        transpose("vt", "V", [0, 2, 1, 3]),
        helper.make_node("MatMul", ["qt", "kt"], ["s"], name="qk"),
        helper.make_node("Mul", ["s", "scale"], ["ss"], name="scale"),
        helper.make_node("Softmax", ["ss"], ["p"], axis=-1, name="softmax"),
        helper.make_node("MatMul", ["p", "vt"], ["Y"], name="pv"),
    ]
    inputs = [models.tensor("Q", dtype, [b, sq, h, d]), models.tensor("K", dtype, [b, skv, h, d]),
              models.tensor("V", dtype, [b, skv, h, d])]
    scale = numpy_helper.from_array(np.array(d ** -0.5, dtype), "scale")
    model = models.finish(nodes, inputs, [models.tensor("Y", dtype, None)], [scale])
    feeds = {n: rng.uniform(-1, 1, size=s).astype(dtype) for n, s in
             [("Q", (b, sq, h, d)), ("K", (b, skv, h, d)), ("V", (b, skv, h, d))]}
    ops = check(make_session, run_cpu, model, feeds, dtype, seed, tmp_path)
    assert ops == ["Transpose+MatMul+Mul", "Softmax", "Transpose+MatMul"], ops


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_2d_transposes_of_either_operand(make_session, run_cpu, dtype, tmp_path):
    seed = new_seed()
    rng = np.random.default_rng(seed)
    m, k, n = 45, 70, 33
    w = rng.uniform(-1, 1, size=(n, k)).astype(dtype)
    nodes = [
        transpose("at", "A", [1, 0]),
        helper.make_node("Transpose", ["W"], ["wt"], name="t_w"),  # the default perm reverses the dims
        helper.make_node("MatMul", ["at", "wt"], ["Y"], name="mm"),
    ]
    model = models.finish(nodes, [models.tensor("A", dtype, [k, m])], [models.tensor("Y", dtype, None)],
                          [numpy_helper.from_array(w, "W")])
    ops = check(make_session, run_cpu, model, {"A": rng.uniform(-1, 1, size=(k, m)).astype(dtype)}, dtype, seed,
                tmp_path)
    assert ops == ["Transpose+MatMul"], ops


def test_transposes_the_products_cannot_read_stay(make_session, run_cpu, tmp_path):
    dtype = np.float32
    seed = new_seed()
    rng = np.random.default_rng(seed)
    nodes = [
        # The contiguous dim of X becomes a batch dim: the kernels need one matrix dim of stride 1.
        transpose("xt", "X", [2, 0, 1]),
        helper.make_node("MatMul", ["xt", "B"], ["Y1"], name="mm1"),
        # A Transpose with a second reader.
        transpose("zt", "Z", [1, 0]),
        helper.make_node("MatMul", ["zt", "C"], ["Y2"], name="mm2"),
        helper.make_node("Relu", ["zt"], ["Y3"], name="relu"),
    ]
    inputs = [models.tensor("X", dtype, [4, 6, 5]), models.tensor("B", dtype, [5, 6, 3]),
              models.tensor("Z", dtype, [7, 9]), models.tensor("C", dtype, [7, 2])]
    outputs = [models.tensor(n, dtype, None) for n in ("Y1", "Y2", "Y3")]
    model = models.finish(nodes, inputs, outputs)
    feeds = {"X": rng.uniform(-1, 1, size=(4, 6, 5)).astype(dtype), "B": rng.uniform(-1, 1, size=(5, 6, 3)).astype(dtype),
             "Z": rng.uniform(-1, 1, size=(7, 9)).astype(dtype), "C": rng.uniform(-1, 1, size=(7, 2)).astype(dtype)}
    ops = check(make_session, run_cpu, model, feeds, dtype, seed, tmp_path)
    assert ops.count("Transpose") == 2 and ops.count("MatMul") == 2, ops


def test_batch_dims_that_cannot_merge_stay_apart(make_session, run_cpu, tmp_path):
    dtype = np.float32
    seed = new_seed()
    rng = np.random.default_rng(seed)
    # [2, 3, 5, 6] → [3, 2, 5, 6]: the batch dims (3, 2) step by 30 and 90 elements, no single stride.
    nodes = [transpose("xt", "X", [1, 0, 2, 3]), helper.make_node("MatMul", ["xt", "B"], ["Y"], name="mm")]
    inputs = [models.tensor("X", dtype, [2, 3, 5, 6]), models.tensor("B", dtype, [3, 2, 6, 4])]
    model = models.finish(nodes, inputs, [models.tensor("Y", dtype, None)])
    feeds = {"X": rng.uniform(-1, 1, size=(2, 3, 5, 6)).astype(dtype),
             "B": rng.uniform(-1, 1, size=(3, 2, 6, 4)).astype(dtype)}
    ops = check(make_session, run_cpu, model, feeds, dtype, seed, tmp_path)
    assert ops == ["Transpose+MatMul"], ops


def test_one_transpose_feeding_both_operands(make_session, run_cpu, tmp_path):
    dtype = np.float32
    seed = new_seed()
    rng = np.random.default_rng(seed)
    # Y = Xᵀ·Xᵀ for a square X read through one Transpose.
    nodes = [transpose("xt", "X", [0, 2, 1]), helper.make_node("MatMul", ["xt", "xt"], ["Y"], name="mm")]
    model = models.finish(nodes, [models.tensor("X", dtype, [3, 21, 21])], [models.tensor("Y", dtype, None)])
    ops = check(make_session, run_cpu, model, {"X": rng.uniform(-1, 1, size=(3, 21, 21)).astype(dtype)}, dtype, seed,
                tmp_path)
    assert ops == ["Transpose+MatMul"], ops


def test_a_matmul_carrying_the_internal_attribute_is_declined(make_session, run_cpu):
    """A model's MatMul with the attribute our rewrite uses must not be read as a transposed operand: it is declined
    (strict sessions fail to create), and with fallback the CPU EP runs it."""
    rng = np.random.default_rng(new_seed())
    node = helper.make_node("MatMul", ["A", "B"], ["Y"], name="mm")
    node.attribute.append(helper.make_attribute("__ep_wgpu_a_perm", [1, 0]))
    model = models.finish([node], [models.tensor("A", np.float32, [6, 6]), models.tensor("B", np.float32, [6, 6])],
                          [models.tensor("Y", np.float32, None)])
    feeds = {n: rng.uniform(-1, 1, size=(6, 6)).astype(np.float32) for n in ("A", "B")}
    with pytest.raises(Exception):
        make_session(model, ALL)
    got = make_session(model, ALL, fallback=True).run(None, feeds)
    np.testing.assert_allclose(got[0], run_cpu(model, feeds)[0], rtol=1e-5, atol=1e-5)
