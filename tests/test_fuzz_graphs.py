"""Random small ONNX graphs run with CPU fallback allowed must give the CPU EP's results, NaN positions and infinities
included; graphs whose values come near the type's overflow limit are compared by shape only (see near_overflow).

The graphs mix products (MatMul, Gemm, fork/join and crossing products), elementwise ops (unary, binary with
numpy broadcasting, comparisons, And/Or/Not, IsNaN, Where, Clip, Cast between float32/float16/int32/int64/bool,
runs of them that fusion merges into one kernel), Softmax/LogSoftmax, LayerNormalization, Reduce{Mean,Sum,Max,Min,SumSquare,L1,L2}
and layout ops (Reshape, Transpose with any perm, Concat, Slice with negative steps and clamped bounds, Gather with
constant or run-time indices, Squeeze/Unsqueeze), over constants, symbolic dims, zero-size dims, float16 graphs and
the odd NaN/Inf, at opset 17 or 20. Values are tracked as exact or not (see EXACT_OPS in fuzz_graph_gen.py, the generator): discontinuous ops
(comparisons, Floor/Ceil/Round, Cast to an integer) and ill-conditioned ones (SENSITIVE) only see exact values,
so a correct last-bit difference never flips a result.

Each graph's seed is in the failure message; replay one with ONNXRUNTIME_EP_WGPU_FUZZ_SEED=<seed>
ONNXRUNTIME_EP_WGPU_FUZZ_ITERATIONS=1. ONNXRUNTIME_EP_WGPU_FUZZ_ITERATIONS sets the number of graphs (default 150,
for CI) and ONNXRUNTIME_EP_WGPU_FUZZ_SECONDS a time budget after which no new graph starts (default 150 s: CI has
two cores); run more by hand. ONNXRUNTIME_EP_WGPU_FUZZ_TENSOR_CORES (default 0.25) is the share of graphs run with the
tensor-core plans (`tensor_core_options`; about one graph in fifteen reaches a coop kernel: its products must be
16-byte aligned). ONNXRUNTIME_EP_WGPU_FUZZ_PROGRESS=<file> writes each graph's seed there before the graph runs, so
a crash of the process (no failure message) still names its graph."""

from __future__ import annotations

import os
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

import models
from fuzz_graph_gen import GraphGen

ITERATIONS = int(os.environ.get("ONNXRUNTIME_EP_WGPU_FUZZ_ITERATIONS", "150"))
BASE_SEED = os.environ.get("ONNXRUNTIME_EP_WGPU_FUZZ_SEED")
SECONDS = float(os.environ.get("ONNXRUNTIME_EP_WGPU_FUZZ_SECONDS", "150"))
PROGRESS = os.environ.get("ONNXRUNTIME_EP_WGPU_FUZZ_PROGRESS")
# ORT's own graph transformers that crash the process on graphs the fuzzer builds, left out of our EP's sessions
# (they only rewrite the nodes the CPU EP runs). On x86-64 with AVX2, NchwcTransformer dereferences null on an
# fp16 `Transpose → MatMul` (ORT issue 28392; ORT 1.24–1.32): on a discrete GPU the offload rule leaves such tiny
# nodes to the CPU EP, and seed 912509 crashed the H100 run (docs/reliability/bugs.md, ORT bug 6).
CPU_EP_CRASHES = ["NchwcTransformer"]
# The share of graphs run with the tensor-core plans (emulated on the software adapter): products as coop GEMMs with
# their fused epilogues, float32 products split in three f16 products, attention on the flash kernel.
TENSOR_CORES = float(os.environ.get("ONNXRUNTIME_EP_WGPU_FUZZ_TENSOR_CORES", "0.25"))


def near_overflow(x):
    """Finite values beyond 1% of the type's limit. From there on, where a sum overflows (and so where Inf − Inf
    makes NaN) depends on the order and the precision of accumulation, which legitimately differ between two correct
    GEMMs: ours accumulates float16 in f32. Infinities alone are fine (their arithmetic does not depend on order)."""
    if x.dtype.kind != "f":
        return False
    limit = 0.01 * float(np.finfo(x.dtype).max)
    return bool((np.isfinite(x) & (np.abs(x.astype(np.float64)) > limit)).any())


