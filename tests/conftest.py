"""Shared fixtures of the Python tests.

End-to-end tests ask for `make_session` (a session on our EP) and `run_cpu` (the CPU EP reference):

    def test_matmul(make_session, run_cpu):
        sess = make_session(model, {"tiling": "64x64"})
        got = sess.run(None, feeds)
        want = run_cpu(model, feeds)

The library is registered once per pytest process (`registered_ep`) and unregistered at the end, after every
session made here has been released (ONNX Runtime does not refcount plugin libraries).
"""

from __future__ import annotations

import gc
import os
import sys
import weakref
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EP_NAME = "WgpuExecutionProvider"
REGISTRATION_NAME = "wgpu_test"
LIBRARY_NAME = "libonnxruntime_ep_wgpu.so"
LIBRARY_ENV = "ONNXRUNTIME_EP_WGPU_LIB"

# Sessions made by `make_session`, released before the library is unregistered.
_sessions: weakref.WeakSet = weakref.WeakSet()


def pytest_configure(config):
    config.addinivalue_line("markers", "smoke: quick checks also run against the oldest supported ONNX Runtime")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failing test's report names the process's seed (`seeds.py`), which replays its unseeded random data."""
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        import seeds

        report.sections.append(("test seed", f"ONNXRUNTIME_EP_WGPU_TEST_SEED={seeds.SEED} replays this process's data"))


def pytest_report_header(config):
    try:
        import onnxruntime as ort

        header = f"onnxruntime {ort.__version__}; "
    except ImportError:
        header = "onnxruntime not installed; "
    try:
        path = Path(find_library())
    except FileNotFoundError as e:
        return header + f"EP library: none ({e})"
    header += f"EP library: {path}"
    built = REPO / os.environ.get("CARGO_TARGET_DIR", "target") / "release" / LIBRARY_NAME
    if built.is_file() and path != built.resolve() and built.stat().st_mtime > path.stat().st_mtime:
        header += f"\nwarning: {built} is newer than the installed one; `bash ci/wheel.sh .venv` reinstalls it"
    return header


def find_library() -> str:
    """ONNXRUNTIME_EP_WGPU_LIB, else the installed locator package's library, else cargo's release output."""
    override = os.environ.get(LIBRARY_ENV)
    if override:
        if not Path(override).is_file():
            raise FileNotFoundError(f"{LIBRARY_ENV}={override} does not exist")
        return str(Path(override).resolve())
    try:
        import onnxruntime_ep_wgpu

        return onnxruntime_ep_wgpu.get_library_path()
    except (ImportError, FileNotFoundError):
        pass
    fallback = REPO / os.environ.get("CARGO_TARGET_DIR", "target") / "release" / LIBRARY_NAME
    if fallback.is_file():
        return str(fallback)
    raise FileNotFoundError(
        f"{LIBRARY_NAME} not found: install the locator package (`pip install ./python`) or build "
        f"`cargo build --release -p onnxruntime-ep-wgpu` (looked for {fallback})"
    )


def model_arg(model):
    """InferenceSession accepts a path or serialized bytes; also take an onnx.ModelProto or a pathlib.Path."""
    if hasattr(model, "SerializeToString"):
        return model.SerializeToString()
    if isinstance(model, Path):
        return str(model)
    return model


def run_in_threads(worker, count: int, timeout: float = 600):
    """Runs worker(i) for i in range(count), each on its own thread at once; fails on a hung thread or with the first
    errors, each as 'thread i: ...'."""
    import threading

    errors = []

    def guarded(i):
        try:
            worker(i)
        except Exception as e:  # noqa: BLE001
            errors.append(f"thread {i}: {e!r}")

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=timeout)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not errors, errors[:3]


def run_cpu_reference(model, feeds: dict) -> list:
    """Outputs of `model` on the CPU EP alone (the reference the EP is compared against)."""
    import onnxruntime as ort

    sess = ort.InferenceSession(model_arg(model), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


@pytest.fixture(scope="session")
def lib_path() -> str:
    try:
        return find_library()
    except FileNotFoundError as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture(scope="session")
def registered_ep(lib_path):
    """Registers the library once as `wgpu_test`; yields the registration name."""
    import onnxruntime as ort

    try:
        ort.register_execution_provider_library(REGISTRATION_NAME, lib_path)
    except Exception as e:  # noqa: BLE001 - any failure here must fail every EP test with the message
        pytest.fail(
            f"onnxruntime {ort.__version__} could not register {lib_path} as {REGISTRATION_NAME!r}: {e}",
            pytrace=False,
        )
    yield REGISTRATION_NAME
    _release_sessions()
    ort.unregister_execution_provider_library(REGISTRATION_NAME)


def _release_sessions():
    # A failed test's traceback (kept for post-mortem debugging) can hold its session alive.
    for name in ("last_type", "last_value", "last_traceback", "last_exc"):
        if hasattr(sys, name):
            delattr(sys, name)
    gc.collect()
    for sess in list(_sessions):
        if hasattr(sess, "_sess"):
            sess._sess = None  # drops the native session even if Python still references the wrapper
    gc.collect()


@pytest.fixture(scope="session")
def ep_devices(registered_ep) -> list:
    """The OrtEpDevices our EP offers (all of them belong to our factory)."""
    import onnxruntime as ort

    devices = [d for d in ort.get_ep_devices() if d.ep_name == EP_NAME]
    if not devices:
        offered = sorted({d.ep_name for d in ort.get_ep_devices()})
        pytest.fail(
            f"{EP_NAME} is registered but offers no device (EP devices: {offered}); is a Vulkan driver "
            "installed (Debian: mesa-vulkan-drivers, libvulkan1)?",
            pytrace=False,
        )
    return devices


def ep_options(options: dict | None) -> dict:
    """EP options as strings. The tests check the plans a session keeps, so interim plans without tensor cores
    (taken while a cold driver compiles: on a GPU a first run would test those instead) are off unless asked for;
    tests/test_interim_kernels.py checks them."""
    return {k: str(v) for k, v in {"interim_kernels": "0", **(options or {})}.items()}


@pytest.fixture(scope="session")
def make_session(ep_devices):
    """make_session(model, options=None, fallback=False, config=None, disabled_optimizers=None) -> InferenceSession
    on our EP.

    `options` are EP options (reaching the EP as `ep.wgpuexecutionprovider.<key>`); `config` extra session config
    entries; `disabled_optimizers` ORT graph transformers to leave out (they act on the nodes the CPU EP runs).
    Unless `fallback=True`, nodes that our EP declines make session creation fail instead of running on the CPU EP.
    Python's silent retry on CPU is always off (`enable_fallback=0`).
    """
    import onnxruntime as ort

    def make(
        model,
        options: dict | None = None,
        fallback: bool = False,
        config: dict | None = None,
        disabled_optimizers: list[str] | None = None,
    ):
        so = ort.SessionOptions()
        so.add_provider_for_devices(ep_devices, ep_options(options))
        if not fallback:
            so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        for key, value in (config or {}).items():
            so.add_session_config_entry(key, str(value))
        extra = {"disabled_optimizers": disabled_optimizers} if disabled_optimizers else {}
        sess = ort.InferenceSession(model_arg(model), sess_options=so, enable_fallback=0, **extra)
        _sessions.add(sess)
        return sess

    return make


@pytest.fixture(scope="session")
def run_cpu():
    """run_cpu(model, feeds) -> list of outputs from the CPU EP."""
    return run_cpu_reference


@pytest.fixture(scope="session")
def run_profiled(ep_devices, tmp_path_factory):
    """run_profiled(model, feeds, fallback=False, options=None) -> (outputs, nodes): one run on our EP with ONNX
    Runtime's profiler on; `nodes` lists (provider, node name) of every node of the model that ran, in order (not
    the MemcpyToHost/MemcpyFromHost copies ORT adds at device boundaries). A partition of ours is one fused node, so `sum(p == EP_NAME for p, _ in nodes)` counts partitions."""
    import json

    import onnxruntime as ort

    folder = tmp_path_factory.mktemp("profiles")

    def run(model, feeds, fallback=False, options=None):
        so = ort.SessionOptions()
        so.add_provider_for_devices(ep_devices, ep_options(options))
        if not fallback:
            so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        so.enable_profiling = True
        so.profile_file_prefix = str(folder / "run")
        sess = ort.InferenceSession(model_arg(model), sess_options=so, enable_fallback=0)
        _sessions.add(sess)
        try:
            outputs = sess.run(None, feeds)
        finally:
            path = sess.end_profiling()
        with open(path) as f:
            events = json.load(f)
        os.remove(path)
        nodes = [
            (e["args"]["provider"], e["args"].get("op_name", e["name"]))
            for e in events
            if e.get("cat") == "Node" and "provider" in e.get("args", {}) and e["name"].endswith("_kernel_time")
        ]
        # The copies ORT inserts where a CPU node meets our device memory are not nodes of the model.
        nodes = [(p, n) for p, n in nodes if n not in ("MemcpyToHost", "MemcpyFromHost")]
        return outputs, nodes

    return run
