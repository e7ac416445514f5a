"""8 threads at once, each with its own session and all sharing one more, give correct results (the EP reports
IsConcurrentRunSupported = true, so ORT runs one session's Compute on several threads at once)."""

from __future__ import annotations

import threading

import numpy as np

import models
from conftest import run_in_threads
import seeds

THREADS = 8
RUNS = 12


def test_own_and_shared_sessions_at_the_same_time(make_session):
    import onnxruntime as ort

    rng = seeds.rng()
    shared_w = rng.uniform(-1, 1, (96, 80)).astype(np.float32)
    shared = make_session(models.matmul(None, None, b_value=shared_w, dims=(["m", 96], None)))
    start = threading.Barrier(THREADS)

    def worker(seed):
        local = np.random.default_rng(seed)
        # Sessions are created concurrently too (one shared device, one pipeline cache).
        own_w = local.uniform(-1, 1, (96, 40 + seed)).astype(np.float32)
        mlp = models.mlp(["b", "s"], [96, 33 + seed, 17], rng=local, activation="Relu")
        own = make_session(mlp)
        cpu = ort.InferenceSession(mlp.SerializeToString(), providers=["CPUExecutionProvider"])
        own_mm = make_session(models.matmul(None, None, b_value=own_w, dims=(["m", 96], None)))
        start.wait(timeout=120)
        for i in range(RUNS):
            rows = 1 + (seed * 7 + i) % 40
            a = local.uniform(-1, 1, (rows, 96)).astype(np.float32)
            np.testing.assert_allclose(shared.run(None, {"A": a})[0], a @ shared_w, rtol=1e-4, atol=1e-4)
            np.testing.assert_allclose(own_mm.run(None, {"A": a})[0], a @ own_w, rtol=1e-4, atol=1e-4)
            x = local.uniform(-1, 1, (2, rows, 96)).astype(np.float32)
            got = own.run(None, {"X": x})[0]
            np.testing.assert_allclose(got, cpu.run(None, {"X": x})[0], rtol=1e-4, atol=1e-4)

    run_in_threads(worker, THREADS)


def test_large_host_copies_split_across_the_copy_threads_from_several_threads(make_session):
    """Inputs and outputs of 2.3 to 9.6 MB (not multiples of the 1 MB parts) copied by the copy threads, four
    sessions' runs at once: every element arrives where it belongs."""
    from onnx import helper

    x, y = models.tensor("X", np.float32, ["n"]), models.tensor("Y", np.float32, ["n"])
    model = models.finish([helper.make_node("Neg", ["X"], ["Y"])], [x], [y])
    start = threading.Barrier(4)

    def worker(seed):
        local = np.random.default_rng(seed)
        sess = make_session(model)
        start.wait(timeout=120)
        for i in range(6):
            n = 575_001 + 397_003 * ((seed + i) % 5)
            a = local.uniform(-1, 1, n).astype(np.float32)
            np.testing.assert_array_equal(sess.run(None, {"X": a})[0], -a)

    run_in_threads(worker, 4)