def overflowed_in_f16(model, feeds, values):
    """Whether a float16 value of the graph is infinite while no input or constant is: an overflow. Where it happens
    depends on the precision each op computes in, and ONNX Runtime's CPU EP runs the ops it has no float16 kernel for
    (Exp among them) in float32 between inserted Casts, so a value that is Inf in float16 reaches the next such op
    as a finite float32 (seed 745716: Exp gives 509000, stored as Inf, yet LogSoftmax took 509000 and gave 0 and
    −Inf, where float16 arithmetic gives Inf − Inf = NaN)."""
    constants = [numpy_helper.to_array(t) for t in model.graph.initializer]
    if any(x.dtype.kind == "f" and not np.isfinite(x).all() for x in list(feeds.values()) + constants):
        return False
    return any(v.dtype == np.float16 and np.isinf(v).any() for v in values)


def close(got, want, dtype, nonfinite_upstream=False):
    """Same NaN positions, same infinities, close finite values; integers and booleans equal.

    With `nonfinite_upstream` (an intermediate value of the graph was NaN or ±Inf), positions where the reference
    is not finite are not compared: Vulkan drivers may assume no NaN/Inf in float arithmetic unless the shader asks
    for `SignedZeroInfNanPreserve`, which WGSL cannot, and llvmpipe folds e.g. (c + x) − x to c inside one fused
    kernel (seed 949125753). Single ops keep ONNX's NaN/Inf results (their own tests and the node tests check
    them); a NaN of ours where the reference is finite still fails."""
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
        return
    if nonfinite_upstream:
        finite = np.isfinite(want)
        got, want = np.where(finite, got, 0).astype(got.dtype), np.where(finite, want, 0).astype(want.dtype)
    rtol, atol = (2e-3, 2e-3) if dtype == np.float32 and want.dtype == np.float32 else (5e-2, 5e-2)
    scale = max(1.0, float(np.nanmax(np.abs(np.where(np.isinf(want), 0, want)), initial=0)))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol * scale, equal_nan=True)


