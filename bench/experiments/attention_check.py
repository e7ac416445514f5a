"""ONNX `Attention` (opset 23, head size 64) on our EP against numpy float64, float32 and float16, at 17, 100 and
1500 positions: the largest difference relative to the largest output. With `EXP_WGSL_OVERRIDE` (a build with the
`wgsl-override` feature) it checks hand-edited kernels, one folder per process (`TAG` labels the lines, `DUMP=1`
prints where a float32 output goes wrong, `SEV=0` ONNX Runtime's log). The twenty-seventh session found the split
f32 tensor-core attention's two NVIDIA-only faults with it (docs/PERFORMANCE.md).

    python3 bench/experiments/attention_check.py "$PWD/path/to/libonnxruntime_ep_wgpu.so"   # an absolute path
"""
import os, sys
import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper
sys.path.insert(0, "bench")
import providers as prov

def model(shape_q, shape_kv, elem):
    ins = [helper.make_tensor_value_info(n, elem, s) for n, s in (("q", shape_q), ("k", shape_kv), ("v", shape_kv))]
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"])
    g = helper.make_graph([node], "a", ins, [helper.make_tensor_value_info("y", elem, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)])
    m.ir_version = 10
    return m.SerializeToString()

def ref(q, k, v):
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    s -= s.max(-1, keepdims=True)
    p = np.exp(s); p /= p.sum(-1, keepdims=True)
    return p @ v

lib = sys.argv[1]
p = prov.our_provider(lib, "arg", {})
rng = np.random.default_rng(1)
for dt, elem in ((np.float32, TensorProto.FLOAT), (np.float16, TensorProto.FLOAT16)):
    for h, s in ((2, 17), (2, 100), (6, 1500)):
        q, k, v = (rng.uniform(-1, 1, (1, h, s, 64)).astype(dt) for _ in range(3))
        try:
            so = p.session_options(strict=True)
            so.log_severity_level = int(os.environ.get("SEV", "4"))
            sess = ort.InferenceSession(model([1, h, s, 64], [1, h, s, 64], elem), sess_options=so, enable_fallback=0)
            got = sess.run(None, {"q": q, "k": k, "v": v})[0].astype(np.float64)
            want = ref(q, k, v)
            err = np.nanmax(np.abs(got - want)) / np.abs(want).max()
            print(f"{os.environ.get('TAG','?'):10s} {dt.__name__:8s} h={h} s={s}: rel {err:.3e} finite {np.isfinite(got).all()}")
            if s == 17 and dt == np.float32:
                print("   got ", np.array2string(got[0, 0, :3, :4], precision=4).replace(chr(10), ' '))
                print("   want", np.array2string(want[0, 0, :3, :4], precision=4).replace(chr(10), ' '))
                if os.environ.get("DUMP"):
                    for r in range(17):
                        g, w = got[0, 0, r], want[0, 0, r]
                        nz = "".join("x" if abs(x) > 0 else "." for x in g)
                        print(f"   r{r:2d} {nz} max {np.abs(g).max():.3g}")
                    g, w = got[0, 0].ravel(), want[0, 0].ravel()
                    m = np.abs(g) > 0
                    print("   ratio", np.array2string((g[m] / w[m])[:16], precision=3))
                    G, W = got[0, :, :, :].reshape(-1), want[0, :, :, :].reshape(-1)
                    best = []
                    for r in (0, 1, 5):
                        row = got[0, 0, r, 5:63]
                        for k in range(-200, 200):
                            for hh in range(2):
                                wf = want[0, hh].reshape(-1)
                                st = r * 64 + 5 + k
                                if st < 0 or st + 58 > wf.size: continue
                                c = np.corrcoef(row, wf[st:st + 58])[0, 1]
                                if c > 0.9: best.append((r, hh, k, round(float(c), 4), float(np.median(row / wf[st:st + 58]))))
                    print("   matches", best[:12])
                    print("   head1 max", np.abs(got[0, 1]).max(), "corr", np.corrcoef(g[m], w[m])[0, 1] if m.sum() > 2 else None)
        except Exception as e:
            print(f"{os.environ.get('TAG','?'):10s} {dt.__name__} h={h} s={s}: ERROR {str(e)[:200]}")
