"""ONNX's own node tests (`onnx.backend.test.case.node`) for every op we claim, run on our EP with CPU fallback
disabled, so a case passes only if every node of it ran here and matched ONNX's expected outputs.

Which cases: every single-node case of an op in OPS, and every expanded-function case (`*_expanded`) whose nodes
are all ours (Constant nodes become initializers). Each case is one of:

- run as is (the default): the session must be created with fallback disabled and match the expected outputs;
- in EXPECTED_DECLINED (`{case name: reason}`): session creation must fail because nobody may run the node (so a
  stale entry fails too). Cases declined only because a shape/axes input is a graph input (we run constant ones)
  also run as an adapted variant, `<case>+const`, with those inputs made initializers;
- single-node float32 cases also run in float16 (`<case>+f16`, every float32 tensor made float16), against ONNX's
  reference evaluator on the inputs rounded to float16;
- skipped only when the installed ONNX Runtime cannot load the case at all (an opset or IR version newer than it
  knows; named in the reason).

The per-op pass table: `python tests/test_onnx_node_tests.py` (prints markdown; ONNXRUNTIME_EP_WGPU_LIB picks the
library), or `pytest -s tests/test_onnx_node_tests.py -k table`; `node_test_table(make_session)` from Python.
"""

from __future__ import annotations

import collections
import re
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the case generators overflow on purpose (casts, empty reductions)
    from onnx.backend.test.case.node import collect_testcases

FAMILIES = {
    "matmul": ["MatMul", "Gemm"],
    "conv": ["Conv"],
    "unary": "Abs Neg Exp Log Sqrt Reciprocal Erf Tanh Sigmoid Relu LeakyRelu Gelu Sin Cos Floor Ceil Round Not IsNaN Clip".split(),
    "cnn": "MaxPool AveragePool GlobalMaxPool GlobalAveragePool BatchNormalization HardSigmoid HardSwish Softplus Mish Elu Selu PRelu Pad GroupNormalization InstanceNormalization Resize Upsample ConvTranspose".split(),
    "binary": "Add Sub Mul Div Pow Max Min Equal Less Greater LessOrEqual GreaterOrEqual And Or Where Cast".split(),
    "norm": ("LayerNormalization RMSNormalization Softmax LogSoftmax ReduceMean ReduceSum ReduceMax ReduceMin "
             "ReduceSumSquare ReduceL1 ReduceL2 ReduceProd ArgMax ArgMin").split(),
    "layout": "Transpose Reshape Flatten Squeeze Unsqueeze Identity Expand Concat Slice Split Gather".split(),
    "attention": ["Attention", "RotaryEmbedding"],
}
OPS = {op for ops in FAMILIES.values() for op in ops}
# Element types our kernels hold; a case with any other tensor type (or a sequence/optional) cannot be ours.
OUR_TYPES = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT32, TensorProto.INT64, TensorProto.BOOL}
# Inputs read at build time (shapes, axes, starts/ends/steps, split sizes): we run constant ones only. (Clip's bounds
# may be computed: a non-constant bound is an operand of the kernel.)
PARAM_INPUTS = {
    "Reshape": {1},
    "Expand": {1},
    "Squeeze": {1},
    "Unsqueeze": {1},
    "Slice": {1, 2, 3, 4},
    "Pad": {1, 2, 3},
    "Resize": {1, 2, 3},
    "Upsample": {1},
    "Split": {1},
    "ReduceMean": {1},
    "ReduceSum": {1},
    "ReduceMax": {1},
    "ReduceMin": {1},
    "ReduceSumSquare": {1},
    "ReduceL1": {1},
    "ReduceL2": {1},
    "ReduceProd": {1},
}
# Names of the functions whose expanded cases we run (for the table).
EXPANDED_NAMES = {
    "test_softmax": "Softmax",
    "test_logsoftmax": "LogSoftmax",
    "test_clip": "Clip",
    "test_greater_equal": "GreaterOrEqual",
    "test_less_equal": "LessOrEqual",
    "test_mvn": "MeanVarianceNormalization",
    "test_reduce_log_sum": "ReduceLogSum",
    "test_reduce_l1": "ReduceL1",
    "test_reduce_sum_square": "ReduceSumSquare",
}

F32_TOL = (1e-3, 1e-5)
F16_TOL = (1e-2, 1e-2)


def _ours(case) -> bool:
    ops = [n.op_type for n in case.model.graph.node]
    if len(ops) == 1:
        return ops[0] in OPS
    return "_expanded" in case.name and set(ops) <= OPS | {"Constant"}


with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    # collect_testcases' op filter only applies on its first call (it imports the case modules once), so collect
    # everything and keep ours.
    CASES = sorted((c for c in collect_testcases() if c.kind == "node" and _ours(c)), key=lambda c: c.name)
