"""Bad input never crashes the process and never gives silent garbage: each case below either raises a clear error
or gives the CPU EP's result (NaN and Inf included)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper

import models
import seeds

RNG = seeds.rng()
TOL = {np.float32: (1e-4, 1e-4), np.float16: (3e-2, 1e-2)}


def rand(shape, dtype=np.float32):
    return RNG.uniform(-1, 1, size=shape).astype(dtype)


def outcome(fn):
    """("ok", outputs) or ("error", message)."""
    try:
        return "ok", fn()
    except Exception as e:  # noqa: BLE001 - any error type is fine, as long as it is an error
        return "error", str(e)


def assert_same(got, want, dtype=np.float32):
    rtol, atol = TOL[np.dtype(dtype).type]
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
    # NaN where the CPU EP has NaN, the same infinities, close elsewhere.
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)


def assert_like_cpu(make_session, run_cpu, model, feeds, dtype=np.float32, options=None):
    """Ours (CPU fallback allowed) and the CPU EP both fail, or both give the same result."""
    want = outcome(lambda: run_cpu(model, feeds))
    got = outcome(lambda: make_session(model, options, fallback=True).run(None, feeds))
    assert got[0] == want[0], f"ours: {got}, CPU EP: {want}"
    if got[0] == "ok":
        for g, w in zip(got[1], want[1]):
            assert_same(g, w, dtype)
    return got


# ---------------------------------------------------------------------------------------------------------------
# Incompatible shapes


@pytest.mark.parametrize(
    "a_shape,b_shape",
    [([3, 4], [5, 6]), ([2, 3, 4], [3, 4, 5]), ([4], [5]), ([2, 3], [2])],
    ids=["inner", "batch", "vectors", "matrix-vector"],
)
def test_incompatible_matmul_shapes_fail_like_cpu(make_session, run_cpu, a_shape, b_shape):
    feeds = {"A": rand(a_shape), "B": rand(b_shape)}
    # Static shapes: ORT rejects the model at load time; dynamic ones reach our Compute.
    assert assert_like_cpu(make_session, run_cpu, models.matmul(a_shape, b_shape), feeds)[0] == "error"
    dyn = models.matmul(None, None, dims=([f"a{i}" for i in a_shape], [f"b{i}" for i in b_shape]))
    state, message = assert_like_cpu(make_session, run_cpu, dyn, feeds)
    assert state == "error"
    assert "WgpuExecutionProvider" in message and ("dimensions" in message or "broadcast" in message), message


@pytest.mark.parametrize("c_shape", [[7], [5, 2], [6, 1, 1]], ids=["bias-too-long", "rows-wrong", "rank-3"])
def test_gemm_bias_of_the_wrong_shape_fails_like_cpu(make_session, run_cpu, c_shape):
    a, b, c = rand((5, 4)), rand((4, 6)), rand(c_shape)
    # Static: declined at GetCapability (so the CPU EP reports it); dynamic: our run fails with the reason.
    static = models.gemm([5, 4], [4, 6], c_shape)
    assert assert_like_cpu(make_session, run_cpu, static, {"A": a, "B": b, "C": c})[0] == "error"
    with pytest.raises(Exception):
        make_session(static)  # no fallback: nobody may run the node
    dynamic = models.gemm(["m", "k"], ["k", "n"], [f"c{i}" for i in range(len(c_shape))])
    state, message = assert_like_cpu(make_session, run_cpu, dynamic, {"A": a, "B": b, "C": c})
    assert state == "error" and ("broadcast" in message or "rank" in message), message


def test_gemm_inner_dimension_mismatch_at_run_time(make_session, run_cpu):
    model = models.gemm(["m", "k1"], ["k2", "n"], None, transB=1)
    state, message = assert_like_cpu(make_session, run_cpu, model, {"A": rand((3, 4)), "B": rand((6, 5))})
    assert state == "error" and "inner dimensions" in message, message


def test_matmul_add_with_a_bias_of_the_wrong_length(make_session, run_cpu):
    w, bias = rand((16, 8)), rand((9,))
    nodes = [helper.make_node("MatMul", ["X", "W"], ["m"]), helper.make_node("Add", ["m", "bias"], ["Y"])]
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(bias, "bias")]
    model = models.finish(nodes, [models.tensor("X", np.float32, ["b", "s", 16])], [models.tensor("Y", np.float32, None)], inits)
    assert assert_like_cpu(make_session, run_cpu, model, {"X": rand((2, 3, 16))})[0] == "error"


# ---------------------------------------------------------------------------------------------------------------
# Zero-size dimensions


ZERO_MATMULS = [
    ([0, 3], [3, 4]),  # M = 0
    ([3, 0], [0, 4]),  # K = 0: zeros
    ([3, 4], [4, 0]),  # N = 0
    ([2, 0, 3], [3, 4]),  # a batch of empty matrices
    ([0, 2, 3], [3, 4]),  # batch 0
    ([0, 5, 3], [1, 3, 4]),  # batch 0 broadcast
    ([0], [0, 4]),  # vector of length 0
]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("a_shape,b_shape", ZERO_MATMULS)
def test_zero_size_matmul_matches_cpu(make_session, run_cpu, a_shape, b_shape, dtype):
    feeds = {"A": rand(a_shape, dtype), "B": rand(b_shape, dtype)}
    model = models.matmul(a_shape, b_shape, dtype)
    want = run_cpu(model, feeds)[0]
    assert_same(make_session(model).run(None, feeds)[0], want, dtype)


def test_symbolic_dims_that_resolve_to_zero(make_session, run_cpu):
    w = rand((64, 48))
    sess = make_session(models.matmul(None, None, b_value=w, dims=(["batch", "seq", 64], None)))
    for shape in [(1, 0, 64), (0, 7, 64), (2, 3, 64), (0, 0, 64)]:
        a = rand(shape)
        got = sess.run(None, {"A": a})[0]
        assert got.shape == shape[:2] + (48,)
        assert_same(got, a @ w)
    # An MLP whose sequence length is 0 at run time: bias and activation on an empty product.
    model = models.mlp(["b", "s"], [16, 24, 8], activation="Relu")
    feeds = {"X": rand((2, 0, 16))}
    assert_same(make_session(model).run(None, feeds)[0], run_cpu(model, feeds)[0])


def test_relu_and_clip_of_an_empty_input(make_session, run_cpu):
    # Found by the graph fuzzer (seed 206969017): an elementwise op on an empty tensor bound a 4-byte buffer where
    # its vectorised kernel declares vec4 elements, and wgpu failed the run with "bound with size 4 where the
    # shader expects 16". Storage buffers are now at least 16 bytes.
    nodes = [
        helper.make_node("MatMul", ["X", "W"], ["P"]),
        helper.make_node("Relu", ["X"], ["R"]),
        helper.make_node("Clip", ["R", "lo", "hi"], ["Y"]),
    ]
    inits = [
        numpy_helper.from_array(np.zeros((33, 0, 28), np.float32), "W"),
        numpy_helper.from_array(np.array(-0.5, np.float32), "lo"),
        numpy_helper.from_array(np.array(0.5, np.float32), "hi"),
    ]
    x = models.tensor("X", np.float32, [33, "d1", "d2"])
    model = models.finish(nodes, [x], [models.tensor("Y", np.float32, None)], inits)
    sess = make_session(model, fallback=True)
    for shape in [(33, 5, 0), (33, 0, 0), (33, 1, 0)]:
        feeds = {"X": rand(shape)}
        assert_same(sess.run(None, feeds)[0], run_cpu(model, feeds)[0])


@pytest.mark.parametrize("m,n,k", [(0, 4, 3), (3, 0, 4), (3, 4, 0), (0, 0, 0)])
def test_zero_size_gemm_matches_cpu(make_session, run_cpu, m, n, k):
    model = models.gemm([m, k], [k, n], [n])
    feeds = {"A": rand((m, k)), "B": rand((k, n)), "C": rand((n,))}
    assert_same(make_session(model).run(None, feeds)[0], run_cpu(model, feeds)[0])


def test_zero_size_matmul_with_a_vector(make_session):
    # [M, 0]·[0] is M zeros and [0, M, K]·[K] is empty. (ONNX Runtime 1.31's CPU EP returns uninitialised memory for
    # the first and fails the second with "left operand cannot broadcast", so the reference is numpy.)
    sess = make_session(models.matmul(None, None, dims=(["m", "k"], ["k"])))
    for _ in range(3):
        got = sess.run(None, {"A": rand((20, 0)), "B": rand((0,))})[0]
        np.testing.assert_array_equal(got, np.zeros(20, np.float32))
    sess = make_session(models.matmul(None, None, dims=(["b", "m", "k"], ["k"])))
    a, b = rand((0, 23, 17)), rand((17,))
    got = sess.run(None, {"A": a, "B": b})[0]
    assert got.shape == (0, 23) and got.dtype == np.float32


def test_gemm_with_k_zero_scales_the_bias_by_beta(make_session):
    # Y = alpha·A·B + beta·C with K = 0 is beta·C. (ONNX Runtime 1.31's CPU EP returns C unscaled here, which
    # disagrees with the ONNX spec; we follow the spec.)
    model = models.gemm([3, 0], [0, 4], [4], beta=2.0)
    c = rand((4,))
    got = make_session(model).run(None, {"A": rand((3, 0)), "B": rand((0, 4)), "C": c})[0]
    np.testing.assert_allclose(got, np.broadcast_to(2.0 * c, (3, 4)), rtol=1e-6)


# ---------------------------------------------------------------------------------------------------------------
# Element types we do not run


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_matmul_is_declined_and_runs_on_cpu(make_session, run_cpu, dtype):
    model = models.matmul([4, 5], [5, 3], dtype)
    feeds = {"A": RNG.integers(-9, 9, (4, 5)).astype(dtype), "B": RNG.integers(-9, 9, (5, 3)).astype(dtype)}
    with pytest.raises(Exception):
        make_session(model)  # declined, and the CPU EP is not allowed
    got = make_session(model, fallback=True).run(None, feeds)[0]
    np.testing.assert_array_equal(got, run_cpu(model, feeds)[0])


# ---------------------------------------------------------------------------------------------------------------
# NaN and Inf propagate exactly like the CPU EP


def poison(x, rng, frac=0.05):
    """x with NaN, +Inf and -Inf at random positions."""
    x = x.copy()
    flat = x.reshape(-1)
    n = max(1, int(flat.size * frac))
    for value in (np.nan, np.inf, -np.inf):
        flat[rng.choice(flat.size, size=n, replace=False)] = value
    return x


@pytest.mark.parametrize("tiling", ["auto", "gemv", "64x64", "128x128", "splitk"])
@pytest.mark.parametrize("shape", [(1, 40, 9), (37, 300, 70)], ids=["thin", "square"])
def test_nan_and_inf_propagate_like_cpu_in_every_kernel(make_session, run_cpu, tiling, shape):
    m, k, n = shape
    model = models.matmul([m, k], [k, n])
    feeds = {"A": poison(rand((m, k)), RNG, 0.002), "B": poison(rand((k, n)), RNG, 0.002)}
    assert_same(make_session(model, {"tiling": tiling}).run(None, feeds)[0], run_cpu(model, feeds)[0])


@pytest.mark.parametrize("activation", ["Relu", "Clip", None])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_nan_through_bias_and_activation_like_cpu(make_session, run_cpu, activation, dtype):
    model = models.mlp([2, 5], [8, 16, 4], dtype, activation=activation)
    x = rand((2, 5, 8), dtype)
    x[0, 0, :] = np.nan
    x[0, 1, 0] = np.inf
    x[1, 2, 3] = -np.inf
    feeds = {"X": x}
    assert_same(make_session(model).run(None, feeds)[0], run_cpu(model, feeds)[0], dtype)


@pytest.mark.parametrize("bounds", ["none", "max-only", "min-only"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_clip_without_a_bound_clamps_infinity_like_cpu(make_session, run_cpu, bounds, dtype):
    # An absent Clip bound is the type's lowest/highest finite value (ONNX spec), so ±Inf become finite.
    w = np.array([[1.0, -1.0, 0.5, 2.0]], dtype)
    names = {"none": ["m"], "max-only": ["m", "", "hi"], "min-only": ["m", "lo"]}[bounds]
    nodes = [helper.make_node("MatMul", ["X", "W"], ["m"]), helper.make_node("Clip", names, ["Y"])]
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(np.array(0.25, dtype), "hi")]
    inits.append(numpy_helper.from_array(np.array(-0.25, dtype), "lo"))
    model = models.finish(nodes, [models.tensor("X", dtype, ["b", "s", 1])], [models.tensor("Y", dtype, None)], inits)
    x = np.array([[[np.inf], [-np.inf], [np.nan], [1.0], [-3.0]]], dtype)
    assert_same(make_session(model).run(None, {"X": x})[0], run_cpu(model, {"X": x})[0], dtype)


@pytest.mark.parametrize(
    "attrs,poisoned",
    [(dict(beta=0.0), "C"), (dict(alpha=0.0), "A"), (dict(alpha=0.0, beta=0.0), "C"), (dict(), "C")],
    ids=["beta0-nan-C", "alpha0-inf-A", "both0", "nan-C"],
)
def test_gemm_alpha_beta_zero_with_nan_like_cpu(make_session, run_cpu, attrs, poisoned):
    model = models.gemm([6, 5], [5, 7], [6, 7], **attrs)
    feeds = {"A": rand((6, 5)), "B": rand((5, 7)), "C": rand((6, 7))}
    feeds[poisoned] = poison(feeds[poisoned], RNG, 0.1)
    assert_same(make_session(model).run(None, feeds)[0], run_cpu(model, feeds)[0])


# ---------------------------------------------------------------------------------------------------------------
# Tensors larger than one storage binding (128 MiB on llvmpipe)


def test_tensor_larger_than_a_storage_binding_is_declined_or_fails_clearly(make_session, run_cpu, ep_devices):
    if dict(ep_devices[0].ep_metadata).get("wgpu.software") != "1":
        pytest.skip("sized for llvmpipe's 128 MiB binding; a GPU's (2 GiB on an H100) would need a 2 GiB tensor")
    rows, k = 8192, 4097  # A is 134,250,496 bytes > 128 MiB
    a, b = np.full((rows, k), 0.5, np.float32), rand((k, 1))
    feeds = {"A": a, "B": b}
    static = models.matmul([rows, k], [k, 1])
    with pytest.raises(Exception):
        make_session(static)  # declined at GetCapability; the reason is logged
    assert_same(make_session(static, fallback=True).run(None, feeds)[0], run_cpu(static, feeds)[0])
    dynamic = make_session(models.matmul(None, None, dims=(["m", "k"], ["k", "n"])))
    with pytest.raises(Exception, match="storage binding"):
        dynamic.run(None, feeds)
    small = rand((3, 4)), rand((4, 2))
    assert_same(dynamic.run(None, {"A": small[0], "B": small[1]})[0], small[0] @ small[1])


# ---------------------------------------------------------------------------------------------------------------
# Conv (runs on the CPU EP until our Conv lands; the cases must fail cleanly either way)


def conv_model(x_dims, w, group=1, pads=(0, 0, 0, 0)):
    node = helper.make_node("Conv", ["X", "W"], ["Y"], group=group, pads=list(pads))
    return models.finish(
        [node], [models.tensor("X", np.float32, x_dims)], [models.tensor("Y", np.float32, None)], [numpy_helper.from_array(w, "W")]
    )


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize(
    "x_shape,w_shape,group,pads",
    [
        ((1, 3, 4, 4), (8, 3, 7, 7), 1, (1, 1, 1, 1)),  # kernel larger than the padded input
        ((1, 6, 8, 8), (4, 3, 3, 3), 4, (0, 0, 0, 0)),  # channels not divisible by group
        ((1, 4, 8, 8), (8, 3, 3, 3), 1, (0, 0, 0, 0)),  # weight channels differ from the input's
    ],
    ids=["kernel-too-large", "group", "channels"],
)
def test_bad_conv_fails_like_cpu(make_session, run_cpu, x_shape, w_shape, group, pads, dynamic):
    dims = ["n", "c", "h", "w"] if dynamic else list(x_shape)
    model = conv_model(dims, rand(w_shape), group, pads)
    assert assert_like_cpu(make_session, run_cpu, model, {"X": rand(x_shape)})[0] == "error"


# ---------------------------------------------------------------------------------------------------------------
# Bad attributes and inputs of the registry's ops. Each case is a model the CPU EP fails (at load or at run time);
# in a fresh process (a crash must not take pytest down), ours must fail it too: declined (with fallback disabled
# nobody may run it), or a clear error from our Compute that names the problem — never a result, never an
# "internal error", never a crash.


def _bad(name, nodes, inputs, feeds, needles, inits=()):
    """A case: model inputs are (name, dtype, dims or None) — None leaves the rank unknown, so ONNX's shape inference
    cannot reject the model at load time and the check falls to the EP."""
    vis = [models.tensor(n, dt, dims) for n, dt, dims in inputs]
    model = models.finish(nodes, vis, [models.tensor("Y", np.float32, None)], list(inits))
    return pytest.param(model, feeds, needles, id=name)


def _i64(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


F32 = np.float32
BAD_OP_CASES = [
    _bad("transpose-repeated-perm", [helper.make_node("Transpose", ["X"], ["Y"], perm=[0, 0])],
         [("X", F32, None)], {"X": rand((2, 3))}, ["perm", "Transpose"]),
    _bad("transpose-perm-out-of-range", [helper.make_node("Transpose", ["X"], ["Y"], perm=[0, 2])],
         [("X", F32, None)], {"X": rand((2, 3))}, ["perm", "Transpose"]),
    _bad("transpose-perm-wrong-length", [helper.make_node("Transpose", ["X"], ["Y"], perm=[1, 0, 2])],
         [("X", F32, None)], {"X": rand((2, 3))}, ["perm", "Transpose", "rank"]),
    _bad("transpose-perm-static", [helper.make_node("Transpose", ["X"], ["Y"], perm=[1, 1])],
         [("X", F32, [2, 3])], {"X": rand((2, 3))}, ["perm", "Transpose"]),
    _bad("softmax-axis-out-of-range", [helper.make_node("Softmax", ["X"], ["Y"], axis=3)],
         [("X", F32, None)], {"X": rand((2, 3))}, ["axis", "Softmax"]),
    _bad("logsoftmax-axis-static", [helper.make_node("LogSoftmax", ["X"], ["Y"], axis=-3)],
         [("X", F32, [2, 3])], {"X": rand((2, 3))}, ["axis", "LogSoftmax"]),
    _bad("layernorm-axis-out-of-range", [helper.make_node("LayerNormalization", ["X", "S"], ["Y"], axis=2)],
         [("X", F32, None), ("S", F32, None)], {"X": rand((2, 3)), "S": rand((3,))}, ["axis", "LayerNormalization"]),
    _bad("layernorm-scale-wrong-length", [helper.make_node("LayerNormalization", ["X", "S"], ["Y"], axis=-1)],
         [("X", F32, ["a", "b"]), ("S", F32, ["s"])], {"X": rand((2, 3)), "S": rand((4,))},
         ["scale", "LayerNormalization", "shape", "broadcast"]),
    _bad("gather-index-past-the-end", [helper.make_node("Gather", ["X", "I"], ["Y"], axis=0)],
         [("X", F32, ["a", "b"]), ("I", np.int64, ["n"])], {"X": rand((5, 4)), "I": np.array([1, 5], np.int64)},
         ["indices", "index", "bounds", "range"]),
    _bad("gather-negative-index-before-the-start", [helper.make_node("Gather", ["X", "I"], ["Y"], axis=1)],
         [("X", F32, [5, 4]), ("I", np.int64, [3])], {"X": rand((5, 4)), "I": np.array([0, -5, 3], np.int64)},
         ["indices", "index", "bounds", "range"]),
    # Indices computed inside the partition (never on the host before the run): still an error, not a clamp.
    _bad("gather-computed-index-past-the-end",
         [helper.make_node("Cast", ["F"], ["I"], to=models.elem(np.int64)), helper.make_node("Gather", ["X", "I"], ["Y"], axis=0)],
         [("X", F32, ["a", "b"]), ("F", F32, ["n"])], {"X": rand((5, 4)), "F": np.array([1.0, 7.0], np.float32)},
         ["indices", "index", "bounds", "range"]),
    _bad("concat-mismatched-dims", [helper.make_node("Concat", ["A", "B"], ["Y"], axis=0)],
         [("A", F32, ["a", "b"]), ("B", F32, ["c", "d"])], {"A": rand((2, 3)), "B": rand((2, 4))},
         ["Concat", "concat", "shape", "dimension"]),
    _bad("concat-mismatched-ranks", [helper.make_node("Concat", ["A", "B"], ["Y"], axis=1)],
         [("A", F32, None), ("B", F32, None)], {"A": rand((2, 3)), "B": rand((2, 3, 1))},
         ["Concat", "concat", "rank", "shape"]),
    _bad("add-not-broadcastable", [helper.make_node("Add", ["A", "B"], ["Y"])],
         [("A", F32, ["a", "b"]), ("B", F32, ["c", "d"])], {"A": rand((2, 3)), "B": rand((4, 3))}, ["broadcast"]),
    _bad("where-not-broadcastable", [helper.make_node("Where", ["C", "A", "B"], ["Y"])],
         [("C", np.bool_, ["n"]), ("A", F32, ["a", "b"]), ("B", F32, ["c"])],
         {"C": np.array([True, False]), "A": rand((3, 2)), "B": rand((3,))}, ["broadcast"]),
    _bad("reshape-to-an-incompatible-size", [helper.make_node("Reshape", ["X", "shape"], ["Y"])],
         [("X", F32, ["a", "b"])], {"X": rand((2, 3))}, ["Reshape", "reshape", "size", "shape"], [_i64("shape", [4, -1])]),
    _bad("expand-incompatible", [helper.make_node("Expand", ["X", "shape"], ["Y"])],
         [("X", F32, ["a", "b"])], {"X": rand((2, 3))}, ["Expand", "broadcast", "shape"], [_i64("shape", [2, 5])]),
    _bad("slice-step-zero", [helper.make_node("Slice", ["X", "s", "e", "ax", "st"], ["Y"])],
         [("X", F32, ["a", "b"])], {"X": rand((2, 3))}, ["step", "Slice"],
         [_i64("s", [0]), _i64("e", [2]), _i64("ax", [1]), _i64("st", [0])]),
    _bad("split-sizes-do-not-sum", [helper.make_node("Split", ["X", "split"], ["Y", "Z"], axis=1)],
         [("X", F32, ["a", "b"])], {"X": rand((2, 3))}, ["split", "Split"], [_i64("split", [1, 1])]),
    _bad("unsqueeze-repeated-axes", [helper.make_node("Unsqueeze", ["X", "axes"], ["Y"])],
         [("X", F32, None)], {"X": rand((2, 3))}, ["axis", "axes", "Unsqueeze"], [_i64("axes", [1, 1])]),
    _bad("squeeze-a-dim-that-is-not-1", [helper.make_node("Squeeze", ["X", "axes"], ["Y"])],
         [("X", F32, ["a", "b"])], {"X": rand((2, 3))}, ["axis", "axes", "Squeeze", "squeeze"], [_i64("axes", [1])]),
    _bad("reduce-axis-out-of-range", [helper.make_node("ReduceMean", ["X"], ["Y"], axes=[2])],
         [("X", F32, None)], {"X": rand((2, 3))}, ["axis", "axes", "ReduceMean"]),
]

_BAD_OP_SCRIPT = """
import json, onnx
model = onnx.load({model!r})
feeds = dict(np.load({feeds!r}))

