"""com.microsoft GroupQueryAttention (as onnxruntime-genai's model builder emits it) against ONNX Runtime's CPU EP, on
fresh random data, in float32 and float16, with every node ours (CPU fallback disabled): prefill without a cache,
decode with a past cache (its own buffer, and genai's shared-buffer shape where the present has the past's length),
a prompt of 1 token, a follow-up prompt over a past, batches with different lengths, rotary embedding (halves and
interleaved), packed QKV, local windows and grouped heads. Every output is compared: the attention output and both
present caches. Unsupported attributes are declined with a logged reason, and total_sequence_length's producers
stay on the CPU (its value sizes the present cache)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from onnx import TensorProto, helper

from test_llm_ops import ELEM, model_of, new_seed, rel_err, vi

OURS = {"offload": "all"}
TOL = {np.float32: 2e-4, np.float16: 5e-3}
I32 = TensorProto.INT32


def rope_caches(rng, rows: int, half: int, dtype):
    freq = rng.uniform(0.01, 1.0, half)
    angles = np.arange(rows)[:, None] * freq[None, :]
    return np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)


def gqa_model(dtype, b, s, heads, kv_heads, d, past, rotary=False, interleaved=False, packed=False, window=None,
              half=None, scale=None, softcap=None):
    """A one-node model; `past` is the past cache's length (None: no cache inputs)."""
    attrs = {"num_heads": heads, "kv_num_heads": kv_heads}
    if rotary:
        attrs.update(do_rotary=1, rotary_interleaved=int(interleaved))
    if window is not None:
        attrs["local_window_size"] = window
    if scale is not None:
        attrs["scale"] = scale
    if softcap is not None:
        attrs["softcap"] = softcap
    width = (heads + 2 * kv_heads) * d if packed else heads * d
    inputs = [vi("query", dtype, [b, s, width])]
    names = ["query", "" if packed else "key", "" if packed else "value"]
    if not packed:
        inputs += [vi("key", dtype, [b, s, kv_heads * d]), vi("value", dtype, [b, s, kv_heads * d])]
    if past is not None:
        inputs += [vi("past_key", dtype, [b, kv_heads, past, d]), vi("past_value", dtype, [b, kv_heads, past, d])]
        names += ["past_key", "past_value"]
    else:
        names += ["", ""]
    inputs += [vi("seqlens_k", I32, [b]), vi("total_sequence_length", I32, [])]
    names += ["seqlens_k", "total_sequence_length"]
    if rotary:
        inputs += [vi("cos_cache", dtype, [None, half]), vi("sin_cache", dtype, [None, half])]
        names += ["cos_cache", "sin_cache"]
    while names[-1] == "":
        names.pop()
    node = helper.make_node("GroupQueryAttention", names, ["output", "present_key", "present_value"],
                            domain="com.microsoft", **attrs)
    outputs = [vi("output", dtype, None), vi("present_key", dtype, None), vi("present_value", dtype, None)]
    return model_of([node], inputs, outputs)


def feeds_for(rng, dtype, b, s, heads, kv_heads, d, past, seqlens, total, rotary=False, packed=False, half=None,
              cache_rows=None):
    width = (heads + 2 * kv_heads) * d if packed else heads * d
    feeds = {"query": rng.uniform(-1, 1, (b, s, width)).astype(dtype)}
    if not packed:
        feeds["key"] = rng.uniform(-1, 1, (b, s, kv_heads * d)).astype(dtype)
        feeds["value"] = rng.uniform(-1, 1, (b, s, kv_heads * d)).astype(dtype)
    if past is not None:
        feeds["past_key"] = rng.uniform(-1, 1, (b, kv_heads, past, d)).astype(dtype)
        feeds["past_value"] = rng.uniform(-1, 1, (b, kv_heads, past, d)).astype(dtype)
    feeds["seqlens_k"] = np.array(seqlens, dtype=np.int32)
    feeds["total_sequence_length"] = np.array(total, dtype=np.int32)
    if rotary:
        feeds["cos_cache"], feeds["sin_cache"] = rope_caches(rng, cache_rows or total + 3, half, dtype)
    return feeds


def check(make_session, run_cpu, model, feeds, dtype, seed, options=None):
    got = make_session(model, dict(OURS, **(options or {}))).run(None, feeds)
    want = run_cpu(model, feeds)
    for name, g, w in zip(["output", "present_key", "present_value"], got, want):
        assert g.shape == w.shape, f"{name}: shape {g.shape} != {w.shape}"
        assert g.dtype == w.dtype
        assert np.isfinite(g.astype(np.float64)).all(), f"{name} is not finite (seed {seed})"
        err = rel_err(g, w)
        assert err <= TOL[dtype], f"{name}: relative error {err} (seed {seed})"


