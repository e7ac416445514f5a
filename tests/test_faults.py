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


def test_panic_in_compute_is_an_error_and_the_process_lives_on(lib_path):
    r = run_script(
        lib_path,
        f"""
sess = session({MODEL})
for attempt in range(3):
    expect_error(lambda: sess.run(None, {FEEDS}), "internal error in Compute", "test fault")
del sess
"""
        + STILL_WORKS,
        {FAULT_ENV: "panic:compute"},
    )
    assert r.returncode == 0 and "survived" in r.stdout, describe(r)


@pytest.mark.parametrize("site,entry", [("create_ep", "CreateEp"), ("compile", "Compile")])
def test_panic_during_session_creation_fails_it_with_a_message(lib_path, site, entry):
    r = run_script(
        lib_path,
        f"""
expect_error(lambda: session({MODEL}), "internal error in {entry}", "test fault")
"""
        + STILL_WORKS,
        {FAULT_ENV: f"panic:{site}"},
    )
    assert r.returncode == 0 and "survived" in r.stdout, describe(r)


def test_panic_in_get_capability_leaves_the_nodes_to_cpu(lib_path):
    # ORT logs a failed GetCapability and gives the nodes to other EPs: with fallback the model runs on the CPU EP.
    r = run_script(
        lib_path,
        f"""
expect_error(lambda: session({MODEL}), "fallback to CPU EP has been explicitly disabled")
assert (session({MODEL}, fallback=True).run(None, {FEEDS})[0] == 8).all()
"""
        + STILL_WORKS,
        {FAULT_ENV: "panic:get_capability"},
    )
    assert r.returncode == 0 and "survived" in r.stdout, describe(r)
    assert "internal error in GetCapability: test fault" in r.stderr, describe(r)


def test_panic_in_a_slot_without_status_is_logged(lib_path):
    # ReleaseEp returns nothing: the panic is caught and logged on ORT's default logger.
    r = run_script(
        lib_path,
        f"""
ort.set_default_logger_severity(2)
for i in range(3):
    sess = session({MODEL})
    assert (sess.run(None, {FEEDS})[0] == 8).all()
    del sess
"""
        + STILL_WORKS,
        {FAULT_ENV: "panic:release_ep"},
    )
    assert r.returncode == 0 and "survived" in r.stdout, describe(r)
    assert r.stderr.count("internal error in ReleaseEp") == 3, describe(r)


def test_lost_device_fails_runs_and_the_next_session_gets_a_new_device(lib_path):
    r = run_script(
        lib_path,
        f"""
sess = session({MODEL})
for attempt in range(2):
    expect_error(lambda: sess.run(None, {FEEDS}), "GPU device was lost", "create a new session")
fresh = session({MODEL})
assert (fresh.run(None, {FEEDS})[0] == 8).all()
expect_error(lambda: sess.run(None, {FEEDS}), "GPU device was lost")
del sess, fresh
"""
        + STILL_WORKS,
        {FAULT_ENV: "lose_device:compute"},
    )
    assert r.returncode == 0 and "survived" in r.stdout, describe(r)


def test_a_bad_fault_directive_is_reported(lib_path):
    r = run_script(lib_path, f'expect_error(lambda: session({MODEL}), "unknown site")\n' + STILL_WORKS, {FAULT_ENV: "panic:nowhere"})
    assert r.returncode == 0 and "survived" in r.stdout, describe(r)
