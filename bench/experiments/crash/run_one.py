"""Creates a session on our EP for one model (fallback to the CPU EP allowed, as the fuzzer does) and runs it once.
   python3 run_one.py <lib> <model.onnx> [<key=value> ...] [verbose=-v]   (feeds from the .npz beside the model)"""
import sys
import numpy as np
import onnxruntime as ort

lib, model = sys.argv[1], sys.argv[2]
opts = dict(a.split("=", 1) for a in sys.argv[3:])
ort.register_execution_provider_library("crash", lib)
devs = [d for d in ort.get_ep_devices() if d.ep_name == "WgpuExecutionProvider"]
so = ort.SessionOptions()
so.log_severity_level = 0 if "-v" in opts.pop("verbose", "") else 2
so.add_provider_for_devices(devs, opts)
print("creating", model, flush=True)
sess = ort.InferenceSession(model, sess_options=so, enable_fallback=0)
print("created", flush=True)
feeds = dict(np.load(model[:-5] + ".npz"))
outs = sess.run(None, feeds)
print("ran", [o.shape for o in outs], flush=True)
