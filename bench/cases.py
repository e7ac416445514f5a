"""Benchmark cases: small ONNX graphs built with onnx.helper (random weights, fixed seeds) and, where torch and
transformers are installed, whole models exported from their transformers configs with random weights (nothing is
downloaded): the Whisper-tiny encoder, BERT-base and ViT-base/16.

A `Case` builds its model lazily (the MLP weights alone are 512 MiB in fp32), knows its FLOPs (MatMul/Gemm/Conv
multiply-adds ×2; elementwise work is not counted) and, for the cuBLAS/cuDNN reference, the same computation in
torch (`torch_fn(torch, device) -> callable`, inputs already on the device). Integer inputs (token ids, masks) are
described by `Case.inputs` so that `input_array` makes valid values for them (ids below the vocabulary size, a
mask of ones with padding zeros, token types 0/1), the same for ONNX Runtime, the export and torch.
"""

from __future__ import annotations

import importlib.util
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


def _save(scratch: str, name: str, nodes, inputs, outputs, inits) -> str:
    """Writes the model (weights of 1 MiB and more already in their own files, see `_weight`) to scratch."""
    graph = helper.make_graph(nodes, name, inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="bench")
    model.ir_version = 8
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


# ------------------------------------------------------------------------------------------------ Whisper encoder


def have_torch_and_transformers() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers"))


def whisper_tiny_config(layers: int = 4):
    """openai/whisper-tiny's encoder shape, from the config object (nothing is downloaded)."""
    from transformers import WhisperConfig

    cfg = WhisperConfig(d_model=384, encoder_layers=layers, encoder_attention_heads=6, encoder_ffn_dim=1536,
                        num_mel_bins=80, max_source_positions=1500)
    try:
        cfg._attn_implementation = "eager"  # plain MatMul/Softmax attention, as in the exported reference model
    except Exception:  # noqa: BLE001 - older/newer transformers may not allow it; the default exports too
        pass
    return cfg


