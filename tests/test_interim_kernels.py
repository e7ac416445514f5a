"""Interim plans (option `interim_kernels`, `kernels/src/graph/interim.rs`): while a step's tensor-core pipelines
are still compiling, its runs take plans without tensor cores over the same buffers, then their own plans once
compiled. A cold driver's slow tensor-core compiles are made here with the test-only
`ONNXRUNTIME_EP_WGPU_TEST_SLOW_COMPILE=_coop_:<ms>` (each compile of a tensor-core variant waits so long first), on
the emulated tensor-core plans on a software adapter (`emulate_tensor_cores=1`), on the real ones on a GPU. The
option is on by default (the suite's other sessions turn it off: `conftest.ep_options`). Each case runs in a fresh
process: the library reads the variable once.

Outputs are poisoned with NaN before each run (IO binding into preallocated arrays) and compared with float64.
The counter `interim` of `startup_stats` counts the steps runs took on interim plans."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
from subproc import describe, run_script

DELAY_MS = 6000

SCRIPT = """
import json
from onnx import helper, numpy_helper, TensorProto as T
sys.path.insert(0, {python!r})
import onnxruntime_ep_wgpu as locator

rng = np.random.default_rng({seed})
a = rng.standard_normal((67, 130)).astype(np.float16)          # an f16 product on the coop GEMM
w = (rng.standard_normal((130, 91)) / 8).astype(np.float16)
x = rng.standard_normal((601, 212)).astype(np.float32)         # an f32 product split in f16 parts (K <= 256:
                                                               # the emulated kernels' limit)
w32 = rng.standard_normal((212, 524)).astype(np.float32)
g = helper.make_graph(
    [helper.make_node("MatMul", ["a", "w"], ["y"]), helper.make_node("MatMul", ["x", "w32"], ["z"])], "g",
    [helper.make_tensor_value_info("a", T.FLOAT16, a.shape), helper.make_tensor_value_info("x", T.FLOAT, x.shape)],
    [helper.make_tensor_value_info("y", T.FLOAT16, [67, 91]), helper.make_tensor_value_info("z", T.FLOAT, [601, 524])],
    [numpy_helper.from_array(w, "w"), numpy_helper.from_array(w32, "w32")])
model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
software = dict(DEVS[0].ep_metadata).get("wgpu.software") == "1"
options = {{"cooperative_matrix": "1", "f32_split": "1"}}
if {interim!r} is not None:
    options["interim_kernels"] = {interim!r}
options.update({extra!r})
if software:
    options["emulate_tensor_cores"] = "1"
print("SOFTWARE", int(software))
sess = session(model, options=options)
want_y = a.astype(np.float64) @ w.astype(np.float64)
want_z = x.astype(np.float64) @ w32.astype(np.float64)

def run():
    y, z = np.full((67, 91), np.nan, np.float16), np.full((601, 524), np.nan, np.float32)
    io = sess.io_binding()
    io.bind_cpu_input("a", a)
    io.bind_cpu_input("x", x)
    io.bind_output("y", "cpu", 0, np.float16, y.shape, y.ctypes.data)
    io.bind_output("z", "cpu", 0, np.float32, z.shape, z.ctypes.data)
    sess.run_with_iobinding(io)
    ey = float(np.abs(y - want_y).max() / np.abs(want_y).max())
    ez = float(np.abs(z - want_z).max() / np.abs(want_z).max())
    assert ey < 2e-3 and ez < 1e-5, (ey, ez)
    return locator.startup_stats(LIB)["interim"]["count"]

counts = [run()]
print("FIRST_WAIT_MS", locator.startup_stats(LIB)["pipeline_wait"]["ms"])
deadline = time.time() + {wait_s}
while time.time() < deadline and len(counts) < 400:
    counts.append(run())
    if counts[-1] == counts[-2] and len(counts) > 2 and counts[-2] == counts[-3]:
        break
    time.sleep(0.05)
