"""A cold start's timeline: runs bench/experiments/interim/child.py-like work in a child process (Whisper-tiny fp16,
EP options from argv) with each compile's start and end logged (ONNXRUNTIME_EP_WGPU_LOG_COMPILES=1) and our EP's
info log on, and prints every stderr line of it prefixed with the milliseconds since the child started, so the
first run's wait can be set against the compiles that end during it.

    python3 bench/experiments/interim/timeline.py LIB MODEL [key=value ...]
"""
import os
import subprocess
import sys
import time

CHILD = r"""
import os, sys, time
import numpy as np, onnxruntime as ort
sys.path.insert(0, "python")
import onnxruntime_ep_wgpu as loc
lib, model = sys.argv[1], sys.argv[2]
opts = dict(a.split("=", 1) for a in sys.argv[3:])
ort.register_execution_provider_library("x", lib)
so = ort.SessionOptions()
so.log_severity_level = 1
so.add_provider_for_devices([d for d in ort.get_ep_devices() if d.ep_name == "WgpuExecutionProvider"], opts)
print("SESSION start", file=sys.stderr, flush=True)
s = ort.InferenceSession(model, so)
print("SESSION done", file=sys.stderr, flush=True)
if os.environ.get("TL_NICE_COMPILES"):
    # Experiment: the compile workers at a lower priority (nice +N) than the run and the driver's own threads.
    import glob
    niced = 0
    for task in glob.glob("/proc/self/task/*"):
        try:
            if open(task + "/comm").read().strip().startswith("ep-wgpu-compil"):
                os.setpriority(os.PRIO_PROCESS, int(task.rsplit("/", 1)[1]), int(os.environ["TL_NICE_COMPILES"]))
                niced += 1
        except OSError:
            pass
    print(f"SESSION niced {niced} compile threads", file=sys.stderr, flush=True)
if os.environ.get("TL_SLEEP_MS"):
    time.sleep(float(os.environ["TL_SLEEP_MS"]) / 1e3)
    print("SESSION slept", file=sys.stderr, flush=True)
i = s.get_inputs()[0]
x = np.random.default_rng(1).standard_normal([d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float16)
for i in range(40):
    before = loc.startup_stats(lib)["interim"]["count"]
    t = time.perf_counter()
    s.run(None, {s.get_inputs()[0].name: x})
    ms = (time.perf_counter() - t) * 1e3
    print(f"RUN {i} {ms:.2f} ms, steps on interim plans {loc.startup_stats(lib)['interim']['count'] - before}",
          file=sys.stderr, flush=True)
    time.sleep(0.02)
"""

lib, model, *opts = sys.argv[1:]
env = dict(os.environ, ONNXRUNTIME_EP_WGPU_LOG_COMPILES="1")
t0 = time.perf_counter()
p = subprocess.Popen([sys.executable, "-c", CHILD, lib, model, *opts], stderr=subprocess.PIPE, text=True, env=env)
for line in p.stderr:
    line = line.rstrip()
    if "interim" in line or line.startswith(("ep-wgpu", "RUN", "SESSION")):  # every line of ours
        print(f"{(time.perf_counter() - t0) * 1e3:8.1f} {line[-170:]}", flush=True)
print("rc", p.wait())
