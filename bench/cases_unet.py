"""A small diffusion-style UNet built with onnx.helper (no torch needed to export it): residual blocks of
GroupNormalization → SiLU (exported as Sigmoid + Mul) → Conv3x3, strided-conv downsampling, ConvTranspose and
Resize + Conv upsampling, Concat skips with 1×1 skip convs. The peer's reference (`torch_fn`) runs the same layers
with torch.nn.functional over weights of the same shapes.

One description (`_unet`) drives both: it calls a builder's conv / group_norm / silu / add / concat / up_* methods,
and `_OnnxBuilder` writes nodes while `_TorchBuilder` computes tensors.
"""

from __future__ import annotations

import numpy as np
from onnx import helper, numpy_helper

from cases import DTYPES, Case, _save, _vi, _weight, np_dtype

OPSET = 21  # GroupNormalization with per-channel scale and bias


def _unet(b, x, c: int):
    """The network over input `x` (3 channels) with base width `c` (a multiple of 8: GroupNorm of 8 groups)."""

    def res_block(x, c_in, c_out):
        h = b.conv(b.silu(b.group_norm(x, c_in)), c_in, c_out, 3)
        h = b.conv(b.silu(b.group_norm(h, c_out)), c_out, c_out, 3)
        return b.add(h, x if c_in == c_out else b.conv(x, c_in, c_out, 1))

    h0 = res_block(b.conv(x, 3, c, 3), c, c)                       # full resolution
    h1 = res_block(b.conv(h0, c, 2 * c, 3, stride=2), 2 * c, 2 * c)  # 1/2
    h2 = res_block(b.conv(h1, 2 * c, 4 * c, 3, stride=2), 4 * c, 4 * c)  # 1/4, the middle
    u1 = b.up_transpose(h2, 4 * c, 2 * c)                           # ConvTranspose 2×2 / 2 → 1/2
    u1 = res_block(b.concat(u1, h1), 4 * c, 2 * c)
    u0 = b.conv(b.up_resize(u1), 2 * c, c, 3)                      # nearest ×2 + Conv3x3 → full
    u0 = res_block(b.concat(u0, h0), 2 * c, c)
    return b.conv(b.silu(b.group_norm(u0, c)), c, 3, 3)


