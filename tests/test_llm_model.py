"""A whole decoder LLM shaped like onnxruntime-genai's builder output (`tests/llm_graph.py`: embeddings,
SkipSimplifiedLayerNormalization, GroupQueryAttention with rotary and a KV cache, SiLU MLP, LM head) against ONNX
Runtime's CPU EP: a prompt, decode steps with the cache fed back, and a 1-token prompt, in float16 and float32.
Every node but the integer arithmetic on attention_mask runs on our EP (total_sequence_length's producers stay on
the CPU by design: its value sizes the present cache)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from dispatch_profile import run_dispatches
from llm_graph import llm_feeds, llm_model
from test_attention import profiled_ops
from test_llm_ops import new_seed, rel_err

TOL = {np.float32: 5e-4, np.float16: 2e-2}
# The attention_mask arithmetic (seqlens_k and total_sequence_length), which ORT or our placement keeps on the CPU.
HOST_OPS = {"ReduceSum", "Sub", "Cast", "Shape", "Gather"}


def compare(got, want, dtype, seed, what):
    names = ["logits"] + [f"present {i}" for i in range(len(got) - 1)]
    for name, g, w in zip(names, got, want):
        assert g.shape == w.shape, f"{what} {name}: {g.shape} != {w.shape}"
        err = rel_err(g, w)
        assert err <= TOL[dtype], f"{what} {name}: relative error {err} (seed {seed})"


# Head sizes: 64 (Llama-3.2-1B's) and 256 (Gemma's: 4 query heads, 1 KV head of 256).
SHAPES = {"d64": {}, "d256": {"hidden": 1024, "heads": 4, "kv_heads": 1}}


def decode_steps(sess, run_cpu, model, got, want, rng, dtype, seed, steps=3):
    """`steps` one-token runs after a prompt whose outputs (ours `got`, the CPU EP's `want`) give the first past,
    each run's presents fed back as the next past on both sides; every output compared at each step."""
    names = [o.name for o in sess.get_outputs()]
    batch, prompt, vocab = got[0].shape
    rename = lambda d: {k.replace("present.", "past_key_values."): v for k, v in d.items()}  # noqa: E731
    for step in range(steps):
        past, past_cpu = dict(zip(names[1:], got[1:])), dict(zip(names[1:], want[1:]))
        ids = rng.integers(0, vocab, (batch, 1), dtype=np.int64)
        common = {"input_ids": ids, "attention_mask": np.ones((batch, prompt + step + 1), np.int64)}
        got = sess.run(None, dict(common, **rename(past)))
        want = run_cpu(model, dict(common, **rename(past_cpu)))
        compare(got, want, dtype, seed, f"decode step {step}")


@pytest.mark.parametrize("packed_qkv", [False, True])
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_llm_prompt_then_decode_matches_cpu(make_session, run_cpu, run_profiled, dtype, packed_qkv, shape):
    """With `packed_qkv` the projection is one MatMul and a Split, which GroupQueryAttention absorbs (it reads the
    packed form; `kernels/tests/fusion.rs` checks the rewrite): the values must still match the CPU EP's."""
    seed = new_seed()
    rng = np.random.default_rng(seed)
    model = llm_model(dtype, seed=seed, packed_qkv=packed_qkv, **SHAPES[shape])
    feeds = llm_feeds(model, 1, 29, 0, rng, dtype)
    got, nodes = run_profiled(model, feeds, fallback=True)
    host = [n for p, n in nodes if p == "CPUExecutionProvider"]
    assert {n.split("_")[0] for n in host} <= HOST_OPS, nodes
    assert "Gather_6" not in host, "the embedding Gather must be ours"
    assert sum(p != "CPUExecutionProvider" for p, _ in nodes) == 1, f"one partition expected: {nodes}"
    want = run_cpu(model, feeds)
    compare(got, want, dtype, seed, "prompt")
    decode_steps(make_session(model, fallback=True), run_cpu, model, got, want, rng, dtype, seed)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_int4_decoder_prompt_then_decode_matches_cpu(make_session, ep_devices, run_cpu, run_profiled, dtype,
                                                     tmp_path):
    """The builder's int4 Llama form (`llm_model(nbits=True, packed_gqa=True)`): MatMulNBits projections and LM
    head, GatherBlockQuantized embeddings tied to the LM head, one packed Q/K/V projection read by
    GroupQueryAttention. Every node but the attention_mask arithmetic is ours, in one partition; a 29-token prompt
    and three decode steps match the CPU EP. Hidden 512 (whole 16-byte rows of 4-bit blocks), so one token folds
    each skip norm into the MatMulNBits that reads it: layer 0's gate, layer 1's Q/K/V and gate, and the LM head
    (`_skiprms` programs); layer 0's plain norm runs first."""
    seed = new_seed()
    rng = np.random.default_rng(seed)
    model = llm_model(dtype, layers=2, hidden=512, heads=8, kv_heads=2, ffn=712, vocab=333, seed=seed, nbits=True,
                      packed_gqa=True)
    feeds = llm_feeds(model, 1, 29, 0, rng, dtype)
    got, nodes = run_profiled(model, feeds, fallback=True)
    host = [n for p, n in nodes if p == "CPUExecutionProvider"]
    assert {n.split("_")[0] for n in host} <= HOST_OPS, nodes
    assert "GatherBlockQuantized_6" not in host, "the embedding lookup must be ours"
    assert sum(p != "CPUExecutionProvider" for p, _ in nodes) == 1, f"one partition expected: {nodes}"
    want = run_cpu(model, feeds)
    compare(got, want, dtype, seed, "prompt")
    sess = make_session(model, fallback=True)
    decode_steps(sess, run_cpu, model, got, want, rng, dtype, seed)
    past = {o.name.replace("present.", "past_key_values."): v for o, v in zip(sess.get_outputs()[1:], got[1:])}
    feeds = dict(past, input_ids=np.array([[5]], np.int64), attention_mask=np.ones((1, 30), np.int64))
    got, ops = run_dispatches(sess, feeds, tmp_path)
    compare(got, run_cpu(model, feeds), dtype, seed, "profiled decode step")
    folded = [o for o in ops if "_skiprms" in o]
    norms = [o for o in ops if "[norm_rms" in o]
    assert len(folded) + len(norms) == 5, ops
    if dict(ep_devices[0].ep_metadata).get("wgpu.software") == "1":
        assert len(folded) == 4 and len(norms) == 1, ops


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_the_mlp_gate_runs_in_the_gate_projection(make_session, run_cpu, dtype, tmp_path):
    """SwiGLU's `Mul(SiLU(gate), up)` over the decoder's symbolic shapes (batch_size, sequence_length) runs as one
    step with both projections (`ops/matmul_dual.rs`; a prompt runs the up projection first, then the gate
    projection with its SiLU and the Mul in its store): a step of MatMul+MatMul+Sigmoid+Mul+Mul per layer and no
    Mul or MatMul of its own, with the CPU EP's values."""
    seed = new_seed()
    rng = np.random.default_rng(seed)
    model = llm_model(dtype, seed=seed)
    feeds = llm_feeds(model, 1, 7, 0, rng, dtype)
    got, ops = profiled_ops(make_session(model, fallback=True), feeds, tmp_path)
    swiglu = "MatMul+MatMul+Sigmoid+Mul+Mul"
    assert ops.count(swiglu) == 2 and "Mul" not in ops and "MatMul+Mul" not in ops, ops
    # Each layer's Q, K and V, its output projection and its down projection, and the LM head.
    assert ops.count("MatMul") == 2 * 5 + 1, ops
    compare(got, run_cpu(model, feeds), dtype, seed, "prompt")


@pytest.mark.parametrize("limited", [False, True], ids=["default", "eight_storage_buffers"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_decode_products_fold_their_skip_norms(make_session, ep_devices, run_cpu, dtype, limited, tmp_path):
    """One token: every SkipSimplifiedLayerNormalization whose readers are MatMuls over rows of at least 512 (the Q,
    K and V projections, SwiGLU's gate and up) runs inside those products' GEMVs (`_skiprms` programs, SwiGLU's two
    in one `_dual` dispatch; the first also stores the sum the next layer adds), with the CPU EP's values; the final
    norm before an f16 LM head of 300 columns (not whole 16-byte chunks: no narrow GEMV) runs first. A prompt runs
    each norm before its products (once for SwiGLU's two), and so does every row on a device that binds WebGPU's
    minimum of 8 storage buffers (`max_storage_buffers=8`)."""
    seed = new_seed()
    rng = np.random.default_rng(seed)
    software = dict(ep_devices[0].ep_metadata).get("wgpu.software") == "1"
    model = llm_model(dtype, layers=2, hidden=1024, heads=4, kv_heads=1, ffn=512, seed=seed)
    sess = make_session(model, {"max_storage_buffers": 8} if limited else None, fallback=True)
    for tokens, past in ((5, 0), (1, 7)):
        feeds = llm_feeds(model, 1, tokens, past, rng, dtype)
        got, ops = run_dispatches(sess, feeds, tmp_path)
        compare(got, run_cpu(model, feeds), dtype, seed, f"{tokens} token(s)")
        folded = [o for o in ops if "_skiprms" in o]
        norms = [o for o in ops if "[norm_rms" in o]
        if tokens == 1 and not limited:
            # Layer 1's Q, K, V; both layers' gate and up (one dispatch each); the LM head where its 300 columns
            # are whole 16-byte chunks (f32). Layer 0's plain norm, and the final one before an f16 LM head, run
            # first. Only the narrow one-row GEMV folds: a reader planned otherwise (the H200 splits K for these
            # small products) runs the norm before it, so folded readers and norms always make 7.
            lm_head = dtype == np.float32
            assert len(folded) + len(norms) == 7, ops
            if software:
                assert len(folded) == 5 + lm_head and len(norms) == 2 - lm_head, ops
                assert sum("_dual" in o for o in folded) == 2, ops
            else:
                # A device may plan these small products otherwise (split K: the norm then runs first), but a
                # SwiGLU gate (its SiLU, `_xact`) that folds the norm folds its up projection too.
                assert all("_dual" in o for o in folded if "_xact" in o), ops
        else:
            # The norm before its readers: 3 for the Q, K and V of layer 1, once for each layer's SwiGLU, the
            # plain one, the final one.
            assert not folded and len(norms) == 7, ops


@pytest.mark.smoke
def test_llm_prompt_of_one_token(make_session, run_cpu):
    seed = new_seed()
    rng = np.random.default_rng(seed)
    model = llm_model(np.float32, layers=1, seed=seed)
    feeds = llm_feeds(model, 1, 1, 0, rng, np.float32)
    compare(make_session(model, fallback=True).run(None, feeds), run_cpu(model, feeds), np.float32, seed, "1 token")


# Random decoders: ONNXRUNTIME_EP_WGPU_LLM_FUZZ_ITERATIONS sets how many (default 6, for CI; run more by hand), and
# ONNXRUNTIME_EP_WGPU_LLM_FUZZ_SEED=<seed> with one iteration replays the case a failure names.
LLM_FUZZ_ITERATIONS = int(os.environ.get("ONNXRUNTIME_EP_WGPU_LLM_FUZZ_ITERATIONS", "6"))
LLM_FUZZ_SEED = os.environ.get("ONNXRUNTIME_EP_WGPU_LLM_FUZZ_SEED")


def random_decoder(rng):
    """A decoder of random form and dimensions: float or int4 (MatMulNBits, tied GatherBlockQuantized embeddings),
    Q/K/V as three products, one product and a Split, or one product GroupQueryAttention reads packed; any supported
    head size, grouped heads, and widths that are not tile multiples; a local window, a softcap and interleaved
    rotation each in a quarter of the cases."""
    d = int(rng.choice([64, 80, 96, 128, 256]))
    heads = int(rng.integers(1, 1 + max(1, 1024 // d)))
    kv_heads = int(rng.choice([k for k in range(1, heads + 1) if heads % k == 0]))
    hidden = heads * d
    form = str(rng.choice(["float", "float_packed", "int4", "int4_packed"]))
    kw = dict(layers=int(rng.integers(1, 3)), hidden=hidden, heads=heads, kv_heads=kv_heads,
              ffn=int(rng.integers(16, 1200)), vocab=int(rng.integers(16, 700)))
    if form.startswith("int4"):
        kw.update(nbits=True, packed_gqa=form == "int4_packed",
                  block=int(rng.choice([b for b in (16, 32, 64, 128) if hidden % b == 0])))
    else:
        kw.update(packed_qkv=form == "float_packed")
    gqa = {}
    if rng.integers(4) == 0:
        gqa["local_window_size"] = int(rng.integers(1, 48))
    if rng.integers(4) == 0:
        gqa["softcap"] = float(rng.uniform(0.5, 30.0))
    if rng.integers(4) == 0:
        gqa["rotary_interleaved"] = 1
    if gqa:
        kw["gqa"] = gqa
    return kw


@pytest.mark.parametrize("iteration", range(LLM_FUZZ_ITERATIONS))
def test_random_decoders_match_cpu(make_session, ep_devices, run_cpu, run_profiled, iteration):
    """A random decoder (`random_decoder`), float16 or float32: a prompt over a random past (or none), then two
    decode steps with the presents fed back, each against the CPU EP; batch 1 or 2. Every node but the
    attention_mask arithmetic is ours. On the software adapter a third of them plan as a tensor-core device does
    (`emulate_tensor_cores`: coop products, the int4 prompt's dequantised GEMMs, the tensor-core flash attention)."""
    seed = int(LLM_FUZZ_SEED) if LLM_FUZZ_SEED else new_seed()
    rng = np.random.default_rng(seed)
    dtype = np.float16 if rng.integers(2) else np.float32
    kw = random_decoder(rng)
    prompt, past = int(rng.integers(1, 41)), int(rng.choice([0, 0, rng.integers(1, 60)]))
    # GroupQueryAttention (ours and the CPU EP's) takes a prompt over a past in batches of one only.
    batch = int(rng.integers(1, 3)) if past == 0 or prompt == 1 else 1
    software = dict(ep_devices[0].ep_metadata).get("wgpu.software") == "1"
    options = {"emulate_tensor_cores": "1"} if rng.integers(3) == 0 and software else None
    what = f"{seed}: {np.dtype(dtype).name}, batch {batch}, prompt {prompt} over a past of {past}, {kw}, {options}"
    model = llm_model(dtype, seed=seed, max_seq=128, **kw)
    feeds = llm_feeds(model, batch, prompt, past, rng, dtype)
    got, nodes = run_profiled(model, feeds, fallback=True, options=options)
    assert {n.split("_")[0] for p, n in nodes if p == "CPUExecutionProvider"} <= HOST_OPS, f"{what}: {nodes}"
    want = run_cpu(model, feeds)
    compare(got, want, dtype, what, "prompt")
    decode_steps(make_session(model, options, fallback=True), run_cpu, model, got, want, rng, dtype, what, steps=2)
