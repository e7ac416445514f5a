"""The interim plan of a tensor-core attention step (`kernels/src/ops/attention/unfused.rs`, `graph/interim.rs`):
while the attention's tensor-core pipeline compiles, runs take two SIMT products and a softmax through Sq×Skv
scratch, where those can express the step (additive masks, grouped-query heads, packed layouts); causal steps
wait for their own pipeline. The tensor-core compiles are made slow with the test-only
`ONNXRUNTIME_EP_WGPU_TEST_SLOW_COMPILE=_coop_:<ms>`, on the emulated tensor-core kernels on a software adapter and
on the real ones on a GPU. Each case runs in a fresh process (the library reads the variable once). The first
run's output, poisoned with NaN beforehand, is compared with float64."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from subproc import describe, run_script

DELAY_MS = 3000

SCRIPT = """
import json
from onnx import helper, TensorProto as T
sys.path.insert(0, {python!r})
import onnxruntime_ep_wgpu as locator

b, hq, hkv, sq, skv, d, causal, mask, packed = {case!r}
chain = {chain!r}  # a second Attention reads the first's output as its Q (the set's steps share their scratch)
dtype = np.dtype({dtype!r})
elem = T.FLOAT16 if dtype == np.float16 else T.FLOAT
rng = np.random.default_rng({seed})
shape = (lambda h, s: [b, s, h * d]) if packed else (lambda h, s: [b, h, s, d])
feeds = {{n: rng.uniform(-1, 1, size=shape(h, s)).astype(dtype) for n, h, s in
          (("q", hq, sq), ("k", hkv, skv), ("v", hkv, skv))}}
scale = 0.9 / np.sqrt(d)
attrs = {{"is_causal": causal, "scale": scale}}
if packed:
    attrs.update(q_num_heads=hq, kv_num_heads=hkv)
names, inputs = ["q", "k", "v"], [helper.make_tensor_value_info(n, elem, feeds[n].shape) for n in "qkv"]
if mask:
    feeds["m"] = rng.uniform(-2, 2, size=[b, 1, sq, skv]).astype(dtype)
    names.append("m")
    inputs.append(helper.make_tensor_value_info("m", elem, feeds["m"].shape))
out_shape = shape(hq, sq)
nodes = [helper.make_node("Attention", names, ["y1" if chain else "y"], **attrs)]
if chain:
    nodes.append(helper.make_node("Attention", ["y1"] + names[1:], ["y"], **attrs))
g = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", elem, out_shape)])
model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)], ir_version=10)
options = {{"cooperative_matrix": "1"}}
if dict(DEVS[0].ep_metadata).get("wgpu.software") == "1":
    options["emulate_tensor_cores"] = "1"
sess = session(model, options=options)

def heads(x, h, s):  # [b, h, s, d] float64
    x = x.astype(np.float64)
    return x.reshape(b, s, h, d).transpose(0, 2, 1, 3) if packed else x

k, v = heads(feeds["k"], hkv, skv), heads(feeds["v"], hkv, skv)
k, v = np.repeat(k, hq // hkv, axis=1), np.repeat(v, hq // hkv, axis=1)

def attend(q):
    s = q @ np.swapaxes(k, -1, -2) * float(scale)
    if mask:
        s = s + feeds["m"].astype(np.float64)
    if causal:
        s = np.where(np.tril(np.ones((sq, skv), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v

want = attend(heads(feeds["q"], hq, sq))
if chain:
    want = attend(want)
if packed:
    want = want.transpose(0, 2, 1, 3).reshape(out_shape)
y = np.full(out_shape, np.nan, dtype)
io = sess.io_binding()
for name, arr in feeds.items():
    io.bind_cpu_input(name, arr)
io.bind_output("y", "cpu", 0, dtype, y.shape, y.ctypes.data)
sess.run_with_iobinding(io)
st = locator.startup_stats(LIB)
err = float(np.abs(y.astype(np.float64) - want).max() / np.abs(want).max())
print("RESULT", json.dumps({{"interim": st["interim"]["count"], "wait_ms": st["pipeline_wait"]["ms"], "err": err}}))
"""

# (batch, q heads, kv heads, Sq, Skv, head size, causal, additive mask, packed 3-D), dtype, unfused interim plan,
# two attentions in a row
CASES = [
    ((1, 4, 2, 29, 45, 64, 0, True, True), "float16", True, False),
    ((2, 2, 2, 37, 37, 64, 0, False, False), "float32", True, False),
    ((1, 2, 1, 19, 70, 64, 0, True, False), "float32", True, False),
    ((1, 4, 4, 41, 41, 64, 0, False, True), "float16", True, True),
    ((1, 2, 2, 33, 33, 64, 1, False, False), "float16", False, False),
]


@pytest.mark.parametrize("case, dtype, unfused, chain", CASES, ids=lambda c: str(c))
def test_a_tensor_core_attention_runs_unfused_until_its_pipeline_compiles(lib_path, case, dtype, unfused, chain):
    seed = int(np.random.default_rng().integers(2**31))
    python = str(Path(__file__).resolve().parents[1] / "python")
    code = SCRIPT.format(python=python, case=case, dtype=dtype, seed=seed, chain=chain)
    r = run_script(lib_path, code, env={"ONNXRUNTIME_EP_WGPU_TEST_SLOW_COMPILE": f"_coop_:{DELAY_MS}"}, timeout=300)
    assert r.returncode == 0, describe(r)
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert line, describe(r)
    got = json.loads(line[-1][len("RESULT "):])
    # f16: the scores are stored in f16 between the products, as the exported pattern's MatMul stores them.
    assert got["err"] < (4e-3 if dtype == "float16" else 1e-5), (got, seed)
    if unfused:
        assert got["interim"] == (2 if chain else 1), got
        assert got["wait_ms"] < DELAY_MS / 2, got
    else:
        # Causal masking has no unfused form: the run waits for the attention's own (delayed) pipeline.
        assert got["interim"] == 0, got
        assert got["wait_ms"] >= DELAY_MS * 0.9, got