def _reference_session(model):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def _with_positive_zeros(model, types):
    """`model` with every divisor (Div's second input, Reciprocal's input) passed through `x + 0`, which makes a −0
    +0 and leaves every other value as it is."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    nodes = []
    for i, node in enumerate(out.graph.node):
        k = {"Div": 1, "Reciprocal": 0}.get(node.op_type)
        name = node.input[k] if k is not None and len(node.input) > k else ""
        if types.get(name) in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16):
            zero = helper.make_tensor(f"_zero{i}", types[name], [], [0.0])
            out.graph.initializer.append(zero)
            nodes.append(helper.make_node("Add", [name, zero.name], [f"_pz{i}"]))
            node.input[k] = f"_pz{i}"
        nodes.append(node)
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    return out


def _differ(a, b):
    return any(x.shape != y.shape or not np.array_equal(x, y, equal_nan=x.dtype.kind == "f") for x, y in zip(a, b))


def nearly_constant_rows(model, named, dtype):
    """Whether a LayerNormalization normalises a row whose spread is within its input's rounding noise (seed
    629513319: a row of one broadcast value, divided in f16 on the CPU EP and in f32 by our fused kernel, then
    normalised with epsilon 1e-12): its output is that noise times 1/√(var + ε), so two correct roundings of the
    input give different outputs."""
    rel = 1e-3 if dtype == np.float16 else 1e-6
    atol = 5e-2 if dtype == np.float16 else 2e-3
    for node in model.graph.node:
        if node.op_type != "LayerNormalization" or node.input[0] not in named:
            continue
        x = named[node.input[0]].astype(np.float64)
        axis = next((a.i for a in node.attribute if a.name == "axis"), -1) % max(x.ndim, 1)
        width = int(np.prod(x.shape[axis:]))
        if x.size == 0 or width < 2 or not np.isfinite(x).all():
            continue  # a row of one element normalises to exactly 0 on both
        rows = x.reshape(-1, width)
        noise = np.abs(rows).max(axis=1) * rel
        if (rows.std(axis=1) <= noise / atol).any():
            return True
    return False


# Errors that name a documented limit of ours (docs/RELIABILITY.md §8): a tensor past one storage binding or buffer,
# and a row whose kernel would loop past llvmpipe's 65535 iterations per invocation (Mesa gallivm's loop limiter,
# which stops the loops silently; seed 278672796 found a LayerNormalization over one row of 23,040,000 wrong before
# such rows failed clearly). Reductions split long rows, so they never meet it.
LIMITS = ("in one storage binding; the device allows", "exceeds the device's max buffer size",
          "the CPU adapter (llvmpipe) stops every loop")


# The reference keeps every value of a graph, intermediates included, so a graph whose values add up past this is
# not run: seed 717220 broadcast a Min of [23, 27, 1, 1, 15] against [23, 405] into 11.6 GiB, and the reference
# passed 24 GB and was killed by the kernel's OOM killer, taking the whole fuzz run with it.
REFERENCE_BUDGET = 2 << 30
_ITEM_BYTES = {onnx.TensorProto.FLOAT16: 2, onnx.TensorProto.DOUBLE: 8, onnx.TensorProto.INT64: 8,
               onnx.TensorProto.BOOL: 1, onnx.TensorProto.UINT8: 1, onnx.TensorProto.INT8: 1}


def value_bytes(model, feeds):
    """Bytes of every value of `model` (inputs at the shapes of `feeds`, intermediates and outputs) as ONNX's shape
    inference gives them; None where it cannot tell (an unknown shape, or inference fails), which runs the graph."""
    fixed = onnx.ModelProto()
    fixed.CopyFrom(model)
    for value in fixed.graph.input:
        for dim, n in zip(value.type.tensor_type.shape.dim, feeds[value.name].shape if value.name in feeds else ()):
            dim.Clear()
            dim.dim_value = n
    try:
        inferred = onnx.shape_inference.infer_shapes(fixed, data_prop=True).graph
    except Exception:  # noqa: BLE001
        return None
    total = sum(x.nbytes for x in feeds.values())
    for value in list(inferred.value_info) + list(inferred.output):
        t = value.type.tensor_type
        if not t.HasField("shape") or any(not d.HasField("dim_value") for d in t.shape.dim):
            return None
        total += int(np.prod([d.dim_value for d in t.shape.dim], dtype=np.int64)) * _ITEM_BYTES.get(t.elem_type, 4)
    return total


def run_reference(model, feeds):
    """The CPU EP without graph optimizations (ORT 1.31's CPU fusions have bugs the fuzzer hit: Transpose → MatMul
    with a 1-D B becomes a wrong FusedMatMul; the reference should be the plain ONNX semantics). Returns the outputs,
    whether any value of the graph, intermediates included, comes near overflow or depends on the sign of a zero
    (see below), and whether any is NaN or ±Inf.

    The sign of a zero is not ours to keep: a Vulkan driver may assume no signed zeros unless the shader asks for
    `SignedZeroInfNanPreserve`, which WGSL cannot, and llvmpipe folds Relu → Clip into a max that makes −0 +0
    (seed 1662820464: Ceil gives −0, a division by it −Inf, Erf −1; ours +1). Where the reference changes when
    every divisor's −0 is made +0, the graph is compared by shape only, as near overflow; so is one that normalises
    nearly constant rows (`nearly_constant_rows`)."""
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    declared = {o.name for o in probe.graph.output}
    types = {vi.name: vi.type.tensor_type.elem_type for vi in onnx.shape_inference.infer_shapes(model).graph.value_info}
    types.update({v.name: v.type.tensor_type.elem_type for v in model.graph.input})
    types.update({t.name: t.data_type for t in model.graph.initializer})
    for node in probe.graph.node:
        for name in node.output:
            if name and name not in declared:
                probe.graph.output.append(helper.make_tensor_value_info(name, types[name], None))
    values = _reference_session(probe).run(None, feeds)
    nonfinite = any(v.dtype.kind == "f" and not np.isfinite(v).all() for v in values)
    want = values[: len(model.graph.output)]
    zero_signed = nonfinite and _differ(want, _reference_session(_with_positive_zeros(model, types)).run(None, feeds))
    named = dict(feeds, **{o.name: v for o, v in zip(probe.graph.output, values)})
    dtype = next((v.dtype for v in feeds.values() if v.dtype.kind == "f"), np.float32)
    relaxed = (zero_signed or nearly_constant_rows(model, named, dtype) or any(near_overflow(v) for v in values)
               or overflowed_in_f16(model, feeds, values))
    return want, relaxed, nonfinite


def tensor_core_options(ep_devices, seed):
    """EP options for graph `seed`: the tensor-core plans for a share of the graphs (drawn from a generator of their
    own, so each seed still builds the same graph), emulated where the adapter is the software one."""
    if np.random.default_rng([seed, 1]).random() >= TENSOR_CORES:
        return None
    software = dict(ep_devices[0].ep_metadata).get("wgpu.software") == "1"
    return dict({"emulate_tensor_cores": "1"} if software else {}, f32_split="1", attention="flash")


def optimized_cpu(model, feeds):
    """The CPU EP with ORT's default graph optimizations (less those in CPU_EP_CRASHES), as it runs the nodes our EP
    leaves to it."""
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"],
                                disabled_optimizers=CPU_EP_CRASHES)
    return sess.run(None, feeds)


def agrees_with_optimized_cpu(model, feeds, got, dtype, nonfinite) -> bool:
    """Whether our outputs match the CPU EP with its graph optimizations where they differ from the reference
    without them. On a discrete GPU the offload rule leaves small nodes to the CPU EP, which optimizes them; where
    one of its fusions changes a result, the difference is ORT's (ORT 1.30's CPU EP gives seed 914204's
    `MatMul([0, 0, 0], [0, 10]) + [10]` the shape [0, 10, 10]; 1.32 and the unoptimized run [0, 0, 10]:
    docs/reliability/bugs.md, ORT bug 7). Such graphs are counted apart, never as matched."""
    try:
        theirs = optimized_cpu(model, feeds)
        for g, w in zip(got, theirs):
            close(g, w, dtype, nonfinite)
    except Exception:  # noqa: BLE001
        return False
    return len(got) == len(theirs)


def test_random_graphs_match_cpu(make_session, ep_devices):
    base = int(BASE_SEED) if BASE_SEED else int(np.random.default_rng().integers(0, 2**31))
    ran = refused = relaxed = too_big = oversized = tried = cores = ort_optimized = 0
    deadline = time.monotonic() + SECONDS
    for i in range(ITERATIONS):
        if time.monotonic() > deadline:
            break
        tried += 1
        seed = base + i
        if PROGRESS:
            with open(PROGRESS, "w") as f:
                f.write(f"{seed}\n")
        rng = np.random.default_rng(seed)
        dtype = np.float16 if rng.random() < 0.2 else np.float32
        model, feeds = GraphGen(rng, dtype).build(int(rng.integers(1, 16)))
        if (value_bytes(model, feeds) or 0) > REFERENCE_BUDGET:
            oversized += 1
            continue
        try:
            want, overflowing, nonfinite = run_reference(model, feeds)
        except Exception:  # noqa: BLE001
            # E.g. an op without a float16 CPU kernel: nothing to compare with, but ours must still not crash.
            refused += 1
            try:
                make_session(model, fallback=True, disabled_optimizers=CPU_EP_CRASHES).run(None, feeds)
            except Exception:  # noqa: BLE001
                pass
            continue
        options = tensor_core_options(ep_devices, seed)
        cores += options is not None
        try:
            got = make_session(model, options, fallback=True, disabled_optimizers=CPU_EP_CRASHES).run(None, feeds)
        except Exception as e:
            if any(limit in str(e) for limit in LIMITS):
                # A tensor past one storage binding or one buffer (seed 23886673: a Where of 2.7 GB), known only at
                # run time (symbolic dims), or a row past llvmpipe's loop limit: our documented limits
                # (docs/RELIABILITY.md §8), reported as clear errors; the CPU EP has no such limits.
                too_big += 1
                continue
            # Acceptable only where ONNX Runtime itself fails the model with its usual optimizations (its
            # MatMul+Add fusion builds an invalid Reshape for a 1-D operand of length 0).
            try:
                optimized_cpu(model, feeds)
            except Exception:  # noqa: BLE001
                refused += 1
                continue
            raise AssertionError(f"graph seed {seed} ({np.dtype(dtype).name}, options {options}): {e}\n"
                                 f"{helper.printable_graph(model.graph)}") from e
        if overflowing:
            # Only shapes and types are compared: see near_overflow and run_reference.
            relaxed += 1
            assert [(g.shape, g.dtype) for g in got] == [(w.shape, w.dtype) for w in want], seed
            ran += 1
            continue
        try:
            for g, w in zip(got, want):
                close(g, w, dtype, nonfinite)
        except AssertionError as e:
            if agrees_with_optimized_cpu(model, feeds, got, dtype, nonfinite):
                ort_optimized += 1
                continue
            raise AssertionError(f"graph seed {seed} ({np.dtype(dtype).name}, options {options}): {e}\n"
                                 f"{helper.printable_graph(model.graph)}") from e
        ran += 1
    print(
        f"fuzz: {ran} graphs matched the CPU EP ({relaxed} of them ill-conditioned: shapes only; {cores} tried on the "
        f"tensor-core plans), "
        f"{refused} refused by ONNX Runtime itself, {ort_optimized} where only ORT's optimized CPU EP agrees (nodes "
        f"left to it), {too_big} past a documented limit (a clear error), "
        f"{oversized} not run (values past {REFERENCE_BUDGET >> 30} GiB), "
        f"seeds {base}..{base + tried - 1}" + (f" (time budget of {SECONDS:.0f} s reached)" if tried < ITERATIONS else "")
    )
    assert tried >= min(ITERATIONS, 20), f"only {tried} graphs in the time budget"
    assert ran >= tried // 2


def test_only_the_optimized_cpu_eps_own_result_is_set_apart():
    """The relaxation for ORT's optimized CPU EP accepts its exact outputs and nothing else: a value off by one ulp
    of the reference's tolerance, a wrong shape or a missing output is still a failure."""
    g = helper.make_graph([helper.make_node("MatMul", ["a", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["y"])],
                          "g", [helper.make_tensor_value_info("a", onnx.TensorProto.FLOAT, [3, 5])],
                          [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.random.default_rng(1).standard_normal((5, 7), np.float32), "w"),
                           numpy_helper.from_array(np.random.default_rng(2).standard_normal(7, np.float32), "b")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    feeds = {"a": np.random.default_rng(3).standard_normal((3, 5), np.float32)}
    theirs = optimized_cpu(model, feeds)
    assert agrees_with_optimized_cpu(model, feeds, theirs, np.float32, False)
    off = [theirs[0] + np.float32(0.05)]
    assert not agrees_with_optimized_cpu(model, feeds, off, np.float32, False)
    assert not agrees_with_optimized_cpu(model, feeds, [theirs[0][:, :6]], np.float32, False)
    assert not agrees_with_optimized_cpu(model, feeds, [], np.float32, False)


def test_values_are_measured_before_the_reference_keeps_them():
    """Seed 717220's shape of graph: Min broadcasts [23, 27, 15, 1, 1] against [9315, 1] (347 MB), and a MatMul by
    [1, 35] makes that 12.1 GB, which the fuzzer must not run; the same graph over small inputs is measured exactly
    (inputs, the Min and the MatMul)."""

    def graph(a_shape, b_shape):
        nodes = [helper.make_node("Min", ["a", "b"], ["m"]), helper.make_node("MatMul", ["m", "w"], ["y"])]
        inputs = [helper.make_tensor_value_info("a", onnx.TensorProto.FLOAT, ["n", None, 15, 1, 1]),
                  helper.make_tensor_value_info("b", onnx.TensorProto.FLOAT, [None, 1])]
        w = numpy_helper.from_array(np.ones((1, 35), np.float32), "w")
        g = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)], [w])
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        return model, {"a": np.zeros(a_shape, np.float32), "b": np.zeros(b_shape, np.float32)}

    big = value_bytes(*graph((23, 27, 15, 1, 1), (9315, 1)))
    assert big is not None and big > REFERENCE_BUDGET and big > 11 << 30, big
    small = value_bytes(*graph((2, 3, 15, 1, 1), (5, 1)))
    assert small == 4 * (90 + 5 + 2 * 3 * 15 * 5 + 2 * 3 * 15 * 5 * 35), small