def whisper_encoder_module(torch, dtype: str, layers: int = 4):
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    torch.manual_seed(0)
    enc = WhisperEncoder(whisper_tiny_config(layers)).eval()

    class LastHidden(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = enc

        def forward(self, input_features):
            return self.enc(input_features)[0]

    mod = LastHidden().eval()
    return mod.half() if dtype == "fp16" else mod


def export_torch(mod, args: tuple, path: str, input_names: list, output_names: list) -> tuple[str, str]:
    """(path, how it was exported). Static shapes (no dynamic axes). The TorchScript exporter at opset 17 first (what
    targets.md measured), then the dynamo exporter at opset 17, then at its default opset."""
    import torch

    names = dict(input_names=input_names, output_names=output_names)
    errors = []
    for how, extra in (("torchscript exporter, opset 17", {"dynamo": False, "opset_version": 17}),
                       ("dynamo exporter, opset 17", {"dynamo": True, "opset_version": 17}),
                       ("dynamo exporter, default opset", {"dynamo": True})):
        try:
            with torch.no_grad():
                torch.onnx.export(mod, args, path, **names, **extra)
            onnx.checker.check_model(path)
            return path, how
        except Exception as e:  # noqa: BLE001 - TypeError on a torch without `dynamo`, export errors
            errors.append(f"{how}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    raise RuntimeError("torch.onnx.export failed: " + " | ".join(errors))


def _export_device(torch) -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"  # fp16 tracing needs half kernels: use the GPU if any


def _torch_dtype(torch, dtype: str):
    return torch.float16 if dtype == "fp16" else torch.float32


def _eager(cfg):
    """Plain MatMul/Softmax attention (no SDPA), as in the exported reference models."""
    try:
        cfg._attn_implementation = "eager"
    except Exception:  # noqa: BLE001 - older/newer transformers may not allow it; the default exports too
        pass
    return cfg


def _first_output(torch, module, input_names: tuple):
    """Wraps a transformers model so that it takes its inputs positionally (in `input_names` order, passed on by
    name) and returns its first output (last_hidden_state) as a plain tensor."""

    class FirstOutput(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = module

        def forward(self, *args):
            return self.model(**dict(zip(input_names, args)))[0]

    return FirstOutput().eval()


def _torch_inputs(torch, case, shapes: dict, dtype: str, dev: str) -> tuple:
    """The case's inputs as torch tensors on dev, in `shapes` order, made by `input_array` (as run.py makes them)."""
    rng = np.random.default_rng(0)
    out = []
    for name, (shape, np_type) in shapes.items():
        a = input_array(name, shape, np_dtype(dtype) if np_type is None else np_type, rng, case.inputs.get(name))
        out.append(torch.from_numpy(a).to(dev))
    return tuple(out)


def export_whisper_encoder(path: str, dtype: str, layers: int = 4) -> tuple[str, str]:
    """(path, how it was exported), see `export_torch`."""
    import torch

    dev = _export_device(torch)
    mod = whisper_encoder_module(torch, dtype, layers).to(dev)
    x = torch.randn(1, 80, 3000, device=dev, dtype=_torch_dtype(torch, dtype))
    return export_torch(mod, (x,), path, ["input_features"], ["last_hidden_state"])


def whisper_encoder_case(dtype: str, layers: int = 4) -> Case:
    t, d, ff, frames, mels = 1500, 384, 1536, 3000, 80
    per_layer = 2.0 * t * (4 * d * d + 2 * d * ff) + 2.0 * 2 * t * t * d  # projections, FFN, QKᵀ and PV
    flops = layers * per_layer + 2.0 * d * frames * mels * 3 + 2.0 * d * t * d * 3

    def build(scratch):
        path, how = export_whisper_encoder(f"{scratch}/whisper_encoder_{dtype}.onnx", dtype, layers)
        case.note += f"; {how}"
        return path

    def torch_fn(torch, dev):
        mod = whisper_encoder_module(torch, dtype, layers).to(dev)
        x = torch.randn(1, mels, frames, device=dev, dtype=torch.float16 if dtype == "fp16" else torch.float32)

        def run():
            with torch.no_grad():
                return mod(x)

        return run

    case = Case(f"whisper_encoder_{dtype}", "whisper_encoder", dtype, f"{layers} layers", flops, build, torch_fn,
                note="Whisper-tiny encoder from WhisperConfig, random weights", tags={"profile"})
    return case


# ------------------------------------------------------------------------------------------------ BERT, ViT


def _encoder_flops(layers: int, seq: int, d: int, ff: int) -> float:
    """Transformer encoder layers: Q/K/V/O projections, the FFN, QKᵀ and PV (2 × multiply-adds)."""
    return layers * (2.0 * seq * (4 * d * d + 2 * d * ff) + 2.0 * 2 * seq * seq * d)


BERT_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def bert_base_module(torch, dtype: str):
    """BertModel from `BertConfig()` defaults (base: 12 layers, hidden 768, 12 heads, FFN 3072, vocab 30522), random
    weights, no pooler; returns last_hidden_state for (input_ids, attention_mask, token_type_ids)."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    model = BertModel(_eager(BertConfig()), add_pooling_layer=False).eval()
    mod = _first_output(torch, model, BERT_INPUTS)
    return mod.half() if dtype == "fp16" else mod


def bert_base_case(dtype: str, seq: int = 128, pad: int = 16) -> Case:
    """BERT-base on input_ids/attention_mask/token_type_ids [1, seq] (int64; the last `pad` tokens masked)."""
    vocab, layers, d, ff = 30522, 12, 768, 3072  # BertConfig() defaults
    shapes = {name: ([1, seq], np.int64) for name in BERT_INPUTS}

    def build(scratch):
        import torch

        dev = _export_device(torch)
        mod = bert_base_module(torch, dtype).to(dev)
        args = _torch_inputs(torch, case, shapes, dtype, dev)
        path, how = export_torch(mod, args, f"{scratch}/bert_base_{dtype}.onnx", list(shapes), ["last_hidden_state"])
        case.note += f"; {how}"
        return path

    def torch_fn(torch, dev):
        mod = bert_base_module(torch, dtype).to(dev)
        args = _torch_inputs(torch, case, shapes, dtype, dev)

        def run():
            with torch.no_grad():
                return mod(*args)

        return run

    case = Case(f"bert_base_s{seq}_{dtype}", "bert", dtype, f"S={seq}", _encoder_flops(layers, seq, d, ff), build,
                torch_fn, note=f"BERT-base from BertConfig(), random weights, last {pad} tokens masked",
                tags={"profile"},
                inputs={"input_ids": ("ids", vocab), "attention_mask": ("mask", pad), "token_type_ids": ("segments",)})
    return case


def vit_base_module(torch, dtype: str):
    """ViTModel from `ViTConfig()` defaults (base/16: image 224, patch 16, 12 layers, hidden 768, 12 heads, FFN 3072),
    random weights, no pooler; returns last_hidden_state for pixel_values."""
    from transformers import ViTConfig, ViTModel

    torch.manual_seed(0)
    model = ViTModel(_eager(ViTConfig()), add_pooling_layer=False).eval()
    mod = _first_output(torch, model, ("pixel_values",))
    return mod.half() if dtype == "fp16" else mod


def vit_base_case(dtype: str, image: int = 224, patch: int = 16) -> Case:
    """ViT-base/16 on pixel_values [1, 3, image, image]."""
    layers, d, ff = 12, 768, 3072  # ViTConfig() defaults
    seq = (image // patch) ** 2 + 1  # patches + [CLS]
    flops = _encoder_flops(layers, seq, d, ff) + 2.0 * (seq - 1) * d * 3 * patch * patch  # + the patch Conv
    shapes = {"pixel_values": ([1, 3, image, image], None)}

    def build(scratch):
        import torch

        dev = _export_device(torch)
        mod = vit_base_module(torch, dtype).to(dev)
        args = _torch_inputs(torch, case, shapes, dtype, dev)
        path, how = export_torch(mod, args, f"{scratch}/vit_base_{dtype}.onnx", list(shapes), ["last_hidden_state"])
        case.note += f"; {how}"
        return path

    def torch_fn(torch, dev):
        mod = vit_base_module(torch, dtype).to(dev)
        args = _torch_inputs(torch, case, shapes, dtype, dev)

        def run():
            with torch.no_grad():
                return mod(*args)

        return run

    case = Case(f"vit_base_p{patch}_{image}_{dtype}", "vit", dtype, f"{image}², S={seq}", flops, build, torch_fn,
                note=f"ViT-base/{patch} from ViTConfig(), random weights", tags={"profile"})
    return case


# ------------------------------------------------------------------------------------------------ CNNs (torchvision)


def have_torchvision() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("torch", "torchvision"))


# Multiply-adds per 224² image (torchvision's model cards): ResNet-50 4.09 G, MobileNetV3-large 0.217 G.
CNN_MACS = {"resnet50": 4.09e9, "mobilenet_v3_large": 0.217e9}


def torchvision_module(torch, arch: str, dtype: str):
    """A torchvision classifier with random weights (nothing is downloaded), in eval mode (the exporter folds each
    BatchNormalization into its Conv)."""
    import torchvision

    torch.manual_seed(0)
    mod = getattr(torchvision.models, arch)(weights=None).eval()
    return mod.half() if dtype == "fp16" else mod


def torchvision_case(arch: str, batch: int, dtype: str, image: int = 224) -> Case:
    """torchvision `arch` on [batch, 3, image, image], opset 17."""
    shapes = {"input": ([batch, 3, image, image], None)}
    flops = 2.0 * CNN_MACS[arch] * batch * (image / 224) ** 2

    def build(scratch):
        import torch

        dev = _export_device(torch)
        mod = torchvision_module(torch, arch, dtype).to(dev)
        args = _torch_inputs(torch, case, shapes, dtype, dev)
        path, how = export_torch(mod, args, f"{scratch}/{case.name}.onnx", list(shapes), ["logits"])
        case.note += f"; {how}"
        return path

    def torch_fn(torch, dev):
        mod = torchvision_module(torch, arch, dtype).to(dev)
        args = _torch_inputs(torch, case, shapes, dtype, dev)

        def run():
            with torch.no_grad():
                return mod(*args)

        return run

    case = Case(f"{arch}_b{batch}_{dtype}", "cnn", dtype, f"{batch}×3×{image}²", flops, build, torch_fn,
                note=f"torchvision {arch}, random weights; images/s = batch × 1000 / median ms", tags={"profile"})
    return case


def cnn_cases() -> list[Case]:
    """ResNet-50 at batch 1 and 32, MobileNetV3-large at batch 1, fp32 and fp16 (`--only 'resnet50|mobilenet'`)."""
    cases = []
    for dt in ("fp32", "fp16"):
        cases += [torchvision_case("resnet50", 1, dt), torchvision_case("resnet50", 32, dt)]
        cases += [torchvision_case("mobilenet_v3_large", 1, dt)]
    return cases


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


def quick_cases() -> list[Case]:
    """Small sizes for CI on the software adapter: checks the harness, not the speed."""
    cases = []
    for dt in ("fp32", "fp16"):
        cases += [matmul_case(128, dt), mlp_case(16, 128, dt)]
    cases += [
        token_embed_case(1000, 16, 64, "fp32"),
        gemm_case(64, 128, 96, "fp32"),
        whisper_conv_case(200, "fp32", mels=16, d=32),
        resnet_block_case(1, 8, 16, "fp32"),
        depthwise_case(1, 16, 16, "fp32"),
    ]
    for c in cases:
        c.tags.add("quick")
    return cases


def full_cases(with_encoder: bool | None = None) -> list[Case]:
    """Everything targets.md names, most important first (a run that hits its deadline loses the tail)."""
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
    cases += [resnet_block_case(8, 128, 28, dt) for dt in ("fp32", "fp16")]
    cases += [depthwise_case(8, 256, 56, dt) for dt in ("fp32", "fp16")]
    return cases
