"""Infinities and NaNs through the float32 products and attention that run on tensor cores as three f16 products of
split operands (`f32_split`, the `x3` flash kernel), end to end through ONNX Runtime against the CPU EP: the same NaN
positions, the same infinities, close finite values.

The split cuts each value into f16 high and low parts; a part of 0 (a value f16 holds exactly has no low part) or of
the other sign meeting an infinity made 0·inf or inf − inf, a NaN where float32 gives ±inf. On the software adapter
(CI) the kernels run emulated (`emulate_tensor_cores=1`); on a device with tensor cores the real ones run. Each test
asserts which kernels ran, so a plan that falls back to the SIMT kernels does not pass on the wrong path."""

from __future__ import annotations


import numpy as np
import pytest
from onnx import TensorProto, helper

import models
from dispatch_profile import run_dispatches


@pytest.fixture
def options(ep_devices):
    """Emulated tensor cores on the software adapter (the option is refused where real ones exist)."""
    software = dict(ep_devices[0].ep_metadata).get("wgpu.software") == "1"
    return {"emulate_tensor_cores": "1"} if software else {}


def require_tensor_cores(ops, marker):
    """The kernels named `marker` ran; on a hardware adapter without cooperative matrices the test does not apply."""
    if not any(marker in o for o in ops):
        if any("_emu" in o for o in ops) or not ops:
            pytest.fail(f"no {marker} kernel ran: {ops}")
        pytest.skip(f"this adapter runs no {marker} kernel (no cooperative matrices): {ops}")


def assert_same_specials(got, want, tol, what):
    """NaN where the CPU EP has NaN, the same infinities, finite values within `tol` of the largest finite one."""
    got64, want64 = got.astype(np.float64), want.astype(np.float64)
    nan = np.isnan(want64)
    assert np.array_equal(np.isnan(got64), nan), f"{what}: NaN at {np.argwhere(np.isnan(got64) != nan)[:5].tolist()}"
    inf = np.isinf(want64)
    differ = np.argwhere(inf & (got64 != want64))[:5].tolist()
    assert np.array_equal(got64[inf], want64[inf]), f"{what}: infinities differ at {differ}"
    finite = np.isfinite(want64)
    assert np.isfinite(got64[finite]).all(), what
    scale = max(np.abs(want64[finite]).max(initial=0.0), 1e-30)
    err = np.abs(got64[finite] - want64[finite]).max(initial=0.0) / scale
    assert err <= tol, f"{what}: relative error {err:.3g}"


@pytest.mark.parametrize("b_constant", [False, True], ids=["b_input", "b_constant"])
def test_split_matmul_passes_infinities_as_f32(make_session, run_cpu, options, b_constant, tmp_path):
    """A holds values f16 holds exactly once scaled (no low part), a value too small for f16, zeros, a NaN and an
    infinity; B infinities in two columns. A constant B's maximum is taken once, when the product is prepared.
    The value too small for f16 once scaled (2^-28 of A's largest and less) meets B's infinities as a zero: NaN
    where f32 gives ±inf, the documented limit (docs/RELIABILITY.md §8)."""
    rng = np.random.default_rng(int(np.random.default_rng().integers(0, 2**31)))
    m, k, n = 70, 52, 44
    a = (rng.uniform(-1, 1, (m, k)) * 1e3).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    a[:, 10] = 0.5  # exact in f16 after any power-of-two scale
    a[3, 10], a[4, 10] = 0.0, -1e-30  # 0·inf = NaN; a value no f16 part holds
    a[5, 20] = np.nan
    a[6, 30] = -np.inf
    b[10, 7], b[10, 9] = np.inf, -np.inf
    b[30, :] = np.where(b[30, :] == 0, 0.5, b[30, :])
    if b_constant:
        model = models.matmul([m, k], [k, n], b_value=b)
        feeds = {"A": a}
    else:
        model = models.matmul([m, k], [k, n])
        feeds = {"A": a, "B": b}
    sess = make_session(model, dict(options, f32_split="1", offload="all"))
    got, ops = run_dispatches(sess, feeds, tmp_path)
    require_tensor_cores(ops, "_x3")
    want = run_cpu(model, feeds)
    assert np.isinf(want[0][:, 7]).sum() >= m - 3 and np.isnan(want[0][3, 7]), "the case holds infinities and NaN"
    assert np.isnan(got[0][4, [7, 9]]).all(), f"the limit: {got[0][4, [7, 9]]}"
    want[0][4, [7, 9]] = np.nan
    assert_same_specials(got[0], want[0], 1e-4, f"split MatMul {ops}")


def attention_model(shape_q, shape_kv):
    t = TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info(n, t, s) for n, s in (("q", shape_q), ("k", shape_kv), ("v", shape_kv))]
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"], scale=0.125)
    graph = helper.make_graph([node], "attention", inputs, [helper.make_tensor_value_info("y", t, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    return model


def run_attention(make_session, run_cpu, options, tmp_path, place):
    """One `Attention` (B 1, 2 heads, 37 queries, 75 keys, head size 64) of random values in which `place(q, k, v, rng)`
    puts its special values, on the x3 flash kernel and on the CPU EP: ours, the reference and our dispatches."""
    rng = np.random.default_rng(int(np.random.default_rng().integers(0, 2**31)))
    q = rng.uniform(-1, 1, (1, 2, 37, 64)).astype(np.float32)
    k, v = (rng.uniform(-1, 1, (1, 2, 75, 64)).astype(np.float32) for _ in range(2))
    place(q, k, v, rng)
    model = attention_model(list(q.shape), list(k.shape))
    feeds = {"q": q, "k": k, "v": v}
    sess = make_session(model, dict(options, attention="flash", offload="all"))
    got, ops = run_dispatches(sess, feeds, tmp_path)
    require_tensor_cores(ops, "attn_coop_f32x3")
    return got[0], run_cpu(model, feeds)[0], ops


def test_split_attention_passes_an_infinite_v_row(make_session, run_cpu, options, tmp_path):
    """Head 0's V holds an infinite row (key 7): every output of head 0 is ±inf by that row's signs, as in f32 (each
    query gives the key a probability far from 0); head 1 stays finite and close."""

    def place(q, k, v, rng):
        v[0, 0, 7, :] = np.where(rng.uniform(size=64) < 0.5, -np.inf, np.inf)

    got, want, ops = run_attention(make_session, run_cpu, options, tmp_path, place)
    assert np.isinf(want[0, 0]).all() and np.isfinite(want[0, 1]).all(), "the case's reference"
    assert_same_specials(got, want, 1e-4, f"x3 attention {ops}")


def test_split_attention_with_infinities_in_q_and_k(make_session, run_cpu, options, tmp_path):
    """One infinite element of K (head 0, key 4): the queries it gives a +inf score are NaN throughout and the others
    drop that key (a -inf score), as in f32; infinities in Q (head 1) make their rows NaN, as on the CPU EP."""

    def place(q, k, v, rng):
        k[0, 0, 4, 3] = np.inf
        q[0, 0, :, 3] = np.where(np.arange(37) % 3 == 0, -1.0, 0.5)  # nonzero, f16 holds each exactly once scaled
        q[0, 1, 5, 3], q[0, 1, 6, 7] = np.inf, -np.inf

    got, want, ops = run_attention(make_session, run_cpu, options, tmp_path, place)
    assert np.isnan(want[0, 0]).any(axis=1).sum() == 24 and np.isnan(want[0, 1, [5, 6]]).all(), "the case's reference"
    assert_same_specials(got, want, 1e-4, f"x3 attention {ops}")
