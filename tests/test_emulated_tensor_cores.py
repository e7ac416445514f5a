"""The plans a tensor-core device makes, run end to end through ONNX Runtime on an adapter without tensor cores
(CI's llvmpipe): the EP option `emulate_tensor_cores=1` plans every cooperative-matrix kernel in its emulated form
(plain WGSL with the fragments' semantics), so the products, split float32 products, flash attention and the
int4 dequantised prefill that only the H200 ran before are checked against the CPU EP on every CI run.

Each test also asserts which kernels ran (the per-dispatch profile), so a plan that quietly falls back to the
SIMT kernels fails instead of passing on the wrong path. Error measure: max |ours - CPU| / max |CPU| per output."""

from __future__ import annotations


import numpy as np
import pytest

import models
from dispatch_profile import run_dispatches
from llm_graph import llm_feeds, llm_model

EMU = {"emulate_tensor_cores": "1"}
TOL = {np.float32: 1e-4, np.float16: 1e-2}


@pytest.fixture(autouse=True)
def without_tensor_cores(ep_devices):
    """The option is refused on an adapter with tensor cores (there the other tests run the real kernels), so these
    run on the software adapter, as in CI."""
    if dict(ep_devices[0].ep_metadata).get("wgpu.software") != "1":
        pytest.skip("the emulated tensor-core kernels are tested on the software adapter")


def new_seed() -> int:
    return int(np.random.default_rng().integers(0, 2**31))


def rel_err(got, want) -> float:
    want64 = want.astype(np.float64)
    return float(np.abs(got.astype(np.float64) - want64).max() / max(np.abs(want64).max(), 1e-30))


def check(make_session, run_cpu, model, feeds, dtype, seed, tmp_path, options=None, tol=None):
    """Our outputs (every node ours, emulated tensor cores) against the CPU EP's; the dispatches."""
    sess = make_session(model, dict(EMU, **(options or {})))
    got, ops = run_dispatches(sess, feeds, tmp_path)
    want = run_cpu(model, feeds)
    for g, w in zip(got, want):
        assert g.shape == w.shape, (g.shape, w.shape)
        err = rel_err(g, w)
        assert err <= (tol or TOL[dtype]), f"relative error {err:.3g} (seed {seed}): {ops}"
    return ops


def kernels(ops, step):
    """The programs the steps named `step` dispatched."""
    return [o.split(" [", 1)[1].rstrip("]") for o in ops if o.split(" [", 1)[0] == step]


def whisper_ops(make_session, run_cpu, dtype, tmp_path, batch, frames, d, ffn):
    """A one-layer Whisper encoder of two heads on fresh data, checked (f32 products split, `f32_split=1`, as the
    H200 plans Whisper's); its dispatches."""
    seed = new_seed()
    rng = np.random.default_rng(seed)
    model = models.whisper_encoder(models.Params(rng), dtype, batch=batch, frames=frames, d=d, heads=2, ffn=ffn,
                                   layers=1)
    feeds = {"input_features": rng.uniform(-1, 1, (batch, 80, frames)).astype(dtype)}
    options = {"f32_split": "1"} if dtype == np.float32 else None
    return check(make_session, run_cpu, model, feeds, dtype, seed, tmp_path, options)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_whisper_encoder_on_emulated_tensor_cores(make_session, run_cpu, dtype, tmp_path):
    """Head size 64: the packed Q/K/V product and the tensor-core flash attention (f32: three f16 products of split
    operands, `x3`), every product on a coop tile. f32 products split too (`f32_split=1`, as the H200 plans
    Whisper's): the Q/K/V product reads a LayerNorm's output, whose bound the program computes when it is built
    (`graph/bounds.rs`), so neither it nor the attention takes a max pass; the output projection and fc2 read the
    residual stream, whose bound is unknown, so their split products keep theirs."""
    ops = whisper_ops(make_session, run_cpu, dtype, tmp_path, batch=2, frames=33, d=128, ffn=256)
    attention = kernels(ops, "FlashAttention(fused)")
    qkv = kernels(ops, "MatMul+Add(Q/K/V)")
    products = qkv + kernels(ops, "Gemm+Add") + kernels(ops, "Gemm+Div+Erf+Add+Mul+Mul")
    assert len(attention) == 1 and all(k.startswith("attn_coop_") and k.endswith("_emu") for k in attention), ops
    assert len(qkv) == 1 and all("_coop_" in k and "_emu" in k for k in qkv), ops
    assert all("_coop_" in k and "_emu" in k for k in products if k != "absmax_t256"), ops
    if dtype == np.float32:
        assert all("f32x3" in k for k in attention) and all("_x3" in k for k in products if "_coop_" in k), ops
        assert "absmax_t256" not in qkv and not any("absmax" in k for k in attention), ops
        assert kernels(ops, "Gemm+Add").count("absmax_t256") == 2, ops


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_whisper_frontend_stores_channels_last_from_emulated_tensor_cores(make_session, run_cpu, dtype, tmp_path):
    """Whisper's second conv with its GELU, the Transpose moving channels last and the positional embedding's Add,
    as one coop product (f32: split, `f32_split=1`) of the weights and im2col's buffer stored through transposed
    strides, the residual read through them too. 44 output frames (16-byte rows for the coop loads, not a tile
    multiple), 72 channels (not a multiple of 64 or 16)."""
    ops = whisper_ops(make_session, run_cpu, dtype, tmp_path, batch=1, frames=88, d=72, ffn=96)
    conv2 = kernels(ops, "Conv+Div+Erf+Add+Mul+Mul+Transpose+Add")
    assert any("_coop_" in k and k.endswith("_emu_xact_res") for k in conv2), ops
    assert not any("_at" in k or "_bt" in k for k in conv2), ops  # neither operand read transposed


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_bert_encoder_with_its_mask_on_emulated_tensor_cores(make_session, run_cpu, dtype, tmp_path):
    """BERT's additive mask (a padded row and a shorter one) on the emulated tensor-core flash kernel; head size 64."""
    seed = new_seed()
    rng = np.random.default_rng(seed)
    model = models.bert_encoder(models.Params(rng), dtype, batch=3, seq=37, d=128, heads=2, ffn=256, layers=1,
                                max_positions=64)
    lengths = np.array([37, 20, 1])
    mask = (np.arange(37)[None, :] < lengths[:, None]).astype(np.int64)
    feeds = {"input_ids": rng.integers(0, 97, (3, 37)).astype(np.int64), "attention_mask": mask,
             "token_type_ids": np.zeros((3, 37), np.int64)}
    ops = check(make_session, run_cpu, model, feeds, dtype, seed, tmp_path)
    attention = kernels(ops, "FlashAttention(fused)")
    assert len(attention) == 1 and all(k.startswith("attn_coop_") and "_emu" in k for k in attention), ops


