"""The ONNX node-test cases that cannot be ours, each with the reason (`tests/test_onnx_node_tests.py` checks that
each fails session creation with CPU fallback disabled, and that no reason is stale)."""

from __future__ import annotations

_INT8_16_UINT = "int8/int16/unsigned tensors: our kernels hold float32/float16/int32/int64/bool only"
_DOUBLE = "float64 tensors: no double arithmetic on the GPU"
_BFLOAT16 = "bfloat16 tensors are not among our element types"
_FLOAT8_4BIT = "float8/float4/int4/int2 tensors are not among our element types"
_STRING = "string tensors"
_NON_TENSOR = "a sequence/optional value, not a tensor"
_POW_INT = "Pow with an integer base: we run float Pow (with any numeric exponent) only"
_BOOL_REDUCE = "a reduction over bool: we reduce float tensors only"
RUNTIME_PARAMS = "a shape/axes input is a graph input: we run constant ones (the +const variant runs it)"

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


def expected_declined(CASES) -> dict[str, str]:  # noqa: N803 - the node-test module's name for its cases
    """Case name → why it is not ours, over `CASES` (the node tests of our ops)."""
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
                # ReduceL1, ReduceL2, ReduceSumSquare and ReduceProd (opset 18) give axes as a graph input.
                c.name
                for c in CASES
                if c.name.startswith(("test_reduce_l1_", "test_reduce_l2_", "test_reduce_sum_square_", "test_reduce_prod_"))
                and not c.name.endswith("_expanded")
                and len(c.model.graph.input) > 1  # ReduceProd's default-axes cases give none
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
    EXPECTED_DECLINED.update({
        c.name: _ATTENTION_HEAD
        for c in CASES
        if len(c.model.graph.node) == 1 and c.model.graph.node[0].op_type == "Attention"
        and _attention_head_size(c) not in ATTENTION_HEAD_SIZES
    })
    return EXPECTED_DECLINED
