"""End-to-end: the built library in the real ONNX Runtime, on the Vulkan software adapter in CI, against the CPU
EP. Fresh random data every run; fallback to the CPU EP disabled wherever every node must be ours."""

from __future__ import annotations

import subprocess
import sys
import threading

import numpy as np
import onnxruntime as ort
import pytest

import models
from onnx import helper

RNG = np.random.default_rng()
TOL = {np.float32: (1e-4, 1e-4), np.float16: (3e-2, 1e-2)}


def rand(shape, dtype=np.float32):
    return RNG.uniform(-1, 1, size=shape).astype(dtype)


def assert_close(got, want, dtype=np.float32):
    rtol, atol = TOL[np.dtype(dtype).type]
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol * max(1, np.sqrt(got.size / 1e3)))


def test_device_is_listed_with_adapter_metadata(ep_devices):
    dev = ep_devices[0]
    assert dev.ep_name == "WgpuExecutionProvider"
    meta = dev.ep_metadata
    for key in ("wgpu.adapter", "wgpu.backend", "wgpu.software", "wgpu.adapter_index", "version"):
        assert key in meta, meta
    assert meta["wgpu.software"] in ("0", "1")


@pytest.mark.smoke
def test_session_lists_our_provider(make_session):
    sess = make_session(models.matmul([4, 8], [8, 3]))
    assert sess.get_providers()[0] == "WgpuExecutionProvider"
    a, b = rand((4, 8)), rand((8, 3))
    assert_close(sess.run(None, {"A": a, "B": b})[0], a @ b)