# (batch, seq, heads, kv_heads, d, past length, seqlens_k, total): prefill, decode, 1-token prompt, follow-up prompt,
# genai's shared buffer (present as long as the past), batches of different lengths.
CASES = {
    "prefill": (2, 37, 4, 2, 64, None, [36, 36], 37),
    "prompt_of_1": (1, 1, 4, 4, 64, None, [0], 1),
    "decode": (2, 1, 8, 2, 64, 19, [19, 19], 20),
    "shared_buffer": (2, 1, 4, 2, 128, 24, [9, 16], 17),
    "follow_up_prompt": (1, 5, 4, 1, 80, 11, [15], 16),
    "shared_prefill": (1, 13, 4, 2, 64, 32, [12], 13),
    # Gemma's head size 256 (the SIMT flash kernel; the split-KV kernel for decode).
    "gemma_prefill": (1, 19, 4, 1, 256, None, [18], 19),
    "gemma_decode": (2, 1, 4, 1, 256, 23, [23, 17], 24),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("rotary", [False, True])
def test_gqa_matches_cpu(make_session, run_cpu, dtype, case, rotary):
    b, s, heads, kv_heads, d, past, seqlens, total = CASES[case]
    seed = new_seed()
    rng = np.random.default_rng(seed)
    half = d // 2 if d % 16 == 0 else None
    if rotary and half is None:
        pytest.skip("rotary needs a head size that is a multiple of 16 (ONNX Runtime's rule)")
    model = gqa_model(dtype, b, s, heads, kv_heads, d, past, rotary=rotary, half=half)
    feeds = feeds_for(rng, dtype, b, s, heads, kv_heads, d, past, seqlens, total, rotary=rotary, half=half)
    check(make_session, run_cpu, model, feeds, dtype, seed)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("case", ["prefill", "decode", "shared_buffer", "follow_up_prompt", "gemma_decode"])
def test_gqa_with_eight_storage_buffers_matches_cpu(make_session, run_cpu, dtype, case, tmp_path):
    """A device that binds WebGPU's minimum of 8 storage buffers per stage (`max_storage_buffers=8`) prepares Q, K
    and V in three dispatches, where larger ones take one (no mask: without a local window the flash kernels read
    seqlens_k): both forms match the CPU EP (rotary, q/k norms and packed Q/K/V run through `test_gqa_variants` and
    the LLM tests on the one-dispatch form)."""
    b, s, heads, kv_heads, d, past, seqlens, total = CASES[case]
    seed = new_seed()
    rng = np.random.default_rng(seed)
    half = d // 2 if d % 16 == 0 else None
    model = gqa_model(dtype, b, s, heads, kv_heads, d, past, rotary=half is not None, half=half)
    feeds = feeds_for(rng, dtype, b, s, heads, kv_heads, d, past, seqlens, total, rotary=half is not None, half=half)
    check(make_session, run_cpu, model, feeds, dtype, seed, LIMITED)
    programs = [gqa_programs(make_session(model, dict(OURS, **o)), feeds, tmp_path) for o in ({}, LIMITED, FOLD)]
    counts = [len(p) for p in programs]
    assert not any("_prep" in p for p in programs[0] + programs[1]), programs[:2]
    assert counts[1] == counts[0] + 2, f"preparation dispatches: {counts} (one-dispatch form, three-dispatch form)"
    if any("_prep" in p for p in programs[2]):
        # Decode with the preparation folded into the K/V-head kernel (asked for): that kernel alone where its last
        # workgroups combine the key chunks (few chunks), else it and its combine.
        first, rest = programs[2][0], programs[2][1:]
        assert "_prep" in first and len(rest) <= 1 and all(p.startswith("attn_decode_") for p in rest), programs[2]
    else:
        # Head sizes 64 and 128 fold on every device with subgroups (this one's are 8 wide); 256 needs 32 lanes.
        assert s > 1 or d == 256, programs[2]


LIMITED = {"max_storage_buffers": 8}
# The decode kernel with GroupQueryAttention's preparation inside: off unless asked for (slower on the H200).
FOLD = {"decode_attention_fold": 1}


def gqa_programs(sess, feeds, tmp_path) -> list[str]:
    """The programs the GroupQueryAttention step ran in one run, in order (the per-dispatch profile)."""
    path = tmp_path / "profile.jsonl"
    path.unlink(missing_ok=True)
    os.environ.update(ONNXRUNTIME_EP_WGPU_PROFILE=str(path), ONNXRUNTIME_EP_WGPU_PROFILE_DISPATCHES="1")
    try:
        sess.run(None, feeds)
    finally:
        del os.environ["ONNXRUNTIME_EP_WGPU_PROFILE"], os.environ["ONNXRUNTIME_EP_WGPU_PROFILE_DISPATCHES"]
    ops = [json.loads(line)["ops"] for line in path.read_text().splitlines()]
    return [o[len("GroupQueryAttention ["):-1] for o in ops if o.startswith("GroupQueryAttention [")]


def gqa_dispatches(sess, feeds, tmp_path) -> int:
    """The dispatches of the GroupQueryAttention step in one run."""
    return len(gqa_programs(sess, feeds, tmp_path))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("variant", ["packed", "interleaved", "partial_rotary", "window", "scale", "softcap"])
def test_gqa_variants(make_session, run_cpu, dtype, variant, tmp_path):
    b, s, heads, kv_heads, d, past, seqlens, total = 1, 9, 6, 2, 64, 7, [15], 16
    seed = new_seed()
    rng = np.random.default_rng(seed)
    kw = dict(rotary=True, half=32)
    if variant == "packed":
        kw["packed"] = True
    elif variant == "interleaved":
        kw["interleaved"] = True
    elif variant == "partial_rotary":
        kw["half"] = 16
    elif variant == "window":
        kw["window"] = 4
    elif variant == "scale":
        kw["scale"] = 0.3
    elif variant == "softcap":
        # Gemma-2's cap, small enough to bend these scores (±0.5 or so).
        kw["softcap"] = 0.3
    model = gqa_model(dtype, b, s, heads, kv_heads, d, past, **kw)
    feeds = feeds_for(rng, dtype, b, s, heads, kv_heads, d, past, seqlens, total, rotary=True, half=kw["half"],
                      packed=kw.get("packed", False))
    check(make_session, run_cpu, model, feeds, dtype, seed)
    if variant == "window":
        # The window's mask words: in the one-dispatch preparation, and as its own dispatch (a fourth) where the
        # device binds 8 storage buffers.
        check(make_session, run_cpu, model, feeds, dtype, seed, LIMITED)
        counts = [gqa_dispatches(make_session(model, dict(OURS, **o)), feeds, tmp_path) for o in ({}, LIMITED)]
        assert counts[1] == counts[0] + 3, f"preparation dispatches: {counts} (one-dispatch form, four-dispatch form)"


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("variant", ["plain", "packed", "interleaved", "partial_rotary", "scale", "softcap", "head_128",
                                     "two_row_blocks", "long_past", "chunked_past", "window"])
def test_gqa_decode_folds_its_preparation(make_session, run_cpu, dtype, variant, tmp_path):
    """Decode (one new token per batch) runs the preparation inside the K/V-head kernel: Q rotated as it is loaded,
    the new K and V rows written into the present caches by the kernel, the past rows copied as its loop reads them
    and zeros after each batch's new row (two batches of different lengths, a present longer than either). One
    dispatch: the kernel, whose last workgroup of each row block combines the key chunks (a short cache: few chunks);
    a local window (a mask to write) keeps the preparation's own dispatch.
    Up to 8 query rows share a workgroup; 16 query heads per K/V head take two. Where the keys take few steps a
    workgroup per query row reads them all (the wide form, `_w`), each of a K/V head's writing the same new rows;
    a cache of 3000 keys takes key chunks."""
    b, heads, kv_heads, d, past, seqlens, total = 2, 6, 2, 64, 21, [20, 12], 21
    if variant == "head_128":
        heads, kv_heads, d = 8, 1, 128
    elif variant == "two_row_blocks":
        # 16 query heads per K/V head: two workgroups of 8 rows per key chunk, each writing the new rows it reads.
        heads, kv_heads = 16, 1
    elif variant == "long_past":
        # Many key chunks (batches of different lengths), joined by the kernel's last workgroup of each row block.
        heads, past, seqlens, total = 8, 700, [699, 400], 700
    elif variant == "chunked_past":
        # More keys than the wide form's 5 steps of 512 (or of 256 on narrower subgroups) hold: key chunks.
        heads, past, seqlens, total = 8, 3000, [2999, 1500], 3000
    seed = new_seed()
    rng = np.random.default_rng(seed)
    kw = dict(rotary=variant != "plain", half=d // 2)
    if variant in ("packed", "interleaved", "scale", "softcap", "window"):
        kw[{"packed": "packed", "interleaved": "interleaved", "scale": "scale", "softcap": "softcap",
            "window": "window"}[variant]] = {"packed": True, "interleaved": True, "scale": 0.3, "softcap": 0.3,
                                             "window": 6}[variant]
    elif variant == "partial_rotary":
        kw["half"] = 16
    model = gqa_model(dtype, b, 1, heads, kv_heads, d, past, **kw)
    feeds = feeds_for(rng, dtype, b, 1, heads, kv_heads, d, past, seqlens, total, rotary=kw["rotary"],
                      half=kw["half"], packed=kw.get("packed", False))
    check(make_session, run_cpu, model, feeds, dtype, seed, FOLD)
    programs = gqa_programs(make_session(model, dict(OURS, **FOLD)), feeds, tmp_path)
    folded = [p for p in programs if p.startswith("attn_decode_kv_") and "_prep" in p]
    if variant == "window":
        assert not folded and len(programs) == 2, programs
    else:
        # Many chunks may take a combine dispatch after the kernel.
        assert len(folded) == 1 and all(p.startswith("attn_decode_") for p in programs), programs
        assert len(programs) == 1 or variant == "chunked_past" and len(programs) == 2, programs
        assert ("_w" in folded[0]) == (variant != "chunked_past"), folded
        # Unasked: the preparation's own dispatch, then the kernel (and the same combine where the folded one had it).
        unasked = gqa_programs(make_session(model, OURS), feeds, tmp_path)
        assert not any("_prep" in p for p in unasked) and unasked[0].startswith("gqa_rows"), unasked
        assert len(unasked) == len(programs) + 1, (unasked, programs)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("case", ["decode", "gemma_decode", "gemma_prefill", "shared_buffer"])
def test_gqa_softcap_matches_cpu(make_session, run_cpu, dtype, case):
    """Softcap (Gemma-2's attention logit cap) on the split-KV decode kernel and the SIMT flash kernel, head sizes 64,
    128 and 256: a cap small enough to bend every score (scores here are within about ±0.5)."""
    b, s, heads, kv_heads, d, past, seqlens, total = CASES[case]
    seed = new_seed()
    rng = np.random.default_rng(seed)
    model = gqa_model(dtype, b, s, heads, kv_heads, d, past, softcap=0.2)
    feeds = feeds_for(rng, dtype, b, s, heads, kv_heads, d, past, seqlens, total)
    check(make_session, run_cpu, model, feeds, dtype, seed)


def test_gqa_decode_loop_feeds_its_cache_back(make_session, run_cpu):
    """Prefill then decode steps, each step's present caches fed back as the next past (as genai's loop does without a
    shared buffer): every step matches the CPU EP, with shapes that grow each step (a new prepared set per length)."""
    dtype, heads, kv_heads, d = np.float16, 4, 2, 64
    seed = new_seed()
    rng = np.random.default_rng(seed)
    prefill = gqa_model(dtype, 1, 6, heads, kv_heads, d, None, rotary=True, half=32)
    step = gqa_model(dtype, 1, 1, heads, kv_heads, d, 6, rotary=True, half=32)
    step.graph.input[3].type.tensor_type.shape.dim[2].dim_param = "past"
    step.graph.input[4].type.tensor_type.shape.dim[2].dim_param = "past"
    cos, sin = rope_caches(rng, 32, 32, dtype)
    feeds = feeds_for(rng, dtype, 1, 6, heads, kv_heads, d, None, [5], 6)
    feeds.update(cos_cache=cos, sin_cache=sin)
    ours, cpu = make_session(prefill, OURS), None
    _, k, v = ours.run(None, feeds)
    _, k_cpu, v_cpu = run_cpu(prefill, feeds)
    ours_step = make_session(step, OURS)
    for n in range(6, 10):
        x = {name: rng.uniform(-1, 1, (1, 1, w)).astype(dtype)
             for name, w in (("query", heads * d), ("key", kv_heads * d), ("value", kv_heads * d))}
        common = dict(x, seqlens_k=np.array([n], np.int32), total_sequence_length=np.array(n + 1, np.int32),
                      cos_cache=cos, sin_cache=sin)
        out, k, v = ours_step.run(None, dict(common, past_key=k, past_value=v))
        cpu = run_cpu(step, dict(common, past_key=k_cpu, past_value=v_cpu))
        _, k_cpu, v_cpu = cpu
        for got, want in zip((out, k, v), cpu):
            assert got.shape == want.shape
            assert rel_err(got, want) <= TOL[dtype], f"step {n}: {rel_err(got, want)} (seed {seed})"


@pytest.mark.smoke
def test_gqa_smoke(make_session, run_cpu):
    test_gqa_matches_cpu(make_session, run_cpu, np.float32, "decode", True)


def test_gqa_total_sequence_length_producers_stay_on_the_cpu(make_session, run_cpu, run_profiled):
    """genai computes total_sequence_length from the attention mask (Shape → Gather → Cast): those nodes run on the
    CPU EP, since the value sizes the present cache, while GroupQueryAttention is ours."""
    dtype, b, s, heads, kv_heads, d = np.float32, 1, 5, 4, 2, 64
    model = gqa_model(dtype, b, s, heads, kv_heads, d, None)
    graph = model.graph
    graph.input.remove([i for i in graph.input if i.name == "total_sequence_length"][0])
    graph.input.append(helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "total"]))
    graph.initializer.append(helper.make_tensor("one", TensorProto.INT64, [], [1]))
    graph.node.insert(0, helper.make_node("Shape", ["attention_mask"], ["mask_shape"]))
    graph.node.insert(1, helper.make_node("Gather", ["mask_shape", "one"], ["total64"], axis=0))
    graph.node.insert(2, helper.make_node("Cast", ["total64"], ["total_sequence_length"], to=I32))
    rng = np.random.default_rng(new_seed())
    feeds = feeds_for(rng, dtype, b, s, heads, kv_heads, d, None, [s - 1], s)
    del feeds["total_sequence_length"]
    feeds["attention_mask"] = np.ones((b, s), np.int64)
    got, nodes = run_profiled(model, feeds, fallback=True, options=OURS)
    # The profiler names ORT's nodes by op type here; our partition is one fused node.
    assert sorted(n for p, n in nodes if p == "CPUExecutionProvider") == ["Cast", "Gather", "Shape"], nodes
    assert sum(p != "CPUExecutionProvider" for p, _ in nodes) == 1, nodes
    want = run_cpu(model, feeds)
    for g, w in zip(got, want):
        assert rel_err(g, w) <= TOL[dtype]


