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
    "norm": "LayerNormalization RMSNormalization Softmax LogSoftmax ReduceMean ReduceSum ReduceMax ReduceMin".split(),
    "layout": "Transpose Reshape Flatten Squeeze Unsqueeze Identity Expand Concat Slice Split Gather".split(),
    "attention": ["Attention"],
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

_INT8_16_UINT = "int8/int16/unsigned tensors: our kernels hold float32/float16/int32/int64/bool only"
_DOUBLE = "float64 tensors: no double arithmetic on the GPU"
_BFLOAT16 = "bfloat16 tensors are not among our element types"
_FLOAT8_4BIT = "float8/float4/int4/int2 tensors are not among our element types"
_STRING = "string tensors"
_NON_TENSOR = "a sequence/optional value, not a tensor"
_POW_INT = "Pow with an integer base: we run float Pow (with any numeric exponent) only"
_BOOL_REDUCE = "a reduction over bool: we reduce float tensors only"
RUNTIME_PARAMS = "a shape/axes input is a graph input: we run constant ones (the +const variant runs it)"

EXPECTED_DECLINED = {
    **dict.fromkeys(
        [
            "test_add_int8", "test_add_int16", "test_add_uint8", "test_add_uint16", "test_add_uint32", "test_add_uint64",
            "test_sub_int8", "test_sub_int16", "test_sub_uint8", "test_sub_uint16", "test_sub_uint32", "test_sub_uint64",
            "test_mul_int8", "test_mul_int16", "test_mul_uint8", "test_mul_uint16", "test_mul_uint32", "test_mul_uint64",
            "test_div_int8", "test_div_int16", "test_div_uint8", "test_div_uint16", "test_div_uint32", "test_div_uint64",
            "test_max_int8", "test_max_int16", "test_max_uint8", "test_max_uint16", "test_max_uint32", "test_max_uint64",
            "test_min_int8", "test_min_int16", "test_min_uint8", "test_min_uint16", "test_min_uint32", "test_min_uint64",
            "test_equal_int8", "test_equal_int16", "test_equal_uint8", "test_equal_uint16", "test_equal_uint32",
            "test_equal_uint64",
            "test_greater_int8", "test_greater_int16", "test_greater_uint8", "test_greater_uint16", "test_greater_uint32",
            "test_greater_uint64",
            "test_greater_equal_int8", "test_greater_equal_int16", "test_greater_equal_uint8", "test_greater_equal_uint16",
            "test_greater_equal_uint32", "test_greater_equal_uint64",
            "test_greater_equal_int8_expanded", "test_greater_equal_int16_expanded", "test_greater_equal_uint8_expanded",
            "test_greater_equal_uint16_expanded", "test_greater_equal_uint32_expanded",
            "test_greater_equal_uint64_expanded",
            "test_less_int8", "test_less_int16", "test_less_uint8", "test_less_uint16", "test_less_uint32",
            "test_less_uint64",
            "test_less_equal_int8", "test_less_equal_int16", "test_less_equal_uint8", "test_less_equal_uint16",
            "test_less_equal_uint32", "test_less_equal_uint64",
            "test_less_equal_int8_expanded", "test_less_equal_int16_expanded", "test_less_equal_uint8_expanded",
            "test_less_equal_uint16_expanded", "test_less_equal_uint32_expanded", "test_less_equal_uint64_expanded",
            "test_clip_default_int8_min", "test_clip_default_int8_max", "test_clip_default_int8_inbounds",
            "test_clip_default_int8_min_expanded", "test_clip_default_int8_max_expanded",
            "test_clip_default_int8_inbounds_expanded",
            "test_pow_types_float32_uint64", "test_pow_types_float32_uint32",
            "test_cast_UINT4_to_UINT8", "test_cast_INT4_to_INT8", "test_cast_UINT2_to_UINT8", "test_cast_INT2_to_INT8",
            "test_castlike_UINT4_to_UINT8_expanded", "test_castlike_INT4_to_INT8_expanded",
            "test_castlike_UINT2_to_UINT8_expanded", "test_castlike_INT2_to_INT8_expanded",
        ],
        _INT8_16_UINT,
    ),
    **dict.fromkeys(
        [
            "test_max_float64", "test_min_float64",
            "test_cast_FLOAT_to_DOUBLE", "test_cast_FLOAT16_to_DOUBLE", "test_cast_DOUBLE_to_FLOAT",
            "test_cast_DOUBLE_to_FLOAT16",
            "test_castlike_FLOAT_to_DOUBLE_expanded", "test_castlike_FLOAT16_to_DOUBLE_expanded",
            "test_castlike_DOUBLE_to_FLOAT_expanded", "test_castlike_DOUBLE_to_FLOAT16_expanded",
        ],
        _DOUBLE,
    ),
    **dict.fromkeys(
        [
            "test_cast_FLOAT_to_BFLOAT16", "test_cast_BFLOAT16_to_FLOAT",
            "test_castlike_FLOAT_to_BFLOAT16_expanded", "test_castlike_BFLOAT16_to_FLOAT_expanded",
        ],
        _BFLOAT16,
    ),
    **dict.fromkeys(
        [
            f"test_{kind}_{a}_to_{b}{suffix}"
            for kind, suffix in (("cast", ""), ("castlike", "_expanded"))
            for a, b in [
                ("FLOAT", "FLOAT8E4M3FN"), ("FLOAT16", "FLOAT8E4M3FN"), ("FLOAT", "FLOAT8E4M3FNUZ"),
                ("FLOAT16", "FLOAT8E4M3FNUZ"), ("FLOAT8E4M3FN", "FLOAT"), ("FLOAT8E4M3FN", "FLOAT16"),
                ("FLOAT8E4M3FNUZ", "FLOAT"), ("FLOAT8E4M3FNUZ", "FLOAT16"), ("FLOAT", "FLOAT8E5M2"),
                ("FLOAT16", "FLOAT8E5M2"), ("FLOAT", "FLOAT8E5M2FNUZ"), ("FLOAT16", "FLOAT8E5M2FNUZ"),
                ("FLOAT8E5M2", "FLOAT"), ("FLOAT8E5M2", "FLOAT16"), ("FLOAT8E5M2FNUZ", "FLOAT"),
                ("FLOAT8E5M2FNUZ", "FLOAT16"), ("FLOAT", "UINT4"), ("FLOAT16", "UINT4"), ("FLOAT", "INT4"),
                ("FLOAT16", "INT4"), ("UINT4", "FLOAT"), ("UINT4", "FLOAT16"), ("INT4", "FLOAT"), ("INT4", "FLOAT16"),
                ("FLOAT4E2M1", "FLOAT"), ("FLOAT4E2M1", "FLOAT16"), ("FLOAT", "FLOAT4E2M1"), ("FLOAT16", "FLOAT4E2M1"),
                ("FLOAT", "UINT2"), ("FLOAT16", "UINT2"), ("FLOAT", "INT2"), ("FLOAT16", "INT2"), ("UINT2", "FLOAT"),
                ("UINT2", "FLOAT16"), ("INT2", "FLOAT"), ("INT2", "FLOAT16"),
                ("no_saturate_FLOAT", "FLOAT8E4M3FN"), ("no_saturate_FLOAT", "FLOAT8E4M3FNUZ"),
                ("no_saturate_FLOAT", "FLOAT8E5M2"), ("no_saturate_FLOAT", "FLOAT8E5M2FNUZ"),
                ("no_saturate_FLOAT16", "FLOAT8E4M3FN"), ("no_saturate_FLOAT16", "FLOAT8E4M3FNUZ"),
                ("no_saturate_FLOAT16", "FLOAT8E5M2"), ("no_saturate_FLOAT16", "FLOAT8E5M2FNUZ"),
            ]
        ]
        + [
            "test_cast_e8m0_FLOAT_to_FLOAT8E8M0", "test_cast_e8m0_FLOAT16_to_FLOAT8E8M0",
            "test_cast_e8m0_FLOAT8E8M0_to_FLOAT", "test_cast_e8m0_FLOAT8E8M0_to_FLOAT16",
        ],
        _FLOAT8_4BIT,
    ),
    **dict.fromkeys(["test_equal_string", "test_equal_string_broadcast"], _STRING),
    **dict.fromkeys(["test_identity_sequence", "test_identity_opt"], _NON_TENSOR),
    **dict.fromkeys(
        ["test_pow_types_int64_int64", "test_pow_types_int64_float32", "test_pow_types_int32_float32", "test_pow_types_int32_int32"],
        _POW_INT,
    ),
    # Keys may also be adapted variants: these run with constant axes and are still not ours.
    **dict.fromkeys(
        ["test_reduce_max_bool_inputs+const", "test_reduce_min_bool_inputs+const", "test_reduce_max_empty_set_bool+const"],
        _BOOL_REDUCE,
    ),
    **dict.fromkeys(
        [
            "test_expand_dim_changed", "test_expand_dim_unchanged",
            "test_reshape_reordered_all_dims", "test_reshape_reordered_last_dims", "test_reshape_reduced_dims",
            "test_reshape_extended_dims", "test_reshape_one_dim", "test_reshape_negative_dim",
            "test_reshape_negative_extended_dims", "test_reshape_zero_dim", "test_reshape_zero_and_negative_dim",
            "test_reshape_allowzero_reordered",
            "test_squeeze", "test_squeeze_negative_axes",
            "test_unsqueeze_axis_0", "test_unsqueeze_axis_1", "test_unsqueeze_axis_2", "test_unsqueeze_two_axes",
            "test_unsqueeze_three_axes", "test_unsqueeze_unsorted_axes", "test_unsqueeze_negative_axes",
            "test_slice", "test_slice_neg", "test_slice_start_out_of_bounds", "test_slice_end_out_of_bounds",
            "test_slice_default_axes", "test_slice_default_steps", "test_slice_neg_steps", "test_slice_negative_axes",
            "test_split_variable_parts_1d_opset13", "test_split_variable_parts_2d_opset13",
            "test_split_variable_parts_default_axis_opset13", "test_split_zero_size_splits_opset13",
            "test_split_variable_parts_1d_opset18", "test_split_variable_parts_2d_opset18",
            "test_split_variable_parts_default_axis_opset18", "test_split_zero_size_splits_opset18",
        ]
        + [
            f"test_reduce_{op}_{form}"
            for op in ("max", "mean", "min", "sum")
            for form in (
                "do_not_keepdims_example", "do_not_keepdims_random", "keepdims_example", "keepdims_random",
                "negative_axes_keepdims_example", "negative_axes_keepdims_random",
            )
        ]
        + [
            "test_reduce_max_empty_set", "test_reduce_min_empty_set", "test_reduce_max_bool_inputs",
            "test_reduce_min_bool_inputs", "test_reduce_max_empty_set_bool",
            "test_reduce_mean_default_axes_keepdims_example", "test_reduce_mean_default_axes_keepdims_random",
            "test_reduce_sum_default_axes_keepdims_example", "test_reduce_sum_default_axes_keepdims_random",
            "test_reduce_sum_empty_axes_input_noop_example", "test_reduce_sum_empty_axes_input_noop",
            "test_reduce_sum_empty_set", "test_reduce_sum_empty_set_non_reduced_axis_zero",
        ]
        + [
            f"test_reduce_{fn}_expanded"
            for fn in [
                "log_sum_desc_axes", "log_sum_asc_axes", "log_sum_default", "log_sum_negative_axes", "log_sum_empty_set",
                "l1_do_not_keepdims_example", "l1_do_not_keepdims_random", "l1_keep_dims_example",
                "l1_keep_dims_random", "l1_default_axes_keepdims_example", "l1_default_axes_keepdims_random",
                "l1_negative_axes_keep_dims_example", "l1_negative_axes_keep_dims_random", "l1_empty_set",
                "sum_square_do_not_keepdims_example", "sum_square_do_not_keepdims_random",
                "sum_square_keepdims_example", "sum_square_keepdims_random",
                "sum_square_default_axes_keepdims_example", "sum_square_default_axes_keepdims_random",
                "sum_square_negative_axes_keepdims_example", "sum_square_negative_axes_keepdims_random",
                "sum_square_empty_set",
            ]
        ],
        RUNTIME_PARAMS,
    ),
    **dict.fromkeys(
        ["test_constant_pad", "test_constant_pad_axes", "test_constant_pad_negative_axes", "test_edge_pad",
         "test_reflect_pad", "test_wrap_pad"],
        RUNTIME_PARAMS,
    ),
    "test_maxpool_2d_uint8": _INT8_16_UINT,
    "test_convtranspose_3d": "3-D ConvTranspose: we run 1-D and 2-D",
    **dict.fromkeys([c.name for c in CASES if c.name.startswith(("test_resize_", "test_upsample_"))], RUNTIME_PARAMS),
    **{
        f"{c.name}+{kind}": reason
        for c in CASES
        for key, reason in [
            ("cubic", "Resize mode 'cubic': we run nearest and linear"),
            ("tf_crop_and_resize", "Resize tf_crop_and_resize (a roi): not supported"),
            ("antialias", "Resize antialias=1: not supported"),
        ]
        if c.name.startswith("test_resize_") and key in c.name
        for kind in ("const",)
    },
    **dict.fromkeys(
        ["test_maxpool_with_argmax_2d_precomputed_pads", "test_maxpool_with_argmax_2d_precomputed_strides"],
        "MaxPool's Indices output: we compute the pooled values only",
    ),
    **dict.fromkeys(
        ["test_batchnorm_epsilon_training_mode", "test_batchnorm_example_training_mode"],
        "BatchNormalization with training_mode=1: we run inference only",
    ),
}


