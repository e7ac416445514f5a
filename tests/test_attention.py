"""Fused attention through ONNX Runtime with CPU fallback disabled, against the CPU EP on fresh random data:

- the exported pattern (MatMul(Q, Kᵀ) → scale → (+ mask) → Softmax → MatMul(·, V)) inside Whisper- and BERT-style
  encoders whose head sizes (64, 80) the flash kernel has: the step profile shows it ran as `FlashAttention(fused)`;
- ONNX `Attention` (opset 23): 4-D and packed 3-D inputs, causal, boolean and additive masks, grouped-query heads
  (ratios 1, 4, 8), query length ≠ key length, float32 and float16; a head size the kernel lacks is declined.

Shapes stay small (llvmpipe); sequence lengths are no tile multiple. The flash kernel runs only with the session
option `attention=flash`; by default the pattern runs unfused and the attention ops are declined (tested last)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from onnx import TensorProto, helper

import models

EP = "WgpuExecutionProvider"
# The flash kernel runs only with this option (off by default: not yet tuned, slower than the unfused path on the
# H200; docs/PERFORMANCE.md). offload=all: these graphs are single small nodes, which the offload rule leaves to the
# CPU EP on a discrete GPU (host copies cost more than the work), and the tests are about what the kernels compute.
FLASH = {"attention": "flash", "offload": "all"}
TOL = {np.float32: 1e-4, np.float16: 1e-2}
ELEM = {np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16}


def new_seed() -> int:
    return int(np.random.default_rng().integers(0, 2**31))


def rel_err(got, want) -> float:
    want64 = want.astype(np.float64)
    return float(np.abs(got.astype(np.float64) - want64).max() / max(np.abs(want64).max(), 1e-30))


def profiled_ops(sess, feeds, tmp_path) -> tuple[list, list[str]]:
    """One run with the EP's step profile on: the outputs and the op types of every step."""
    path = tmp_path / "profile.jsonl"
    os.environ["ONNXRUNTIME_EP_WGPU_PROFILE"] = str(path)
    try:
        got = sess.run(None, feeds)
    finally:
        del os.environ["ONNXRUNTIME_EP_WGPU_PROFILE"]
    lines = path.read_text().splitlines() if path.exists() else []
    return got, [json.loads(line)["ops"] for line in lines]


# Q, K and V projections packed into one product (graph/packed_proj.rs): its step's ops.
PACKED = "MatMul+Add(Q/K/V)"


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("hf_eager", [False, True], ids=["k_bias", "hf_eager"])
def test_whisper_encoder_attention_is_fused(make_session, run_cpu, dtype, hf_eager, tmp_path):
    seed = new_seed()
    rng = np.random.default_rng(seed)
    # Head size 64 (d 128, 2 heads); 33 frames → 17 positions. hf_eager: Q scaled after its bias (the factor moves
    # into the attention's scale), K without a bias (zeros in the packed bias).
    model = models.whisper_encoder(models.Params(rng), dtype, batch=2, frames=33, d=128, heads=2, ffn=128, layers=1,
                                   hf_eager=hf_eager)
    feeds = {"input_features": rng.uniform(-1, 1, size=(2, 80, 33)).astype(dtype)}
    sess = make_session(model, FLASH)
    assert sess.get_providers() == [EP, "CPUExecutionProvider"]
    got, ops = profiled_ops(sess, feeds, tmp_path)
    want = run_cpu(model, feeds)
    assert rel_err(got[0], want[0]) <= TOL[dtype], f"seed {seed}"
    # The test adapter (llvmpipe) has timestamp queries, so the step profile is written.
    assert "FlashAttention(fused)" in ops, ops
    assert not any("Softmax" in o for o in ops), ops
    # One product for the three projections, the output projection and the two MLP products (MatMul + Add is a
    # Gemm after ONNX Runtime's fusion).
    assert ops.count(PACKED) == 1 and sum(o.startswith(("MatMul", "Gemm")) for o in ops) == 4, ops
    # The frontend's Transpose runs in the second conv's store (channels last); the one after the attention is the
    # kernel's store. Both residual Adds run in the stores of the output projection and fc2 (the frontend's
    # positional Add, broadcast over the batch of 2, stays).
    assert "Transpose" not in ops and "Conv+Div+Erf+Add+Mul+Mul+Transpose" in ops, ops
    assert ops.count("Add") == 1 and ops.count("Gemm+Add") == 2, ops


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_whisper_frontend_runs_in_the_second_conv(make_session, run_cpu, dtype, tmp_path):
    # Batch 1: the positional embedding [T, d] has the frontend's elements ([1, T, d]), so the second conv's store
    # applies GELU, moves the channels last and adds it: Conv → GELU → Transpose → Add is one step.
    seed = new_seed()
    rng = np.random.default_rng(seed)
    model = models.whisper_encoder(models.Params(rng), dtype, batch=1, frames=33, d=128, heads=2, ffn=128, layers=1)
    feeds = {"input_features": rng.uniform(-1, 1, size=(1, 80, 33)).astype(dtype)}
    sess = make_session(model, FLASH)
    got, ops = profiled_ops(sess, feeds, tmp_path)
    assert rel_err(got[0], run_cpu(model, feeds)[0]) <= TOL[dtype], f"seed {seed}"
    assert "Conv+Div+Erf+Add+Mul+Mul+Transpose+Add" in ops and "Transpose" not in ops and "Add" not in ops, ops


