"""Faults inside the EP reach the application as errors and the process lives on. Each test arms a test-only
fault (ONNXRUNTIME_EP_WGPU_TEST_FAULT, read by the provider) in a fresh process."""

from __future__ import annotations

import pytest

from subproc import FAULT_ENV, describe, run_script

MODEL = "models.matmul([4, 8], [8, 3])"
FEEDS = '{"A": np.ones((4, 8), np.float32), "B": np.ones((8, 3), np.float32)}'

# After every fault the process must still run models: on the CPU EP and, unless the device is gone for good, on
# a new session of ours.
STILL_WORKS = f"""
assert (cpu_session({MODEL}).run(None, {FEEDS})[0] == 8).all()
print("survived")
"""


def survives(lib_path, code: str, env: dict | None = None):
    """Runs `code` then STILL_WORKS in a fresh process; asserts the process got through both."""
    r = run_script(lib_path, code + STILL_WORKS, env)
    assert r.returncode == 0 and "survived" in r.stdout, describe(r)
    return r


def test_panic_in_compute_is_an_error_and_the_process_lives_on(lib_path):
    r = survives(
        lib_path,
        f"""
sess = session({MODEL})
for attempt in range(3):
    expect_error(lambda: sess.run(None, {FEEDS}), "internal error in Compute", "test fault")
del sess
""",
        {FAULT_ENV: "panic:compute"},
    )


@pytest.mark.parametrize("site,entry", [("create_ep", "CreateEp"), ("compile", "Compile")])
def test_panic_during_session_creation_fails_it_with_a_message(lib_path, site, entry):
    r = survives(
        lib_path,
        f"""
expect_error(lambda: session({MODEL}), "internal error in {entry}", "test fault")
""",
        {FAULT_ENV: f"panic:{site}"},
    )


def test_panic_while_the_device_opens_fails_the_session_with_a_message(lib_path):
    # The device opens on a worker thread while ORT prepares the session (provider/src/opening.rs): Compile waits for
    # it and reports the worker's panic as an internal error; the next session opens the device again and fails
    # the same way, and the process lives on.
    survives(
        lib_path,
        f"""
for attempt in range(2):
    expect_error(lambda: session({MODEL}), "internal error: opening the device panicked", "test fault")
""",
        {FAULT_ENV: "panic:open_device"},
    )


def test_panic_in_get_capability_leaves_the_nodes_to_cpu(lib_path):
    # ORT logs a failed GetCapability and gives the nodes to other EPs: with fallback the model runs on the CPU EP.
    r = survives(
        lib_path,
        f"""
expect_error(lambda: session({MODEL}), "fallback to CPU EP has been explicitly disabled")
assert (session({MODEL}, fallback=True).run(None, {FEEDS})[0] == 8).all()
""",
        {FAULT_ENV: "panic:get_capability"},
    )
    assert "internal error in GetCapability: test fault" in r.stderr, describe(r)


def test_panic_in_a_slot_without_status_is_logged(lib_path):
    # ReleaseEp returns nothing: the panic is caught and logged on ORT's default logger.
    r = survives(
        lib_path,
        f"""
ort.set_default_logger_severity(2)
for i in range(3):
    sess = session({MODEL})
    assert (sess.run(None, {FEEDS})[0] == 8).all()
    del sess
""",
        {FAULT_ENV: "panic:release_ep"},
    )
    assert r.stderr.count("internal error in ReleaseEp") == 3, describe(r)


def test_lost_device_fails_runs_and_the_next_session_gets_a_new_device(lib_path):
    r = survives(
        lib_path,
        f"""
sess = session({MODEL})
for attempt in range(2):
    expect_error(lambda: sess.run(None, {FEEDS}), "GPU device was lost", "create a new session")
fresh = session({MODEL})
assert (fresh.run(None, {FEEDS})[0] == 8).all()
expect_error(lambda: sess.run(None, {FEEDS}), "GPU device was lost")
del sess, fresh
""",
        {FAULT_ENV: "lose_device:compute"},
    )


