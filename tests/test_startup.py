"""Start-up: the persistent pipeline cache (option `pipeline_cache`) never changes results and never breaks a
session, and the library reports its start-up phases (`onnxruntime_ep_wgpu_startup_stats`).

Each case runs in fresh processes (`subproc.run_script`): a cache is read when a process opens its device. The
model is a small transformer-like graph (attention + MLP, sequence 61) so several pipelines are compiled.

On an adapter without `Features::PIPELINE_CACHE` (wgpu offers it on Vulkan only) the cache is a no-op: the cases
that need a cache file are skipped there, the others still check that every session works. The Rust unit tests
(`kernels/src/runtime/pipeline_cache_tests.rs`) cover the file logic itself: every truncation and flipped byte,
foreign keys, concurrent writers, the size bound.
"""

from __future__ import annotations

import importlib.util
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from subproc import PRELUDE, TESTS, describe, run_script

REPO = Path(__file__).resolve().parents[1]
MAGIC = b"EPWGPUPC"

SCRIPT = """
import json
ort.set_default_logger_severity(1)
sys.path.insert(0, {python!r})
import onnxruntime_ep_wgpu as locator
so = ort.SessionOptions()
so.add_provider_for_devices(DEVS, {{}} if {setting!r} is None else {{"pipeline_cache": {setting!r}}})
so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
sess = ort.InferenceSession({model!r}, sess_options=so)
x = np.random.default_rng(7).standard_normal((1, 61, 64)).astype(np.float32)
first = sess.run(None, {{"x": x}})[0]
second = sess.run(None, {{"x": x}})[0]
assert np.array_equal(first, second)
want = ort.InferenceSession({model!r}, providers=["CPUExecutionProvider"]).run(None, {{"x": x}})[0]
err = float(np.max(np.abs(first - want)) / np.max(np.abs(want)))
assert err < 1e-3, err
np.save({out!r}, first)
stats = locator.startup_stats(LIB)
print("STATS " + json.dumps(stats), flush=True)
"""


