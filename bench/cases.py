"""Benchmark cases: small ONNX graphs built with onnx.helper (random weights, fixed seeds) and, where torch and
transformers are installed, whole models exported from their transformers configs with random weights (nothing is
downloaded): the Whisper-tiny encoder, BERT-base and ViT-base/16, and torchvision CNNs (those exports live in
`cases_torch.py`).

A `Case` builds its model lazily (the MLP weights alone are 512 MiB in fp32), knows its FLOPs (MatMul/Gemm/Conv
multiply-adds ×2; elementwise work is not counted) and, for the cuBLAS/cuDNN reference, the same computation in
torch (`torch_fn(torch, device) -> callable`, inputs already on the device). Integer inputs (token ids, masks) are
described by `Case.inputs` so that `input_array` makes valid values for them (ids below the vocabulary size, a
mask of ones with padding zeros, token types 0/1), the same for ONNX Runtime, the export and torch.
"""

from __future__ import annotations

import math
import os
import zlib
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
DTYPES = {"fp32": (np.float32, TensorProto.FLOAT), "fp16": (np.float16, TensorProto.FLOAT16)}


@dataclass
class Case:
    name: str                      # unique, e.g. "mlp_m2048_fp32"
    group: str                     # plots and tables group by it: matmul, mlp, gemm, whisper_conv, ...
    dtype: str                     # "fp32" | "fp16"
    shape: str                     # short label of the size, e.g. "4096³" or "M=2048"
    flops: float | None            # per run
    build: Callable[[str], str]    # (scratch dir) -> path of the .onnx file it wrote there
    torch_fn: Callable | None = None  # (torch, device) -> zero-argument callable running the same work
    note: str = ""
    tags: set = field(default_factory=set)  # "quick"; "profile": run.py --profile times our EP's GPU steps
    inputs: dict = field(default_factory=dict)  # integer input name -> spec (see `input_array`)


def input_array(name: str, shape, dtype, rng, spec: tuple | None = None) -> np.ndarray:
    """One random input. Floats: standard normal. Integers by `spec` (else by name):
    ("ids", high): uniform in [0, high), e.g. token ids below the vocabulary size;
    ("mask", pad): ones with the last `pad` positions of the last axis 0 (padding);
    ("segments",): token types, 0 for the first half of the last axis, 1 for the rest.
    Without a spec an integer input named like a mask gets ones, one named like token types zeros, others values
    in [0, 2) (valid indices for any table); bool inputs are True."""
    dtype = np.dtype(dtype)
    shape = [int(d) for d in shape]
    if dtype.kind == "f":
        return rng.standard_normal(shape, dtype=np.float32).astype(dtype)
    if dtype.kind == "b":
        return np.ones(shape, dtype=bool)
    if spec is None:
        lname = name.lower()
        spec = ("mask", 0) if "mask" in lname else ("ids", 1) if "type" in lname else ("ids", 2)
    kind = spec[0]
    if kind == "ids":
        return rng.integers(0, max(1, int(spec[1])), size=shape).astype(dtype)
    if kind == "mask":
        a = np.ones(shape, dtype=dtype)
        if shape and spec[1]:
            a[..., max(0, shape[-1] - int(spec[1])):] = 0
        return a
    if kind == "segments":
        a = np.zeros(shape, dtype=dtype)
        if shape:
            a[..., shape[-1] // 2:] = 1
        return a
    raise ValueError(f"input {name!r}: unknown spec {spec!r}")


def np_dtype(dtype: str):
    return DTYPES[dtype][0]


def _save(scratch: str, name: str, nodes, inputs, outputs, inits, opset: int = OPSET, value_info=()) -> str:
    """Writes the model (weights of 1 MiB and more already in their own files, see `_weight`) to scratch."""
    graph = helper.make_graph(nodes, name, inputs, outputs, inits, value_info=list(value_info))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="bench")
    model.ir_version = 10 if opset >= 21 else 8
    path = os.path.join(scratch, f"{name}.onnx")
    onnx.save(model, path)
    return path


def _vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, DTYPES[dtype][1], shape)


