"""Why a process's second run is slower than its steady runs (issue 15's "second run within 10% of steady").

One process per EP (ours, or the peer with `peer`): Whisper-tiny fp16 with numpy I/O (driver cache warm), 30 runs
back to back after the first, then for each idle gap G in GAPS the process sleeps G seconds and times 6 runs. If
the run after a gap is as slow as the second run, the excess follows the device's (or host's) idle time, not work
left over from the first run; our allocators' `buffers_created` and our `pipeline` phase count are printed after the
first run and at the end to show that nothing was made after it. Prints one JSON line.

    python3 bench/experiments/second_run/idle.py LIB MODEL [peer]
"""
import json
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort

GAPS = tuple(float(g) for g in __import__("os").environ.get("IDLE_GAPS", "0.002,0.02,0.1,0.3,1.0,3.0").split(","))

lib, model = sys.argv[1], sys.argv[2]
peer = "peer" in sys.argv[3:]
if peer:
    import onnxruntime_ep_webgpu as p

    lib, name = p.get_library_path(), p.get_ep_name()
else:
    name = "WgpuExecutionProvider"
    sys.path.insert(0, "python")
    import onnxruntime_ep_wgpu as loc
ort.register_execution_provider_library("x", lib)
so = ort.SessionOptions()
so.log_severity_level = 3
so.add_provider_for_devices([d for d in ort.get_ep_devices() if d.ep_name == name][:1], {})
sess = ort.InferenceSession(model, sess_options=so)
inp = sess.get_inputs()[0]
shape = [d if isinstance(d, int) and d > 0 else 1 for d in inp.shape]
x = np.random.default_rng(1).standard_normal(shape).astype(np.float16 if "16" in inp.type else np.float32)
feeds = {inp.name: x}


def timed(n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        sess.run(None, feeds)
        out.append(round((time.perf_counter() - t) * 1e3, 3))
    return out


def counters() -> dict:
    if peer:
        return {}
    st = loc.startup_stats(lib)
    return {"buffers_created": loc.memory_stats(lib)["buffers_created"], "pipelines": st["pipeline"]["count"]}


first = timed(1)
after_first = counters()
runs = timed(30)
result = {"ep": "peer" if peer else "ours", "first": first[0], "runs": runs[:8], "steady": statistics.median(runs[10:])}
for g in GAPS:
    time.sleep(g)
    result[f"after_{g}s"] = timed(6)
result["counters_after_first"] = after_first
result["counters_end"] = counters()
print(json.dumps(result), flush=True)