MATMUL_SHAPES = [
    ([1, 1], [1, 1]),
    ([7, 129], [129, 1000]),
    ([1000, 7], [7, 1]),
    ([129], [129, 33]),
    ([33, 129], [129]),
    ([129], [129]),
    ([3, 7, 65], [65, 130]),
    ([2, 1, 7, 9], [3, 9, 5]),
    ([1, 4, 33, 17], [2, 1, 17, 66]),
    ([5, 1, 2, 3, 7, 9], [9, 4]),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("a_shape,b_shape", MATMUL_SHAPES)
def test_matmul_matches_cpu(make_session, run_cpu, a_shape, b_shape, dtype):
    model = models.matmul(a_shape, b_shape, dtype)
    feeds = {"A": rand(a_shape, dtype), "B": rand(b_shape, dtype)}
    got = make_session(model).run(None, feeds)[0]
    assert_close(got, run_cpu(model, feeds)[0], dtype)


def test_matmul_with_dynamic_dims_and_constant_weights(make_session, run_cpu):
    w = rand((64, 48))
    model = models.matmul(None, None, b_value=w, dims=(["batch", "seq", 64], None))
    sess = make_session(model)
    for shape in [(1, 1, 64), (2, 7, 64), (3, 129, 64), (1, 1000, 64)]:
        a = rand(shape)
        assert_close(sess.run(None, {"A": a})[0], a @ w)


GEMM_CASES = [
    dict(m=7, n=129, k=33, transA=0, transB=0, c=[129]),
    dict(m=129, n=7, k=1000, transA=1, transB=0, c=[129, 7]),
    dict(m=1, n=1000, k=7, transA=0, transB=1, c=[1, 1000]),
    dict(m=65, n=66, k=67, transA=1, transB=1, c=[65, 1], alpha=0.5, beta=-2.0),
    dict(m=5, n=6, k=7, transA=0, transB=0, c=[], alpha=2.0),
    dict(m=5, n=6, k=7, transA=0, transB=1, c=None, alpha=1.5, beta=3.0),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("case", GEMM_CASES, ids=lambda c: "m{m}n{n}k{k}tA{transA}tB{transB}".format(**c))
def test_gemm_matches_cpu(make_session, run_cpu, case, dtype):
    m, n, k = case["m"], case["n"], case["k"]
    a_shape = [k, m] if case["transA"] else [m, k]
    b_shape = [n, k] if case["transB"] else [k, n]
    attrs = {key: case[key] for key in ("transA", "transB", "alpha", "beta") if key in case}
    model = models.gemm(a_shape, b_shape, case["c"], dtype, **attrs)
    feeds = {"A": rand(a_shape, dtype), "B": rand(b_shape, dtype)}
    if case["c"] is not None:
        feeds["C"] = rand(case["c"], dtype)
    assert_close(make_session(model).run(None, feeds)[0], run_cpu(model, feeds)[0], dtype)


@pytest.mark.parametrize("activation", ["Relu", "Clip", None])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_matmul_add_activation_chain_is_one_partition(make_session, run_cpu, activation, dtype):
    model = models.mlp([2, 37], [64, 129, 65, 7], dtype, activation=activation)
    feeds = {"X": rand((2, 37, 64), dtype)}
    sess = make_session(model)  # CPU fallback disabled: every MatMul/Add/act node is ours
    assert_close(sess.run(None, feeds)[0], run_cpu(model, feeds)[0], dtype)


def _two_products_around(node_op, **attrs):
    """X → MatMul → `node_op` → MatMul → Y, fp32, [5, 16] → [5, 8]."""
    from onnx import numpy_helper

    w1, w2 = rand((16, 32)), rand((32, 8))
    inits = [numpy_helper.from_array(w1, "W1"), numpy_helper.from_array(w2, "W2")]
    inputs = ["h"]
    if node_op == "TopK":  # all 32 values, sorted: the shape stays [5, 32]
        inits.append(numpy_helper.from_array(np.array([32], np.int64), "K"))
        inputs.append("K")
    outputs = ["s", "idx"] if node_op == "TopK" else ["s"]
    nodes = [
        helper.make_node("MatMul", ["X", "W1"], ["h"], name="mm1"),
        helper.make_node(node_op, inputs, outputs, name="middle", **attrs),
        helper.make_node("MatMul", ["s", "W2"], ["Y"], name="mm2"),
    ]
    return models.finish(nodes, [models.tensor("X", np.float32, [5, 16])], [models.tensor("Y", np.float32, None)], inits)


def test_unsupported_node_in_between_runs_on_cpu(make_session, run_cpu, run_profiled):
    model = _two_products_around("TopK", axis=-1)  # TopK is not ours
    feeds = {"X": rand((5, 16))}
    with pytest.raises(Exception, match="(?i)fallback|assigned|CPU"):
        make_session(model)  # TopK must run on CPU, which is disabled
    got = make_session(model, fallback=True).run(None, feeds)[0]
    assert_close(got, run_cpu(model, feeds)[0])
    # Two partitions of ours (one per product), the TopK between them on the CPU EP. offload=all: on a discrete
    # GPU (the H200) the cost rule rightly hands such tiny islands back to the CPU EP.
    _, nodes = run_profiled(model, feeds, fallback=True, options={"offload": "all"})
    assert [p for p, _ in nodes] == ["WgpuExecutionProvider", "CPUExecutionProvider", "WgpuExecutionProvider"], nodes


@pytest.mark.parametrize("middle", ["Sigmoid", "Transpose", "Softmax"])
def test_ops_between_products_are_ours_and_one_partition(make_session, run_cpu, run_profiled, middle):
    # Once only products were ours, a Sigmoid/Transpose between two MatMuls ran on the CPU EP; now every node is
    # claimed on its own, and the chain is one partition.
    model = _two_products_around(middle, **({"perm": [0, 1]} if middle == "Transpose" else {}))
    feeds = {"X": rand((5, 16))}
    got = make_session(model).run(None, feeds)[0]  # CPU fallback disabled
    assert_close(got, run_cpu(model, feeds)[0])
    _, nodes = run_profiled(model, feeds)
    assert [p for p, _ in nodes] == ["WgpuExecutionProvider"], nodes


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_elementwise_graph_without_a_product_is_ours(make_session, run_cpu, run_profiled, dtype):
    # No MatMul anywhere: unary, binary with broadcasting, a comparison, Where, Cast and a Transpose, claimed on
    # their own; the elementwise runs fuse, but the result must be the CPU EP's.
    from onnx import numpy_helper

    nodes = [
        helper.make_node("Sigmoid", ["X"], ["a"]),
        helper.make_node("Mul", ["a", "S"], ["b"]),  # S broadcasts over rows
        helper.make_node("Greater", ["X", "Z"], ["c"]),
        helper.make_node("Where", ["c", "b", "X"], ["d"]),
        helper.make_node("Cast", ["d"], ["e"], to=models.elem(np.float32)),
        helper.make_node("Tanh", ["e"], ["f"]),
        helper.make_node("Cast", ["f"], ["g"], to=models.elem(dtype)),
        helper.make_node("Transpose", ["g"], ["Y"], perm=[1, 0]),
    ]
    inits = [numpy_helper.from_array(rand((1, 7), dtype), "S"), numpy_helper.from_array(np.array(0.1, dtype), "Z")]
    model = models.finish(nodes, [models.tensor("X", dtype, ["n", 7])], [models.tensor("Y", dtype, None)], inits)
    for n in (1, 33):
        feeds = {"X": rand((n, 7), dtype)}
        assert_close(make_session(model).run(None, feeds)[0], run_cpu(model, feeds)[0], dtype)
    _, ran = run_profiled(model, {"X": rand((3, 7), dtype)})
    assert [p for p, _ in ran] == ["WgpuExecutionProvider"], ran


def _plan_log(capfd, options, model, feeds):
    so = ort.SessionOptions()
    so.log_severity_level = 1
    devs = [d for d in ort.get_ep_devices() if d.ep_name == "WgpuExecutionProvider"]
    so.add_provider_for_devices(devs, options)
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    sess = ort.InferenceSession(model.SerializeToString(), sess_options=so, enable_fallback=0)
    capfd.readouterr()
    out = sess.run(None, feeds)[0]
    del sess
    log = capfd.readouterr().err
    return out, [line for line in log.splitlines() if "MatMul 'matmul'" in line]


@pytest.mark.parametrize("tiling,expected", [("64x64", "Tile64"), ("128x128", "Tile128"), ("splitk", "SplitK"), ("gemv", "Gemv")])
def test_forced_tiling_changes_the_plan(ep_devices, capfd, tiling, expected):
    a, b = rand((300, 200)), rand((200, 100))
    model = models.matmul([300, 200], [200, 100])
    out, lines = _plan_log(capfd, {"tiling": tiling}, model, {"A": a, "B": b})
    assert_close(out, a @ b)
    assert lines and expected in lines[0], lines


@pytest.mark.smoke
@pytest.mark.parametrize("options,needle", [({"no_such_option": "1"}, "no_such_option"), ({"tiling": "huge"}, "tiling"), ({"enable_f16": "maybe"}, "enable_f16"), ({"adapter": "no-such-gpu"}, "adapter")])
def test_bad_options_fail_session_creation(make_session, options, needle):
    with pytest.raises(Exception, match=needle):
        make_session(models.matmul([2, 3], [3, 4]), options)


def test_enable_f16_off_declines_f16_nodes(make_session, run_cpu):
    model = models.matmul([4, 8], [8, 3], np.float16)
    with pytest.raises(Exception):
        make_session(model, {"enable_f16": "0"})
    feeds = {"A": rand((4, 8), np.float16), "B": rand((8, 3), np.float16)}
    got = make_session(model, {"enable_f16": "0"}, fallback=True).run(None, feeds)[0]
    assert_close(got, run_cpu(model, feeds)[0], np.float16)


def test_incompatible_runtime_shapes_raise(make_session):
    model = models.matmul(None, None, dims=(["m", "k1"], ["k2", "n"]))
    sess = make_session(model)
    with pytest.raises(Exception, match="inner dimensions"):
        sess.run(None, {"A": rand((3, 4)), "B": rand((5, 6))})
    a, b = rand((3, 4)), rand((4, 6))
    assert_close(sess.run(None, {"A": a, "B": b})[0], a @ b)  # the session still works


def test_concurrent_runs_on_one_session(make_session):
    w = rand((96, 80))
    sess = make_session(models.matmul(None, None, b_value=w, dims=(["m", 96], None)))
    errors = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        try:
            for i in range(20):
                a = rng.uniform(-1, 1, size=(1 + (seed * 7 + i) % 50, 96)).astype(np.float32)
                np.testing.assert_allclose(sess.run(None, {"A": a})[0], a @ w, rtol=1e-4, atol=1e-4)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]


@pytest.mark.smoke
def test_register_run_unregister_in_a_fresh_process(lib_path):
    code = f"""
import numpy as np, onnxruntime as ort, sys
from onnx import helper
sys.path.insert(0, {str(__import__('pathlib').Path(__file__).parent)!r})
import models
for cycle in range(3):
    ort.register_execution_provider_library("cycle", {lib_path!r})
    devs = [d for d in ort.get_ep_devices() if d.ep_name == "WgpuExecutionProvider"]
    so = ort.SessionOptions(); so.add_provider_for_devices(devs, {{}})
    sess = ort.InferenceSession(models.matmul([3, 4], [4, 5]).SerializeToString(), sess_options=so, enable_fallback=0)
    a, b = np.ones((3, 4), np.float32), np.ones((4, 5), np.float32)
    assert (sess.run(None, {{"A": a, "B": b}})[0] == 4).all()
    # 3 MB in and out: the copy threads start, and must be joined before the library can go.
    neg = models.finish([helper.make_node("Neg", ["X"], ["Y"])], [models.tensor("X", np.float32, ["n"])],
                        [models.tensor("Y", np.float32, ["n"])])
    big = ort.InferenceSession(neg.SerializeToString(), sess_options=so, enable_fallback=0)
    x = np.random.default_rng(cycle).uniform(-1, 1, 750_003).astype(np.float32)
    assert (big.run(None, {{"X": x}})[0] == -x).all()
    del sess, big
    ort.unregister_execution_provider_library("cycle")
    # The factory is released: none of our threads may still run (ORT may unload the library). A
    # joined thread wakes its joiner before the kernel removes its task, so /proc may list it for a
    # moment after the join: a thread still there after a second was never joined.
    if sys.platform == "linux":
        import glob, time
        for _ in range(100):
            names = [open(f).read().strip() for f in glob.glob("/proc/self/task/*/comm")]
            if not [n for n in names if n.startswith("ep-wgpu")]:
                break
            time.sleep(0.01)
        assert not [n for n in names if n.startswith("ep-wgpu")], names
print("ok")
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-3000:]


def listed_devices(lib_path, env_value=None):
    """(software flags of our EP devices, stderr) of a fresh process that registers the library with
    ONNXRUNTIME_EP_WGPU_SOFTWARE_ADAPTER set to `env_value` (unset for None)."""
    import os

    code = f"""
import onnxruntime as ort
ort.register_execution_provider_library("listed", {lib_path!r})
print([d.ep_metadata["wgpu.software"] for d in ort.get_ep_devices() if d.ep_name == "WgpuExecutionProvider"])
"""
    env = {k: v for k, v in os.environ.items() if k != "ONNXRUNTIME_EP_WGPU_SOFTWARE_ADAPTER"}
    if env_value is not None:
        env["ONNXRUNTIME_EP_WGPU_SOFTWARE_ADAPTER"] = env_value
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    return eval(r.stdout.strip().splitlines()[-1]), r.stderr  # noqa: S307 (our own printed list)


def test_the_software_adapter_setting(lib_path):
    """ONNXRUNTIME_EP_WGPU_SOFTWARE_ADAPTER: unset, a software adapter (llvmpipe) gets an EP device only where no
    hardware adapter has one (ONNX Runtime's selection policies would rank it before the CPU EP on a GPU
    machine); 1 lists it beside hardware ones, 0 never; any other value is a warning that names the variable, and
    the default."""
    default, _ = listed_devices(lib_path)
    assert default and ("0" not in default or "1" not in default), default  # never both kinds by default
    always, _ = listed_devices(lib_path, "1")
    assert set(default) <= set(always), (default, always)
    never, _ = listed_devices(lib_path, "0")
    assert "1" not in never and never == [s for s in default if s == "0"], (default, never)
    bad, err = listed_devices(lib_path, "yes")
    assert bad == default and "ONNXRUNTIME_EP_WGPU_SOFTWARE_ADAPTER" in err and '"yes"' in err, err[-2000:]
