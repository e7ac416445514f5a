"""The contrib ops of onnxruntime-genai's Llama-style models against ONNX Runtime's CPU EP, on fresh random data, in
float32 and float16, with every node ours (CPU fallback disabled): SimplifiedLayerNormalization,
SkipSimplifiedLayerNormalization and SkipLayerNormalization (every optional input and output) and RotaryEmbedding.
The quantized ops are in test_llm_quant.py; the helpers here are shared with it and other LLM tests. Attributes the
EP cannot run are declined with a logged reason."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from onnx import TensorProto, helper

ELEM = {np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16}
TOL = {np.float32: 1e-4, np.float16: 4e-3}

# offload=all: these graphs are single small nodes, which the offload rule leaves to the CPU EP on a discrete GPU
# (host copies cost more than the work); the tests are about what the kernels compute.
OURS = {"offload": "all"}


def new_seed() -> int:
    return int(np.random.default_rng().integers(0, 2**31))


def rel_err(got, want) -> float:
    want64 = want.astype(np.float64)
    return float(np.abs(got.astype(np.float64) - want64).max() / max(np.abs(want64).max(), 1e-30))


def model_of(nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, "llm", inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 9
    return model


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, ELEM.get(dtype, dtype), shape)


def check_like_cpu(make_session, run_cpu, model, feeds, dtype, seed, skip=()):
    """Every output (but those at indices `skip`) within the dtype's tolerance of the CPU EP's."""
    got = make_session(model, OURS).run(None, feeds)
    want = run_cpu(model, feeds)
    for i, (g, w) in enumerate(zip(got, want)):
        if i in skip:
            continue
        assert g.shape == w.shape, f"output {i}: shape {g.shape} != {w.shape}"
        assert g.dtype == w.dtype, f"output {i}: {g.dtype} != {w.dtype}"
        assert rel_err(g, w) <= TOL[dtype], f"output {i}: relative error {rel_err(g, w)} (seed {seed})"
    return got


# -------------------------------------------------------------------------------------------------------------------
# SimplifiedLayerNormalization, SkipSimplifiedLayerNormalization, SkipLayerNormalization


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("shape,axis,inv", [((3, 5, 67), -1, False), ((2, 7, 96), -1, True), ((4, 3, 10), 1, True),
                                            ((1, 1, 4096), -1, False)])
def test_simplified_layer_norm(make_session, run_cpu, dtype, shape, axis, inv):
    seed = new_seed()
    rng = np.random.default_rng(seed)
    a = axis % len(shape)
    x = rng.uniform(-2, 2, shape).astype(dtype)
    scale = rng.uniform(-1, 1, shape[a:]).astype(dtype)
    outs = ["y", "inv"] if inv else ["y"]
    node = helper.make_node("SimplifiedLayerNormalization", ["x", "scale"], outs, axis=axis, epsilon=1e-5,
                            stash_type=1)
    stat_shape = list(shape[:a]) + [1] * (len(shape) - a)
    outputs = [vi("y", dtype, list(shape))] + ([vi("inv", np.float32, stat_shape)] if inv else [])
    model = model_of([node], [vi("x", dtype, list(shape)), vi("scale", dtype, list(shape[a:]))], outputs)
    check_like_cpu(make_session, run_cpu, model, {"x": x, "scale": scale}, dtype, seed)


@pytest.mark.smoke
def test_simplified_layer_norm_smoke(make_session, run_cpu):
    test_simplified_layer_norm(make_session, run_cpu, np.float32, (3, 5, 67), -1, False)


SKIP_CASES = [
    # (op, input shape, skip shape, beta, bias, outputs listed as [output, mean, inv_std_var, sum])
    ("SkipSimplifiedLayerNormalization", (2, 5, 67), (2, 5, 67), False, False, [1, 0, 0, 1]),
    ("SkipSimplifiedLayerNormalization", (2, 5, 96), (5, 96), False, True, [1, 0, 0, 1]),
    ("SkipSimplifiedLayerNormalization", (3, 1, 128), (1, 1, 128), False, True, [1, 0, 0, 0]),
    ("SkipSimplifiedLayerNormalization", (1, 9, 40), (1, 9, 40), False, False, [1, 1, 1, 1]),
    ("SkipLayerNormalization", (2, 5, 67), (2, 5, 67), True, True, [1, 0, 0, 1]),
    ("SkipLayerNormalization", (2, 3, 96), (3, 96), False, False, [1, 1, 1, 0]),
    ("SkipLayerNormalization", (1, 7, 33), (1, 7, 33), True, False, [1, 0, 0, 0]),
    ("SkipLayerNormalization", (4, 64), (4, 64), False, True, [1, 0, 0, 1]),
    # Few long rows (a decode step's): wide workgroups (256 invocations per row, subgroup reductions).
    ("SkipSimplifiedLayerNormalization", (1, 1, 2048), (1, 1, 2048), False, True, [1, 0, 0, 1]),
    ("SkipLayerNormalization", (1, 3, 1030), (1, 3, 1030), True, True, [1, 1, 1, 1]),
]


def skip_model(op, dtype, shape, skip_shape, beta, bias, listed):
    hidden = shape[-1]
    names = ["x", "skip", "gamma"]
    inputs = [vi("x", dtype, list(shape)), vi("skip", dtype, list(skip_shape)), vi("gamma", dtype, [hidden])]
    if op == "SkipLayerNormalization":
        names.append("beta" if beta else "")
        if beta:
            inputs.append(vi("beta", dtype, [hidden]))
    if bias:
        names.append("bias")
        inputs.append(vi("bias", dtype, [hidden]))
    while names[-1] == "":
        names.pop()
    out_names = [n if on else "" for n, on in zip(["y", "mean", "inv", "sum"], listed)]
    while out_names[-1] == "":
        out_names.pop()
    stat = list(shape[:-1]) + [1]
    types = {"y": (dtype, list(shape)), "mean": (np.float32, stat), "inv": (np.float32, stat), "sum": (dtype, list(shape))}
    outputs = [vi(n, *types[n]) for n in out_names if n]
    node = helper.make_node(op, names, out_names, domain="com.microsoft", epsilon=1e-6)
    return model_of([node], inputs, outputs), [n for n in names if n], [n for n in out_names if n]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("case", SKIP_CASES, ids=lambda c: "{}-{}-{}-beta{}-bias{}-{}".format(
    c[0].replace("LayerNormalization", "LN"), "x".join(map(str, c[1])), "x".join(map(str, c[2])), int(c[3]),
    int(c[4]), "".join(map(str, c[5]))))
def test_skip_layer_norm(make_session, run_cpu, dtype, case):
    op, shape, skip_shape, beta, bias, listed = case
    seed = new_seed()
    rng = np.random.default_rng(seed)
    model, names, outs = skip_model(op, dtype, shape, skip_shape, beta, bias, listed)
    hidden = shape[-1]
    shapes = {"x": shape, "skip": skip_shape, "gamma": (hidden,), "beta": (hidden,), "bias": (hidden,)}
    feeds = {n: rng.uniform(-2, 2, shapes[n]).astype(dtype) for n in names}
    # ONNX Runtime's CPU kernel leaves mean and inv_std_var unwritten: check ours against float64 instead.
    stats = [i for i, n in enumerate(outs) if n in ("mean", "inv")]
    got = check_like_cpu(make_session, run_cpu, model, feeds, dtype, seed, skip=stats)
    reps = feeds["x"].size // feeds["skip"].size
    s = feeds["x"].astype(np.float64) + np.tile(feeds["skip"].astype(np.float64).ravel(), reps).reshape(shape)
    if bias:
        s = s + feeds["bias"].astype(np.float64)
    simplified = op == "SkipSimplifiedLayerNormalization"
    mean = np.zeros(shape[:-1] + (1,)) if simplified else s.mean(-1, keepdims=True)
    inv = 1.0 / np.sqrt(((s - mean) ** 2).mean(-1, keepdims=True) + 1e-6)
    for i in stats:
        want = mean if outs[i] == "mean" else inv
        assert rel_err(got[i], want) <= 1e-4, f"{outs[i]}: seed {seed}"


@pytest.mark.smoke
@pytest.mark.parametrize("rows,n,threads", [(1, 2048, 256), (3, 2048, 256), (2048, 2048, 256), (2048, 1024, 128),
                                            (2048, 256, 64)])
def test_row_invocations_follow_rows_and_length(make_session, rows, n, threads, tmp_path):
    """Invocations per row, from the program each dispatch ran (the per-dispatch profile; values:
    `test_skip_layer_norm`): a decode step's one row of 2048 runs on 256 (rows count as few up to a quarter of the
    device's parallelism: 264 workgroups on the H200, where 64 rows are still few); a prompt's many rows on enough
    that each invocation loads at most two vec4s a pass (2048 f16: 512 loads on 256, 1024: 128), and never fewer
    than 64."""
    model, names, _ = skip_model("SkipSimplifiedLayerNormalization", np.float16, (1, rows, n), (1, rows, n),
                                 False, False, [1, 0, 0, 1])
    rng = np.random.default_rng(0)
    feeds = {name: rng.uniform(-2, 2, (1, rows, n) if name != "gamma" else (n,)).astype(np.float16) for name in names}
    path = tmp_path / "profile.jsonl"
    os.environ.update(ONNXRUNTIME_EP_WGPU_PROFILE=str(path), ONNXRUNTIME_EP_WGPU_PROFILE_DISPATCHES="1")
    try:
        make_session(model, OURS).run(None, feeds)
    finally:
        del os.environ["ONNXRUNTIME_EP_WGPU_PROFILE"], os.environ["ONNXRUNTIME_EP_WGPU_PROFILE_DISPATCHES"]
    ops = [json.loads(line)["ops"] for line in path.read_text().splitlines()]
    assert len(ops) == 1 and ops[0].endswith(f"_t{threads}]"), ops


def test_skip_simplified_layer_norm_smoke(make_session, run_cpu):
    test_skip_layer_norm(make_session, run_cpu, np.float32, SKIP_CASES[0])


@pytest.mark.smoke
def test_skip_layer_norm_smoke(make_session, run_cpu):
    test_skip_layer_norm(make_session, run_cpu, np.float32, SKIP_CASES[4])


# -------------------------------------------------------------------------------------------------------------------
# RotaryEmbedding

ROPE_CASES = [
    # (input shape, num_heads, rotary_embedding_dim, interleaved, position ids: "start" or "each", cache rows)
    ((2, 5, 96), 0, 0, 0, "each", 40),
    ((2, 5, 96), 0, 0, 1, "start", 40),
    ((1, 1, 96), 3, 16, 0, "start", 40),
    ((3, 7, 80), 5, 8, 1, "each", 33),
    ((2, 3, 5, 32), 0, 0, 0, "each", 20),
    ((2, 3, 5, 32), 3, 24, 1, "start", 20),
]


def rope_model(dtype, shape, num_heads, rot, interleaved, positions, rows, head):
    batch = shape[0]
    seq = shape[2] if len(shape) == 4 else shape[1]
    half = (rot or head) // 2
    pos_shape = [1] if positions == "start" else [batch, seq]
    node = helper.make_node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], domain="com.microsoft",
                            interleaved=interleaved, num_heads=num_heads, rotary_embedding_dim=rot, scale=1.0)
    inputs = [vi("x", dtype, list(shape)), vi("pos", TensorProto.INT64, pos_shape), vi("cos", dtype, [rows, half]),
              vi("sin", dtype, [rows, half])]
    return model_of([node], inputs, [vi("y", dtype, list(shape))]), pos_shape, half


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("case", ROPE_CASES, ids=lambda c: "x{}-nh{}-rot{}-il{}-{}-rows{}".format(
    "x".join(map(str, c[0])), *c[1:]))
def test_rotary_embedding(make_session, run_cpu, dtype, case):
    shape, num_heads, rot, interleaved, positions, rows = case
    seed = new_seed()
    rng = np.random.default_rng(seed)
    head = shape[3] if len(shape) == 4 else (shape[2] // num_heads if num_heads else 32)
    model, pos_shape, half = rope_model(dtype, shape, num_heads, rot, interleaved, positions, rows, head)
    seq = shape[2] if len(shape) == 4 else shape[1]
    pos = rng.integers(0, rows - seq + 1, pos_shape).astype(np.int64)
    angles = rng.uniform(0, 6.3, (rows, half))
    feeds = {"x": rng.uniform(-1, 1, shape).astype(dtype), "pos": pos, "cos": np.cos(angles).astype(dtype),
             "sin": np.sin(angles).astype(dtype)}
    check_like_cpu(make_session, run_cpu, model, feeds, dtype, seed)


@pytest.mark.smoke
def test_rotary_embedding_smoke(make_session, run_cpu):
    test_rotary_embedding(make_session, run_cpu, np.float32, ROPE_CASES[0])


def test_rotary_embedding_position_past_the_cache_fails_the_run(make_session):
    model, _, half = rope_model(np.float32, (1, 4, 64), 0, 0, 0, "start", 8, 32)
    angles = np.zeros((8, half))
    feeds = {"x": np.ones((1, 4, 64), np.float32), "pos": np.array([5], np.int64),
             "cos": np.cos(angles).astype(np.float32), "sin": np.sin(angles).astype(np.float32)}
    sess = make_session(model, OURS)
    with pytest.raises(Exception, match="(?i)rotary|range|index|bounds"):
        sess.run(None, feeds)
    feeds["pos"] = np.array([4], np.int64)
    np.testing.assert_allclose(sess.run(None, feeds)[0], feeds["x"])


def test_rotary_embedding_packed_batching_is_declined_with_a_reason(make_session, capfd):
    model, _, _ = rope_model(np.float32, (1, 4, 64), 0, 0, 0, "start", 8, 32)
    model.graph.node[0].attribute.append(helper.make_attribute("is_packed_batching", 1))
    with pytest.raises(Exception):
        make_session(model, OURS)
    assert "is_packed_batching" in capfd.readouterr().err
