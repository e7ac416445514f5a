"""The quantized contrib ops of onnxruntime-genai's int4 models against ONNX Runtime's CPU EP, on fresh random data,
in float32 and float16, with every node ours (CPU fallback disabled): MatMulNBits (2, 4 and 8 bits, block sizes
16..256, with and without zero points, float and float16 scales, M of 1, 3 and 37, K and N that are not tile
multiples), GatherBlockQuantized (4 and 8 bits, block sizes 16..256, with and without zero points, int32 and int64
indices, vocab and hidden sizes that are not tile multiples) and a Llama-style int4 MLP block. Attributes the EP
cannot run are declined with a logged reason."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from test_llm_ops import OURS, TOL, check_like_cpu, model_of, new_seed, rel_err, vi


# -------------------------------------------------------------------------------------------------------------------
# MatMulNBits


def pack_nbits(q, bits):
    """Values of `bits` bits along the last axis, packed low bits first into uint8."""
    per = 8 // bits
    if q.shape[-1] % per:
        q = np.concatenate([q, np.zeros(q.shape[:-1] + (per - q.shape[-1] % per,), q.dtype)], axis=-1)
    q = q.astype(np.uint8)
    return np.bitwise_or.reduce([q[..., i::per] << (bits * i) for i in range(per)], axis=0).astype(np.uint8)


def nbits_model(rng, dtype, a_shape, n, bits, block, zp, bias, accuracy_level=0):
    """A MatMulNBits node with random packed weights as initializers; zp is None, "u8" or "typed"."""
    k = a_shape[-1]
    k_blocks = -(-k // block)
    q = rng.integers(0, 2**bits, (n, k_blocks, block)).astype(np.uint8)
    scales = rng.uniform(0.01, 0.1, n * k_blocks).astype(dtype)
    inits = [numpy_helper.from_array(pack_nbits(q, bits), "B"), numpy_helper.from_array(scales, "scales")]
    names = ["A", "B", "scales"]
    if zp == "u8":
        zps = pack_nbits(rng.integers(0, 2**bits, (n, k_blocks)).astype(np.uint8), bits).ravel()
        inits.append(numpy_helper.from_array(zps, "zp"))
    elif zp == "typed":
        inits.append(numpy_helper.from_array(rng.uniform(0, 2**bits - 1, n * k_blocks).astype(dtype), "zp"))
    names.append("zp" if zp else "")
    if bias:
        names += ["", "bias"]
        inits.append(numpy_helper.from_array(rng.uniform(-1, 1, n).astype(dtype), "bias"))
    while names[-1] == "":
        names.pop()
    node = helper.make_node("MatMulNBits", names, ["Y"], domain="com.microsoft", K=k, N=n, bits=bits, block_size=block,
                            accuracy_level=accuracy_level)
    out_shape = list(a_shape[:-1]) + [n]
    return model_of([node], [vi("A", dtype, list(a_shape))], [vi("Y", dtype, out_shape)], inits)


NBITS_CASES = [
    # (A shape, N, bits, block size, zero points, bias)
    ((1, 96), 67, 4, 32, None, False),
    ((3, 80), 67, 4, 16, "u8", True),
    ((37, 96), 67, 4, 32, "u8", False),
    ((2, 1, 80), 67, 8, 16, None, True),
    ((3, 96), 67, 8, 32, "u8", False),
    ((37, 80), 33, 8, 16, "u8", True),
    ((3, 200), 40, 4, 64, "typed", False),
    ((37, 200), 40, 4, 128, "typed", True),
    ((1, 300), 19, 4, 256, "u8", False),
    ((5, 37, 80), 9, 4, 16, None, False),
    ((1, 80), 67, 2, 16, None, True),
    ((3, 112), 33, 2, 32, "u8", False),
    ((37, 144), 19, 2, 16, "u8", True),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("case", NBITS_CASES, ids=lambda c: "a{}-n{}-b{}-bs{}-zp{}-bias{}".format(
    "x".join(map(str, c[0])), c[1], c[2], c[3], c[4], int(c[5])))
def test_matmul_nbits(make_session, run_cpu, dtype, case):
    a_shape, n, bits, block, zp, bias = case
    seed = new_seed()
    rng = np.random.default_rng(seed)
    model = nbits_model(rng, dtype, a_shape, n, bits, block, zp, bias)
    feeds = {"A": rng.uniform(-1, 1, a_shape).astype(dtype)}
    check_like_cpu(make_session, run_cpu, model, feeds, dtype, seed)


@pytest.mark.smoke
def test_matmul_nbits_smoke(make_session, run_cpu):
    test_matmul_nbits(make_session, run_cpu, np.float32, NBITS_CASES[1])


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_matmul_nbits_accuracy_level_4(make_session, run_cpu, dtype):
    # The builder's CPU models ask for int8 compute; we accept the attribute and compute in f32, so the CPU EP (which
    # quantises A to int8 for it) is matched only within that quantisation's error.
    seed = new_seed()
    rng = np.random.default_rng(seed)
    model = nbits_model(rng, dtype, (3, 96), 67, 4, 32, "u8", False, accuracy_level=4)
    feeds = {"A": rng.uniform(-1, 1, (3, 96)).astype(dtype)}
    got = make_session(model, OURS).run(None, feeds)[0]
    want = run_cpu(model, feeds)[0]
    assert rel_err(got, want) <= 2e-2, f"seed {seed}"


@pytest.mark.parametrize("attrs,needle", [({"bits": 3}, "bits=3"), ({"block_size": 8}, "block_size=8"),
                                          ({"g_idx": True}, "g_idx")])
def test_matmul_nbits_unsupported_is_declined_with_a_reason(make_session, run_cpu, capfd, attrs, needle):
    rng = np.random.default_rng(new_seed())
    model = nbits_model(rng, np.float32, (3, 64), 8, 4, 16, "u8", False)
    node = model.graph.node[0]
    for a in node.attribute:
        if a.name in attrs:
            a.i = attrs[a.name]
    if "g_idx" in attrs:
        node.input.append("g_idx")
        model.graph.initializer.append(numpy_helper.from_array((np.arange(64) // 16).astype(np.int32), "g_idx"))
    with pytest.raises(Exception):
        make_session(model, OURS)  # declined, and the CPU EP is not allowed
    assert needle in capfd.readouterr().err, "the decline's reason is not logged"


# -------------------------------------------------------------------------------------------------------------------
# GatherBlockQuantized: the embedding lookup of the builder's int4 models with tied embeddings (the lm_head's
# MatMulNBits weights as a uint8 [vocab, hidden * bits / 8] table, its scales and packed zero points)


def gbq_model(rng, dtype, vocab, hidden, bits, block, zp, index_type):
    k_blocks = -(-hidden // block)
    q = rng.integers(0, 2**bits, (vocab, hidden)).astype(np.uint8)
    inits = [numpy_helper.from_array(pack_nbits(q, bits), "data"),
             numpy_helper.from_array(rng.uniform(0.01, 0.1, (vocab, k_blocks)).astype(dtype), "scales")]
    names = ["data", "ids", "scales"]
    if zp:
        inits.append(numpy_helper.from_array(pack_nbits(rng.integers(0, 2**bits, (vocab, k_blocks)), bits), "zp"))
        names.append("zp")
    node = helper.make_node("GatherBlockQuantized", names, ["y"], domain="com.microsoft", bits=bits, block_size=block,
                            gather_axis=0, quantize_axis=1)
    return model_of([node], [vi("ids", index_type, [2, 7])], [vi("y", dtype, [2, 7, hidden])], inits)


GBQ_CASES = [
    # (vocab, hidden, bits, block size, zero points, indices)
    (67, 96, 4, 16, True, TensorProto.INT64),
    (67, 80, 4, 16, True, TensorProto.INT64),
    (67, 80, 4, 32, False, TensorProto.INT64),
    (101, 200, 4, 64, True, TensorProto.INT32),
    (37, 136, 4, 128, False, TensorProto.INT64),
    (37, 300, 4, 256, True, TensorProto.INT64),
    (50, 72, 8, 32, True, TensorProto.INT64),
    (50, 72, 8, 16, False, TensorProto.INT32),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("case", GBQ_CASES, ids=lambda c: "v{}-h{}-b{}-bs{}-zp{}-{}".format(
    *c[:4], int(c[4]), "i64" if c[5] == TensorProto.INT64 else "i32"))
def test_gather_block_quantized(make_session, run_cpu, dtype, case):
    vocab, hidden, bits, block, zp, index_type = case
    seed = new_seed()
    rng = np.random.default_rng(seed)
    model = gbq_model(rng, dtype, vocab, hidden, bits, block, zp, index_type)
    ids = rng.integers(-vocab, vocab, (2, 7)).astype(np.int64 if index_type == TensorProto.INT64 else np.int32)
    check_like_cpu(make_session, run_cpu, model, {"ids": ids}, dtype, seed)


@pytest.mark.smoke
def test_gather_block_quantized_smoke(make_session, run_cpu):
    # An even number of blocks per row: ONNX Runtime 1.24's CPU EP reads packed zero points without each row's padding
    # to a byte (1.32's, MatMulNBits' and ours pad), so the two agree only there.
    test_gather_block_quantized(make_session, run_cpu, np.float16, GBQ_CASES[0])


def test_gather_block_quantized_index_out_of_range_fails_the_run(make_session):
    # ONNX Runtime 1.24's CPU EP fails such a run; 1.32's writes zeros. We fail it, naming the node.
    model = gbq_model(np.random.default_rng(new_seed()), np.float32, 67, 80, 4, 16, True, TensorProto.INT64)
    sess = make_session(model, OURS)
    ids = np.zeros((2, 7), np.int64)
    ids[1, 3] = 67
    with pytest.raises(Exception, match="(?i)GatherBlockQuantized.*range"):
        sess.run(None, {"ids": ids})
    ids[1, 3] = -67
    assert sess.run(None, {"ids": ids})[0].shape == (2, 7, 80)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_tied_quantized_embeddings(make_session, run_cpu, dtype):
    # As the builder ties them: the lm_head's packed weights reshaped into the embedding table, its scales and zero
    # points shared; every node ours.
    seed = new_seed()
    rng = np.random.default_rng(seed)
    vocab, hidden, block = 67, 96, 32
    k_blocks = hidden // block
    inits = [numpy_helper.from_array(pack_nbits(rng.integers(0, 16, (vocab, k_blocks, block)), 4), "B"),
             numpy_helper.from_array(rng.uniform(0.01, 0.1, (vocab, k_blocks)).astype(dtype), "scales"),
             numpy_helper.from_array(pack_nbits(rng.integers(0, 16, (vocab, k_blocks)), 4), "zp"),
             numpy_helper.from_array(np.array([vocab, hidden // 2], np.int64), "table_shape")]
    nodes = [helper.make_node("Reshape", ["B", "table_shape"], ["table"]),
             helper.make_node("GatherBlockQuantized", ["table", "ids", "scales", "zp"], ["emb"], domain="com.microsoft",
                              bits=4, block_size=block, gather_axis=0, quantize_axis=1),
             helper.make_node("MatMulNBits", ["emb", "B", "scales", "zp"], ["logits"], domain="com.microsoft", K=hidden,
                              N=vocab, bits=4, block_size=block)]
    model = model_of(nodes, [vi("ids", TensorProto.INT64, [1, 5])], [vi("logits", dtype, [1, 5, vocab])], inits)
    check_like_cpu(make_session, run_cpu, model, {"ids": rng.integers(0, vocab, (1, 5))}, dtype, seed)


@pytest.mark.parametrize("data_type", [TensorProto.UINT4, TensorProto.INT4])
def test_gather_block_quantized_int4_data_is_declined_with_a_reason(make_session, capfd, data_type):
    # ONNX Runtime's schema rejects other bits, block sizes and axes itself; int4/uint4 tables it takes, we do not.
    rng = np.random.default_rng(new_seed())
    model = gbq_model(rng, np.float32, 67, 80, 4, 16, False, TensorProto.INT64)
    lo = -8 if data_type == TensorProto.INT4 else 0
    data = helper.make_tensor("data", data_type, [67, 80], rng.integers(lo, lo + 16, 67 * 80).tolist())
    model.graph.initializer[0].CopyFrom(data)
    with pytest.raises(Exception):
        make_session(model, OURS)  # declined, and the CPU EP is not allowed
    assert "only uint8 tables" in capfd.readouterr().err, "the decline's reason is not logged"


# -------------------------------------------------------------------------------------------------------------------
# A Llama-style MLP block as onnxruntime-genai's builder emits it, every node ours (one partition)


def nbits_node(rng, dtype, name, src, k, n, block=32):
    k_blocks = -(-k // block)
    q = rng.integers(0, 16, (n, k_blocks, block)).astype(np.uint8)
    inits = [numpy_helper.from_array(pack_nbits(q, 4), f"{name}.B"),
             numpy_helper.from_array(rng.uniform(0.005, 0.03, n * k_blocks).astype(dtype), f"{name}.scales")]
    node = helper.make_node("MatMulNBits", [src, f"{name}.B", f"{name}.scales"], [name], domain="com.microsoft", K=k,
                            N=n, bits=4, block_size=block, accuracy_level=0)
    return node, inits


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("seq", [1, 5, 37])
def test_llama_mlp_block(make_session, run_cpu, dtype, seq, tmp_path):
    """An int4 SwiGLU block: the norm before it and the up projection join the gate's step, whose MatMulNBits applies the SiLU and
    multiplies by the up projection's result in its store (one row: one kernel over both weights; five and 37
    rows: the up projection into a scratch buffer, then the GEMV and tiled kernels; on a tensor-core device 37
    rows take the dequantised GEMM), with the CPU EP's values."""
    seed = new_seed()
    rng = np.random.default_rng(seed)
    hidden, ffn = 96, 160
    shape = [1, seq, hidden]
    g1, g2 = (numpy_helper.from_array(rng.uniform(0.5, 1.5, hidden).astype(dtype), n) for n in ("g1", "g2"))
    nodes = [helper.make_node("SkipSimplifiedLayerNormalization", ["x", "skip", "g1"], ["h", "", "", "res"],
                              domain="com.microsoft", epsilon=1e-6)]
    inits = [g1, g2]
    for name, src, k, n in [("gate", "h", hidden, ffn), ("up", "h", hidden, ffn)]:
        node, more = nbits_node(rng, dtype, name, src, k, n)
        nodes.append(node)
        inits += more
    nodes += [helper.make_node("Sigmoid", ["gate"], ["sig"]), helper.make_node("Mul", ["gate", "sig"], ["silu"]),
              helper.make_node("Mul", ["silu", "up"], ["act"])]
    node, more = nbits_node(rng, dtype, "down", "act", ffn, hidden)
    nodes.append(node)
    inits += more
    nodes += [helper.make_node("Add", ["down", "res"], ["out"]),
              helper.make_node("SimplifiedLayerNormalization", ["out", "g2"], ["y"], axis=-1, epsilon=1e-6)]
    model = model_of(nodes, [vi("x", dtype, shape), vi("skip", dtype, shape)], [vi("y", dtype, shape)], inits)
    feeds = {"x": rng.uniform(-1, 1, shape).astype(dtype), "skip": rng.uniform(-1, 1, shape).astype(dtype)}
    check_like_cpu(make_session, run_cpu, model, feeds, dtype, seed)
    path = tmp_path / "profile.jsonl"
    os.environ["ONNXRUNTIME_EP_WGPU_PROFILE"] = str(path)
    try:
        make_session(model, OURS).run(None, feeds)
    finally:
        del os.environ["ONNXRUNTIME_EP_WGPU_PROFILE"]
    ops = [json.loads(line)["ops"] for line in path.read_text().splitlines()]
    # The norm before them folds into their step (one row: one dispatch); the one plain MatMulNBits left is the
    # down projection.
    fused = "SkipSimplifiedLayerNormalization+MatMulNBits+MatMulNBits+Sigmoid+Mul+Mul"
    assert fused in ops and ops.count("MatMulNBits") == 1 and "Mul" not in ops, ops
    assert "SkipSimplifiedLayerNormalization" not in ops, ops


def test_matmul_nbits_wrong_k_at_run_time_fails_clearly(make_session, run_cpu):
    rng = np.random.default_rng(new_seed())
    model = nbits_model(rng, np.float32, (3, 96), 67, 4, 32, "u8", False)
    model.graph.input[0].CopyFrom(vi("A", np.float32, ["m", "k"]))
    feeds = {"A": rng.uniform(-1, 1, (3, 90)).astype(np.float32)}
    with pytest.raises(Exception):
        run_cpu(model, feeds)
    sess = make_session(model, OURS)  # claimed: the shape is only known at run time
    with pytest.raises(Exception) as failure:
        sess.run(None, feeds)
    message = str(failure.value)
    assert "MatMulNBits" in message and "K" in message and "internal error" not in message, message
    feeds["A"] = rng.uniform(-1, 1, (5, 96)).astype(np.float32)
    assert rel_err(sess.run(None, feeds)[0], run_cpu(model, feeds)[0]) <= TOL[np.float32]
