"""What the device-memory tests share: the checkout's locator package (our vendor id and the library's counters),
small models, and runs with every input and output on our device (IO binding)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper

import models

REPO = Path(__file__).resolve().parent.parent

# The locator package of this checkout (the installed one may be older than the library under test).
_pkg = REPO / "python" / "onnxruntime_ep_wgpu"
_spec = importlib.util.spec_from_file_location("ep_locator", _pkg / "__init__.py", submodule_search_locations=[str(_pkg)])
locator = importlib.util.module_from_spec(_spec)
sys.modules["ep_locator"] = locator
_spec.loader.exec_module(locator)
VENDOR = locator.VENDOR_ID


@pytest.fixture(scope="module")
def ort():
    import onnxruntime

    return onnxruntime


@pytest.fixture(scope="module")
def device_id(ep_devices, ort):
    return ep_devices[0].memory_info(ort.OrtDeviceMemoryType.DEFAULT).device_id


def copies(lib_path):
    return locator.copy_stats(lib_path)


def host_copies(before, after):
    return (after["host_to_device"] - before["host_to_device"], after["device_to_host"] - before["device_to_host"])


def dense(d_in, d_out, rng, dtype=np.float32, activation="Relu", name="X", out="Y"):
    """Y = act(X · W + b) with X [n, d_in] (n symbolic)."""
    w = rng.uniform(-1, 1, (d_in, d_out)).astype(dtype) / np.sqrt(d_in).astype(dtype)
    b = rng.uniform(-1, 1, (d_out,)).astype(dtype)
    nodes = [
        helper.make_node("MatMul", [name, "W"], ["T"]),
        helper.make_node("Add", ["T", "B"], ["U"]),
        helper.make_node(activation, ["U"], [out]),
    ]
    return models.finish(
        nodes,
        [models.tensor(name, dtype, ["n", d_in])],
        [models.tensor(out, dtype, ["n", d_out])],
        [helper.make_tensor("W", models.elem(dtype), w.shape, w.tobytes(), raw=True),
         helper.make_tensor("B", models.elem(dtype), b.shape, b.tobytes(), raw=True)],
    )


def split_by_cpu_node(rng, d=37):
    """MatMul+Relu (ours) → CumSum (no kernel of ours: the CPU EP) → MatMul+Add (ours): two partitions."""
    w1 = rng.uniform(-1, 1, (d, d)).astype(np.float32)
    w2 = rng.uniform(-1, 1, (d, 23)).astype(np.float32)
    b2 = rng.uniform(-1, 1, (23,)).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["X", "W1"], ["T1"]),
        helper.make_node("Relu", ["T1"], ["R1"]),
        helper.make_node("CumSum", ["R1", "axis"], ["C"]),
        helper.make_node("MatMul", ["C", "W2"], ["T2"]),
        helper.make_node("Add", ["T2", "B2"], ["Y"]),
    ]
    inits = [
        helper.make_tensor("W1", TensorProto.FLOAT, w1.shape, w1.tobytes(), raw=True),
        helper.make_tensor("W2", TensorProto.FLOAT, w2.shape, w2.tobytes(), raw=True),
        helper.make_tensor("B2", TensorProto.FLOAT, b2.shape, b2.tobytes(), raw=True),
        helper.make_tensor("axis", TensorProto.INT64, [], [1]),
    ]
    return models.finish(
        nodes, [models.tensor("X", np.float32, ["n", d])], [models.tensor("Y", np.float32, ["n", 23])], inits
    )


def on_device(ort, array, device_id):
    return ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(array), "gpu", device_id, VENDOR)


def bind_run(ort, sess, feeds: dict, device_id, outputs=None):
    """Runs with every input uploaded once as a device OrtValue and every output bound on our device (allocated
    by ORT at its run-time shape, or the given OrtValues); returns the output OrtValues."""
    io = sess.io_binding()
    for name, value in feeds.items():
        io.bind_ortvalue_input(name, value if isinstance(value, ort.OrtValue) else on_device(ort, value, device_id))
    for k, out in enumerate(sess.get_outputs()):
        if outputs is not None:
            io.bind_ortvalue_output(out.name, outputs[k])
        else:
            io._iobinding.bind_output(out.name, ort.OrtDevice.make("gpu", device_id, VENDOR)._get_c_device())
    sess.run_with_iobinding(io)
    return outputs if outputs is not None else io.get_outputs()