def fnv1a(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def parse_cache(raw: bytes) -> tuple[str, bytes]:
    """(key, blob) of a cache file (the layout of kernels/src/runtime/pipeline_cache.rs); asserts it is whole."""
    assert raw[:8] == MAGIC, raw[:16]
    fmt, key_len = struct.unpack_from("<II", raw, 8)
    assert fmt == 1
    key = raw[16:16 + key_len].decode()
    length, checksum = struct.unpack_from("<QQ", raw, 16 + key_len)
    blob = raw[32 + key_len:]
    assert len(blob) == length and fnv1a(blob) == checksum
    return key, blob


@pytest.fixture(scope="module")
def model_path(tmp_path_factory) -> str:
    spec = importlib.util.spec_from_file_location("bench_startup", REPO / "bench" / "startup.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    path = str(tmp_path_factory.mktemp("startup") / "transformer_like.onnx")
    bench.transformer_like(path, "fp32")
    return path


@pytest.fixture(scope="module")
def cache_supported(lib_path, model_path, tmp_path_factory) -> bool:
    """Whether this adapter writes a cache file (a first cold process)."""
    d = tmp_path_factory.mktemp("probe") / "cache"
    r = run(lib_path, model_path, str(d), str(d.parent / "out.npy"))
    assert r.returncode == 0, describe(r)
    return any(d.glob("pipelines-*.bin"))


def run(lib_path: str, model: str, setting: str | None, out: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """A process running the model with the option pipeline_cache=setting (None: the option not given)."""
    code = SCRIPT.format(python=str(REPO / "python"), setting=setting, model=model, out=out)
    return run_script(lib_path, code, env=env)


def cache_lines(r: subprocess.CompletedProcess, needle: str) -> list[str]:
    return [ln for ln in (r.stdout + r.stderr).splitlines() if "pipeline cache" in ln and needle in ln]


def stats(r: subprocess.CompletedProcess) -> dict:
    import json

    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("STATS "))
    return json.loads(line[len("STATS "):])


def the_file(cache_dir: Path) -> Path:
    files = list(cache_dir.glob("pipelines-*.bin"))
    assert len(files) == 1, files
    return files[0]


def test_phases_are_reported(lib_path, model_path, tmp_path):
    r = run(lib_path, model_path, "off", str(tmp_path / "o.npy"))
    assert r.returncode == 0, describe(r)
    s = stats(r)
    for phase in ("enumerate", "device", "placement", "program", "upload", "module", "pipeline", "prepare",
                  "first_run"):
        assert s[phase]["count"] >= 1, (phase, s)
    # The two runs' feed and fetch copies go through our data transfer, and are timed.
    for phase in ("copy_in", "copy_out_wait", "copy_out"):
        assert s[phase]["count"] >= 2 and s[phase]["ms"] > 0, (phase, s)
    assert s["cache_load"]["count"] == 0 and s["cache_save"]["count"] == 0, "pipeline_cache=off reads and writes nothing"
    # The driver calls inside the set's preparation are timed too, and take part of it.
    for phase in ("buffers", "bind_groups"):
        assert s[phase]["count"] >= 2 and 0 < s[phase]["ms"], (phase, s)
    assert s["bind_groups"]["ms"] <= s["prepare"]["ms"], s
    # Each Compute call holds one run, whose setup and submissions are parts of it.
    runs = s["run"]["count"]
    assert runs >= 2 and s["compute"]["count"] == runs and s["run_setup"]["count"] == runs, s
    assert s["run_submit"]["count"] >= runs, s
    assert s["run_setup"]["ms"] + s["run_record"]["ms"] <= s["run"]["ms"] <= s["compute"]["ms"], s


def test_off_by_default_and_on_uses_the_xdg_cache_dir(lib_path, model_path, tmp_path, cache_supported):
    xdg = tmp_path / "xdg"
    r = run(lib_path, model_path, None, str(tmp_path / "default.npy"), env={"XDG_CACHE_HOME": str(xdg)})
    assert r.returncode == 0, describe(r)
    assert not (xdg / "onnxruntime-ep-wgpu").exists(), "the cache is off unless asked for"  # (Mesa's is there)
    assert stats(r)["cache_save"]["count"] == 0
    r = run(lib_path, model_path, "on", str(tmp_path / "on.npy"), env={"XDG_CACHE_HOME": str(xdg)})
    assert r.returncode == 0, describe(r)
    if cache_supported:
        parse_cache(the_file(xdg / "onnxruntime-ep-wgpu").read_bytes())
    assert np.array_equal(np.load(tmp_path / "default.npy"), np.load(tmp_path / "on.npy"))


def test_outputs_identical_cold_warm_and_off(lib_path, model_path, tmp_path, cache_supported):
    cache = tmp_path / "cache"
    outs = {}
    for name, setting in (("cold", str(cache)), ("warm", str(cache)), ("off", "off")):
        r = run(lib_path, model_path, setting, str(tmp_path / f"{name}.npy"))
        assert r.returncode == 0, describe(r)
        assert not cache_lines(r, "ignored"), describe(r)
        outs[name] = np.load(tmp_path / f"{name}.npy")
        if name == "warm" and cache_supported:
            assert stats(r)["cache_load"]["count"] > 0, "the warm process read the cache"
    assert np.array_equal(outs["cold"], outs["warm"])
    assert np.array_equal(outs["cold"], outs["off"])
    if cache_supported:
        parse_cache(the_file(cache).read_bytes())


@pytest.mark.parametrize("damage", ["garbage", "truncated", "foreign"])
def test_bad_cache_file_warns_once_and_is_rewritten(lib_path, model_path, tmp_path, cache_supported, damage):
    if not cache_supported:
        pytest.skip("this adapter has no pipeline cache (Features::PIPELINE_CACHE): no file to damage")
    cache = tmp_path / "cache"
    r = run(lib_path, model_path, str(cache), str(tmp_path / "a.npy"))
    assert r.returncode == 0, describe(r)
    path = the_file(cache)
    good = path.read_bytes()
    key, _ = parse_cache(good)
    if damage == "garbage":
        path.write_bytes(b"\x00not a cache" * 100)
    elif damage == "truncated":
        path.write_bytes(good[: len(good) - 7])
    else:  # the same adapter with another driver version: same length key, other text
        foreign = key.replace(key[-1], "X" if key[-1] != "X" else "Y")
        path.write_bytes(good.replace(key.encode(), foreign.encode(), 1))
    r = run(lib_path, model_path, str(cache), str(tmp_path / "b.npy"))
    assert r.returncode == 0, describe(r)
    warnings = cache_lines(r, "ignored")
    assert len(warnings) == 1, describe(r)
    if damage == "foreign":
        assert "another adapter, driver or build" in warnings[0]
    assert np.array_equal(np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy"))
    rewritten_key, _ = parse_cache(path.read_bytes())
    assert rewritten_key == key
    r = run(lib_path, model_path, str(cache), str(tmp_path / "c.npy"))
    assert r.returncode == 0 and not cache_lines(r, "ignored"), describe(r)


def test_unwritable_directory_disables_the_cache_with_one_info_line(lib_path, model_path, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    # A directory below a regular file cannot be created, even by root.
    r = run(lib_path, model_path, str(blocker / "cache"), str(tmp_path / "o.npy"))
    assert r.returncode == 0, describe(r)
    lines = cache_lines(r, "off: cannot write")
    assert len(lines) == 1, describe(r)
    assert stats(r)["cache_save"]["count"] == 0


def test_read_only_directory(lib_path, model_path, tmp_path, cache_supported):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("running as root: permission bits do not stop writes (the unwritable-directory case covers "
                        "the same path)")
        r = run(lib_path, model_path, str(ro), str(tmp_path / "o.npy"))
        assert r.returncode == 0, describe(r)
        if cache_supported:
            assert len(cache_lines(r, "off: cannot write")) == 1, describe(r)
        assert not list(ro.iterdir())
    finally:
        ro.chmod(0o755)


def test_two_processes_writing_at_once(lib_path, model_path, tmp_path, cache_supported):
    cache = tmp_path / "cache"
    env = dict(os.environ)
    procs = []
    for i in range(2):
        code = SCRIPT.format(python=str(REPO / "python"), setting=str(cache), model=model_path,
                             out=str(tmp_path / f"p{i}.npy"))
        script = PRELUDE.format(tests=TESTS, lib=lib_path) + code
        procs.append(subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, env=env))
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, f"exit {p.returncode}\n{out[-3000:]}\n{err[-5000:]}"
    assert np.array_equal(np.load(tmp_path / "p0.npy"), np.load(tmp_path / "p1.npy"))
    if cache_supported:
        parse_cache(the_file(cache).read_bytes())
        assert not [f for f in cache.iterdir() if f.name.endswith(".tmp")], list(cache.iterdir())
    r = run(lib_path, model_path, str(cache), str(tmp_path / "after.npy"))
    assert r.returncode == 0 and not cache_lines(r, "ignored"), describe(r)
    assert np.array_equal(np.load(tmp_path / "p0.npy"), np.load(tmp_path / "after.npy"))


def test_bad_option_value_fails_session_creation(lib_path, model_path):
    code = f"""
so = ort.SessionOptions()
so.add_provider_for_devices(DEVS, {{"pipeline_cache": " "}})
expect_error(lambda: ort.InferenceSession({model_path!r}, sess_options=so, enable_fallback=0), "pipeline_cache")
print("OK")
"""
    r = run_script(lib_path, code)
    assert r.returncode == 0 and "OK" in r.stdout, describe(r)



def test_the_device_opens_while_ort_prepares_the_session(lib_path, model_path):
    """CreateEp plans with the capabilities the device will have and opens it on a worker thread (provider/src/
    opening.rs): ORT's graph work and our GetCapability go on meanwhile, and Compile waits for the device. Opening
    is made 1.5 s slow here (test-only `ONNXRUNTIME_EP_WGPU_TEST_SLOW_OPEN`): GetCapability (its info line, stamped
    by ORT's logger in UTC) still runs well before the session is ready, the wait is recorded as `device_wait`, and
    the results are those of the CPU EP."""
    delay_ms = 1500
    code = SCRIPT.format(python=str(REPO / "python"), setting=None, model=model_path, out=os.devnull) + """
print("CREATED_AT", CREATED_AT, flush=True)
"""
    code = code.replace("sess = ort.InferenceSession(", "import datetime\nsess = ort.InferenceSession(", 1)
    code = code.replace("x = np.random.default_rng(7)", "CREATED_AT = datetime.datetime.now(datetime.timezone.utc)"
                        ".timestamp()\nx = np.random.default_rng(7)", 1)
    r = run_script(lib_path, code, env={"ONNXRUNTIME_EP_WGPU_TEST_SLOW_OPEN": str(delay_ms)})
    assert r.returncode == 0, describe(r)
    s = stats(r)
    assert s["device_wait"]["count"] == 1 and s["device_wait"]["ms"] >= delay_ms * 0.5, s["device_wait"]
    created = float(next(ln.split()[1] for ln in r.stdout.splitlines() if ln.startswith("CREATED_AT ")))
    stamp = next(ln[:26] for ln in r.stderr.splitlines() if "GetCapability: claimed" in ln)
    import datetime

    claimed = datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc)
    assert created - claimed.timestamp() >= delay_ms * 0.5 / 1e3, (stamp, created, describe(r))


def test_unregistering_right_after_session_creation(lib_path, model_path):
    """Compile starts the pipeline compiles on worker threads; releasing the session and unregistering the library
    at once must neither hang (ReleaseEpFactory joins the workers) nor crash. On this machine glibc keeps the library
    mapped while a worker's thread-local destructors are pending, so the unload race itself is not reproduced here;
    what this checks is that the join finishes and the library loads again."""
    code = f"""
import gc
for _ in range(3):
    ort.register_execution_provider_library("wgpu_again", LIB) if _ else None
    devs = [d for d in ort.get_ep_devices() if d.ep_name == "WgpuExecutionProvider"]
    so = ort.SessionOptions()
    so.add_provider_for_devices(devs[:1], {{}})
    sess = ort.InferenceSession({model_path!r}, sess_options=so)
    del sess, so, devs
    gc.collect()
    ort.unregister_execution_provider_library("wgpu_again" if _ else "wgpu_sub")
time.sleep(1.0)
print("OK")
"""
    r = run_script(lib_path, code)
    assert r.returncode == 0 and "OK" in r.stdout, describe(r)


def test_a_process_that_exits_while_pipelines_compile_waits_for_them(lib_path):
    """A session starts compiling its pipelines when it is created; a process that exits before its first run must
    not tear the driver down under a compile worker (an H100 crashed at exit so). The exit waits for the compiles:
    here one made 1.5 s slow (test-only `ONNXRUNTIME_EP_WGPU_TEST_SLOW_COMPILE`) still reports its end."""
    code = """
from onnx import helper, numpy_helper, TensorProto as T
w = np.random.default_rng(0).standard_normal((130, 91)).astype(np.float32)
g = helper.make_graph([helper.make_node("MatMul", ["a", "w"], ["y"])], "g",
                      [helper.make_tensor_value_info("a", T.FLOAT, [67, 130])],
                      [helper.make_tensor_value_info("y", T.FLOAT, [67, 91])], [numpy_helper.from_array(w, "w")])
sess = session(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9))
print("CREATED", flush=True)
"""
    r = run_script(lib_path, code, env={"ONNXRUNTIME_EP_WGPU_TEST_SLOW_COMPILE": "gemm:1500",
                                        "ONNXRUNTIME_EP_WGPU_LOG_COMPILES": "1"}, timeout=120)
    assert r.returncode == 0 and "CREATED" in r.stdout, describe(r)
    started = [ln for ln in r.stderr.splitlines() if ln.startswith("ep-wgpu compiling gemm")]
    ended = [ln for ln in r.stderr.splitlines() if ln.startswith("ep-wgpu compile gemm")]
    assert started and len(ended) == len(started), describe(r)