def test_a_bad_fault_directive_is_reported(lib_path):
    survives(lib_path, f'expect_error(lambda: session({MODEL}), "unknown site")\n', {FAULT_ENV: "panic:nowhere"})



def test_real_out_of_memory_is_an_error_and_the_session_runs_again(lib_path, ep_devices):
    if dict(ep_devices[0].ep_metadata).get("wgpu.software") != "1":
        pytest.skip("the address-space limit reaches device memory only where the adapter is llvmpipe")
    # llvmpipe backs device memory with host memory, so a lower address-space limit (RLIMIT_AS) makes the driver
    # refuse a buffer well inside the device limits: a real VK_ERROR_OUT_OF_DEVICE_MEMORY, through wgpu's error
    # scope, to our GpuError::OutOfMemory and an OrtStatus. One MatMul with symbolic dims, two shapes of 56 MB
    # tensors (the limit leaves 32 MiB), warmed up unlimited (so pipelines and LLVM's JIT code exist before the limit):
    # - outer, A [m, 1] · B [1, n] with a 56 MB output: run under the limit with twice the columns (a 112 MB output,
    #   more than the headroom and the buffers of the set it may be rebuilt from together), so it
    #   prepares (allocates) a new buffer set, and ORT allocates the output (or the feed's device copy) through
    #   our allocator: whichever is refused first, the error is ours and says out of GPU memory.
    # - gemv, A [3499, 8000] (112 MB) · B [8000, 1]: a new input buffer and its upload staging buffer. Uploads
    #   once went through wgpu's Queue::write_buffer, whose staging out-of-memory lost the device
    #   (ORT_DEVICE_RESET for every session on it); through our own staging buffer it is a plain error.
    # - gemv again at the warmed-up shape [3500, 4000]: its pooled set (device and staging buffers) is reused, so
    #   it allocates nothing and runs correctly under the limit.
    r = survives(
        lib_path,
        """
import resource

def vm_size():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmSize:"))

model = models.matmul([1, 1], [1, 1], dims=(["m", "k"], ["k", "n"]))
rng = np.random.default_rng(7)
def feeds(m, k, n):
    return {"A": rng.random((m, k), dtype=np.float32) - 0.5, "B": rng.random((k, n), dtype=np.float32) - 0.5}
small, outer, outer2 = feeds(16, 1, 24), feeds(3500, 1, 4000), feeds(3499, 1, 8000)
gemv, gemv2 = feeds(3500, 4000, 1), feeds(3499, 8000, 1)
sess = session(model)
cpu = cpu_session(model)
def check(s, f):
    got, want = s.run(None, f)[0], cpu.run(None, f)[0]
    assert np.allclose(got, want, rtol=1e-4, atol=1e-3), np.abs(got - want).max()
for f in (small, outer, gemv):
    check(sess, f)
del f

soft, hard = resource.getrlimit(resource.RLIMIT_AS)
limit = vm_size() + (32 << 20)
resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
try:
    errors = []
    for f in (outer2, gemv2, outer2, gemv2):
        errors.append(expect_error(lambda: sess.run(None, f), "[WgpuExecutionProvider]", "out of GPU memory"))
    # Small work and a pooled shape still run under the limit, on the same session.
    under_limit = sess.run(None, small)[0]
    pooled = sess.run(None, gemv)[0]
finally:
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
print("limit", limit >> 20, "MiB")
for e in errors[:2]:
    print(e)
    assert "EP_FAIL" in e, e
assert all("Out of Memory" in e for e in errors), errors
assert np.array_equal(under_limit, cpu.run(None, small)[0])
assert np.allclose(pooled, cpu.run(None, gemv)[0], rtol=1e-4, atol=1e-3)

# The limit lifted: the same session runs both shapes that failed, and so does a new session.
for s in (sess, session(model)):
    check(s, outer2)
    check(s, gemv2)
del sess, s
""",
    )
    print(r.stdout)