def test_a_float16_overflow_is_compared_by_shape_only():
    """Seed 745716's pattern: Exp overflows float16 and LogSoftmax reads it. The CPU EP computes both in float32
    (-inf and 0), float16 arithmetic gives NaN, so the graph is ill-conditioned; an Inf fed in is not an overflow."""
    nodes = [helper.make_node("Exp", ["x"], ["e"]), helper.make_node("LogSoftmax", ["e"], ["y"], axis=-1)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT16, [4])],
                          [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT16, [4])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)], ir_version=9)  # ORT 1.30 loads ≤ 11
    overflowing = {"x": np.array([1, 2, 13, 3], np.float16)}
    want, relaxed, nonfinite = run_reference(model, overflowing)
    assert relaxed and nonfinite and not np.isnan(want[0]).any(), want  # the CPU EP: -inf and 0
    assert not run_reference(model, {"x": np.array([1, 2, 3, 4], np.float16)})[1]
    fed = {"x": np.array([1, 2, np.inf, 3], np.float16)}
    assert not overflowed_in_f16(model, fed, [fed["x"], np.exp(fed["x"])])


# Graphs the fuzzers found failing, kept as fixed cases.


def _run_all_on_gpu(make_session, nodes, inputs, weights, feeds):
    inits = [numpy_helper.from_array(w, name) for name, w in weights.items()]
    model = models.finish(nodes, [models.tensor(n, np.float32, s) for n, s in inputs], [models.tensor("Y", np.float32, None)], inits)
    return make_session(model).run(None, feeds)[0]  # CPU fallback disabled: every node is ours


