"""Locator for the onnxruntime-ep-wgpu plugin execution provider.

The package only finds the bundled shared library and names the EP; register it with ONNX Runtime (>= 1.24)::

    import onnxruntime as ort
    import onnxruntime_ep_wgpu as wgpu_ep

    ort.register_execution_provider_library("wgpu", wgpu_ep.get_library_path())
    devices = [d for d in ort.get_ep_devices() if d.ep_name == wgpu_ep.get_ep_name()]

It deliberately does not import onnxruntime, so any compatible onnxruntime build can be paired with it.
"""

from __future__ import annotations

from pathlib import Path

from ._version import __version__

__all__ = ["__version__", "get_ep_name", "get_ep_names", "get_library_path"]

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
