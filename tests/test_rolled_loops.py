"""Pipelines compiled from our own SPIR-V (option `rolled_loops`, `kernels/src/runtime/rolled.rs`).

On a Vulkan device the tensor-core kernels are compiled from SPIR-V the runtime writes (naga with wgpu-hal's options,
then `DontUnroll` on the product loops) and handed to the driver as passthrough modules. The software adapter has no
tensor cores, so the test-only `ONNXRUNTIME_EP_WGPU_TEST_PASSTHROUGH=gemm_` sends the SIMT GEMMs through the same
path here. The fused residual epilogue (`_res`) binds its operand at binding 6 of a layout without 5; wgpu-hal numbers
a layout's descriptors densely, so the module must name it binding 5, or it reads nothing (the fifty-fifth session
found Whisper fp16 wrong on an H100 so). Each case runs in a fresh process (the library reads the variables once);
outputs are poisoned with NaN before each run and compared with float64 on fresh random data."""

from __future__ import annotations

import re

import numpy as np
from subproc import describe, run_script

SCRIPT = """
from onnx import helper, numpy_helper, TensorProto as T

rng = np.random.default_rng({seed})
M, K, N = 67, 130, 91  # no tile multiples
results = {{}}
for dt, tt, tol in ((np.float32, T.FLOAT, 1e-5), (np.float16, T.FLOAT16, 3e-3)):
    x = rng.standard_normal((M, K)).astype(dt)
    r = rng.standard_normal((M, N)).astype(dt)
    w = (rng.standard_normal((K, N)) / 8).astype(dt)
    b = rng.standard_normal(N).astype(dt)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["p"]), helper.make_node("Add", ["p", "b"], ["q"]),
         helper.make_node("Add", ["q", "r"], ["y"])], "g",
        [helper.make_tensor_value_info("x", tt, x.shape), helper.make_tensor_value_info("r", tt, r.shape)],
        [helper.make_tensor_value_info("y", tt, [M, N])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    options = {{"interim_kernels": "0"}}
    if {rolled!r} is not None:
        options["rolled_loops"] = {rolled!r}
    sess = session(model, options=options)
    want = x.astype(np.float64) @ w.astype(np.float64) + b.astype(np.float64) + r.astype(np.float64)
    for _ in range(2):
        y = np.full((M, N), np.nan, dt)
        io = sess.io_binding()
        io.bind_cpu_input("x", x)
        io.bind_cpu_input("r", r)
        io.bind_output("y", "cpu", 0, dt, y.shape, y.ctypes.data)
        sess.run_with_iobinding(io)
        err = float(np.abs(y.astype(np.float64) - want).max() / np.abs(want).max())
        assert err < tol, (dt.__name__, err)
    results[dt.__name__] = err
print("ERRORS", results)
"""


def run_residual_products(lib_path, rolled):
    seed = int(np.random.default_rng().integers(2**31))
    env = {"ONNXRUNTIME_EP_WGPU_TEST_PASSTHROUGH": "gemm_", "ONNXRUNTIME_EP_WGPU_LOG_COMPILES": "1"}
    r = run_script(lib_path, SCRIPT.format(seed=seed, rolled=rolled), env=env, timeout=300)
    assert r.returncode == 0, describe(r)
    assert "ERRORS" in r.stdout, describe(r)
    return r, re.findall(r"^ep-wgpu compiling (\S+) rolled: \d+ loop\(s\) marked$", r.stderr, re.M)


def test_residual_products_from_our_spirv_match_float64(lib_path):
    r, rolled = run_residual_products(lib_path, None)
    # Both products took the passthrough path, each with its residual epilogue (binding 6 after a gap).
    res = [name for name in rolled if name.endswith("_res")]
    assert any(n.startswith("gemm_f32") for n in res) and any(n.startswith("gemm_f16") for n in res), describe(r)


def test_rolled_loops_0_compiles_through_wgpu(lib_path):
    r, rolled = run_residual_products(lib_path, "0")
    assert rolled == [], describe(r)
    assert "ep-wgpu compiling gemm_" in r.stderr, describe(r)
