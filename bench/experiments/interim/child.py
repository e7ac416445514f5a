"""One process: Whisper-tiny fp16 on our EP (EP options from argv as key=value), `runs=N` runs (default 20; 0: exit
right after creating the session, while its pipelines compile), then 'DONE' and a normal exit (or, with 'release',
the session dropped and the library unregistered first). For the crash at process exit with compiles still running
(forty-fifth session): stderr keeps each compile's start and end (ONNXRUNTIME_EP_WGPU_LOG_COMPILES=1)."""
import gc
import json
import sys
import time

import numpy as np
import onnxruntime as ort

lib, model = sys.argv[1], sys.argv[2]
release = "release" in sys.argv[3:]
opts = dict(a.split("=", 1) for a in sys.argv[3:] if "=" in a)
runs = int(opts.pop("runs", "20"))
sys.path.insert(0, "python")
import onnxruntime_ep_wgpu as loc  # noqa: E402

t0 = time.time()
ort.register_execution_provider_library("x", lib)
devs = [d for d in ort.get_ep_devices() if d.ep_name == "WgpuExecutionProvider"]
so = ort.SessionOptions()
so.add_provider_for_devices(devs, opts)
sess = ort.InferenceSession(model, sess_options=so)
x = np.random.default_rng(1).standard_normal((1, 80, 3000)).astype(np.float16)
times = []
for _ in range(runs):
    t = time.time()
    sess.run(None, {sess.get_inputs()[0].name: x})
    times.append(round((time.time() - t) * 1e3, 2))
st = loc.startup_stats(lib)
print("DONE", json.dumps({"runs_ms": times[:4], "pipeline_wait": round(st["pipeline_wait"]["ms"], 1)}), flush=True)
print(f"ep-wgpu-child DONE at {time.time() - t0:.3f} s", file=sys.stderr, flush=True)
if release:
    del sess
    gc.collect()
    ort.unregister_execution_provider_library("x")
    print("ep-wgpu-child RELEASED", file=sys.stderr, flush=True)