def outcome(fn):
    try:
        fn()
        return ["ok", ""]
    except Exception as e:  # noqa: BLE001
        return ["error", str(e)]

result = {{
    "cpu": outcome(lambda: cpu_session(model).run(None, feeds)),
    "strict": outcome(lambda: session(model).run(None, feeds)),
    "fallback": outcome(lambda: session(model, fallback=True).run(None, feeds)),
}}
print("RESULT " + json.dumps(result))
"""


@pytest.mark.parametrize("model,feeds,needles", BAD_OP_CASES)
def test_bad_op_input_fails_clearly(lib_path, tmp_path, model, feeds, needles):
    from subproc import describe, run_script

    model_path, feeds_path = tmp_path / "model.onnx", tmp_path / "feeds.npz"
    model_path.write_bytes(model.SerializeToString())
    np.savez(feeds_path, **feeds)
    r = run_script(lib_path, _BAD_OP_SCRIPT.format(model=str(model_path), feeds=str(feeds_path)), timeout=300)
    assert r.returncode == 0 and "RESULT " in r.stdout, describe(r)  # no crash
    result = __import__("json").loads(r.stdout.split("RESULT ", 1)[1].splitlines()[0])
    assert result["cpu"][0] == "error", f"the case is not bad on the CPU EP: {result}"
    for mode in ("strict", "fallback"):
        state, message = result[mode]
        assert state == "error", f"{mode}: ours gave a result where the CPU EP fails: {result['cpu'][1]}"
        assert "internal error" not in message, f"{mode}: {message}"
        if "WgpuExecutionProvider" in message:  # our Compute failed the run: the message must say why
            assert any(n in message for n in needles), f"{mode}: unclear error (wanted one of {needles}): {message}"