print("COUNTS", json.dumps(counts))
"""


def run_two_products(lib_path, interim, wait_s, env, extra=None):
    seed = int(np.random.default_rng().integers(2**31))  # fresh data, replayable with the test seed
    python = str(Path(__file__).resolve().parents[1] / "python")
    code = SCRIPT.format(python=python, interim=interim, wait_s=wait_s, seed=seed, extra=extra or {})
    r = run_script(lib_path, code, env=env, timeout=300)
    assert r.returncode == 0, describe(r)
    return r


def counts_of(lib_path, interim, wait_s, extra=None):
    env = {"ONNXRUNTIME_EP_WGPU_TEST_SLOW_COMPILE": f"_coop_:{DELAY_MS}"}
    r = run_two_products(lib_path, interim, wait_s, env, extra)
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("COUNTS ")]
    wait = [ln for ln in r.stdout.splitlines() if ln.startswith("FIRST_WAIT_MS ")]
    assert line and wait, describe(r)
    return json.loads(line[-1][len("COUNTS "):]), float(wait[-1].split()[1])


def test_runs_take_interim_plans_until_the_tensor_core_pipelines_compile(lib_path):
    counts, first_wait_ms = counts_of(lib_path, "1", wait_s=120)
    # The first run, well before the delayed tensor-core compiles end, took both steps on interim plans.
    assert counts[0] == 2, counts
    # ... and waited for none of those compiles: not even for the f32 product, whose input (ORT's copy of it on our
    # device, past the in-place threshold) a run would otherwise bind in place by planning its step again with the
    # device's own pipelines.
    assert first_wait_ms < DELAY_MS / 2, first_wait_ms
    # Later runs, once those pipelines compiled, took none: the count stopped growing.
    assert counts[-1] == counts[-2] == counts[-3], counts
    assert len(counts) >= 3, counts


def test_without_interim_plans_the_first_run_waits_for_its_own(lib_path):
    counts, first_wait_ms = counts_of(lib_path, "0", wait_s=0)
    assert counts[0] == 0, counts
    assert first_wait_ms >= DELAY_MS * 0.9, first_wait_ms


def test_a_first_run_given_grace_waits_for_its_own_pipelines(lib_path):
    """`interim_grace_ms` past the compiles: the first run waits for the tensor-core pipelines and takes no interim
    plan."""
    counts, first_wait_ms = counts_of(lib_path, "1", wait_s=0, extra={"interim_grace_ms": "10000"})
    assert counts[0] == 0, counts
    assert first_wait_ms >= DELAY_MS * 0.9, first_wait_ms


def test_a_grace_shorter_than_the_compiles_ends_on_interim_plans(lib_path):
    """A grace that ends before the compiles: the first run waits until it ends, then takes both interim plans. The
    window counts from Compile, so the two products' partitions (made one after the other) wait about once."""
    counts, first_wait_ms = counts_of(lib_path, "1", wait_s=0, extra={"interim_grace_ms": "1500"})
    assert counts[0] == 2, counts
    assert 1000 <= first_wait_ms < DELAY_MS / 2, first_wait_ms


def test_interim_plans_are_on_by_default(lib_path):
    counts, first_wait_ms = counts_of(lib_path, None, wait_s=0)
    assert counts[0] == 2, counts
    assert first_wait_ms < DELAY_MS / 2, first_wait_ms


def compile_log(lib_path, extra, env=None):
    """(where the last of the interim plans' compiles ended, where the first tensor-core compile started, as line
    numbers of the compile log; the log's lines; the process) of one process."""
    env = {"ONNXRUNTIME_EP_WGPU_LOG_COMPILES": "1", **(env or {})}
    r = run_two_products(lib_path, "1", wait_s=0, env=env, extra=extra)
    lines = r.stderr.splitlines()
    interim = set()
    for ln in lines:
        m = re.match(r"ep-wgpu step \d+ \(.*\) runs (.*) until compiled$", ln)
        if m:
            interim.update(m.group(1).split(" + "))
    assert interim, describe(r)
    done = {ln.split()[2].rstrip(":"): i for i, ln in enumerate(lines) if ln.startswith("ep-wgpu compile ")}
    coop = [i for i, ln in enumerate(lines) if ln.startswith("ep-wgpu compiling ") and "_coop" in ln]
    assert coop and all(name in done for name in interim), describe(r)
    return max(done[name] for name in interim), min(coop), lines, r


def test_unrolled_tensor_core_compiles_start_after_those_of_the_interim_plans(lib_path):
    # Cold compiles at once slow each other (1.1-2.6x each on an H100): the unrolled tensor-core products that interim
    # plans stand in for are deferred until the pipelines of the interim plans have compiled (runtime/compile_order.rs).
    last_interim, first_coop, _, r = compile_log(lib_path, {"rolled_loops": "0"})
    assert last_interim < first_coop, describe(r)