_WEIGHT_FILES: dict[tuple, str] = {}


def _weight(scratch: str, key: str, shape, fan_in: int, dtype: str, name: str) -> TensorProto:
    """Random weights of variance 1/fan_in, the same for the same key. Large ones go straight to a file in scratch
    (ONNX external data, shared between cases with the same key) instead of through several protobuf copies."""
    rng = np.random.default_rng(zlib.crc32(key.encode()))
    count = int(np.prod(shape))
    if count * np.dtype(np_dtype(dtype)).itemsize < 1 << 20:
        w = (rng.random(shape, dtype=np.float32) - 0.5) * np.float32(2 * math.sqrt(3 / fan_in))
        return numpy_helper.from_array(w.astype(np_dtype(dtype)), name)
    cache_key = (scratch, key, tuple(shape), fan_in, dtype)
    if cache_key not in _WEIGHT_FILES:
        w = rng.random(shape, dtype=np.float32)  # uniform: cheaper than normal for 16M values on a small CPU
        w -= 0.5
        w *= np.float32(2 * math.sqrt(3 / fan_in))
        fname = f"w{len(_WEIGHT_FILES)}_{dtype}.bin"
        (w if dtype == "fp32" else w.astype(np_dtype(dtype))).tofile(os.path.join(scratch, fname))
        _WEIGHT_FILES[cache_key] = fname
    t = TensorProto(name=name, data_type=DTYPES[dtype][1], dims=list(shape), data_location=TensorProto.EXTERNAL)
    nbytes = count * np.dtype(np_dtype(dtype)).itemsize
    for k, v in (("location", _WEIGHT_FILES[cache_key]), ("offset", "0"), ("length", str(nbytes))):
        entry = t.external_data.add()
        entry.key, entry.value = k, v
    return t


def conv_out(size, k, stride=1, pad=1):
    return (size + 2 * pad - k) // stride + 1


# ------------------------------------------------------------------------------------------------ MatMul / MLP


def matmul_case(n: int, dtype: str) -> Case:
    """Y[n,n] = A[n,n] @ B, B a constant initializer (weights stay on the device)."""

    def build(scratch):
        node = helper.make_node("MatMul", ["A", "B"], ["Y"], name="matmul")
        return _save(scratch, f"matmul_{n}_{dtype}", [node], [_vi("A", dtype, [n, n])], [_vi("Y", dtype, [n, n])],
                     [_weight(scratch, f"matmul{n}", (n, n), n, dtype, "B")])

    def torch_fn(torch, dev):
        t = getattr(torch, {"fp32": "float32", "fp16": "float16"}[dtype])
        a, b = torch.randn(n, n, device=dev, dtype=t), torch.randn(n, n, device=dev, dtype=t) / math.sqrt(n)
        return lambda: a @ b

    return Case(f"matmul_{n}_{dtype}", "matmul", dtype, f"{n}³", 2.0 * n**3, build, torch_fn,
                note="A input, B constant", tags={"profile"} if n == 4096 else set())


def mlp_case(m: int, k: int, dtype: str, layers: int = 8) -> Case:
    """X[m,k] through `layers` chained MatMuls with constant [k,k] weights (no bias, no activation)."""

    def build(scratch):
        nodes, inits, prev = [], [], "X"
        for i in range(layers):
            out = "Y" if i == layers - 1 else f"h{i}"
            inits.append(_weight(scratch, f"mlp{k}/{i}", (k, k), k, dtype, f"W{i}"))  # the same files for every M
            nodes.append(helper.make_node("MatMul", [prev, f"W{i}"], [out], name=f"matmul{i}"))
            prev = out
        return _save(scratch, f"mlp_m{m}_k{k}_{dtype}", nodes, [_vi("X", dtype, [m, k])], [_vi("Y", dtype, [m, k])],
                     inits)

    def torch_fn(torch, dev):
        t = getattr(torch, {"fp32": "float32", "fp16": "float16"}[dtype])
        x = torch.randn(m, k, device=dev, dtype=t)
        ws = [torch.randn(k, k, device=dev, dtype=t) / math.sqrt(k) for _ in range(layers)]

        def run():
            h = x
            for w in ws:
                h = h @ w
            return h

        return run

    return Case(f"mlp_m{m}_k{k}_{dtype}", "mlp", dtype, f"M={m}", 2.0 * m * k * k * layers, build, torch_fn,
                note=f"{layers}×MatMul [{m},{k}]×[{k},{k}]", tags={"profile"})


