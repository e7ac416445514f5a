"""The execution providers compared, all in this one process: ONNX Runtime's CPU EP, the peer (the ONNX Runtime
WebGPU plugin EP, package `onnxruntime-ep-webgpu`) and ours (`WgpuExecutionProvider`).

A provider that cannot be used (package missing, library fails to register, no device) is still returned, with
`available=False` and the reason, so the table can say so instead of the run failing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import onnxruntime as ort

REPO = Path(__file__).resolve().parents[1]
OUR_EP = "WgpuExecutionProvider"
OUR_LIB = "libonnxruntime_ep_wgpu.so"
LIB_ENV = "ONNXRUNTIME_EP_WGPU_LIB"
PROFILE_ENV = "ONNXRUNTIME_EP_WGPU_PROFILE"  # our library appends per-step GPU times to this file (run.py --profile)
DISPATCHES_ENV = "ONNXRUNTIME_EP_WGPU_PROFILE_DISPATCHES"  # with PROFILE_ENV: every dispatch timed on its own
PEER_PACKAGE = "onnxruntime_ep_webgpu"
PEER_PIP = "onnxruntime-ep-webgpu==0.4.0"


@dataclass
class Provider:
    key: str                       # "cpu" | "peer" | "ours": used in the JSON
    label: str                     # shown in tables and plots
    ep_name: str
    available: bool = True
    reason: str = ""               # why not available
    devices: list = field(default_factory=list, repr=False)
    options: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)  # library, version, adapter, driver ...
    registration: str | None = None

    def session_options(self, strict: bool, profile_prefix: str | None = None) -> ort.SessionOptions:
        """strict: nodes the provider declines fail session creation instead of running on the CPU EP."""
        so = ort.SessionOptions()
        so.log_severity_level = 4 if strict else 3  # a strict attempt's failure is reported, not logged
        if profile_prefix:
            so.enable_profiling = True
            so.profile_file_prefix = profile_prefix
        if self.key != "cpu":
            so.add_provider_for_devices(self.devices, {k: str(v) for k, v in self.options.items()})
            if strict:
                so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        return so

    def session(self, model, strict: bool, profile_prefix: str | None = None) -> ort.InferenceSession:
        so = self.session_options(strict, profile_prefix)
        if self.key == "cpu":
            return ort.InferenceSession(model, sess_options=so, providers=["CPUExecutionProvider"])
        return ort.InferenceSession(model, sess_options=so, enable_fallback=0)


# ------------------------------------------------------------------------------------------------ our library


def build_library() -> None:
    cmd = ["cargo", "build", "--release", "-p", "onnxruntime-ep-wgpu"]
    subprocess.run(cmd, cwd=REPO, check=True)


def find_library(explicit: str | None, build: bool) -> tuple[str, str]:
    """(path, where from): --lib, $ONNXRUNTIME_EP_WGPU_LIB, else the newer of target/release and the installed
    locator package's library; builds with cargo when asked to or when none is found and cargo exists."""
    for value, origin in ((explicit, "--lib"), (os.environ.get(LIB_ENV), LIB_ENV)):
        if value:
            if not Path(value).is_file():
                raise FileNotFoundError(f"{value} ({origin}) does not exist")
            return str(Path(value).resolve()), origin
    built = REPO / "target" / "release" / OUR_LIB
    if build or (not built.is_file() and shutil.which("cargo") and (REPO / "Cargo.toml").is_file()):
        build_library()
    candidates = []
    if built.is_file():
        candidates.append((built.stat().st_mtime, str(built), "target/release"))
    try:
        import onnxruntime_ep_wgpu

        pkg = Path(onnxruntime_ep_wgpu.get_library_path())
        candidates.append((pkg.stat().st_mtime, str(pkg), "onnxruntime_ep_wgpu package"))
    except (ImportError, FileNotFoundError):
        pass
    if not candidates:
        raise FileNotFoundError(f"{OUR_LIB} not found: build it (`cargo build --release -p onnxruntime-ep-wgpu`), "
                                "install the onnxruntime_ep_wgpu package, or pass --lib")
    _, path, origin = max(candidates)
    return path, origin


