"""Where a warm process's second run spends its excess over the steady runs (issue 15's "second run within 10%").

One process (run it twice with the same __GL_SHADER_DISK_CACHE_PATH, the first to warm the driver's cache):
Whisper-tiny with numpy I/O; each run's wall time beside the deltas of our own phases over that run (`startup_stats`:
run_record = recording and submitting, run_wait = waiting for the GPU, copy_in / copy_out_wait / copy_out = ORT's
copies through our data transfer), and the minor page faults the process took during the run. 16 runs after the first, then 2 ms, 20 ms and 100 ms gaps followed by 6 runs each.
If the excess is in run_wait the GPU (or the wake-up of the waiting thread) is slower; if in run_record, the host.
Prints one JSON line.

    python3 bench/experiments/second_run/phases.py LIB MODEL
"""
import json
import resource
import sys
import time

sys.path.insert(0, "python")
import onnxruntime_ep_wgpu as loc  # noqa: E402

sys.path.insert(0, str(__import__('pathlib').Path(__file__).parent))
from session import open_session  # noqa: E402

lib, model = sys.argv[1], sys.argv[2]
PHASES = ("run_record", "run_wait", "copy_in", "copy_out_wait", "copy_out", "run")
sess, feeds = open_session(lib, model)


def snap() -> dict:
    st = loc.startup_stats(lib)
    return {p: st[p]["ms"] for p in PHASES}


def timed(n: int) -> list[dict]:
    rows = []
    for _ in range(n):
        a = snap()
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t = time.perf_counter()
        sess.run(None, feeds)
        wall = (time.perf_counter() - t) * 1e3
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
        b = snap()
        rows.append({"wall": round(wall, 3), "faults": faults, **{p: round(b[p] - a[p], 3) for p in PHASES}})
    return rows


result = {"first": timed(1)[0], "runs": timed(16)}
for g in (0.002, 0.02, 0.1):
    time.sleep(g)
    result[f"after_{g}s"] = timed(6)
print(json.dumps(result), flush=True)