def test_sum_of_two_products_of_one_value(make_session):
    # The fused Add makes one product read the other's result, which may come later in the partition.
    rng = np.random.default_rng()
    w = {f"W{i}": rng.uniform(-1, 1, (8, 8)).astype(np.float32) for i in range(3)}
    x = rng.uniform(-1, 1, (2, 3, 8)).astype(np.float32)
    z = x @ w["W0"]
    for order in (["p", "q"], ["q", "p"]):
        nodes = [
            helper.make_node("MatMul", ["X", "W0"], ["z"]),
            helper.make_node("MatMul", ["z", "W1"], ["p"]),
            helper.make_node("MatMul", ["z", "W2"], ["q"]),
            helper.make_node("Add", order, ["Y"]),
        ]
        got = _run_all_on_gpu(make_session, nodes, [("X", [2, 3, 8])], w, {"X": x})
        np.testing.assert_allclose(got, z @ w["W1"] + z @ w["W2"], rtol=1e-4, atol=1e-4)


def test_products_crossing_two_partitions(make_session):
    # a and b start separate partitions; n = a·b and m = b·n join them so that no path leaves a partition and
    # re-enters it through the other (two fused nodes feeding each other). The Rust fuzzer checks convexity;
    # here the result must simply be right with every node on the GPU.
    rng = np.random.default_rng()
    w = {f"W{i}": rng.uniform(-1, 1, (8, 8)).astype(np.float32) for i in range(2)}
    x1, x2 = (rng.uniform(-1, 1, (8, 8)).astype(np.float32) for _ in range(2))
    nodes = [
        helper.make_node("MatMul", ["X1", "W0"], ["a"]),
        helper.make_node("MatMul", ["X2", "W1"], ["b"]),
        helper.make_node("MatMul", ["a", "b"], ["n"]),
        helper.make_node("MatMul", ["b", "n"], ["Y"]),
    ]
    got = _run_all_on_gpu(make_session, nodes, [("X1", [8, 8]), ("X2", [8, 8])], w, {"X1": x1, "X2": x2})
    a, b = x1 @ w["W0"], x2 @ w["W1"]
    np.testing.assert_allclose(got, b @ (a @ b), rtol=1e-4, atol=1e-4)