def gemm_case(m: int, k: int, n: int, dtype: str) -> Case:
    """Y = A[m,k] · W[n,k]ᵀ + bias[n] (a Linear layer: transB=1, constant W and bias)."""

    def build(scratch):
        node = helper.make_node("Gemm", ["A", "W", "bias"], ["Y"], name="gemm", transB=1)
        inits = [_weight(scratch, "gemm/W", (n, k), k, dtype, "W"), _weight(scratch, "gemm/b", (n,), 1, dtype, "bias")]
        return _save(scratch, f"gemm_{m}x{k}x{n}_{dtype}", [node], [_vi("A", dtype, [m, k])],
                     [_vi("Y", dtype, [m, n])], inits)

    def torch_fn(torch, dev):
        t = getattr(torch, {"fp32": "float32", "fp16": "float16"}[dtype])
        a = torch.randn(m, k, device=dev, dtype=t)
        w = torch.randn(n, k, device=dev, dtype=t) / math.sqrt(k)
        b = torch.randn(n, device=dev, dtype=t)
        return lambda: torch.addmm(b, a, w.t())

    return Case(f"gemm_{m}x{k}x{n}_{dtype}", "gemm", dtype, f"{m}×{k}×{n}", 2.0 * m * n * k, build, torch_fn,
                note="transB=1, bias")


# ------------------------------------------------------------------------------------------------ convolutions


def whisper_conv_case(frames: int, dtype: str, mels: int = 80, d: int = 384) -> Case:
    """Whisper's frontend without its Gelus: Conv1d mels→d k3 p1, then Conv1d d→d k3 s2 p1, on X[1,mels,frames]."""
    half = conv_out(frames, 3, 2, 1)
    flops = 2.0 * d * frames * mels * 3 + 2.0 * d * half * d * 3

    def build(scratch):
        inits = [_weight(scratch, "wconv/w1", (d, mels, 3), mels * 3, dtype, "w1"),
                 _weight(scratch, "wconv/b1", (d,), 1, dtype, "b1"),
                 _weight(scratch, "wconv/w2", (d, d, 3), d * 3, dtype, "w2"),
                 _weight(scratch, "wconv/b2", (d,), 1, dtype, "b2")]
        nodes = [
            helper.make_node("Conv", ["X", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3], pads=[1, 1]),
            helper.make_node("Conv", ["c1", "w2", "b2"], ["Y"], name="conv2", kernel_shape=[3], pads=[1, 1],
                             strides=[2]),
        ]
        return _save(scratch, f"whisper_conv_{frames}_{dtype}", nodes, [_vi("X", dtype, [1, mels, frames])],
                     [_vi("Y", dtype, [1, d, half])], inits)

    def torch_fn(torch, dev):
        F = torch.nn.functional
        t = getattr(torch, {"fp32": "float32", "fp16": "float16"}[dtype])
        x = torch.randn(1, mels, frames, device=dev, dtype=t)
        w1, b1 = torch.randn(d, mels, 3, device=dev, dtype=t) * 0.05, torch.randn(d, device=dev, dtype=t)
        w2, b2 = torch.randn(d, d, 3, device=dev, dtype=t) * 0.03, torch.randn(d, device=dev, dtype=t)
        return lambda: F.conv1d(F.conv1d(x, w1, b1, padding=1), w2, b2, stride=2, padding=1)

    return Case(f"whisper_conv_{frames}_{dtype}", "whisper_conv", dtype, f"T={frames}", flops, build, torch_fn,
                note=f"Conv1d {mels}→{d} k3 p1; Conv1d {d}→{d} k3 s2 p1")


