"""Device-resident tensors: our own device memory (an `OrtMemoryInfo` with our vendor id on every `OrtEpDevice`),
the allocator behind it, the data transfer, and `Compute` on device tensors — through the real ONNX Runtime.
The KV caches bound on the device are in test_device_cache.py; what both share is in device_io.py.

Every check compares with the CPU EP on fresh random data; copies are counted by the library itself
(`onnxruntime_ep_wgpu.copy_stats`, read through ctypes from the registered library)."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest
from onnx import TensorProto, helper

import models
from conftest import run_in_threads
from device_io import (  # noqa: F401 (ort and device_id are fixtures)
    VENDOR, bind_run, copies, dense, device_id, host_copies, locator, on_device, ort, split_by_cpu_node,
)
from subproc import FAULT_ENV, describe, run_script


@pytest.mark.smoke
def test_our_device_memory_is_registered_with_our_vendor_id(ep_devices, ort):
    for dev in ep_devices:
        info = dev.memory_info(ort.OrtDeviceMemoryType.DEFAULT)
        assert info is not None, "no DEFAULT memory info on our OrtEpDevice"
        assert info.device_vendor_id == VENDOR, hex(info.device_vendor_id)
        assert info.name == "WgpuExecutionProvider"
        assert info.device_mem_type == ort.OrtDeviceMemoryType.DEFAULT
        assert dev.memory_info(ort.OrtDeviceMemoryType.HOST_ACCESSIBLE) is None


@pytest.mark.smoke
@pytest.mark.parametrize("mem_pattern", [True, False])
@pytest.mark.parametrize("d", [37, 256])
def test_io_binding_equals_numpy_io_and_the_cpu_ep(make_session, run_cpu, ort, device_id, mem_pattern, d):
    # d = 256: tensors of 256 KiB and more, bound in place (kernels/src/graph/direct.rs), among them partition
    # outputs in ORT's memory-pattern buffer and inputs ORT copied there from the host.
    rng = np.random.default_rng()
    model = split_by_cpu_node(rng, d)
    sess = make_session(model, options={"offload": "all"}, fallback=True)
    sess_opts = sess.get_session_options()
    assert sess_opts.enable_mem_pattern  # ORT's default; the parametrised case turns it off below
    if not mem_pattern:
        sess = make_session(model, options={"offload": "all"}, fallback=True, config={"session.enable_mem_pattern": "0"})
    # A repeated shape runs on ORT's memory pattern (one Alloc, offsets into it).
    for rows in (5, 5, 11, 5) if d == 37 else (300, 300, 310, 300):
        x = rng.uniform(-1, 1, (rows, d)).astype(np.float32)
        want = run_cpu(model, {"X": x})[0]
        got_numpy = sess.run(None, {"X": x})[0]
        got_bound = bind_run(ort, sess, {"X": x}, device_id)[0].numpy()
        # d = 256: the CumSum makes the second product's terms large (outputs up to ~1e4) and some outputs cancel to
        # near zero, where float32's rounding of those terms (~1e-3) is the error whatever the summation order: the
        # bound scales with the output's magnitude (an unseeded run hit 2.3e-3 at an output of 0.9 against 2e-3).
        atol = 1e-4 if d == 37 else max(2e-3, 2e-7 * d * float(np.abs(want).max()))
        np.testing.assert_allclose(got_numpy, want, rtol=1e-4, atol=atol)
        np.testing.assert_array_equal(got_bound, got_numpy)


@pytest.mark.smoke
@pytest.mark.parametrize("d, rows", [(45, 7), (256, 300)])
def test_outputs_fed_back_as_inputs_make_no_host_copies(make_session, lib_path, ort, device_id, d, rows):
    # Small tensors are copied on the device; tensors of 256 KiB or more at aligned offsets are bound in place
    # (kernels/src/graph/direct.rs), so that loop copies nothing at all. Every step equals the CPU EP's (shapes not
    # a multiple of any tile; the output first written is poisoned).
    rng = np.random.default_rng()
    model = dense(d, d, rng, activation="Tanh")
    sess = make_session(model, options={"offload": "all"})
    cpu = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = rng.uniform(-1, 1, (rows, d)).astype(np.float32)
    a, b = on_device(ort, x, device_id), on_device(ort, np.full((rows, d), np.nan, np.float32), device_id)
    bind_run(ort, sess, {"X": a}, device_id, outputs=[b])  # warm-up: prepares the shapes
    a, b = b, a
    before = copies(lib_path)
    steps = 6
    for _ in range(steps):
        bind_run(ort, sess, {"X": a}, device_id, outputs=[b])
        a, b = b, a
    after = copies(lib_path)
    assert host_copies(before, after) == (0, 0), (before, after)
    if rows * d * 4 >= 256 << 10:
        assert after["device_to_device"] == before["device_to_device"], (before, after)
    else:
        assert after["device_to_device"] > before["device_to_device"]
    want = x
    for _ in range(steps + 1):
        want = cpu.run(None, {"X": want})[0]
    np.testing.assert_allclose(a.numpy(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.smoke
def test_a_cpu_node_between_partitions_copies_only_the_tensors_that_cross(make_session, run_cpu, lib_path, ort, device_id):
    rng = np.random.default_rng()
    model = split_by_cpu_node(rng)
    sess = make_session(model, options={"offload": "all"}, fallback=True)
    x = rng.uniform(-1, 1, (9, 37)).astype(np.float32)
    xv = on_device(ort, x, device_id)
    y = ort.OrtValue.ortvalue_from_shape_and_type([9, 23], np.float32, "gpu", device_id, VENDOR)
    for _ in range(2):  # warm-up: shapes prepared, memory pattern recorded
        bind_run(ort, sess, {"X": xv}, device_id, outputs=[y])
    before = copies(lib_path)
    bind_run(ort, sess, {"X": xv}, device_id, outputs=[y])
    after = copies(lib_path)
    crossing = 9 * 37 * 4  # R1 to the CPU node, C back
    assert host_copies(before, after) == (1, 1), (before, after)
    assert after["device_to_host_bytes"] - before["device_to_host_bytes"] == crossing
    assert after["host_to_device_bytes"] - before["host_to_device_bytes"] == crossing
    np.testing.assert_allclose(y.numpy(), run_cpu(model, {"X": x})[0], rtol=1e-4, atol=1e-4)


def test_tensors_of_sizes_and_offsets_that_are_not_word_multiples(make_session, run_cpu, ort, device_id):
    # f16 [3, 5] is 30 bytes and bool [3, 5] 15: wgpu copies whole 4-byte words, so these take the exact path
    # (no byte past the tensor is written), as do the CPU → device copies of the inputs.
    rng = np.random.default_rng()
    nodes = [
        helper.make_node("Mul", ["X", "X"], ["Y"]),
        helper.make_node("Greater", ["X", "Z"], ["G"]),
    ]
    model = models.finish(
        nodes,
        [models.tensor("X", np.float16, [3, 5]), models.tensor("Z", np.float16, [3, 5])],
        [models.tensor("Y", np.float16, [3, 5]), helper.make_tensor_value_info("G", TensorProto.BOOL, [3, 5])],
    )
    sess = make_session(model, options={"offload": "all"})
    for _ in range(3):
        feeds = {k: rng.uniform(-2, 2, (3, 5)).astype(np.float16) for k in ("X", "Z")}
        y, g = (v.numpy() for v in bind_run(ort, sess, feeds, device_id))
        want_y, want_g = run_cpu(model, feeds)
        np.testing.assert_allclose(y.astype(np.float32), want_y.astype(np.float32), rtol=1e-3, atol=1e-3)
        np.testing.assert_array_equal(g, want_g)
        got_y, got_g = sess.run(None, feeds)
        np.testing.assert_array_equal(got_g, want_g)


def test_a_steady_bound_run_allocates_nothing(make_session, lib_path, ort, device_id):
    rng = np.random.default_rng()
    model = dense(64, 40, rng)
    sess = make_session(model, options={"offload": "all"})
    x = on_device(ort, rng.uniform(-1, 1, (33, 64)).astype(np.float32), device_id)
    for _ in range(3):
        bind_run(ort, sess, {"X": x}, device_id)
    before = locator.memory_stats(lib_path)
    for _ in range(5):
        bind_run(ort, sess, {"X": x}, device_id)
    after = locator.memory_stats(lib_path)
    assert after["buffers_created"] == before["buffers_created"], (before, after)
    assert after["allocations"] > before["allocations"]  # ORT allocated outputs, served from the cache


@pytest.mark.parametrize("n", [5, 1024])
@pytest.mark.parametrize("computed", [False, True])
def test_indices_from_the_host_are_checked_there_and_the_run_does_not_wait(make_session, run_cpu, lib_path, ort,
                                                                           device_id, computed, n):
    """A decoder's token ids, or a prompt's (1024 of them: 8 KB), come from the host (a device value uploaded through
    our data transfer): Gather checks them on the host, so a bound run waits for nothing and the next one is recorded
    while the GPU works. Indices a step computes are checked by the kernel's status word, which the run waits for.
    Bad indices fail either way."""
    rng = np.random.default_rng()
    table = rng.uniform(-1, 1, (50, 24)).astype(np.float32)
    nodes = [helper.make_node("Gather", ["T", "J" if computed else "I"], ["G"], axis=0),
             helper.make_node("Relu", ["G"], ["Y"])]
    if computed:
        nodes.insert(0, helper.make_node("Add", ["I", "One"], ["J"]))
    inits = [helper.make_tensor("T", TensorProto.FLOAT, table.shape, table.ravel())]
    if computed:
        inits.append(helper.make_tensor("One", TensorProto.INT64, [], [1]))
    model = models.finish(nodes, [models.tensor("I", np.int64, ["n"])], [models.tensor("Y", np.float32, None)],
                          inits)
    sess = make_session(model, config={"session.disable_cpu_ep_fallback": "1"})
    ids = rng.integers(-49, 48, n).astype(np.int64)
    want = run_cpu(model, {"I": ids})[0]
    bind_run(ort, sess, {"I": ids}, device_id)
    before = locator.startup_stats(lib_path)["run_wait"]["count"]
    for _ in range(4):
        (y,) = bind_run(ort, sess, {"I": ids}, device_id)
    waits = locator.startup_stats(lib_path)["run_wait"]["count"] - before
    np.testing.assert_array_equal(y.numpy(), want)
    assert waits == (4 if computed else 0), waits
    bad = np.array([3, 50 - int(computed)], np.int64)
    with pytest.raises(Exception, match="out of range"):
        bind_run(ort, sess, {"I": bad}, device_id)[0].numpy()
    np.testing.assert_array_equal(bind_run(ort, sess, {"I": ids}, device_id)[0].numpy(), want)


def test_a_read_back_of_an_uploaded_input_waits_for_nothing(make_session, run_cpu, lib_path, ort, device_id):
    """genai's prompt: the attention mask, bound on our device, also feeds CPU nodes (its ReduceSum), so ORT reads it
    back through our data transfer every run. A range written from the host and not since is read from its host
    copy: the read waits for no GPU work (the previous run's), and runs back to back keep the GPU busy. What it
    reads is the mask (the CPU node's output matches)."""
    rng = np.random.default_rng()
    table = rng.uniform(-1, 1, (50, 24)).astype(np.float32)
    nodes = [helper.make_node("Gather", ["T", "I"], ["G"], axis=0), helper.make_node("Relu", ["G"], ["Y"]),
             helper.make_node("ReduceSum", ["M"], ["S"], keepdims=0)]
    inits = [helper.make_tensor("T", TensorProto.FLOAT, table.shape, table.ravel())]
    model = models.finish(nodes, [models.tensor("I", np.int64, ["n"]), models.tensor("M", np.int64, [1, "n"])],
                          [models.tensor("Y", np.float32, None), models.tensor("S", np.int64, None)], inits)
    sess = make_session(model, fallback=True)
    feeds = {"I": rng.integers(0, 50, 512).astype(np.int64), "M": rng.integers(0, 2, (1, 512)).astype(np.int64)}
    bind_run(ort, sess, feeds, device_id)
    waits, before = locator.startup_stats(lib_path)["copy_out_wait"]["count"], copies(lib_path)
    y, s = bind_run(ort, sess, feeds, device_id)
    assert host_copies(before, copies(lib_path))[1] == 1, "the mask read back for the CPU node"
    assert locator.startup_stats(lib_path)["copy_out_wait"]["count"] == waits
    want = run_cpu(model, feeds)
    np.testing.assert_array_equal(s.numpy(), want[1])
    np.testing.assert_array_equal(y.numpy(), want[0])


def test_out_of_memory_in_alloc_is_an_error_and_the_next_run_works(lib_path):
    # A real refusal (more than the device's largest buffer) and an injected one (oom:alloc fails the first
    # allocation of 1 MiB or more once, as a driver out-of-memory would) inside a run: ORT allocates the bound
    # output through our allocator, gets NULL and fails the run; the next run allocates again and works.
    r = run_script(
        lib_path,
        f"""
import ctypes
V = {VENDOR}
rng = np.random.default_rng()
w = rng.uniform(-1, 1, (8, 700)).astype(np.float32)
model = models.matmul(None, None, b_value=w, dims=(["m", 8], None))
sess = session(model, options={{"offload": "all"}})
a = rng.uniform(-1, 1, (400, 8)).astype(np.float32)  # output: 400 x 700 x 4 = 1.1 MB


def run():
    io = sess.io_binding()
    io.bind_ortvalue_input("A", ort.OrtValue.ortvalue_from_numpy(a, "gpu", 0, V))
    io._iobinding.bind_output("Y", ort.OrtDevice.make("gpu", 0, V)._get_c_device())
    sess.run_with_iobinding(io)
    return io.get_outputs()[0].numpy()


expect_error(run)
assert np.allclose(run(), a @ w, atol=1e-4)
# More than the device's largest buffer: refused by us (ORT may raise, or keep a tensor without memory).
stats = (ctypes.c_uint64 * 5)()
ctypes.CDLL(LIB).onnxruntime_ep_wgpu_memory_stats(stats, 5)
failures = stats[4]
try:
    ort.OrtValue.ortvalue_from_shape_and_type([1 << 34], np.float32, "gpu", 0, V)
except Exception as e:
    print("refused:", e)
ctypes.CDLL(LIB).onnxruntime_ep_wgpu_memory_stats(stats, 5)
assert stats[4] == failures + 1, (failures, stats[4])
assert np.allclose(run(), a @ w, atol=1e-4)
del sess
print("survived")
""",
        {FAULT_ENV: "oom:alloc"},
    )
    assert r.returncode == 0 and "survived" in r.stdout, describe(r)
    assert "device allocation of 1120000 bytes failed" in r.stderr or "oom:alloc" in r.stderr, describe(r)


def test_bound_values_released_by_python_stay_valid_and_foreign_memory_is_an_error(lib_path):
    r = run_script(
        lib_path,
        f"""
import gc
V = {VENDOR}
rng = np.random.default_rng()
model = models.matmul(None, None, b_value=rng.uniform(-1, 1, (8, 3)).astype(np.float32), dims=(["m", 8], None))
sess = session(model, options={{"offload": "all"}})
a = rng.uniform(-1, 1, (5, 8)).astype(np.float32)
io = sess.io_binding()
x = ort.OrtValue.ortvalue_from_numpy(a, "gpu", 0, V)
io.bind_ortvalue_input("A", x)
io._iobinding.bind_output("Y", ort.OrtDevice.make("gpu", 0, V)._get_c_device())
del x
gc.collect()
sess.run_with_iobinding(io)
y = io.get_outputs()[0]
del io, sess
gc.collect()
assert np.allclose(y.numpy(), cpu_session(model).run(None, {{"A": a}})[0], atol=1e-4)
# Memory of a device nobody registered (NVIDIA's PCI vendor id): ORT finds no allocator; nothing reaches us.
expect_error(lambda: ort.OrtValue.ortvalue_from_numpy(a, "gpu", 0, 0x10DE))
# Our vendor id on a device id we do not offer.
expect_error(lambda: ort.OrtValue.ortvalue_from_numpy(a, "gpu", 77, V))
del y
print("survived")
""",
    )
    assert r.returncode == 0 and "survived" in r.stdout, describe(r)


def test_a_lost_device_fails_runs_holding_device_tensors_with_device_reset(lib_path):
    r = run_script(
        lib_path,
        f"""
V = {VENDOR}
model = models.matmul(None, None, b_value=np.ones((8, 3), np.float32), dims=(["m", 8], None))
sess = session(model, options={{"offload": "all"}})
x = ort.OrtValue.ortvalue_from_numpy(np.ones((4, 8), np.float32), "gpu", 0, V)
io = sess.io_binding()
io.bind_ortvalue_input("A", x)
io._iobinding.bind_output("Y", ort.OrtDevice.make("gpu", 0, V)._get_c_device())
text = expect_error(lambda: sess.run_with_iobinding(io), "GPU device was lost")
assert "DEVICE_RESET" in text or "create a new session" in text, text
expect_error(lambda: sess.run_with_iobinding(io), "GPU device was lost")
del io, sess, x
print("survived")
""",
        {FAULT_ENV: "lose_device:compute"},
    )
    assert r.returncode == 0 and "survived" in r.stdout, describe(r)


def test_eight_threads_with_device_values(make_session, run_cpu, ort, device_id):
    rng = np.random.default_rng()
    shared_model = dense(48, 31, rng)
    shared = make_session(shared_model, options={"offload": "all"})
    start = threading.Barrier(8)

    def worker(seed):
        local = np.random.default_rng(seed)
        own_model = dense(48, 20 + seed, local, activation="Sigmoid")
        own = make_session(own_model, options={"offload": "all"})
        start.wait(timeout=120)
        for i in range(8):
            x = local.uniform(-1, 1, (1 + (seed * 5 + i) % 19, 48)).astype(np.float32)
            for sess, model in ((shared, shared_model), (own, own_model)):
                got = bind_run(ort, sess, {"X": x}, device_id)[0].numpy()
                np.testing.assert_allclose(got, run_cpu(model, {"X": x})[0], rtol=1e-4, atol=1e-4)

    run_in_threads(worker, 8)
    gc.collect()


def test_each_run_logs_its_copies_at_verbose_level(lib_path):
    r = run_script(
        lib_path,
        """
model = models.matmul(None, None, b_value=np.ones((8, 3), np.float32), dims=(["m", 8], None))
so = ort.SessionOptions()
so.add_provider_for_devices(DEVS, {"offload": "all"})
so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
so.log_severity_level = 0
sess = ort.InferenceSession(model.SerializeToString(), sess_options=so, enable_fallback=0)
sess.run(None, {"A": np.ones((4, 8), np.float32)})
del sess
print("survived")
""",
    )
    assert r.returncode == 0 and "survived" in r.stdout, describe(r)
    # numpy I/O: the feed up (4 x 8 floats), the two GPU copies of Compute, the fetch down (4 x 3 floats)
    assert "run copies: host->GPU 1 (128 B), GPU->host 1 (48 B), GPU->GPU 2" in r.stderr, describe(r)


def test_empty_tensors_through_io_binding(make_session, run_cpu, ort, device_id):
    # ORT never allocates 0 bytes but copies and binds empty tensors (no memory behind them).
    rng = np.random.default_rng()
    model = dense(37, 11, rng)
    sess = make_session(model, options={"offload": "all"})
    for rows in (0, 3, 0):
        x = rng.uniform(-1, 1, (rows, 37)).astype(np.float32)
        got = bind_run(ort, sess, {"X": x}, device_id)[0].numpy()
        assert got.shape == (rows, 11)
        np.testing.assert_allclose(got, run_cpu(model, {"X": x})[0], rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(sess.run(None, {"X": x})[0], got, rtol=0, atol=0)


@pytest.mark.smoke
def test_device_values_work_before_any_session(lib_path):
    # ORT creates the environment's allocator of our memory when the library is registered; it opens the device
    # on its first allocation. Values made, updated and read back with no session at all.
    r = run_script(
        lib_path,
        f"""
V = {VENDOR}
rng = np.random.default_rng()
a = rng.uniform(-1, 1, (3, 7, 5)).astype(np.float32)
x = ort.OrtValue.ortvalue_from_numpy(a, "gpu", 0, V)
assert np.array_equal(x.numpy(), a)
b = rng.uniform(-1, 1, (3, 7, 5)).astype(np.float32)
x.update_inplace(b)
assert np.array_equal(x.numpy(), b)
h = rng.integers(0, 255, (11,), dtype=np.uint8)  # 11 bytes: not a multiple of the 4-byte copy unit
y = ort.OrtValue.ortvalue_from_numpy(h, "gpu", 0, V)
assert np.array_equal(y.numpy(), h)
del x, y
print("survived")
""",
    )
    assert r.returncode == 0 and "survived" in r.stdout, describe(r)