# ------------------------------------------------------------------------------------------------ registration


def _register(name: str, lib: str, ep_name: str) -> list:
    ort.register_execution_provider_library(name, lib)
    return [d for d in ort.get_ep_devices() if d.ep_name == ep_name]


def first_hardware_device(devices: list) -> list:
    """The first of our EP's devices on a hardware adapter (else the first of all), as a one-element list."""
    hardware = [d for d in devices if dict(d.ep_metadata).get("wgpu.software") == "0"]
    return [(hardware or devices)[0]]


def register_ours(lib: str, name: str = "bench_wgpu") -> list:
    """Registers our library and returns `first_hardware_device` of its devices."""
    return first_hardware_device(_register(name, str(Path(lib).resolve()), OUR_EP))


def _device_info(dev) -> dict:
    hw = dev.device
    info = {"ep_vendor": dev.ep_vendor, "hardware_type": hw.type.name, "hardware_vendor": hw.vendor,
            "vendor_id": f"0x{hw.vendor_id:04x}", "device_id": f"0x{hw.device_id:04x}"}
    info.update({f"ep.{k}": v for k, v in dict(dev.ep_metadata).items()})
    info.update({f"hw.{k}": v for k, v in dict(hw.metadata).items()})
    return info


def cpu_provider() -> Provider:
    return Provider("cpu", "CPU EP", "CPUExecutionProvider", info={"threads": os.cpu_count()})


def our_provider(lib: str | None, origin: str, options: dict, error: str | None = None) -> Provider:
    # Steady-state benchmarks: a cold process's first runs would otherwise take interim plans without tensor cores
    # while the pipelines compile (on by default; `bench/startup.py` measures that), so a short timing loop would
    # mix them in. Without them the first (warm-up) run waits for the compiles. An explicit option wins.
    p = Provider("ours", "wgpu EP (ours)", OUR_EP, options={"interim_kernels": 0, **options})
    if error:
        p.available, p.reason = False, error
        return p
    p.info = {"library": lib, "library_from": origin}
    try:
        devices = _register("bench_wgpu", lib, OUR_EP)
        p.registration = "bench_wgpu"
    except Exception as e:  # noqa: BLE001 - ORT raises several types here
        p.available, p.reason = False, f"registration failed: {e}"
        return p
    if not devices:
        p.available, p.reason = False, "registered, but no device (no Vulkan adapter?)"
        return p
    # One adapter: the first hardware one unless an `adapter` option picks another.
    p.devices = first_hardware_device(devices)
    p.info.update(_device_info(p.devices[0]))
    meta = dict(p.devices[0].ep_metadata)
    p.info["adapter"] = meta.get("wgpu.adapter", "?")
    p.info["driver"] = meta.get("wgpu.driver", "?")
    p.info["software"] = meta.get("wgpu.software") == "1"
    p.info["version"] = meta.get("version", "?")
    return p


def peer_provider(enabled: bool, options: dict | None = None) -> Provider:
    p = Provider("peer", "WebGPU EP (peer)", "WebGpuExecutionProvider", options=dict(options or {}))
    if not enabled:
        p.available, p.reason = False, "disabled (--no-peer)"
        return p
    try:
        import onnxruntime_ep_webgpu as peer
    except ImportError:
        p.available, p.reason = False, f"not installed (pip install {PEER_PIP})"
        return p
    p.ep_name = peer.get_ep_name()
    try:
        from importlib.metadata import version

        p.info["version"] = version("onnxruntime-ep-webgpu")
    except Exception:  # noqa: BLE001
        p.info["version"] = "?"
    try:
        lib = peer.get_library_path()
        p.info["library"] = lib
        devices = _register("bench_webgpu", lib, p.ep_name)
        p.registration = "bench_webgpu"
    except Exception as e:  # noqa: BLE001
        p.available, p.reason = False, f"registration failed: {e}"
        return p
    if not devices:
        p.available, p.reason = False, "registered, but it offers no device (no adapter it accepts)"
        return p
    p.devices = devices[:1]  # "the WebGPU EP currently accepts one EP device" (its README)
    p.info.update(_device_info(p.devices[0]))
    return p


