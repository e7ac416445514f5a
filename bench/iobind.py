"""Timing with IO binding: inputs uploaded once as device `OrtValue`s, outputs bound on the provider's device, so a
run moves no tensor between host and device. Latency: each timed run ends with a 4-byte read of a device value of
the same provider, so it is measured until the GPU work is done (a run with bound outputs may return once
submitted). Back to back: the same number of runs, then one such read; the time over the runs (a loop that feeds
the GPU and reads once at the end), and the median time a call of that loop takes to return (its host side: below the
time per run, the GPU bounds the loop).

Also the copies our library counted per run (`onnxruntime_ep_wgpu_copy_stats`), for the numpy and the bound runs."""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort



def _load_locator():
    """This checkout's locator package (`python/onnxruntime_ep_wgpu`), under a name of its own: its `copy_stats`
    reads our library's counters (the H200 machine has no locator package installed)."""
    pkg = Path(__file__).resolve().parents[1] / "python" / "onnxruntime_ep_wgpu"
    spec = importlib.util.spec_from_file_location("ep_wgpu_locator", pkg / "__init__.py",
                                                  submodule_search_locations=[str(pkg)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["ep_wgpu_locator"] = module
    spec.loader.exec_module(module)
    return module


LOCATOR = _load_locator()


def device_memory(p):
    """(device_id, vendor_id) of the provider's DEFAULT device memory, or None (CPU, or no memory registered)."""
    if p.key == "cpu" or not p.devices:
        return None
    info = p.devices[0].memory_info(ort.OrtDeviceMemoryType.DEFAULT)
    if info is None:
        return None
    return info.device_id, info.device_vendor_id


class CopyCounter:
    """Our library's copy counters (None for other providers)."""

    def __init__(self, p):
        self.lib = p.info.get("library") if p.key == "ours" else None

    def read(self):
        return LOCATOR.copy_stats(self.lib) if self.lib else None

    @staticmethod
    def per_run(before, after, runs: int):
        if before is None or after is None or runs <= 0:
            return None
        return {k: (after[k] - before[k]) / runs for k in after}


PROBE_BYTES = 1 << 18


def wait_probe(device_id: int, vendor: int):
    """A device value whose read waits for the work queued before it: 256 KiB, more than the host copies our library
    keeps of small uploads (`runtime::shadow`, 16 KiB), which a read of a few uploaded bytes returns at once."""
    return ort.OrtValue.ortvalue_from_numpy(np.zeros(PROBE_BYTES // 4, np.float32), "gpu", device_id, vendor)


def time_bound(p, sess, feeds: dict, cfg, shared: dict | None = None) -> tuple[dict, list | None]:
    """Median/p10/p90 of bound runs, the bound outputs (read once, at the end) and our copies per run. `shared`
    maps output names to input names whose device value the output is bound to (a KV cache shared by past and
    present, as genai binds it)."""
    mem = device_memory(p)
    if mem is None:
        return {"status": "unavailable", "message": "no device memory registered"}, None
    device_id, vendor = mem
    device = ort.OrtDevice.make("gpu", device_id, vendor)
    io = sess.io_binding()
    values = {name: ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(value), "gpu", device_id, vendor)
              for name, value in feeds.items()}
    for name, value in values.items():
        io.bind_ortvalue_input(name, value)
    for out in sess.get_outputs():
        if shared and out.name in shared:
            io.bind_ortvalue_output(out.name, values[shared[out.name]])
        else:
            io._iobinding.bind_output(out.name, device._get_c_device())
    probe = wait_probe(device_id, vendor)

    def once():
        t = time.perf_counter()
        sess.run_with_iobinding(io)
        probe.numpy()  # waits for the work queued before it
        return time.perf_counter() - t

    est, spent = None, 0.0
    for _ in range(cfg["warmup"] + 1):
        est = once()
        spent += est
        if spent > cfg["budget_s"] / 2:
            break
    n = max(cfg["min_runs"], min(cfg["max_runs"], int(cfg["budget_s"] / max(est or 1e-6, 1e-6))))
    counter = CopyCounter(p)
    before = counter.read()
    times = [once() for _ in range(n)]
    copies = counter.per_run(before, counter.read(), n)
    # Throughput: n runs back to back, one wait at the end (a loop feeding the GPU, read once).
    calls = []
    t = time.perf_counter()
    for _ in range(n):
        c = time.perf_counter()
        sess.run_with_iobinding(io)
        calls.append(time.perf_counter() - c)
    probe.numpy()
    per_run_ms = (time.perf_counter() - t) / n * 1e3
    if copies is not None:  # not the probe's read
        copies["device_to_host"] -= 1
        copies["device_to_host_bytes"] -= PROBE_BYTES
    outputs = [v.numpy() for v in io.get_outputs()]
    ms = np.array(times) * 1e3
    row = {"status": "ok", "median_ms": float(np.median(ms)), "p10_ms": float(np.percentile(ms, 10)),
           "p90_ms": float(np.percentile(ms, 90)), "runs": n, "vendor_id": f"0x{vendor:x}",
           "back_to_back_ms": per_run_ms, "back_to_back_call_ms": float(np.median(calls)) * 1e3}
    if copies is not None:
        row["copies_per_run"] = copies
    return row, outputs


def table(results: dict) -> str:
    """Markdown: per case, numpy-I/O and bound medians of ours and the peer, and our copies per bound run."""
    lines = ["| case | ours numpy ms | ours bound ms | ours bound, back to back | peer numpy ms | peer bound ms | "
             "peer bound, back to back | ours copies per bound run |",
             "|---|---|---|---|---|---|---|---|"]
    any_row = False
    for case in results.get("cases", []):
        r = case.get("results", {})
        ours, peer = r.get("ours", {}), r.get("peer", {})
        if "bound" not in ours and "bound" not in peer:
            continue
        any_row = True

        def ms(row, key="median_ms"):
            v = row.get(key)
            return f"{v:.3f}" if isinstance(v, (int, float)) else row.get("status", "—")

        ob, pb = ours.get("bound", {}), peer.get("bound", {})
        c = ob.get("copies_per_run")
        copies = (f"h2d {c['host_to_device']:.0f}, d2h {c['device_to_host']:.0f}, d2d {c['device_to_device']:.0f}" if c else "—")
        lines.append(f"| {case['name']} | {ms(ours)} | {ms(ob)} | {ms(ob, 'back_to_back_ms')} | {ms(peer)} | "
                     f"{ms(pb)} | {ms(pb, 'back_to_back_ms')} | {copies} |")
    return "\n".join(lines) + "\n" if any_row else ""