def test_rolled_tensor_core_compiles_start_beside_those_of_the_interim_plans(lib_path):
    # Rolled ones (80-150 ms on an H100) are not deferred: they start with the interim plans' compiles, so the runs
    # after the first leave the interim plans sooner. NVIDIA rolls the tensor-core kernels by default; the test hook
    # rolls the emulated ones on the software adapter.
    last_interim, first_coop, lines, r = compile_log(lib_path, {}, {"ONNXRUNTIME_EP_WGPU_TEST_PASSTHROUGH": "_coop_"})
    assert any(ln.startswith("ep-wgpu compiling ") and "_coop" in ln and " rolled: " in ln for ln in lines), describe(r)
    assert first_coop < last_interim, describe(r)


ATTENTION = """
from onnx import helper, numpy_helper, TensorProto as T
sys.path.insert(0, {python!r})
import onnxruntime_ep_wgpu as locator

rng = np.random.default_rng({seed})
H, S, D = 2, 37, 64
q, k, v = (rng.standard_normal((1, H, S, D)).astype(np.float16) for _ in range(3))
w = (rng.standard_normal((D, 91)) / 8).astype(np.float16)     # a product of the output: an interim plan
scale = np.array(1 / np.sqrt(D), np.float16)
nodes = [
    helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
    helper.make_node("MatMul", ["q", "kt"], ["s"]),
    helper.make_node("Mul", ["s", "scale"], ["ss"]),
    helper.make_node("Softmax", ["ss"], ["p"], axis=-1),
    helper.make_node("MatMul", ["p", "v"], ["o"]),
    helper.make_node("MatMul", ["o", "w"], ["y"]),
]
f16 = lambda n, s: helper.make_tensor_value_info(n, T.FLOAT16, s)
g = helper.make_graph(nodes, "g", [f16("q", q.shape), f16("k", k.shape), f16("v", v.shape)],
                      [f16("o", [1, H, S, D]), f16("y", [1, H, S, 91])],
                      [numpy_helper.from_array(w, "w"), numpy_helper.from_array(scale, "scale")])
model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
options = {{"cooperative_matrix": "1"}}
if dict(DEVS[0].ep_metadata).get("wgpu.software") == "1":
    options["emulate_tensor_cores"] = "1"
sess = session(model, options=options)
o = np.full((1, H, S, D), np.nan, np.float16)
y = np.full((1, H, S, 91), np.nan, np.float16)
io = sess.io_binding()
for name, arr in (("q", q), ("k", k), ("v", v)):
    io.bind_cpu_input(name, arr)
io.bind_output("o", "cpu", 0, np.float16, o.shape, o.ctypes.data)
io.bind_output("y", "cpu", 0, np.float16, y.shape, y.ctypes.data)
sess.run_with_iobinding(io)
s64 = q.astype(np.float64) @ np.swapaxes(k.astype(np.float64), -1, -2) / np.sqrt(D)
p64 = np.exp(s64 - s64.max(-1, keepdims=True))
want_o = (p64 / p64.sum(-1, keepdims=True)) @ v.astype(np.float64)
want_y = want_o @ w.astype(np.float64)
assert np.abs(o - want_o).max() < 5e-3, np.abs(o - want_o).max()
assert np.abs(y - want_y).max() / np.abs(want_y).max() < 2e-3
st = locator.startup_stats(LIB)
print("RESULT", json.dumps({{"interim": st["interim"]["count"], "wait_ms": st["pipeline_wait"]["ms"]}}))
"""


def test_a_tensor_core_attention_runs_unfused_until_its_own_pipelines_compile(lib_path):
    # The exported pattern's fused step takes two SIMT products and a softmax (ops/attention/unfused.rs) while its
    # tensor-core pipeline compiles; the product of its output takes its own interim plan. Neither waits.
    seed = int(np.random.default_rng().integers(2**31))
    python = str(Path(__file__).resolve().parents[1] / "python")
    code = "import json\n" + ATTENTION.format(python=python, seed=seed)
    env = {"ONNXRUNTIME_EP_WGPU_TEST_SLOW_COMPILE": "_coop_:3000"}
    r = run_script(lib_path, code, env=env, timeout=300)
    assert r.returncode == 0, describe(r)
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert line, describe(r)
    got = json.loads(line[-1][len("RESULT "):])
    assert got["interim"] == 2, got
    assert got["wait_ms"] < 3000 / 2, got
