"""Whole transformer encoders (Whisper, BERT, ViT) built the way torch.onnx exports them from `transformers` at opset
17 (tests/models.py), run on our EP with CPU fallback disabled — so every node, attention, LayerNorm, GELU, mask and
embedding included, must be ours — against the CPU EP on fresh random weights and data.

Error measure: max |ours − CPU| / max |CPU| per output, at most 1e-4 for float32 and 1e-2 for float16. The seed of
the weights and data is in each failure message."""

from __future__ import annotations

import numpy as np
import pytest

import models

EP = "WgpuExecutionProvider"
TOL = {np.float32: 1e-4, np.float16: 1e-2}


def new_seed() -> int:
    return int(np.random.default_rng().integers(0, 2**31))


def rel_err(got, want) -> float:
    want64 = want.astype(np.float64)
    return float(np.abs(got.astype(np.float64) - want64).max() / max(np.abs(want64).max(), 1e-30))


def check(make_session, run_cpu, model, feeds, dtype, seed, options=None):
    sess = make_session(model, options)  # CPU fallback disabled: creation fails unless every node is ours
    assert sess.get_providers() == [EP, "CPUExecutionProvider"], sess.get_providers()
    got = sess.run(None, feeds)
    want = run_cpu(model, feeds)
    names = [o.name for o in model.graph.output]
    for name, g, w in zip(names, got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (name, g.shape, w.shape, g.dtype, w.dtype)
        assert np.isfinite(g).all(), f"{name}: non-finite values (seed {seed})"
        err = rel_err(g, w)
        assert err <= TOL[np.dtype(dtype).type], f"{name}: relative error {err:.3g} (seed {seed})"
    return sess


def float_input(rng, shape, dtype):
    return rng.uniform(-1, 1, size=shape).astype(dtype)


def bert_feeds(rng, batch=2, seq=13, vocab=97, fully_padded_row=False):
    lengths = rng.integers(1, seq + 1, size=batch)
    lengths[0] = seq  # one row without padding
    mask = (np.arange(seq)[None, :] < lengths[:, None]).astype(np.int64)
    if fully_padded_row and batch > 1:
        mask[-1] = 0
    token_types = (np.arange(seq)[None, :] >= (lengths[:, None] // 2)).astype(np.int64) * mask
    return {"input_ids": rng.integers(0, vocab, size=(batch, seq)).astype(np.int64), "attention_mask": mask, "token_type_ids": token_types}


@pytest.mark.smoke
def test_whisper_encoder_fp32_smoke(make_session, run_cpu):
    seed = new_seed()
    rng = np.random.default_rng(seed)
    model = models.whisper_encoder(models.Params(rng), np.float32, batch=1)
    check(make_session, run_cpu, model, {"input_features": float_input(rng, (1, 80, 61), np.float32)}, np.float32, seed)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_whisper_encoder(make_session, run_cpu, dtype):
    seed = new_seed()
    rng = np.random.default_rng(seed)
    model = models.whisper_encoder(models.Params(rng), dtype)
    sess = check(make_session, run_cpu, model, {"input_features": float_input(rng, (2, 80, 61), dtype)}, dtype, seed)
    # The same session again on new data (the prepared buffers are reused).
    for _ in range(2):
        feeds = {"input_features": float_input(rng, (2, 80, 61), dtype)}
        err = rel_err(sess.run(None, feeds)[0], run_cpu(model, feeds)[0])
        assert err <= TOL[np.dtype(dtype).type], f"rerun: relative error {err:.3g} (seed {seed})"


def test_whisper_encoder_variants(make_session, run_cpu):
    # The fp16 export's clamp (Clip) and float32 softmax (Cast → Softmax → Cast) inside a float32 graph, and the
    # plain fp16 graph without them: each pattern on its own; and HF's eager attention (q scaled, k without bias).
    seed = new_seed()
    rng = np.random.default_rng(seed)
    params = models.Params(rng)
    for dtype, extras, eager in ((np.float32, True, False), (np.float16, False, False), (np.float32, False, True)):
        model = models.whisper_encoder(params, dtype, layers=1, clamp=extras, softmax_fp32=extras, hf_eager=eager)
        check(make_session, run_cpu, model, {"input_features": float_input(rng, (2, 80, 61), dtype)}, dtype, seed)


def test_whisper_encoder_with_a_symbolic_batch(make_session, run_cpu):
    """Batch declared symbolic, Reshapes copying it (0): shapes resolved at run time, several batch sizes on one
    session."""
    seed = new_seed()
    rng = np.random.default_rng(seed)
    model = models.whisper_encoder(models.Params(rng), np.float32, batch=0, layers=1)
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    model.graph.output[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    sess = make_session(model)
    for batch in (1, 3, 2):
        feeds = {"input_features": float_input(rng, (batch, 80, 61), np.float32)}
        got, want = sess.run(None, feeds)[0], run_cpu(model, feeds)[0]
        assert got.shape == want.shape == (batch, 31, 64)
        assert rel_err(got, want) <= TOL[np.float32], f"batch {batch}: {rel_err(got, want):.3g} (seed {seed})"


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_bert_encoder(make_session, run_cpu, dtype):
    seed = new_seed()
    rng = np.random.default_rng(seed)
    model = models.bert_encoder(models.Params(rng), dtype, batch=3)
    check(make_session, run_cpu, model, bert_feeds(rng, batch=3), dtype, seed)


def test_bert_encoder_with_a_fully_padded_row(make_session, run_cpu):
    # A row whose mask is all zeros: every score gets finfo.min, the softmax is uniform (as on the CPU EP).
    seed = new_seed()
    rng = np.random.default_rng(seed)
    model = models.bert_encoder(models.Params(rng), np.float32, batch=2)
    check(make_session, run_cpu, model, bert_feeds(rng, batch=2, fully_padded_row=True), np.float32, seed)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_vit_encoder(make_session, run_cpu, dtype):
    seed = new_seed()
    rng = np.random.default_rng(seed)
    model = models.vit_encoder(models.Params(rng), dtype)
    check(make_session, run_cpu, model, {"pixel_values": float_input(rng, (2, 3, 32, 32), dtype)}, dtype, seed)


def test_every_node_of_an_encoder_runs_on_our_ep_in_one_partition(run_profiled, run_cpu):
    """Beyond fallback being disabled: ONNX Runtime's profile of a run lists only our EP's nodes, and the whole
    encoder (embeddings, mask, layers, pooler) is one partition: one fused node."""
    seed = new_seed()
    rng = np.random.default_rng(seed)
    model = models.bert_encoder(models.Params(rng), np.float32)
    feeds = bert_feeds(rng)
    got, nodes = run_profiled(model, feeds)
    assert {p for p, _ in nodes} == {EP}, nodes
    assert len(nodes) == 1, nodes
    for g, w in zip(got, run_cpu(model, feeds)):
        assert rel_err(g, w) <= TOL[np.float32], f"seed {seed}"