BY_NAME = {c.name: c for c in CASES}


def group_of(case) -> str:
    """The op a case counts for in the table: its node's op, or '<function> (expanded)'."""
    nodes = case.model.graph.node
    if len(nodes) == 1 and "_expanded" not in case.name:
        return nodes[0].op_type
    for prefix in sorted(EXPANDED_NAMES, key=len, reverse=True):
        if case.name.startswith(prefix + "_"):
            return f"{EXPANDED_NAMES[prefix]} (expanded)"
    if len(nodes) == 1:  # CastLike and Clip-without-bounds expand to a single Cast / Identity
        return nodes[0].op_type
    return "+".join(sorted({n.op_type for n in nodes})) + " (expanded)"


def value_types(case) -> set:
    """Element types of the case's inputs and outputs ('sequence'/'optional' for non-tensors)."""
    types = set()
    for v in list(case.model.graph.input) + list(case.model.graph.output):
        kind = v.type.WhichOneof("value")
        types.add(v.type.tensor_type.elem_type if kind == "tensor_type" else kind.replace("_type", ""))
    return types


def foreign_types(case) -> list[str]:
    return sorted(t if isinstance(t, str) else TensorProto.DataType.Name(t) for t in value_types(case) - OUR_TYPES)


def runtime_params(case) -> list[str]:
    """Graph inputs that feed an input we read at build time (a shape, axes, bounds …)."""
    graph_inputs = {i.name for i in case.model.graph.input}
    names = []
    for node in case.model.graph.node:
        for k in sorted(PARAM_INPUTS.get(node.op_type, ())):
            if k < len(node.input) and node.input[k] in graph_inputs and node.input[k] not in names:
                names.append(node.input[k])
    return names


# ---------------------------------------------------------------------------------------------------------------
# Cases that cannot be ours. Each must fail session creation with CPU fallback disabled.

from node_test_declines import NO_PASSING_CASE, RUNTIME_PARAMS, expected_declined  # noqa: E402

EXPECTED_DECLINED = expected_declined(CASES)


# ---------------------------------------------------------------------------------------------------------------
# Variants: each case as is, plus an adapted one where only a runtime parameter or a training output kept it off.


@dataclass(frozen=True)
class Variant:
    id: str
    case_name: str
    kind: str  # "as-is", or "+"-joined adaptations: "const", "f16"

    @property
    def case(self):
        return BY_NAME[self.case_name]

    @property
    def group(self) -> str:
        return group_of(self.case)


def _array(x):
    return numpy_helper.to_array(x) if isinstance(x, onnx.TensorProto) else np.asarray(x)


def f16_eligible(case) -> bool:
    """A single-node float32 case of a float op (not Cast), its inputs within float16's range: it also runs with
    every float32 tensor made float16 (`+f16`), against ONNX's reference evaluator on the rounded inputs."""
    node = case.model.graph.node
    # Resize/Upsample scales must stay float32 (ONNX's type constraint).
    if len(node) != 1 or node[0].op_type in ("Cast", "Resize", "Upsample") or "_expanded" in case.name:
        return False
    types = value_types(case)
    if TensorProto.FLOAT not in types or not types <= {TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL}:
        return False
    (inputs, _), = case.data_sets
    floats = [a for a in map(_array, inputs) if a.dtype == np.float32]
    return all(np.abs(a[np.isfinite(a)].astype(np.float64)).max(initial=0) < 60000 for a in floats)


def _variants() -> list[Variant]:
    out = []
    for case in CASES:
        reason = EXPECTED_DECLINED.get(case.name)
        adapted = "const" if reason == RUNTIME_PARAMS else None
        out.append(Variant(case.name, case.name, "as-is"))
        if adapted:
            out.append(Variant(f"{case.name}+{adapted}", case.name, adapted))
        if (reason is None or adapted) and f16_eligible(case):
            kind = f"{adapted}+f16" if adapted else "f16"
            out.append(Variant(f"{case.name}+{kind}", case.name, kind))
    return out


VARIANTS = _variants()


def materialize(variant: Variant):
    """(model, feeds, expected outputs) of a variant."""
    case = variant.case
    (inputs, outputs), = case.data_sets
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    values = {vi.name: _array(x) for vi, x in zip(case.model.graph.input, inputs)}
    expected = [_array(x) for x in outputs]
    kinds = set(variant.kind.split("+"))
    if "const" in kinds:
        params = runtime_params(case)
        keep = [vi for vi in model.graph.input if vi.name not in params]
        del model.graph.input[:]
        model.graph.input.extend(keep)
        model.graph.initializer.extend(numpy_helper.from_array(values.pop(p), p) for p in params)
    feeds = {vi.name: values[vi.name] for vi in model.graph.input}
    if "f16" in kinds:
        from onnx.reference import ReferenceEvaluator

        feeds = {k: v.astype(np.float16) if v.dtype == np.float32 else v for k, v in feeds.items()}
        rounded = {k: v.astype(np.float32) if v.dtype == np.float16 else v for k, v in feeds.items()}
        # LayerNormalization's Mean/InvStdDev stay float32 (stash_type=1, the default).
        keep = set(stashed_outputs(model))
        names = [o.name for o in model.graph.output]
        expected = [
            w.astype(np.float16) if w.dtype == np.float32 and n not in keep else w
            for n, w in zip(names, map(np.asarray, ReferenceEvaluator(model).run(None, rounded)))
        ]
        model = to_float16(model, keep)
    return model, feeds, expected