def test_layer_norm_of_values_whose_squares_pass_float32(make_session, run_cpu):
    # Seed 1547369754: LayerNormalization of Exp's large but finite values made NaN rows (Inf − Inf between the
    # mean square and the squared mean) where the CPU EP gives 0, as ONNX's definition with the float32 stash_type
    # does (x² passes float32's range from |x| ≈ 1.8e19, the variance is +Inf). Rows below and past that limit.
    # Between the two (no square clearly past the range, their sum near it) the CPU EP's result depends on the
    # order of its float sums: rows there are drawn again. A row whose first element lies far from the rest (the
    # last row: e^43 ≈ 4.7e18, the rest below e^20) took our shifted squares past the range where the CPU EP's
    # stayed in it (0 against finite values).
    rng = np.random.default_rng()
    x = (rng.uniform(-1, 1, (5, 23)) * np.array([[1.0], [30.0], [50.0], [80.0], [20.0]])).astype(np.float32)
    x[4, 0] = 43.0
    for r in range(4):
        while True:
            sq = np.exp(x[r].astype(np.float64)) ** 2
            if sq.sum() < 1e38 or sq.max() > 3.6e38:
                break
            x[r] = (rng.uniform(-1, 1, 23) * [1.0, 30.0, 50.0, 80.0][r]).astype(np.float32)
    scale = rng.uniform(0.5, 1.5, 23).astype(np.float32)
    nodes = [
        helper.make_node("Exp", ["X"], ["e"]),
        helper.make_node("LayerNormalization", ["e", "S"], ["Y"], axis=-1, epsilon=0.1),
    ]
    model = models.finish(
        nodes, [models.tensor("X", np.float32, [5, 23])], [models.tensor("Y", np.float32, None)],
        [numpy_helper.from_array(scale, "S")],
    )
    got = make_session(model).run(None, {"X": x})[0]
    want = run_cpu(model, {"X": x})[0]
    assert np.isfinite(want).all() and np.isfinite(got).all()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