@pytest.mark.parametrize("attrs,needle", [({"smooth_softmax": 1}, "smooth_softmax"), ({"causal": 0}, "causal")])
def test_gqa_unsupported_is_declined_with_a_reason(make_session, capfd, attrs, needle):
    model = gqa_model(np.float32, 1, 3, 4, 2, 64, None)
    for k, v in attrs.items():
        model.graph.node[0].attribute.append(helper.make_attribute(k, v))
    with pytest.raises(Exception):
        make_session(model, OURS)  # declined, and the CPU EP is not allowed
    assert needle in capfd.readouterr().err, "the decline's reason is not logged"


def test_gqa_head_size_without_a_kernel_is_declined(make_session, capfd):
    model = gqa_model(np.float32, 1, 3, 4, 2, 32, None)
    with pytest.raises(Exception):
        make_session(model, OURS)
    assert "head size 32" in capfd.readouterr().err


@pytest.mark.parametrize("seqlens_on_device", [False, True])
def test_gqa_bad_seqlens_fail_the_run(make_session, ep_devices, seqlens_on_device):
    """seqlens_k longer than the present cache: the run fails with the node's message instead of writing past it,
    checked on the host when seqlens_k comes in host memory and by the kernel's status word when it comes on our
    device; good lengths afterwards run."""
    import onnxruntime as ort

    dtype, b, s, heads, kv_heads, d = np.float32, 1, 1, 4, 2, 64
    model = gqa_model(dtype, b, s, heads, kv_heads, d, 8)
    rng = np.random.default_rng(new_seed())
    sess = make_session(model, OURS)

    def run(seqlens):
        feeds = feeds_for(rng, dtype, b, s, heads, kv_heads, d, 8, seqlens, 9)
        if not seqlens_on_device:
            return sess.run(None, feeds)[0]
        mem = ep_devices[0].memory_info(ort.OrtDeviceMemoryType.DEFAULT)
        io = sess.io_binding()
        for name, value in feeds.items():
            if name == "seqlens_k":
                value = ort.OrtValue.ortvalue_from_numpy(value, "gpu", mem.device_id, mem.device_vendor_id)
                io.bind_ortvalue_input(name, value)
            else:
                io.bind_cpu_input(name, value)
        io.bind_output("output")
        io.bind_output("present_key")
        io.bind_output("present_value")
        sess.run_with_iobinding(io)
        return io.copy_outputs_to_cpu()[0]

    with pytest.raises(Exception, match="seqlens_k asks for more keys than the caches hold"):
        run([40])
    assert np.isfinite(run([8])).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("past, s", [(None, 6), (9, 6), (9, 1)])
