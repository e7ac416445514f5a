"""Locator for the onnxruntime-ep-wgpu plugin execution provider.

The package only finds the bundled shared library and names the EP; register it with ONNX Runtime (>= 1.24)::

    import onnxruntime as ort
    import onnxruntime_ep_wgpu as wgpu_ep

    ort.register_execution_provider_library("wgpu", wgpu_ep.get_library_path())
    devices = [d for d in ort.get_ep_devices() if d.ep_name == wgpu_ep.get_ep_name()]

Tensors can stay on our device between runs: our device memory is ``ep_device.memory_info(
ort.OrtDeviceMemoryType.DEFAULT)`` (a GPU device with vendor id :data:`VENDOR_ID`), and ``OrtValue`` objects made on it
work with ``io_binding()``::

    x = ort.OrtValue.ortvalue_from_numpy(array, "gpu", 0, wgpu_ep.VENDOR_ID)

:func:`copy_stats` and :func:`memory_stats` report the copies between host and device and the device
allocators' state; :func:`startup_stats` where start-up time went (registration, session creation, first runs).

It deliberately does not import onnxruntime, so any compatible onnxruntime build can be paired with it.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

from ._version import __version__

__all__ = [
    "STARTUP_PHASES",
    "VENDOR_ID",
    "__version__",
    "copy_stats",
    "get_ep_name",
    "get_ep_names",
    "get_library_path",
    "memory_stats",
    "startup_stats",
]

#: The vendor id of our device memory in ONNX Runtime's ``OrtDevice`` ("WGPU" in ASCII; not a PCI vendor id, and
#: not 0, which ONNX Runtime's WebGPU EP uses). Pass it where ONNX Runtime asks for a vendor id, e.g.
#: ``OrtValue.ortvalue_from_numpy(a, "gpu", 0, VENDOR_ID)`` or ``OrtDevice.make("gpu", 0, VENDOR_ID)``.
VENDOR_ID = 0x57475055

_COPY_KEYS = (
    "host_to_device_bytes",
    "host_to_device",
    "device_to_host_bytes",
    "device_to_host",
    "device_to_device_bytes",
    "device_to_device",
)
_MEMORY_KEYS = ("live_bytes", "cached_bytes", "allocations", "buffers_created", "failures")
#: The phases of :func:`startup_stats`, in the library's order.
STARTUP_PHASES = (
    "enumerate",
    "device",
    "placement",
    "program",
    "upload",
    "render",
    "module",
    "pipeline",
    "pipeline_wait",
    "prepare",
    "first_run",
    "cache_load",
    "cache_save",
    "run",
    "run_values",
    "run_record",
    "run_wait",
    "copy_in",
    "copy_out_wait",
    "copy_out",
    "interim",
    "device_wait",
    "buffers",
    "bind_groups",
    "compute",
    "run_setup",
    "run_submit",
)

_EP_NAME = "WgpuExecutionProvider"
_LIBRARY_NAME = "libonnxruntime_ep_wgpu.so"
_PACKAGE_DIR = Path(__file__).resolve().parent


def get_library_path() -> str:
    """Return the absolute path of the bundled `libonnxruntime_ep_wgpu.so`.

    Raises FileNotFoundError when the package was installed without the library (e.g. from a source tree in
    which the Rust library had not been built).
    """
    path = _PACKAGE_DIR / _LIBRARY_NAME
    if not path.is_file():
        raise FileNotFoundError(
            f"{_LIBRARY_NAME} is not bundled in {_PACKAGE_DIR}. Build it and reinstall this package from the "
            "repository root: `cargo build --release -p onnxruntime-ep-wgpu && pip install ./python` "
            "(or point ONNXRUNTIME_EP_WGPU_LIB at a built library while installing)."
        )
    return str(path)


def get_ep_name() -> str:
    """Return the execution provider name that ONNX Runtime reports for this plugin."""
    return _EP_NAME


def get_ep_names() -> list[str]:
    """Return every execution provider name this plugin library provides."""
    return [_EP_NAME]


def _stats(symbol: str, keys: tuple[str, ...], library_path: str | None) -> dict[str, int]:
    # The library ONNX Runtime loaded: dlopen of the same path returns the same handle, so the counters are the
    # ones the registered EP updates.
    lib = ctypes.CDLL(library_path or get_library_path())
    fn = getattr(lib, symbol)
    fn.restype = ctypes.c_size_t
    fn.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    values = (ctypes.c_uint64 * len(keys))()
    fn(values, len(keys))
    return dict(zip(keys, (int(v) for v in values)))


def copy_stats(library_path: str | None = None) -> dict[str, int]:
    """Copies made since the library was loaded: counts and bytes host->device, device->host, device->device.

    Differences around ``session.run``/``run_with_iobinding`` give a run's copies. ``library_path`` must be the
    path the library was registered from (default: the bundled one).
    """
    return _stats("onnxruntime_ep_wgpu_copy_stats", _COPY_KEYS, library_path)


def memory_stats(library_path: str | None = None) -> dict[str, int]:
    """Our device allocators: live and cached bytes, allocations, buffers created, failed allocations."""
    return _stats("onnxruntime_ep_wgpu_memory_stats", _MEMORY_KEYS, library_path)


def startup_stats(library_path: str | None = None) -> dict[str, dict[str, float]]:
    """Where start-up time went since the library was loaded: ``{phase: {"ms": total, "count": n}}``.

    Phases: ``enumerate`` (wgpu instance and adapters, at registration), ``device`` (opening the device),
    ``placement`` (GetCapability), ``program`` (Compile: reading the partitions, building programs), ``upload``
    (weights), ``render`` (WGSL from templates), ``module`` (naga parsing and validating WGSL), ``pipeline`` (SPIR-V
    and the driver's compile), ``pipeline_wait`` (runs waiting for compiles), ``prepare`` (a shape set's plans, buffers and
    bind groups: at Compile when the shapes are static), ``first_run`` (each partition's first run, whole), ``cache_load``/``cache_save`` (the
    persistent pipeline cache; count = bytes). Each run adds to ``run`` (count = runs), split into ``run_values``
    (reading value inputs such as ``total_sequence_length`` on the host), ``run_record`` (recording and submitting
    the dispatches; count = dispatches) and ``run_wait`` (waiting for the GPU: run-time checks and read-backs).
    ONNX Runtime's copies through our data transfer add to ``copy_in`` (host bytes into staging memory),
    ``copy_out_wait`` (waiting for the GPU and the mapping) and ``copy_out`` (mapped bytes into host memory); count =
    copies. ``interim`` counts the steps runs took on interim plans without tensor cores while their own pipelines
    were still compiling (option ``interim_kernels``); ``device_wait`` is what of opening the device the session
    waited for. ``buffers`` (count = storage buffers) and ``bind_groups`` (count = bind groups) are the driver calls
    inside ``prepare`` (and later allocations). ``render``, ``module`` and ``pipeline`` run on parallel workers: their
    totals add the threads' times.
    """
    flat = _stats("onnxruntime_ep_wgpu_startup_stats", tuple(f"{p}.{k}" for p in STARTUP_PHASES for k in ("ns", "n")),
                  library_path)
    return {p: {"ms": flat[f"{p}.ns"] / 1e6, "count": flat[f"{p}.n"]} for p in STARTUP_PHASES}
