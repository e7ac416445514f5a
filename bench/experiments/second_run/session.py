"""The probes' shared set-up: a session of MODEL on our EP (library LIB) and random feeds for its first input."""
import numpy as np
import onnxruntime as ort


def open_session(lib: str, model: str):
    """(session, feeds): the library registered, the model on its first device, feeds of its first input."""
    ort.register_execution_provider_library("x", lib)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.add_provider_for_devices([d for d in ort.get_ep_devices() if d.ep_name == "WgpuExecutionProvider"][:1], {})
    sess = ort.InferenceSession(model, sess_options=so)
    inp = sess.get_inputs()[0]
    shape = [d if isinstance(d, int) and d > 0 else 1 for d in inp.shape]
    dtype = np.float16 if "16" in inp.type else np.float32
    return sess, {inp.name: np.random.default_rng(1).standard_normal(shape).astype(dtype)}