class _OnnxBuilder:
    def __init__(self, scratch, dtype):
        self.scratch, self.dtype = scratch, dtype
        self.nodes, self.inits, self.count, self.macs = [], [], 0, 0
        self.shape = None  # [n, c, h, w] of the value last built

    def _name(self, op):
        self.count += 1
        return f"{op.lower()}{self.count}"

    def _node(self, op, inputs, **attrs):
        out = self._name(op)
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def _w(self, shape, fan_in):
        name = self._name("w")
        if self.scratch is not None:
            self.inits.append(_weight(self.scratch, f"unet/{name}", shape, fan_in, self.dtype, name))
        return name

    def _param(self, values):
        name = self._name("p")
        if self.scratch is not None:
            self.inits.append(numpy_helper.from_array(np.asarray(values).astype(np_dtype(self.dtype)), name))
        return name

    def conv(self, x, c_in, c_out, k, stride=1):
        n, _, h, w = self.shape[x]
        oh, ow = (h + 2 * (k // 2) - k) // stride + 1, (w + 2 * (k // 2) - k) // stride + 1
        self.macs += n * c_out * oh * ow * c_in * k * k
        y = self._node("Conv", [x, self._w([c_out, c_in, k, k], c_in * k * k), self._w([c_out], 1)],
                       kernel_shape=[k, k], pads=[k // 2] * 4, strides=[stride] * 2)
        self.shape[y] = [n, c_out, oh, ow]
        return y

    def group_norm(self, x, c):
        y = self._node("GroupNormalization", [x, self._param(np.ones(c)), self._param(np.zeros(c))],
                       num_groups=8, epsilon=1e-5)
        self.shape[y] = self.shape[x]
        return y

    def silu(self, x):
        s = self._node("Sigmoid", [x])
        y = self._node("Mul", [x, s])
        self.shape[s] = self.shape[y] = self.shape[x]
        return y

    def add(self, a, b):
        y = self._node("Add", [a, b])
        self.shape[y] = self.shape[a]
        return y

    def concat(self, a, b):
        y = self._node("Concat", [a, b], axis=1)
        n, ca, h, w = self.shape[a]
        self.shape[y] = [n, ca + self.shape[b][1], h, w]
        return y

    def up_transpose(self, x, c_in, c_out):
        n, _, h, w = self.shape[x]
        self.macs += n * c_in * h * w * c_out * 4
        y = self._node("ConvTranspose", [x, self._w([c_in, c_out, 2, 2], c_in * 4), self._w([c_out], 1)],
                       kernel_shape=[2, 2], strides=[2, 2])
        self.shape[y] = [n, c_out, 2 * h, 2 * w]
        return y

    def up_resize(self, x):
        y = self._node("Resize", [x, "", self._param_f32([1, 1, 2, 2])], mode="nearest")
        n, c, h, w = self.shape[x]
        self.shape[y] = [n, c, 2 * h, 2 * w]
        return y

    def _param_f32(self, values):
        name = self._name("scales")
        if self.scratch is not None:
            self.inits.append(numpy_helper.from_array(np.asarray(values, dtype=np.float32), name))
        return name


class _TorchBuilder:
    def __init__(self, torch, dev, dtype):
        self.torch, self.F, self.dev, self.gen = torch, torch.nn.functional, dev, torch.Generator().manual_seed(0)
        self.t = getattr(torch, {"fp32": "float32", "fp16": "float16"}[dtype])
        self.weights, self.used = [], 0  # made on the first pass, reused (in call order) by the timed ones

    def _w(self, shape, fan_in):
        if self.used == len(self.weights):
            w = (self.torch.rand(shape, generator=self.gen) - 0.5) * 2 * (3 / fan_in) ** 0.5
            self.weights.append(w.to(self.dev, self.t))
        self.used += 1
        return self.weights[self.used - 1]

    def conv(self, x, c_in, c_out, k, stride=1):
        return self.F.conv2d(x, self._w([c_out, c_in, k, k], c_in * k * k), self._w([c_out], 1), stride, k // 2)

    def group_norm(self, x, c):
        return self.F.group_norm(x, 8)

    def silu(self, x):
        return self.F.silu(x)

    def add(self, a, b):
        return a + b

    def concat(self, a, b):
        return self.torch.cat([a, b], 1)

    def up_transpose(self, x, c_in, c_out):
        return self.F.conv_transpose2d(x, self._w([c_in, c_out, 2, 2], c_in * 4), self._w([c_out], 1), stride=2)

    def up_resize(self, x):
        return self.F.interpolate(x, scale_factor=2, mode="nearest")


def unet_case(n: int, c: int, hw: int, dtype: str) -> Case:
    """The UNet above on X[n, 3, hw, hw] (hw a multiple of 4), base width c."""
    name = f"unet_{n}x{c}x{hw}_{dtype}"
    probe = _OnnxBuilder(None, dtype)
    probe.shape = {"X": [n, 3, hw, hw]}
    _unet(probe, "X", c)

    def build(scratch):
        b = _OnnxBuilder(scratch, dtype)
        b.shape = {"X": [n, 3, hw, hw]}
        y = _unet(b, "X", c)
        # Every intermediate's shape, as exporters record them: ONNX infers none past GroupNormalization-21 (a
        # function op), and the conv epilogue fuses a residual Add only where the shapes are known.
        shapes = [_vi(v, dtype, s) for v, s in b.shape.items() if v not in ("X", y)]
        return _save(scratch, name, b.nodes, [_vi("X", dtype, [n, 3, hw, hw])], [_vi(y, dtype, b.shape[y])],
                     b.inits, opset=OPSET, value_info=shapes)

    def torch_fn(torch, dev):
        b = _TorchBuilder(torch, dev, dtype)
        x = torch.randn(n, 3, hw, hw, device=dev, dtype=b.t)

        def run():
            b.used = 0
            with torch.no_grad():
                return _unet(b, x, c)

        run()

        return run

    assert dtype in DTYPES and hw % 4 == 0 and c % 8 == 0
    return Case(name, "unet", dtype, f"{n}×{c}ch×{hw}²", 2.0 * probe.macs, build, torch_fn,
                note="GroupNorm+SiLU+Conv3x3 res blocks, strided-conv down, ConvTranspose/Resize up, Concat skips",
                tags={"profile"})
