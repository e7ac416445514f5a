"""Soak: many session create → run → destroy cycles, and register/unregister cycles, in a fresh process, with the
process's resident memory and the GPU memory the EP holds (wgpu's allocator report, logged at verbose level when a
session is released) flat within a stated bound.

ONNXRUNTIME_EP_WGPU_SOAK_CYCLES / ONNXRUNTIME_EP_WGPU_SOAK_REGISTRATIONS override the cycle counts (CI: 500 / 100)."""

from __future__ import annotations

import json
import os
import re
import sys

import pytest

from subproc import describe, run_script

CYCLES = int(os.environ.get("ONNXRUNTIME_EP_WGPU_SOAK_CYCLES", "500"))
REGISTRATIONS = int(os.environ.get("ONNXRUNTIME_EP_WGPU_SOAK_REGISTRATIONS", "100"))
# Growth allowed after warm-up, for the whole run. A leak of one small session's buffers (~10 KB) per cycle would
# be 5 MB over 500 cycles; ORT's and the driver's allocators make RSS noisy by a few MB, so the bound is 16 MiB.
RSS_BOUND = 16 << 20
GPU_BOUND = 0  # every session's buffers are freed: the report must return to the warm-up value exactly

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")

COMMON = """
import gc, json, re
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


W = np.random.default_rng(0).uniform(-1, 1, (64, 48)).astype(np.float32)
MODELS = [
    models.matmul(None, None, b_value=W, dims=(["b", "s", 64], None)),
    models.mlp(["b", "s"], [64, 96, 32], activation="Relu"),
]


def cycle(i, devs=None, report=False):
    model = MODELS[i % len(MODELS)]
    sess = session(model, devs=devs)
    x = np.random.default_rng(i).uniform(-1, 1, (2, 1 + i % 5, 64)).astype(np.float32)
    got = sess.run(None, {sess.get_inputs()[0].name: x})[0]
    want = cpu_session(model).run(None, {sess.get_inputs()[0].name: x})[0]
    assert np.allclose(got, want, rtol=1e-4, atol=1e-4), i
    if report:
        # The EP logs the GPU memory it holds when a session is released (verbose level).
        ort.set_default_logger_severity(0)
        print(f"@@release {i}", file=sys.stderr, flush=True)
    del sess
    gc.collect()
    if report:
        ort.set_default_logger_severity(3)
        print(f"@@done {i}", file=sys.stderr, flush=True)
"""

# GPU memory held after the release that follows marker `@@release i`.
GPU_LINE = re.compile(r"@@release (\d+)\n(?:.*\n)*?.*GPU memory held: (\d+) bytes", re.MULTILINE)


def gpu_reports(stderr):
    return {int(i): int(b) for i, b in GPU_LINE.findall(stderr)}