ATTENTION_HEAD_SIZES = {64, 80, 96, 128}
# Ops none of whose ONNX cases we can run, and where their conformance is tested instead.
NO_PASSING_CASE = {"Attention": "ONNX's cases all use head sizes 1-8; tests/test_attention.py compares ours with the CPU EP"}
_ATTENTION_HEAD = ("Attention with a head size the flash kernel lacks (ONNX's cases use 1-8; it has 64, 80, 96, 128; "
                   "tests/test_attention.py runs those against the CPU EP)")


def _attention_head_size(case):
    """The head size of a single-node Attention case (Q [B, H, S, D], or [B, S, H·D] with q_num_heads)."""
    node = case.model.graph.node[0]
    dims = [d.dim_value for d in case.model.graph.input[0].type.tensor_type.shape.dim]
    if len(dims) == 4:
        return dims[-1]
    heads = next((a.i for a in node.attribute if a.name == "q_num_heads"), 0)
    return dims[-1] // heads if heads else None


EXPECTED_DECLINED.update({
    c.name: _ATTENTION_HEAD
    for c in CASES
    if len(c.model.graph.node) == 1 and c.model.graph.node[0].op_type == "Attention"
    and _attention_head_size(c) not in ATTENTION_HEAD_SIZES
})


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


def evaluate(variant: Variant, make_session) -> str:
    """'pass' or 'declined' (as expected), raising AssertionError otherwise, or NotLoadable when the installed
    ONNX Runtime cannot load the case at all (its opset or IR version is newer)."""
    import onnxruntime as ort

    model, feeds, expected = materialize(variant)
    try:
        sess = make_session(model)
    except Exception as e:  # noqa: BLE001
        if NOT_LOADABLE.search(str(e)):
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