def resnet_block_case(n: int, c: int, hw: int, dtype: str) -> Case:
    """ResNet basic block (BN folded): Conv3x3 → Relu → Conv3x3 → Add(X) → Relu on X[n,c,hw,hw]."""
    flops = 2 * (2.0 * n * c * hw * hw * c * 9)

    def build(scratch):
        inits = [_weight(scratch, "resnet/w1", (c, c, 3, 3), c * 9, dtype, "w1"),
                 _weight(scratch, "resnet/b1", (c,), 1, dtype, "b1"),
                 _weight(scratch, "resnet/w2", (c, c, 3, 3), c * 9, dtype, "w2"),
                 _weight(scratch, "resnet/b2", (c,), 1, dtype, "b2")]
        conv = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])
        nodes = [
            helper.make_node("Conv", ["X", "w1", "b1"], ["c1"], name="conv1", **conv),
            helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
            helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", **conv),
            helper.make_node("Add", ["c2", "X"], ["s"], name="residual"),
            helper.make_node("Relu", ["s"], ["Y"], name="relu2"),
        ]
        shape = [n, c, hw, hw]
        return _save(scratch, f"resnet_block_{n}x{c}x{hw}_{dtype}", nodes, [_vi("X", dtype, shape)],
                     [_vi("Y", dtype, shape)], inits)

    def torch_fn(torch, dev):
        F = torch.nn.functional
        t = getattr(torch, {"fp32": "float32", "fp16": "float16"}[dtype])
        x = torch.randn(n, c, hw, hw, device=dev, dtype=t)
        w1, w2 = (torch.randn(c, c, 3, 3, device=dev, dtype=t) / math.sqrt(9 * c) for _ in range(2))
        b1, b2 = (torch.randn(c, device=dev, dtype=t) for _ in range(2))
        return lambda: F.relu(F.conv2d(F.relu(F.conv2d(x, w1, b1, padding=1)), w2, b2, padding=1) + x)

    return Case(f"resnet_block_{n}x{c}x{hw}_{dtype}", "conv2d", dtype, f"{n}×{c}×{hw}²", flops, build, torch_fn,
                note="2× Conv3x3 + Relu, residual Add")


def depthwise_case(n: int, c: int, hw: int, dtype: str) -> Case:
    """Depthwise Conv3x3 (group = channels) + bias on X[n,c,hw,hw]."""
    flops = 2.0 * n * c * hw * hw * 9

    def build(scratch):
        node = helper.make_node("Conv", ["X", "w", "b"], ["Y"], name="depthwise", kernel_shape=[3, 3],
                                pads=[1, 1, 1, 1], group=c)
        shape = [n, c, hw, hw]
        inits = [_weight(scratch, "dw/w", (c, 1, 3, 3), 9, dtype, "w"), _weight(scratch, "dw/b", (c,), 1, dtype, "b")]
        return _save(scratch, f"depthwise_{n}x{c}x{hw}_{dtype}", [node], [_vi("X", dtype, shape)],
                     [_vi("Y", dtype, shape)], inits)

    def torch_fn(torch, dev):
        t = getattr(torch, {"fp32": "float32", "fp16": "float16"}[dtype])
        x = torch.randn(n, c, hw, hw, device=dev, dtype=t)
        w, b = torch.randn(c, 1, 3, 3, device=dev, dtype=t) / 3, torch.randn(c, device=dev, dtype=t)
        return lambda: torch.nn.functional.conv2d(x, w, b, padding=1, groups=c)

    return Case(f"depthwise_{n}x{c}x{hw}_{dtype}", "depthwise", dtype, f"{n}×{c}×{hw}²", flops, build, torch_fn,
                note="Conv3x3 group=C")


# ------------------------------------------------------------------------------------------------ token embedding