def test_gqa_qk_norm_matches_unfused_norms_on_cpu(make_session, run_cpu, dtype, past, s):
    """Qwen3's per-head RMS norms of Q and K (q_norm_weight, k_norm_weight), which ONNX Runtime's CPU EP does not run
    inside GroupQueryAttention: the reference is SimplifiedLayerNormalization over each head, then GQA, on the CPU.
    One new token takes the norms inside the decode kernel (the preparation folded in)."""
    b, heads, kv_heads, d = 1, 4, 2, 64
    seqlens, total = ([s - 1], s) if past is None else ([past + s - 1], past + s)
    seed = new_seed()
    rng = np.random.default_rng(seed)
    model = gqa_model(dtype, b, s, heads, kv_heads, d, past, rotary=True, half=32)
    feeds = feeds_for(rng, dtype, b, s, heads, kv_heads, d, past, seqlens, total, rotary=True, half=32)
    feeds["q_norm"] = rng.uniform(0.5, 1.5, d).astype(dtype)
    feeds["k_norm"] = rng.uniform(0.5, 1.5, d).astype(dtype)
    gqa = model.graph.node[0]
    names = list(gqa.input) + [""] * (14 - len(gqa.input))
    del gqa.input[:]
    gqa.input.extend(names + ["q_norm", "k_norm"])
    gqa.attribute.append(helper.make_attribute("qk_norm_epsilon", 1e-5))
    model.graph.input.extend([vi("q_norm", dtype, [d]), vi("k_norm", dtype, [d])])
    got = make_session(model, OURS).run(None, feeds)

    ref = gqa_model(dtype, b, s, heads, kv_heads, d, past, rotary=True, half=32)
    g = ref.graph
    g.input.extend([vi("q_norm", dtype, [d]), vi("k_norm", dtype, [d])])
    g.initializer.extend([helper.make_tensor("heads4", TensorProto.INT64, [4], [b, s, -1, d]),
                          helper.make_tensor("flat3", TensorProto.INT64, [3], [b, s, -1])])
    pre = []
    for x, w in (("query", "q_norm"), ("key", "k_norm")):
        pre += [helper.make_node("Reshape", [x, "heads4"], [f"{x}_4d"]),
                helper.make_node("SimplifiedLayerNormalization", [f"{x}_4d", w], [f"{x}_n"], axis=-1, epsilon=1e-5),
                helper.make_node("Reshape", [f"{x}_n", "flat3"], [f"{x}_normed"])]
    node = g.node[0]
    node.input[0], node.input[1] = "query_normed", "key_normed"
    g.node.insert(0, pre[5])
    for n in reversed(pre[:5]):
        g.node.insert(0, n)
    want = run_cpu(ref, feeds)
    for name, x, w in zip(["output", "present_key", "present_value"], got, want):
        assert x.shape == w.shape
        assert rel_err(x, w) <= 2 * TOL[dtype], f"{name}: {rel_err(x, w)} (seed {seed})"


def test_gqa_shared_buffer_decode_reuses_its_prepared_set(ep_devices, capfd):
    """genai's decode loop over a shared KV buffer: total_sequence_length grows every step, the shapes do not, so the
    partition is prepared (and its plan logged, ending with the dispatch count) once, not once per step."""
    import onnxruntime as ort

    from conftest import model_arg

    dtype, heads, kv_heads, d, max_len = np.float32, 4, 2, 64, 32
    model = gqa_model(dtype, 1, 1, heads, kv_heads, d, max_len)
    so = ort.SessionOptions()
    so.log_severity_level = 0
    so.add_provider_for_devices(ep_devices, OURS)
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    sess = ort.InferenceSession(model_arg(model), sess_options=so, enable_fallback=0)
    rng = np.random.default_rng(new_seed())
    capfd.readouterr()
    for past in (9, 10, 11):
        feeds = feeds_for(rng, dtype, 1, 1, heads, kv_heads, d, max_len, [past], past + 1)
        out = sess.run(None, feeds)
        assert out[1].shape == (1, kv_heads, max_len, d)
    logged = capfd.readouterr().err
    assert logged.count("dispatches per run") == 1, logged[-3000:]