def test_bert_encoder_attention_with_mask_is_fused(make_session, run_cpu, tmp_path):
    seed = new_seed()
    rng = np.random.default_rng(seed)
    # Head size 80 (d 160, 2 heads), the padding mask added to the scores.
    model = models.bert_encoder(models.Params(rng), np.float32, batch=2, seq=13, d=160, heads=2, ffn=64, layers=1)
    lengths = np.array([13, 6])
    mask = (np.arange(13)[None, :] < lengths[:, None]).astype(np.int64)
    feeds = {"input_ids": rng.integers(0, 97, size=(2, 13)).astype(np.int64), "attention_mask": mask,
             "token_type_ids": np.zeros((2, 13), np.int64)}
    sess = make_session(model, FLASH)
    got, ops = profiled_ops(sess, feeds, tmp_path)
    for g, w in zip(got, run_cpu(model, feeds)):
        assert rel_err(g, w) <= TOL[np.float32], f"seed {seed}"
    assert "FlashAttention(fused)" in ops, ops
    assert not any("Softmax" in o for o in ops), ops
    # 160 f32 columns per projection: K and V start at 256-byte boundaries (columns 192 and 384), zeros between.
    assert PACKED in ops, ops


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_vit_encoder_attention_is_fused(make_session, run_cpu, dtype, tmp_path):
    seed = new_seed()
    rng = np.random.default_rng(seed)
    # transformers' ViT export: the Softmax's probabilities Cast to float32 and back; 17 tokens, head size 64.
    model = models.vit_encoder(models.Params(rng), dtype, batch=2, image=32, patch=8, d=128, heads=2, ffn=64, layers=2,
                               softmax_roundtrip=True)
    feeds = {"pixel_values": rng.uniform(-1, 1, size=(2, 3, 32, 32)).astype(dtype)}
    sess = make_session(model, FLASH)
    got, ops = profiled_ops(sess, feeds, tmp_path)
    for g, w in zip(got, run_cpu(model, feeds)):
        assert rel_err(g, w) <= TOL[dtype], f"seed {seed}"
    assert ops.count("FlashAttention(fused)") == 2 and ops.count(PACKED) == 2, ops
    assert not any("Softmax" in o or "Cast" in o for o in ops), ops