def unregister(providers: list[Provider]) -> None:
    """Call only after every session is released (ONNX Runtime does not refcount plugin libraries)."""
    for p in providers:
        if p.registration:
            try:
                ort.unregister_execution_provider_library(p.registration)
            except Exception:  # noqa: BLE001
                pass
            p.registration = None


# ------------------------------------------------------------------------------------------------ placement


def profile_placement(profile_path: str, ep_name: str) -> dict:
    """Nodes of the last profiled run by provider, from ORT's profile JSON (`cat == "Node"` events)."""
    with open(profile_path) as f:
        events = json.load(f)
    nodes: dict[str, tuple[str, str, float]] = {}
    for ev in events:
        args = ev.get("args") or {}
        if ev.get("cat") != "Node" or "provider" not in args or not ev.get("name", "").endswith("_kernel_time"):
            continue
        nodes[ev["name"].removesuffix("_kernel_time")] = (args.get("op_name", "?"), args["provider"], ev.get("dur", 0))
    total_us = sum(d for _, _, d in nodes.values())
    ours = {n: v for n, v in nodes.items() if v[1] == ep_name}
    ours_us = sum(d for _, _, d in ours.values())
    elsewhere = sorted({f"{op}@{prov}" for op, prov, _ in nodes.values() if prov != ep_name})
    return {
        "nodes": len(nodes),
        "nodes_on_provider": len(ours),
        "node_fraction": len(ours) / len(nodes) if nodes else 0.0,
        "time_fraction": ours_us / total_us if total_us else (1.0 if ours else 0.0),
        "elsewhere": elsewhere,
        "per_node": {n: {"op": op, "provider": prov, "us": d} for n, (op, prov, d) in nodes.items()},
    }


# ------------------------------------------------------------------------------------------------ environment


def environment() -> dict:
    import platform

    import numpy as np

    env = {"onnxruntime": ort.__version__, "numpy": np.__version__, "python": platform.python_version(),
           "machine": platform.machine(), "cpu_count": os.cpu_count(), "host": platform.node()}
    try:
        with open("/proc/cpuinfo") as f:
            env["cpu"] = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "?")
    except OSError:
        pass
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=20).stdout.strip()
            env["nvidia_smi"] = out
        except (OSError, subprocess.SubprocessError):
            pass
    return env


# ------------------------------------------------------------------------------------------------ timing helpers


def median_run_ms(sess, feeds, runs: int, outputs: list[str] | None = None):
    """The first output of a warm-up run and the median wall-clock ms of `runs` more `session.run` calls (fetching
    `outputs`, default all)."""
    out = sess.run(outputs, feeds)[0]
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        sess.run(outputs, feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return out, times[len(times) // 2]


def profiled_steps(sess, feeds, runs: int = 1) -> list[dict]:
    """Our EP's step records of `runs` runs of a session (one JSON object per step and run, with `ops`, `gpu_ms`,
    `dispatches`, `partition`): $ONNXRUNTIME_EP_WGPU_PROFILE is read at each run, so it is set around them only."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "profile.jsonl")
        os.environ[PROFILE_ENV] = path
        try:
            for _ in range(runs):
                sess.run(None, feeds)
        finally:
            os.environ.pop(PROFILE_ENV, None)
        return [json.loads(x) for x in Path(path).read_text().splitlines()] if os.path.exists(path) else []
