#!/usr/bin/env python3
"""Where a bound prefill's back-to-back time goes beyond our step profile's GPU time (issue 18).

For each genai model (`bench/genai_build.py`) on our EP, prefill of 512 and 1024 tokens with every input and output
bound on the device: the GPU ms of one run by our step profile (`ONNXRUNTIME_EP_WGPU_PROFILE`, median of 3), then
runs back to back for about `--seconds` with one wait at the end, reporting the wall ms per run, the host ms each
`run_with_iobinding` call took (a call that waits for the GPU takes the GPU's time), our host phases per run
(`startup_stats` differences: run, run_record, run_wait, copies), and the SM clock, power and throttle reasons that
nvidia-smi sampled every 50 ms during the loop; last, one run with every dispatch timed on its own
(`ONNXRUNTIME_EP_WGPU_PROFILE_DISPATCHES`), its largest programs by GPU ms.

    python3 bench/prefill_gap.py --models DIR --lib LIB [--only REGEX] [--seconds 3] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

sys.path.insert(0, str(Path(__file__).resolve().parent))
import genai_bench as gb  # noqa: E402
import iobind  # noqa: E402
import providers as prov  # noqa: E402

DISPATCHES_ENV = "ONNXRUNTIME_EP_WGPU_PROFILE_DISPATCHES"
SMI = ["nvidia-smi", "--query-gpu=clocks.sm,power.draw,clocks_throttle_reasons.active", "--format=csv,noheader,nounits",
       "-lms", "50"]


def bound(p, sess, feeds):
    """An IO binding with every input and output on our device, and a probe whose read waits for the queue."""
    device_id, vendor = iobind.device_memory(p)
    device = ort.OrtDevice.make("gpu", device_id, vendor)
    io = sess.io_binding()
    values = [ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(v), "gpu", device_id, vendor) for v in feeds.values()]
    for name, value in zip(feeds, values):
        io.bind_ortvalue_input(name, value)
    for out in sess.get_outputs():
        io._iobinding.bind_output(out.name, device._get_c_device())
    probe = iobind.wait_probe(device_id, vendor)
    return io, probe, values


def loop(lib, sess, io, probe, seconds):
    for _ in range(3):
        sess.run_with_iobinding(io)
    probe.numpy()
    smi = subprocess.Popen(SMI, stdout=subprocess.PIPE, text=True)
    before = gb.loop_stats(lib)
    calls, start = [], time.perf_counter()
    while time.perf_counter() - start < seconds:
        t = time.perf_counter()
        sess.run_with_iobinding(io)
        calls.append((time.perf_counter() - t) * 1e3)
    probe.numpy()
    wall = (time.perf_counter() - start) * 1e3 / len(calls)
    after = gb.loop_stats(lib)
    smi.terminate()
    samples = [line.split(", ") for line in smi.communicate()[0].splitlines() if line.count(",") == 2]
    n = len(calls)
    phases = {k: round((after[k]["ms"] - before[k]["ms"]) / n, 3) for k in after
              if after[k]["ms"] - before[k]["ms"] >= 0.01 * n} if before and after else None
    return {"runs": n, "wall_ms": round(wall, 3), "call_ms_median": round(float(np.median(calls)), 3),
            "call_ms_p90": round(float(np.percentile(calls, 90)), 3), "phases": phases,
            "sm_mhz": sorted({s[0] for s in samples}), "power_w": [s[1] for s in samples][::4],
            "throttle": sorted({s[2] for s in samples})}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--only", default=".")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--out", default="prefill_gap.json")
    args = ap.parse_args()
    lib = str(Path(args.lib).resolve())
    p = prov.our_provider(lib, "--lib", {})
    if not p.available:
        raise SystemExit(f"our EP is not available: {p.reason}")
    rng = np.random.default_rng(0)
    rows = []
    for d in sorted(d for d in Path(args.models).iterdir() if (d / "genai_config.json").is_file()):
        if not re.search(args.only, d.name):
            continue
        sess = p.session(str(d / "model.onnx"), strict=False)
        for n in (512, 1024):
            feeds = gb.feeds_for(sess, n, 0, rng)
            steps = prov.profiled_steps(sess, feeds, runs=3)
            k = len(steps) // 3
            gpu = sorted(sum(s["gpu_ms"] for s in steps[i * k:(i + 1) * k]) for i in range(3))[1] if k else None
            io, probe, _keep = bound(p, sess, feeds)
            row = {"model": d.name, "tokens": n, "profile_gpu_ms": gpu, "steps": len(steps) // 3}
            row.update(loop(lib, sess, io, probe, args.seconds))
            os.environ[DISPATCHES_ENV] = "1"
            try:
                row["dispatches"] = gb.top_steps(prov.profiled_steps(sess, feeds), 16, by_grid=True)
            finally:
                os.environ.pop(DISPATCHES_ENV, None)
            print(json.dumps(row), flush=True)
            rows.append(row)
        del sess
    Path(args.out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