def token_embed_case(vocab: int, seq: int, d: int, dtype: str, pad: int = 4) -> Case:
    """A small stand-in for BERT's int64 inputs (no torch needed): Gather(word table, input_ids) + Gather(type table,
    token_type_ids), times the attention mask (Cast + Unsqueeze), then MatMul with a constant [d, d]."""

    def build(scratch):
        ivi = [helper.make_tensor_value_info(n, TensorProto.INT64, [1, seq])
               for n in ("input_ids", "attention_mask", "token_type_ids")]
        inits = [_weight(scratch, f"embed{vocab}/words", (vocab, d), 1, dtype, "words"),
                 _weight(scratch, "embed/types", (2, d), 1, dtype, "types"),
                 _weight(scratch, f"embed{d}/W", (d, d), d, dtype, "W"),
                 numpy_helper.from_array(np.array([-1], dtype=np.int64), "last_axis")]
        nodes = [
            helper.make_node("Gather", ["words", "input_ids"], ["we"], name="word_embedding"),
            helper.make_node("Gather", ["types", "token_type_ids"], ["te"], name="type_embedding"),
            helper.make_node("Add", ["we", "te"], ["e"], name="add"),
            helper.make_node("Cast", ["attention_mask"], ["mf"], name="mask_cast", to=DTYPES[dtype][1]),
            helper.make_node("Unsqueeze", ["mf", "last_axis"], ["m"], name="mask_unsqueeze"),
            helper.make_node("Mul", ["e", "m"], ["em"], name="mask_mul"),
            helper.make_node("MatMul", ["em", "W"], ["Y"], name="proj"),
        ]
        return _save(scratch, f"token_embed_v{vocab}_s{seq}_{dtype}", nodes, ivi, [_vi("Y", dtype, [1, seq, d])],
                     inits)

    return Case(f"token_embed_v{vocab}_s{seq}_{dtype}", "token_embed", dtype, f"S={seq}", 2.0 * seq * d * d, build,
                note="int64 ids/mask/types: 2×Gather, Cast, Mul, MatMul",
                inputs={"input_ids": ("ids", vocab), "attention_mask": ("mask", pad), "token_type_ids": ("segments",)})


# ------------------------------------------------------------------------------------------------ case sets


def island_case(op: str, shape, dtype: str) -> Case:
    """One memory-bound op alone between host tensors: what the offload rule weighs (PCIe copies against the
    CPU EP). Run ours with `--option offload=all`, else the rule leaves it to the CPU EP on a discrete GPU."""
    shape = [int(d) for d in shape]
    elems = int(np.prod(shape))
    name = f"island_{op.lower()}_{'x'.join(map(str, shape))}_{dtype}"

    def build(scratch):
        if op == "Add":
            node = helper.make_node("Add", ["A", "B"], ["Y"], name="add")
            inputs = [_vi("A", dtype, shape), _vi("B", dtype, shape)]
        else:
            node = helper.make_node(op, ["A"], ["Y"], name=op.lower(), axis=-1)
            inputs = [_vi("A", dtype, shape)]
        return _save(scratch, name, [node], inputs, [_vi("Y", dtype, shape)], [])

    return Case(name, "island", dtype, "×".join(map(str, shape)), float(elems) * (1 if op == "Add" else 5), build,
                note="one op between host tensors (offload rule)")


def island_cases() -> list[Case]:
    """`bench/run.py --only island --option offload=all`: the data points of the offload rule."""
    return [island_case("Add", (2048, 4096), "fp32"), island_case("Add", (256, 1024), "fp32"),
            island_case("Softmax", (6, 1500, 1500), "fp32"), island_case("Softmax", (6, 128, 128), "fp32")]


