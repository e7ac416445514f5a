"""Whisper-style encoder (tests/models.py, Whisper-tiny widths: d 384, 6 heads of 64, ffn 1536) on llvmpipe,
before/after: median session.run ms for the base library and this branch's, plus the step profile."""
import json, os, sys, tempfile, time
import numpy as np, onnxruntime as ort
sys.path.insert(0, "tests")
import models

def session(lib, name, model):
    ort.register_execution_provider_library(name, lib)
    devs = [d for d in ort.get_ep_devices() if d.ep_name == "WgpuExecutionProvider"]
    so = ort.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    so.add_provider_for_devices(devs[:1], {})
    return ort.InferenceSession(model.SerializeToString(), sess_options=so)

frames, layers = int(sys.argv[2]), 2
rng = np.random.default_rng(0)
model = models.whisper_encoder(models.Params(rng), np.float32, batch=1, frames=frames, d=384, heads=6, ffn=1536, layers=layers)
x = {"input_features": rng.uniform(-1, 1, size=(1, 80, frames)).astype(np.float32)}
cpu = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, x)[0]
lib = os.path.abspath(sys.argv[1])
s = session(lib, "w", model)
out = s.run(None, x)[0]
ts = []
for _ in range(5):
    t0 = time.perf_counter(); s.run(None, x); ts.append((time.perf_counter() - t0) * 1e3)
with tempfile.TemporaryDirectory() as d:
    p = os.path.join(d, "p.jsonl"); os.environ["ONNXRUNTIME_EP_WGPU_PROFILE"] = p
    s.run(None, x); del os.environ["ONNXRUNTIME_EP_WGPU_PROFILE"]
    steps = [json.loads(l) for l in open(p)]
by = {}
for st in steps:
    k = "FlashAttention(fused)" if "Flash" in st["ops"] else ("Softmax" if "Softmax" in st["ops"] else ("MatMul, MatMul+Mul (scores, PV)" if st["ops"] in ("MatMul", "MatMul+Mul") else "other"))
    by[k] = by.get(k, 0) + st["gpu_ms"]
print(json.dumps({"lib": sys.argv[1], "seq": (frames - 1) // 2 + 1, "layers": layers, "median_ms": float(np.median(ts)),
                  "gpu_ms": sum(st["gpu_ms"] for st in steps), "by": by, "max_rel_err": float(np.abs(out - cpu).max() / np.abs(cpu).max())}))
