"""The device opened at registration (provider/src/gpus.rs): `GetSupportedDevices` starts opening the first listed
adapter's device with the default options on a worker thread, and the first session (or allocator) that asks for it
with the same device options takes it instead of opening another. `ONNXRUNTIME_EP_WGPU_EARLY_OPEN=0` turns it off.

Each case runs in a fresh process (`subproc.run_script`) and counts device openings from the start-up phases
(`onnxruntime_ep_wgpu.startup_stats`: `device` counts every `request_device`)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from subproc import describe, run_script

REPO = Path(__file__).resolve().parents[1]

SCRIPT = """
sys.path.insert(0, {python!r})
import onnxruntime_ep_wgpu as locator
from onnx import TensorProto as T, helper, numpy_helper

w = np.random.default_rng(3).standard_normal((37, 29)).astype(np.float32)
graph = helper.make_graph(
    [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Relu", ["m"], ["y"])], "g",
    [helper.make_tensor_value_info("x", T.FLOAT, [5, 37])], [helper.make_tensor_value_info("y", T.FLOAT, [5, 29])],
    [numpy_helper.from_array(w, "w")])
MODEL = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
MODEL.ir_version = 8  # what every ORT we support loads (onnx's newest may be past the host's)
X = np.random.default_rng(4).standard_normal((5, 37)).astype(np.float32)
WANT = cpu_session(MODEL).run(None, {{"x": X}})[0]


def opened():
    return locator.startup_stats(LIB)["device"]["count"]


def check(options=None):
    got = session(MODEL, options=options).run(None, {{"x": X}})[0]
    assert np.allclose(got, WANT, rtol=1e-4, atol=1e-4), float(np.max(np.abs(got - WANT)))
    return opened()


time.sleep(1.0)  # registration's opening, if any, has finished
print("AT_REGISTRATION", opened(), flush=True)
"""


def counts(r) -> dict[str, int]:
    assert r.returncode == 0, describe(r)
    return {ln.split()[0]: int(ln.split()[1]) for ln in r.stdout.splitlines() if ln[:1].isupper() and " " in ln}


def script(body: str) -> str:
    return SCRIPT.format(python=str(REPO / "python")) + body


def test_registration_opens_the_device_and_the_first_session_takes_it(lib_path):
    r = run_script(lib_path, script('print("SESSION", check(), flush=True)\nprint("AGAIN", check(), flush=True)\n'))
    assert counts(r) == {"AT_REGISTRATION": 1, "SESSION": 1, "AGAIN": 1}, r.stdout


def test_off_opens_the_device_at_the_first_session(lib_path):
    r = run_script(lib_path, script('print("SESSION", check(), flush=True)\n'),
                   env={"ONNXRUNTIME_EP_WGPU_EARLY_OPEN": "0"})
    assert counts(r) == {"AT_REGISTRATION": 0, "SESSION": 1}, r.stdout


def test_a_bad_setting_is_a_warning_and_the_default(lib_path):
    # ORT's default logger shows warnings: registration's names the variable and the value it ignored.
    r = run_script(lib_path, script('print("SESSION", check(), flush=True)\n'),
                   env={"ONNXRUNTIME_EP_WGPU_EARLY_OPEN": "later"})
    assert counts(r) == {"AT_REGISTRATION": 1, "SESSION": 1}, r.stdout
    assert 'ONNXRUNTIME_EP_WGPU_EARLY_OPEN="later" is not 1' in r.stderr, describe(r)


def test_a_session_of_other_device_options_leaves_it_to_the_next(lib_path):
    # cooperative_matrix=0 is another device (no tensor-core features): it opens its own, and the default session
    # after it still takes the one opened at registration.
    body = """
print("OTHER", check({"cooperative_matrix": "0"}), flush=True)
print("DEFAULT", check(), flush=True)
"""
    assert counts(run_script(lib_path, script(body))) == {"AT_REGISTRATION": 1, "OTHER": 2, "DEFAULT": 2}


def test_a_session_with_its_own_pipeline_cache_opens_its_own_device(lib_path, tmp_path):
    # The first session to open a device decides its pipeline cache: one that sets the option gives up the device
    # opened at registration (without a cache) and opens one with it; the sessions after it share that one.
    body = f"""
print("CACHED", check({{"pipeline_cache": {str(tmp_path)!r}}}), flush=True)
print("DEFAULT", check(), flush=True)
"""
    r = run_script(lib_path, script(body))
    assert counts(r) == {"AT_REGISTRATION": 1, "CACHED": 2, "DEFAULT": 2}, r.stdout
    if "pipeline cache" in r.stderr:  # adapters with Features::PIPELINE_CACHE write the file at exit
        assert list(tmp_path.glob("pipelines-*.bin")), describe(r)


@pytest.mark.parametrize("then", ["exit", "unregister"])
def test_leaving_while_registration_still_opens_the_device(lib_path, then):
    # Opening made 1.5 s slow (test-only ONNXRUNTIME_EP_WGPU_TEST_SLOW_OPEN): the process exits, or unregisters the
    # library, while registration's opening is still under way; either must end cleanly (ReleaseEpFactory joins it).
    # Both wait for the opening (the exit through an exit handler registered before it started), so the process
    # lives past the delay.
    code = 'ort.unregister_execution_provider_library("wgpu_sub")\n' if then == "unregister" else ""
    start = time.monotonic()
    r = run_script(lib_path, code + 'print("LEFT", 1, flush=True)\n',
                   env={"ONNXRUNTIME_EP_WGPU_TEST_SLOW_OPEN": "1500"})
    assert counts(r) == {"LEFT": 1}, describe(r)
    assert time.monotonic() - start >= 1.5, "the process ended before registration's opening did"