def long_axis_case(op: str, shape, dtype: str, axis: int = 0, kernel=None) -> Case:
    """One op over a long axis with few outputs (a reduction, Softmax or ArgMax along a strided axis, a reduction of
    a long contiguous run, a pool over a large window): one invocation walked each output before the fortieth session;
    a workgroup per output, and for long reductions several and a last pass, since. Run with `--io-binding`: the
    bound rows time the device, the numpy rows mostly the PCIe copies."""
    shape = [int(d) for d in shape]
    elems = int(np.prod(shape))
    name = f"long_axis_{op.lower()}_{'x'.join(map(str, shape))}_a{axis}_{dtype}"

    def build(scratch):
        inits, inputs, attrs = [], ["X"], {}
        if op.startswith("Reduce"):
            inits.append(helper.make_tensor("axes", TensorProto.INT64, [1], [axis]))
            inputs.append("axes")
            attrs["keepdims"] = 0
        elif op.endswith("Pool"):
            attrs["kernel_shape"] = kernel
        else:
            attrs["axis"] = axis
        node = helper.make_node(op, inputs, ["Y"], name=op.lower(), **attrs)
        if op.startswith("Reduce"):
            out_shape = shape[:axis] + shape[axis + 1:]
        elif op.startswith("Arg"):
            out_shape = shape[:axis] + [1] + shape[axis + 1:]
        elif op.endswith("Pool"):
            out_shape = shape[:2] + [d - k + 1 for d, k in zip(shape[2:], kernel)]
        else:
            out_shape = shape
        out = helper.make_tensor_value_info("Y", TensorProto.INT64 if op.startswith("Arg") else DTYPES[dtype][1],
                                            out_shape)
        return _save(scratch, name, [node], [_vi("X", dtype, shape)], [out], inits, opset=18)

    return Case(name, "long_axis", dtype, "×".join(map(str, shape)), float(elems), build,
                note="few outputs, long walks (fortieth session)")


def long_axis_cases() -> list[Case]:
    """`bench/run.py --only long_axis --io-binding`: the wide and split reductions and pools against one invocation
    per output (the build before the fortieth session)."""
    return [long_axis_case("ReduceSum", (1_000_000, 3), "fp32"), long_axis_case("ReduceSum", (3, 4_000_000), "fp32", 1),
            long_axis_case("ReduceMean", (4096, 512), "fp32"), long_axis_case("Softmax", (200_000, 8), "fp32"),
            long_axis_case("ArgMax", (200_000, 8), "fp32"),
            long_axis_case("MaxPool", (1, 8, 256, 256), "fp32", kernel=[256, 256])]


def quick_cases() -> list[Case]:
    """Small sizes for CI on the software adapter: checks the harness, not the speed."""
    from cases_unet import unet_case

    cases = []
    for dt in ("fp32", "fp16"):
        cases += [matmul_case(128, dt), mlp_case(16, 128, dt)]
    cases += [
        token_embed_case(1000, 16, 64, "fp32"),
        gemm_case(64, 128, 96, "fp32"),
        whisper_conv_case(200, "fp32", mels=16, d=32),
        resnet_block_case(1, 8, 16, "fp32"),
        depthwise_case(1, 16, 16, "fp32"),
        unet_case(1, 8, 20, "fp32"),
    ]
    for c in cases:
        c.tags.add("quick")
    return cases


def full_cases(with_encoder: bool | None = None) -> list[Case]:
    """Everything targets.md names, most important first (a run that hits its deadline loses the tail)."""
    from cases_torch import (bert_base_case, cnn_cases, have_torch_and_transformers, have_torchvision,
                             vit_base_case, whisper_encoder_case)
    from cases_unet import unet_case

    cases = []
    for dt in ("fp32", "fp16"):
        cases += [mlp_case(2048, 4096, dt), mlp_case(128, 4096, dt)]
    cases += [whisper_conv_case(3000, dt) for dt in ("fp32", "fp16")]
    if with_encoder if with_encoder is not None else have_torch_and_transformers():
        cases += [whisper_encoder_case(dt) for dt in ("fp32", "fp16")]
        cases += [bert_base_case(dt) for dt in ("fp32", "fp16")]
        cases += [vit_base_case(dt) for dt in ("fp32", "fp16")]
    if have_torchvision():
        cases += cnn_cases()
    for dt in ("fp32", "fp16"):
        cases += [matmul_case(n, dt) for n in (1024, 2048, 4096, 8192)]
    cases += [gemm_case(2048, 4096, 4096, dt) for dt in ("fp32", "fp16")]
    cases += island_cases()
    cases += long_axis_cases()
    cases += [resnet_block_case(8, 128, 28, dt) for dt in ("fp32", "fp16")]
    cases += [depthwise_case(8, 256, 56, dt) for dt in ("fp32", "fp16")]
    cases += [unet_case(2, 64, 128, dt) for dt in ("fp32", "fp16")]
    return cases