def attention_model(dtype, q_shape, k_shape, mask_shape=None, mask_type=None, **attrs):
    t = ELEM[dtype]
    v_shape = list(k_shape)
    inputs = [helper.make_tensor_value_info("q", t, q_shape), helper.make_tensor_value_info("k", t, k_shape),
              helper.make_tensor_value_info("v", t, v_shape)]
    names = ["q", "k", "v"]
    if mask_shape is not None:
        inputs.append(helper.make_tensor_value_info("m", mask_type, mask_shape))
        names.append("m")
    node = helper.make_node("Attention", names, ["y"], **attrs)
    graph = helper.make_graph([node], "attention", inputs, [helper.make_tensor_value_info("y", t, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    return model


# (batch, q heads, kv heads, Sq, Skv, head size, causal, mask, packed 3-D)
ATTENTION_CASES = [
    (1, 2, 2, 1, 7, 64, 0, None, False),
    (2, 4, 4, 33, 33, 64, 1, None, False),
    (1, 4, 1, 7, 45, 80, 0, "add", False),
    (1, 8, 1, 17, 17, 128, 1, "bool", True),
    (2, 8, 2, 9, 30, 96, 0, "bool", False),
    (1, 2, 2, 40, 19, 64, 1, "add", True),
    (1, 1, 1, 1500, 1500, 64, 1, None, False),
    # Gemma's head size 256: the SIMT flash kernel, and the split-KV kernel for one query row.
    (1, 4, 2, 23, 23, 256, 1, "add", False),
    (1, 2, 1, 1, 41, 256, 0, "bool", True),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("case", ATTENTION_CASES, ids=lambda c: "b{}h{}kv{}s{}x{}d{}c{}m{}p{}".format(*c))
def test_onnx_attention(make_session, run_cpu, dtype, case):
    b, hq, hkv, sq, skv, d, causal, mask, packed = case
    seed = new_seed()
    rng = np.random.default_rng(seed)
    shape = (lambda h, s: [b, s, h * d]) if packed else (lambda h, s: [b, h, s, d])
    feeds = {n: rng.uniform(-1, 1, size=shape(h, s)).astype(dtype) for n, h, s in (("q", hq, sq), ("k", hkv, skv), ("v", hkv, skv))}
    attrs = {"is_causal": causal, "scale": 0.7 / np.sqrt(d)}
    if packed:
        attrs.update(q_num_heads=hq, kv_num_heads=hkv)
    mask_shape = mask_type = None
    if mask == "add":
        mask_shape, mask_type = [b, 1, sq, skv], ELEM[dtype]
        feeds["m"] = rng.uniform(-2, 2, size=mask_shape).astype(dtype)
    elif mask == "bool":
        mask_shape, mask_type = [sq, skv], TensorProto.BOOL
        m = rng.uniform(size=mask_shape) < 0.7
        m[:, 0] = True  # no row without a key
        feeds["m"] = m
    model = attention_model(dtype, shape(hq, sq), shape(hkv, skv), mask_shape, mask_type, **attrs)
    sess = make_session(model, FLASH)
    got = sess.run(None, feeds)[0]
    want = run_cpu(model, feeds)[0]
    assert got.shape == want.shape
    assert rel_err(got, want) <= TOL[dtype] * (5 if dtype == np.float16 else 1), f"seed {seed}"


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("d", [64, 128])
def test_onnx_attention_with_scores_growing_along_the_keys(make_session, run_cpu, dtype, d):
    # Keys scaled up along the sequence and a large scale: each tile's max passes the previous ones by far more than
    # the tensor-core kernel's rescale threshold, so its output fragments are rescaled many times per row.
    seed = new_seed()
    rng = np.random.default_rng(seed)
    b, h, sq, skv = 1, 3, 70, 333
    feeds = {n: rng.uniform(-1, 1, size=[b, h, s, d]).astype(dtype) for n, s in (("q", sq), ("k", skv), ("v", skv))}
    feeds["k"] = (feeds["k"] * np.linspace(0.2, 3.0, skv, dtype=np.float32)[None, None, :, None]).astype(dtype)
    model = attention_model(dtype, [b, h, sq, d], [b, h, skv, d], None, None, scale=1.0)
    got = make_session(model, FLASH).run(None, feeds)[0]
    want = run_cpu(model, feeds)[0]
    assert rel_err(got, want) <= TOL[dtype] * (5 if dtype == np.float16 else 1), f"seed {seed}"


def test_onnx_attention_with_other_head_size_is_declined(make_session):
    model = attention_model(np.float32, [1, 2, 5, 72], [1, 2, 5, 72])
    with pytest.raises(Exception, match="(?i)fallback|assigned|not.*support|capab"):
        make_session(model, FLASH)


# (batch, heads, Sq, Skv, head size, unidirectional, attention_bias, K/V as [B, N, L, H])
MHA_CASES = [
    (2, 2, 17, 17, 64, 0, False, False),
    (1, 4, 9, 33, 80, 0, True, False),
    (2, 2, 21, 21, 128, 1, False, False),
    (1, 3, 5, 40, 96, 0, True, True),
    (1, 2, 13, 13, 256, 1, False, False),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("case", MHA_CASES, ids=lambda c: "b{}n{}s{}x{}h{}u{}bias{}bnsh{}".format(*c))
def test_multi_head_attention(make_session, run_cpu, dtype, case):
    b, n, sq, skv, h, uni, with_bias, bnsh = case
    seed = new_seed()
    rng = np.random.default_rng(seed)
    t = ELEM[dtype]
    kv_shape = [b, n, skv, h] if bnsh else [b, skv, n * h]
    feeds = {"q": rng.uniform(-1, 1, size=(b, sq, n * h)).astype(dtype),
             "k": rng.uniform(-1, 1, size=kv_shape).astype(dtype), "v": rng.uniform(-1, 1, size=kv_shape).astype(dtype)}
    inputs = [helper.make_tensor_value_info("q", t, [b, sq, n * h]), helper.make_tensor_value_info("k", t, kv_shape),
              helper.make_tensor_value_info("v", t, kv_shape)]
    names = ["q", "k", "v"]
    if with_bias:
        feeds["ab"] = rng.uniform(-2, 2, size=(1, n, sq, skv)).astype(dtype)
        inputs.append(helper.make_tensor_value_info("ab", t, [1, n, sq, skv]))
        names += ["", "", "ab"]
    node = helper.make_node("MultiHeadAttention", names, ["y"], domain="com.microsoft", num_heads=n, unidirectional=uni)
    graph = helper.make_graph([node], "mha", inputs, [helper.make_tensor_value_info("y", t, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 9
    got = make_session(model, FLASH).run(None, feeds)[0]
    want = run_cpu(model, feeds)[0]
    assert got.shape == want.shape
    assert rel_err(got, want) <= TOL[dtype] * (5 if dtype == np.float16 else 1), f"seed {seed}"


def test_without_the_option_attention_runs_unfused_and_attention_ops_are_declined(make_session, run_cpu, tmp_path):
    seed = new_seed()
    rng = np.random.default_rng(seed)
    # Head size 128: by default f32 runs fused only at head size 64, and only on a device with tensor cores.
    model = models.whisper_encoder(models.Params(rng), np.float32, batch=1, frames=33, d=256, heads=2, ffn=128,
                                   layers=1)
    feeds = {"input_features": rng.uniform(-1, 1, size=(1, 80, 33)).astype(np.float32)}
    # No attention option (offload=all only keeps this small graph ours on a discrete GPU).
    got, ops = profiled_ops(make_session(model, {"offload": "all"}), feeds, tmp_path)
    assert rel_err(got[0], run_cpu(model, feeds)[0]) <= TOL[np.float32], f"seed {seed}"
    assert "FlashAttention(fused)" not in ops and any("Softmax" in o for o in ops), ops
    with pytest.raises(Exception, match="(?i)fallback|assigned"):
        make_session(attention_model(np.float32, [1, 2, 5, 128], [1, 2, 5, 128]), {"offload": "all"})