def test_session_cycles_keep_memory_flat(lib_path):
    warm = min(20, CYCLES // 2)
    checkpoints = sorted({warm, CYCLES // 2, CYCLES - 1})
    r = run_script(
        lib_path,
        COMMON
        + f"""
ort.set_default_logger_severity(3)
t0, rss_at = time.time(), {{}}
for i in range({CYCLES}):
    cycle(i, report=i in {checkpoints})
    if i in {checkpoints}:
        rss_at[i] = rss()
print(json.dumps({{"seconds": time.time() - t0, "rss": rss_at}}))
""",
    )
    assert r.returncode == 0, describe(r)
    stats = json.loads(r.stdout.strip().splitlines()[-1])
    rss = {int(k): v for k, v in stats["rss"].items()}
    gpu = gpu_reports(r.stderr)
    warm_at, last = min(rss), max(rss)
    print(
        f"soak: {CYCLES} session cycles in {stats['seconds']:.1f}s; RSS {rss[warm_at] >> 20} MiB at cycle {warm_at}, "
        f"{rss[last] >> 20} MiB at {last} (bound +{RSS_BOUND >> 20} MiB); GPU memory held {gpu}"
    )
    assert set(gpu) == set(rss), f"no GPU memory report after some releases: {gpu}\n{describe(r)}"
    assert rss[last] - rss[warm_at] <= RSS_BOUND, rss
    assert gpu[last] - gpu[warm_at] <= GPU_BOUND, gpu


def test_register_unregister_cycles_keep_memory_flat(lib_path):
    warm = min(20, REGISTRATIONS // 2)
    r = run_script(
        lib_path,
        COMMON
        + f"""
ort.set_default_logger_severity(3)
del DEVS
ort.unregister_execution_provider_library("wgpu_sub")
t0, rss_at = time.time(), {{}}
for i in range({REGISTRATIONS}):
    ort.register_execution_provider_library("soak", LIB)
    devs = [d for d in ort.get_ep_devices() if d.ep_name == "WgpuExecutionProvider"]
    cycle(i, devs=devs)
    del devs
    ort.unregister_execution_provider_library("soak")
    if i in ({warm}, {REGISTRATIONS - 1}):
        gc.collect()
        rss_at[i] = rss()
print(json.dumps({{"seconds": time.time() - t0, "rss": rss_at}}))
""",
    )
    assert r.returncode == 0, describe(r)
    stats = json.loads(r.stdout.strip().splitlines()[-1])
    rss = {int(k): v for k, v in stats["rss"].items()}
    first, last = min(rss), max(rss)
    print(
        f"soak: {REGISTRATIONS} register/unregister cycles in {stats['seconds']:.1f}s; RSS {rss[first] >> 20} MiB at "
        f"cycle {first}, {rss[last] >> 20} MiB at {last} (bound +{RSS_BOUND >> 20} MiB)"
    )
    assert rss[last] - rss[first] <= RSS_BOUND, rss


def test_device_value_cycles_keep_memory_flat(lib_path):
    # Each cycle: device OrtValues made from numpy (sizes cycling through a few shapes), a session run with them
    # bound as input and output, the result checked against the CPU EP, everything released; every 50th cycle a
    # new session. Our allocators' live bytes must return exactly to the warm-up value, no buffer may be created
    # after warm-up (freed buffers are reused), and RSS stays within the bound.
    warm = min(20, CYCLES // 2)
    r = run_script(
        lib_path,
        COMMON
        + f"""
import ctypes
ort.set_default_logger_severity(3)
V = DEVS[0].memory_info(ort.OrtDeviceMemoryType.DEFAULT).device_vendor_id
stats = ctypes.CDLL(LIB).onnxruntime_ep_wgpu_memory_stats
stats.restype = ctypes.c_size_t


def memory():
    out = (ctypes.c_uint64 * 5)()
    stats(out, 5)
    return {{"live": out[0], "created": out[3]}}


model = MODELS[1]
cpu = cpu_session(model)
t0, at = time.time(), {{}}
sess = None
for i in range({CYCLES}):
    if i % 50 == 0:
        del sess
        gc.collect()
        sess = session(model, options={{"offload": "all"}})
    x = np.random.default_rng(i).uniform(-1, 1, (2, 1 + i % 5, 64)).astype(np.float32)
    xv = ort.OrtValue.ortvalue_from_numpy(x, "gpu", 0, V)
    yv = ort.OrtValue.ortvalue_from_shape_and_type([2, 1 + i % 5, 32], np.float32, "gpu", 0, V)
    io = sess.io_binding()
    io.bind_ortvalue_input(sess.get_inputs()[0].name, xv)
    io.bind_ortvalue_output(sess.get_outputs()[0].name, yv)
    sess.run_with_iobinding(io)
    want = cpu.run(None, {{sess.get_inputs()[0].name: x}})[0]
    assert np.allclose(yv.numpy(), want, rtol=1e-4, atol=1e-4), i
    del io, xv, yv
    if i in ({warm}, {CYCLES - 1}):
        gc.collect()
        at[i] = dict(memory(), rss=rss())
del sess
print(json.dumps({{"seconds": time.time() - t0, "at": at}}))
""",
    )
    assert r.returncode == 0, describe(r)
    stats = json.loads(r.stdout.strip().splitlines()[-1])
    at = {int(k): v for k, v in stats["at"].items()}
    first, last = min(at), max(at)
    print(
        f"soak: {CYCLES} device-value cycles in {stats['seconds']:.1f}s; RSS {at[first]['rss'] >> 20} → "
        f"{at[last]['rss'] >> 20} MiB; live device bytes {at[first]['live']} → {at[last]['live']}; buffers created "
        f"{at[first]['created']} → {at[last]['created']}"
    )
    assert at[last]["live"] == at[first]["live"], at
    assert at[last]["created"] == at[first]["created"], at
    assert at[last]["rss"] - at[first]["rss"] <= RSS_BOUND, at