def stashed_outputs(model) -> list[str]:
    """Outputs whose type the op fixes at float32 whatever its input type: LayerNormalization's Mean and
    InvStdDev with stash_type=1 (the default)."""
    names = []
    for n in model.graph.node:
        stash = next((a.i for a in n.attribute if a.name == "stash_type"), 1)
        if n.op_type == "LayerNormalization" and stash == 1:
            names += [o for o in n.output[1:] if o]
    return names


def to_float16(model, keep=frozenset()):
    """The model with every float32 tensor (inputs, outputs, initializers) float16, except the values in `keep`."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    for vi in list(out.graph.input) + list(out.graph.output) + list(out.graph.value_info):
        if vi.type.tensor_type.elem_type == TensorProto.FLOAT and vi.name not in keep:
            vi.type.tensor_type.elem_type = TensorProto.FLOAT16
    for i, init in enumerate(out.graph.initializer):
        if init.data_type == TensorProto.FLOAT:
            out.graph.initializer[i].CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init).astype(np.float16), init.name))
    return out


def compare(got, want):
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if want.dtype.kind == "f":
        rtol, atol = F16_TOL if want.dtype == np.float16 else F32_TOL
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


# The errors ONNX Runtime gives when no EP may run a node (ours declined it and the CPU EP is disabled, or nobody has
# a kernel for it), and when it cannot load the model at all (an opset or IR version newer than it knows).
# A node that neither we nor the CPU EP can run: ORT says so in one of these ways. With our device memory
# registered, ORT's copy insertion reaches the node before kernel lookup and fails on its unset provider.
DECLINED = re.compile(
    r"fallback to CPU EP has been explicitly disabled|Could not find an implementation|Failed to find kernel"
    r"|Provider type for \w+ node with name '.*' is not set"
)
NOT_LOADABLE = re.compile(r"official support for domain ai\.onnx is till opset|Unsupported model IR version")


class NotLoadable(Exception):
    pass


def cpu_loads(model) -> bool:
    """Whether the installed ONNX Runtime loads the case with its CPU EP alone: one it rejects itself (an attribute
    or a type binding newer than it knows, as ORT 1.30 does with some opset-23 Attention cases) is not ours to judge."""
    import onnxruntime as ort

    from conftest import model_arg

    try:
        ort.InferenceSession(model_arg(model), providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001
        # A kernel the CPU EP lacks (a type it does not run) is a valid model: our decline of it is still checked.
        return bool(re.search(r"NOT_IMPLEMENTED|Could not find an implementation|Failed to find kernel", str(e)))
    return True


def evaluate(variant: Variant, make_session) -> str:
    """'pass' or 'declined' (as expected), raising AssertionError otherwise, or NotLoadable when the installed
    ONNX Runtime cannot load the case at all (its opset or IR version is newer)."""
    import onnxruntime as ort

    model, feeds, expected = materialize(variant)
    try:
        sess = make_session(model)
    except Exception as e:  # noqa: BLE001
        if NOT_LOADABLE.search(str(e)) or not cpu_loads(model):
            raise NotLoadable(f"onnxruntime {ort.__version__} cannot load it: {str(e)[-160:]}") from None
        if variant.id in EXPECTED_DECLINED:
            assert DECLINED.search(str(e)), f"session creation failed, but not as a decline: {e}"
            return "declined"
        raise
    if variant.id in EXPECTED_DECLINED:
        raise AssertionError(
            f"{variant.id} is in EXPECTED_DECLINED ({EXPECTED_DECLINED[variant.id]}) but our EP took every node; "
            "remove it from the list"
        )
    got = sess.run(None, feeds)
    assert len(got) == len(expected)
    for i, (g, w) in enumerate(zip(got, expected)):
        try:
            compare(g, w)
        except AssertionError as e:
            raise AssertionError(f"output {i} ({model.graph.output[i].name}): {e}") from None
    return "pass"


RESULTS: dict[str, str] = {}  # variant id -> pass | declined | skipped | fail (filled by the tests below)


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.id)
def test_node_case(make_session, variant):
    RESULTS[variant.id] = "fail"
    try:
        RESULTS[variant.id] = evaluate(variant, make_session)
    except NotLoadable as e:
        RESULTS[variant.id] = "skipped"
        pytest.skip(str(e))


def test_cases_were_collected():
    groups = {group_of(c) for c in CASES}
    missing = sorted(OPS - groups)
    assert not missing, f"no node test case for {missing}"
    for prefix in ("test_matmul", "test_gemm", "test_conv", "test_basic_conv", "test_softmax", "test_layer_norm"):
        assert any(c.name.startswith(prefix) for c in CASES), prefix


def test_expected_declined_is_consistent():
    """Every entry names a collected variant; every case with a foreign element type or a runtime parameter input
    is listed (with a reason of that kind)."""
    stale = sorted(set(EXPECTED_DECLINED) - {v.id for v in VARIANTS})
    assert not stale, f"EXPECTED_DECLINED names cases ONNX does not have: {stale}"
    unlisted = []
    for case in CASES:
        reason = EXPECTED_DECLINED.get(case.name)
        if foreign_types(case) and reason is None:
            unlisted.append((case.name, foreign_types(case)))
        if runtime_params(case) and not foreign_types(case) and reason != RUNTIME_PARAMS:
            unlisted.append((case.name, "runtime parameters", runtime_params(case)))
        if reason == RUNTIME_PARAMS:
            assert runtime_params(case), f"{case.name} has no runtime parameter input"
    assert not unlisted, unlisted


# ---------------------------------------------------------------------------------------------------------------
# Pass counts per op


def tally(results: dict[str, str]) -> dict[str, collections.Counter]:
    per_group: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for v in VARIANTS:
        per_group[v.group][results.get(v.id, "not run")] += 1
    return per_group


def render_table(results: dict[str, str]) -> str:
    per_group = tally(results)
    family_of = {op: fam for fam, ops in FAMILIES.items() for op in ops}
    order = sorted(per_group, key=lambda g: (list(FAMILIES).index(family_of.get(g, "norm")) if g in family_of else 9, g))
    cols = ["pass", "declined", "fail", "skipped", "not run"]
    lines = [
        "| op | variants run | pass | expected declines | fail | ORT cannot load |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    total = collections.Counter()
    for g in order:
        c = per_group[g]
        total.update(c)
        extra = f" (+{c['not run']} not run)" if c["not run"] else ""
        lines.append(f"| {g} | {sum(c.values())} | {c['pass']} | {c['declined']} | {c['fail']} | {c['skipped']}{extra} |")
    lines.append(f"| **all** | {sum(total.values())} | {total['pass']} | {total['declined']} | {total['fail']} | {total['skipped']} |")
    assert set(total) <= set(cols), total
    return "\n".join(lines)


def run_all(make_session, results: dict[str, str]) -> dict[str, str]:
    """Evaluates every variant not yet in `results` (in place) and returns it."""
    for v in VARIANTS:
        if v.id in results:
            continue
        try:
            results[v.id] = evaluate(v, make_session)
        except NotLoadable:
            results[v.id] = "skipped"
        except Exception:  # noqa: BLE001
            results[v.id] = "fail"
    return results


def node_test_table(make_session, results: dict[str, str] | None = None) -> str:
    """The markdown table of outcomes per op, running every variant not in `results`."""
    return render_table(run_all(make_session, dict(results or {})))


def test_pass_table_per_op(make_session):
    """Prints the per-op table (`pytest -s`), running whatever the parametrized tests did not. Every op must pass
    at least one case."""
    results = run_all(make_session, dict(RESULTS))
    print("\nONNX node tests on WgpuExecutionProvider (CPU fallback disabled)\n" + render_table(results))
    per_group = tally(results)
    no_pass = sorted(op for op in OPS if per_group[op]["pass"] == 0 and op not in NO_PASSING_CASE)
    assert not no_pass, f"ops without a passing node test: {no_pass}"
    stale = sorted(op for op in NO_PASSING_CASE if per_group[op]["pass"] > 0)
    assert not stale, f"NO_PASSING_CASE lists ops that now pass a case: {stale}"


def main() -> int:
    """Prints the table for the library conftest finds (ONNXRUNTIME_EP_WGPU_LIB, the locator package, or the
    release build)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import onnxruntime as ort

    from conftest import EP_NAME, find_library, model_arg

    ort.set_default_logger_severity(4)
    ort.register_execution_provider_library("wgpu_table", find_library())
    devices = [d for d in ort.get_ep_devices() if d.ep_name == EP_NAME]

    def make_session(model):
        so = ort.SessionOptions()
        so.add_provider_for_devices(devices, {})
        so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        return ort.InferenceSession(model_arg(model), sess_options=so, enable_fallback=0)

    print(node_test_table(make_session))
    return 0


if __name__ == "__main__":
    sys.exit(main())