def test_int4_decoder_prefill_dequantises_onto_emulated_tensor_cores(make_session, run_cpu, tmp_path):
    """The builder's int4 Llama form in float16 (`llm_model(nbits=True, packed_gqa=True)`): a 35-token prompt runs
    each MatMulNBits as its weights dequantised once into a coop GEMM (from 32 rows on a tensor-core device; float32
    products take the SIMT kernels there), and GroupQueryAttention's prompt on the tensor-core flash kernel; then
    one decode step (GEMVs) from its presents."""
    seed = new_seed()
    rng = np.random.default_rng(seed)
    dtype = np.float16
    model = llm_model(dtype, layers=1, hidden=128, heads=2, kv_heads=1, ffn=136, vocab=160, seed=seed, nbits=True,
                      packed_gqa=True)
    feeds = llm_feeds(model, 1, 35, 0, rng, dtype)
    sess = make_session(model, EMU, fallback=True)  # the attention_mask arithmetic stays on the CPU
    got, ops = run_dispatches(sess, feeds, tmp_path)
    want = run_cpu(model, feeds)
    tol = 2e-2
    for g, w in zip(got, want):
        assert rel_err(g, w) <= tol, f"prompt: relative error {rel_err(g, w):.3g} (seed {seed})"
    coop = [o for o in ops if "_coop_" in o and "_emu" in o]
    # Q/K/V, O, SwiGLU's up then gate (SiLU and the up product in its store), down, the LM head.
    assert sum("MatMulNBits" in o.split(" [")[0] for o in coop) == 6, ops
    assert any(o.startswith("SkipSimplifiedLayerNormalization+MatMulNBits+MatMulNBits") and "_xact_res" in o
               for o in coop), ops
    assert sum(o.startswith("GroupQueryAttention") and "attn_coop_" in o for o in ops) == 1, ops
    names = [o.name for o in sess.get_outputs()]
    past = {n.replace("present.", "past_key_values."): v for n, v in zip(names[1:], got[1:])}
    step = dict(past, input_ids=np.array([[7]], np.int64), attention_mask=np.ones((1, 36), np.int64))
    past_cpu = {n.replace("present.", "past_key_values."): v for n, v in zip(names[1:], want[1:])}
    got = sess.run(None, step)
    want = run_cpu(model, dict(step, **past_cpu))
    for g, w in zip(got, want):
        assert rel_err(g, w) <= tol, f"decode: relative error {rel_err(g, w):.3g} (seed {seed})"


def test_the_option_is_validated(make_session):
    with pytest.raises(Exception, match="emulate_tensor_cores"):
        make_session(models.matmul([4, 8], [8, 3]), {"emulate_tensor_cores": "maybe"})
