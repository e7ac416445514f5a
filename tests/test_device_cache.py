"""KV caches bound on our device through IO binding, as onnxruntime-genai binds them: GroupQueryAttention writing a
shared past/present buffer in place, and present caches over poison — against the CPU EP on fresh random data."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from device_io import VENDOR, copies, device_id, on_device, ort  # noqa: F401 (ort and device_id are fixtures)
import seeds


@pytest.mark.parametrize("b, s", [(1, 1), (2, 1), (1, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_a_shared_cache_is_written_in_place_without_copies(make_session, lib_path, ort, device_id, dtype, b, s):
    # genai's past_present_share_buffer: past and present bound to one device OrtValue per cache. A cache of 256 KiB
    # or more is bound in place (kernels/src/graph/direct.rs): GroupQueryAttention writes the new rows into ORT's
    # buffer and the cache is not copied; every step's output and each batch's cache rows up to its new ones equal
    # the CPU EP's, and the rows after them are left as they were (as ORT's kernels leave a shared buffer's unused
    # rows). Two batches of different lengths (the new rows at each batch's own offset), and three new tokens.
    from test_gqa import TOL, feeds_for, gqa_model

    heads, kv_heads, d = 4, 2, 64
    max_len = 520 if dtype == np.float32 else 1040  # 260 KiB per cache, rows not a multiple of any tile
    model = gqa_model(dtype, b, s, heads, kv_heads, d, max_len)
    sess = make_session(model, options={"offload": "all"})
    cpu = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = seeds.rng()
    lag = [0, 3][:b]  # batch i's past is this much shorter
    start = 9
    first = feeds_for(rng, dtype, b, s, heads, kv_heads, d, max_len, [start + s - 1 - g for g in lag], start + s)
    want_k, want_v = first["past_key"], first["past_value"]
    pk, pv = on_device(ort, want_k, device_id), on_device(ort, want_v, device_id)
    out = ort.OrtValue.ortvalue_from_shape_and_type([b, s, heads * d], dtype, "gpu", device_id, VENDOR)
    for past in range(start, start + 5 * s, s):
        f = feeds_for(rng, dtype, b, s, heads, kv_heads, d, max_len, [past + s - 1 - g for g in lag], past + s)
        io = sess.io_binding()
        for name in ("query", "key", "value", "seqlens_k", "total_sequence_length"):
            io.bind_cpu_input(name, f[name])
        io.bind_ortvalue_input("past_key", pk)
        io.bind_ortvalue_input("past_value", pv)
        io.bind_ortvalue_output("output", out)
        io.bind_ortvalue_output("present_key", pk)
        io.bind_ortvalue_output("present_value", pv)
        before = copies(lib_path)
        sess.run_with_iobinding(io)
        after = copies(lib_path)
        moved = after["device_to_device_bytes"] - before["device_to_device_bytes"]
        # The new tokens' tensors (ORT's device copies of the host inputs, and the output), never a cache.
        small = sum(f[n].nbytes for n in ("query", "key", "value", "seqlens_k", "total_sequence_length"))
        assert moved <= small + b * s * heads * d * np.dtype(dtype).itemsize, (past, moved)
        want = cpu.run(None, {**f, "past_key": want_k, "past_value": want_v})
        want_k, want_v = want[1], want[2]
        np.testing.assert_allclose(out.numpy().astype(np.float64), want[0], rtol=0, atol=TOL[dtype] * np.abs(want[0]).max())
        for name, got, w in (("present_key", pk, want_k), ("present_value", pv, want_v)):
            g = got.numpy()
            for i, behind in enumerate(lag):
                n = past + s - behind
                assert np.array_equal(g[i, :, n:], first[name.replace("present", "past")][i, :, n:]), (name, past, i)
                err = np.abs(g[i, :, :n].astype(np.float64) - w[i, :, :n]).max() / max(np.abs(w[i, :, :n]).max(), 1e-6)
                assert err <= TOL[dtype], (name, past, i, err)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_a_shared_cache_with_packed_qkv_rotary_and_norms_equals_the_unshared_run(make_session, ort, device_id, dtype):
    # Qwen3's form (packed Q/K/V, rotary, per-head RMS norms of Q and K) on a shared cache bound in place, where the
    # preparation (three row stages and the mask) runs as one dispatch (`gqa_rows3`): each step equals the same
    # session's run with the caches in host memory (four dispatches, checked against the CPU EP in test_gqa.py),
    # and a shared cache's rows after each batch's new one are left as they were.
    from test_gqa import TOL, feeds_for, gqa_model, vi

    b, heads, kv_heads, d, half = 2, 4, 2, 64, 32
    max_len = 264 if dtype == np.float32 else 528  # 264 KiB per cache
    model = gqa_model(dtype, b, 1, heads, kv_heads, d, max_len, rotary=True, packed=True, half=half)
    gqa = model.graph.node[0]
    names = list(gqa.input) + [""] * (14 - len(gqa.input))
    del gqa.input[:]
    gqa.input.extend(names + ["q_norm", "k_norm"])
    gqa.attribute.append(helper.make_attribute("qk_norm_epsilon", 1e-5))
    model.graph.input.extend([vi("q_norm", dtype, [d]), vi("k_norm", dtype, [d])])
    sess = make_session(model, options={"offload": "all"})
    rng = seeds.rng()
    lag = [0, 5]
    start = 11
    first = feeds_for(rng, dtype, b, 1, heads, kv_heads, d, max_len, [start - g for g in lag], start + 1,
                      rotary=True, packed=True, half=half, cache_rows=max_len + 4)
    pk, pv = on_device(ort, first["past_key"], device_id), on_device(ort, first["past_value"], device_id)
    out = ort.OrtValue.ortvalue_from_shape_and_type([b, 1, heads * d], dtype, "gpu", device_id, VENDOR)
    for past in range(start, start + 3):
        f = feeds_for(rng, dtype, b, 1, heads, kv_heads, d, max_len, [past - g for g in lag], past + 1,
                      rotary=True, packed=True, half=half, cache_rows=max_len + 4)
        f["q_norm"] = rng.uniform(0.5, 1.5, d).astype(dtype)
        f["k_norm"] = rng.uniform(0.5, 1.5, d).astype(dtype)
        before = {"past_key": pk.numpy(), "past_value": pv.numpy()}
        want = sess.run(None, {**f, **before})
        io = sess.io_binding()
        for name in ("query", "seqlens_k", "total_sequence_length", "cos_cache", "sin_cache", "q_norm", "k_norm"):
            io.bind_cpu_input(name, f[name])
        io.bind_ortvalue_input("past_key", pk)
        io.bind_ortvalue_input("past_value", pv)
        io.bind_ortvalue_output("output", out)
        io.bind_ortvalue_output("present_key", pk)
        io.bind_ortvalue_output("present_value", pv)
        sess.run_with_iobinding(io)
        np.testing.assert_allclose(out.numpy().astype(np.float64), want[0], rtol=0,
                                   atol=TOL[dtype] * np.abs(want[0]).max())
        for name, got, w in (("present_key", pk, want[1]), ("present_value", pv, want[2])):
            g = got.numpy()
            for i, behind in enumerate(lag):
                n = past + 1 - behind
                assert np.array_equal(g[i, :, n:], before[name.replace("present", "past")][i, :, n:]), (name, i)
                assert np.array_equal(g[i, :, :n], w[i, :, :n]), (name, past, i)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("fold", [0, 1], ids=["prepared", "folded"])
def test_a_decode_present_over_poison_equals_the_cpu_eps(make_session, ort, device_id, dtype, fold):
    # One new token per batch with its own past (the preparation in its own dispatch, or folded into the decode
    # kernel with `decode_attention_fold`): present caches bound
    # as device OrtValues full of poison come back as the CPU EP writes them, every row: the past rows copied, the
    # new row rotated, and zeros after each batch's new row (batches of different lengths, a present longer than
    # either). The second run shortens batch 1, so rows the first run wrote must be zeroed, wherever the kernel's
    # present lives (small caches are written to our buffer and copied into ORT's).
    from test_gqa import TOL, feeds_for, gqa_model

    b, heads, kv_heads, d, past = 2, 4, 2, 64, 19
    model = gqa_model(dtype, b, 1, heads, kv_heads, d, past, rotary=True, half=32)
    sess = make_session(model, options={"offload": "all", "decode_attention_fold": fold})
    cpu = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = seeds.rng()
    for seqlens in ([17, 17], [17, 6]):
        f = feeds_for(rng, dtype, b, 1, heads, kv_heads, d, past, seqlens, 19, rotary=True, half=32)
        want = cpu.run(None, f)
        poison = np.full((b, kv_heads, past, d), 7.5, dtype)
        presents = [on_device(ort, poison, device_id) for _ in range(2)]
        out = ort.OrtValue.ortvalue_from_shape_and_type([b, 1, heads * d], dtype, "gpu", device_id, VENDOR)
        io = sess.io_binding()
        for name, value in f.items():
            io.bind_cpu_input(name, value)
        io.bind_ortvalue_output("output", out)
        io.bind_ortvalue_output("present_key", presents[0])
        io.bind_ortvalue_output("present_value", presents[1])
        sess.run_with_iobinding(io)
        for name, got, w in zip(("output", "present_key", "present_value"), [out, *presents], want):
            g = got.numpy().astype(np.float64)
            assert np.abs(g - w).max() <= TOL[dtype] * np.abs(w).max(), (name, seqlens)
        for got, w in zip(presents, want[1:]):
            assert not np.any(w[1, :, seqlens[1] + 1:]) and not np.any(got.numpy()[1, :, seqlens[1] + 1:])
