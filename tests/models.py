"""Small ONNX models built with onnx.helper for the end-to-end tests."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper
import seeds

OPSET = 17
NP_TO_ONNX = {
    np.float32: TensorProto.FLOAT,
    np.float16: TensorProto.FLOAT16,
    np.int32: TensorProto.INT32,
    np.int64: TensorProto.INT64,
    np.bool_: TensorProto.BOOL,
}


def elem(dtype) -> int:
    return NP_TO_ONNX[np.dtype(dtype).type]


def finish(nodes, inputs, outputs, initializers=(), opset=OPSET):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def tensor(name, dtype, shape):
    return helper.make_tensor_value_info(name, elem(dtype), shape)


def matmul(a_shape, b_shape, dtype=np.float32, b_value=None, dims=None):
    """Y = A @ B. With `b_value`, B is a constant initializer; `dims` overrides declared shapes."""
    a_decl, b_decl = dims or (a_shape, b_shape)
    inputs = [tensor("A", dtype, a_decl)]
    inits = []
    if b_value is None:
        inputs.append(tensor("B", dtype, b_decl))
    else:
        inits.append(numpy_helper.from_array(b_value.astype(dtype), "B"))
    node = helper.make_node("MatMul", ["A", "B"], ["Y"], name="matmul")
    return finish([node], inputs, [tensor("Y", dtype, None)], inits)


def gemm(a_shape, b_shape, c_shape, dtype=np.float32, c_value=None, **attrs):
    """Y = alpha·op(A)·op(B) + beta·C with C an input (or a constant when `c_value` is given, or absent)."""
    inputs = [tensor("A", dtype, a_shape), tensor("B", dtype, b_shape)]
    names = ["A", "B"]
    inits = []
    if c_value is not None:
        inits.append(numpy_helper.from_array(c_value.astype(dtype), "C"))
        names.append("C")
    elif c_shape is not None:
        inputs.append(tensor("C", dtype, c_shape))
        names.append("C")
    node = helper.make_node("Gemm", names, ["Y"], name="gemm", **attrs)
    return finish([node], inputs, [tensor("Y", dtype, None)], inits)


def mlp(batch_shape, widths, dtype=np.float32, rng=None, activation="Relu", clip=(-0.5, 0.5)):
    """X[batch…, widths[0]] → (MatMul W_i, Add b_i, activation) per layer. 3-D inputs keep ORT from turning
    MatMul+Add into Gemm, so the EP's own Add/Relu/Clip fusion runs."""
    rng = rng or seeds.rng()
    nodes, inits = [], []
    prev = "X"
    last = len(widths) - 2
    for i, (k, n) in enumerate(zip(widths[:-1], widths[1:])):
        inits.append(numpy_helper.from_array((rng.standard_normal((k, n)) / np.sqrt(k)).astype(dtype), f"W{i}"))
        inits.append(numpy_helper.from_array(rng.standard_normal((n,)).astype(dtype), f"b{i}"))
        nodes.append(helper.make_node("MatMul", [prev, f"W{i}"], [f"m{i}"], name=f"matmul{i}"))
        out = "Y" if i == last else f"h{i}"
        nodes.append(helper.make_node("Add", [f"m{i}", f"b{i}"], [out if activation is None else f"a{i}"], name=f"add{i}"))
        if activation == "Relu":
            nodes.append(helper.make_node("Relu", [f"a{i}"], [out], name=f"relu{i}"))
        elif activation == "Clip":
            lo, hi = f"lo{i}", f"hi{i}"
            inits.append(numpy_helper.from_array(np.array(clip[0], dtype=dtype), lo))
            inits.append(numpy_helper.from_array(np.array(clip[1], dtype=dtype), hi))
            nodes.append(helper.make_node("Clip", [f"a{i}", lo, hi], [out], name=f"clip{i}"))
        prev = out
    x = tensor("X", dtype, list(batch_shape) + [widths[0]])
    return finish(nodes, [x], [tensor("Y", dtype, None)], inits)


# ---------------------------------------------------------------------------------------------------------------
# Transformer blocks the way torch.onnx (TorchScript exporter, opset 17, static shapes) exports them from
# `transformers`: Linear → MatMul(x, Wᵀ) + Add(b); nn.LayerNorm → LayerNormalization(axis=-1); nn.GELU/ACT2FN
# "gelu" → Div(√2) → Erf → Add(1) → Mul(x) → Mul(0.5); view/permute → Reshape/Transpose with constant shapes.
#
# Weights come from a `Params` bank (float32, created on first use): building the same architecture twice from one
# bank gives the same weights, so an fp16 model can be compared with its float32 twin (`Params.rounded`).


class Params:
    """Named float32 weights, drawn from `rng` on first request and reused after."""

    def __init__(self, rng: np.random.Generator):
        self.rng, self.arrays = rng, {}

    def get(self, name, shape, kind="weight"):
        if name not in self.arrays:
            shape = tuple(shape)
            if kind == "weight":  # fan-in scaled, as after training
                a = self.rng.standard_normal(shape) / np.sqrt(shape[0] if len(shape) == 2 else np.prod(shape[1:]))
            elif kind == "gamma":
                a = 1.0 + 0.1 * self.rng.standard_normal(shape)
            elif kind == "embedding":
                a = 0.5 * self.rng.standard_normal(shape)
            else:  # bias
                a = 0.1 * self.rng.standard_normal(shape)
            self.arrays[name] = a.astype(np.float32)
        return self.arrays[name]

    def rounded(self, dtype):
        """A bank with every weight rounded through `dtype` (the float32 twin of a model built in `dtype`)."""
        twin = Params(self.rng)
        twin.arrays = {k: v.astype(dtype).astype(np.float32) for k, v in self.arrays.items()}
        return twin


class Builder:
    """Appends nodes to a graph in one float dtype; `op` returns the output name."""

    def __init__(self, params: Params, dtype=np.float32):
        self.params, self.dtype = params, np.dtype(dtype).type
        self.nodes, self.inits, self.count = [], [], 0

    def fresh(self, prefix):
        self.count += 1
        return f"{prefix}_{self.count}"

    def op(self, op_type, inputs, name=None, out=None, **attrs):
        out = out or self.fresh(op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], name=name or out, **attrs))
        return out

    def weight(self, name, shape, kind="weight"):
        if not any(i.name == name for i in self.inits):
            self.inits.append(numpy_helper.from_array(self.params.get(name, shape, kind).astype(self.dtype), name))
        return name

    def const(self, value, dtype=None):
        name = self.fresh("const")
        self.inits.append(numpy_helper.from_array(np.array(value, dtype=dtype or self.dtype), name))
        return name

    def ints(self, values):
        return self.const(list(values), np.int64)

    def linear(self, x, prefix, k, n, bias=True):
        y = self.op("MatMul", [x, self.weight(f"{prefix}.weight_t", (k, n))], name=f"{prefix}/MatMul")
        if bias:
            y = self.op("Add", [y, self.weight(f"{prefix}.bias", (n,), "bias")], name=f"{prefix}/Add")
        return y

    def layer_norm(self, x, prefix, d, eps=1e-5, out=None):
        w, b = self.weight(f"{prefix}.weight", (d,), "gamma"), self.weight(f"{prefix}.bias", (d,), "bias")
        return self.op("LayerNormalization", [x, w, b], name=f"{prefix}/LayerNormalization", out=out, axis=-1, epsilon=eps)

    def gelu(self, x):
        """erf GELU as torch exports it: x * (1 + erf(x / √2)) * 0.5 (Div → Erf → Add → Mul → Mul)."""
        e = self.op("Erf", [self.op("Div", [x, self.const(1.4142135381698608)])])
        return self.op("Mul", [self.op("Mul", [x, self.op("Add", [e, self.const(1.0)])]), self.const(0.5)])

    def heads(self, x, batch, seq, heads, head_dim, perm=(0, 2, 1, 3)):
        """view(B, T, H, D) then permute: [B, H, T, D] by default."""
        r = self.op("Reshape", [x, self.ints([batch, seq, heads, head_dim])])
        return self.op("Transpose", [r], perm=list(perm))

    def attention(self, x, prefix, batch, seq, d, heads, *, scale="scores_mul", k_bias=True, k_direct=False, mask=None,
                  softmax_fp32=False, softmax_roundtrip=False):
        """Self-attention: q/k/v projections, view + permute to heads, scores = q·kᵀ scaled, + `mask`, Softmax(-1),
        · v, permute back, view, out projection. `scale`: "scores_mul" (Mul by 1/√D on the scores), "scores_div"
        (Div by √D, as BERT/ViT), or "q" (q multiplied after its projection, as HF Whisper's eager attention).
        `k_direct`: k permuted straight to [B, H, D, T] (else permuted to [B, H, T, D] then transposed).
        `softmax_roundtrip`: the probabilities Cast to float32 and back after the Softmax (transformers' ViT export)."""
        hd = d // heads
        q = self.linear(x, f"{prefix}.q_proj", d, d)
        k = self.linear(x, f"{prefix}.k_proj", d, d, bias=k_bias)
        v = self.linear(x, f"{prefix}.v_proj", d, d)
        if scale == "q":
            q = self.op("Mul", [q, self.const(hd**-0.5)])
        if k_direct:
            kt = self.heads(k, batch, seq, heads, hd, perm=(0, 2, 3, 1))
        else:
            kt = self.op("Transpose", [self.heads(k, batch, seq, heads, hd)], perm=[0, 1, 3, 2])
        scores = self.op("MatMul", [self.heads(q, batch, seq, heads, hd), kt])
        if scale == "scores_mul":
            scores = self.op("Mul", [scores, self.const(hd**-0.5)])
        elif scale == "scores_div":
            scores = self.op("Div", [scores, self.const(float(np.sqrt(hd)))])
        if mask is not None:
            scores = self.op("Add", [scores, mask])
        if softmax_fp32:  # softmax(..., dtype=torch.float32).to(query.dtype)
            scores = self.op("Cast", [scores], to=TensorProto.FLOAT)
        probs = self.op("Softmax", [scores], axis=-1)
        if softmax_fp32:
            probs = self.op("Cast", [probs], to=elem(self.dtype))
        if softmax_roundtrip:
            probs = self.op("Cast", [self.op("Cast", [probs], to=TensorProto.FLOAT)], to=elem(self.dtype))
        ctx = self.op("MatMul", [probs, self.heads(v, batch, seq, heads, hd)])
        ctx = self.op("Reshape", [self.op("Transpose", [ctx], perm=[0, 2, 1, 3]), self.ints([batch, seq, d])])
        return self.linear(ctx, f"{prefix}.out_proj", d, d)

    def mlp(self, x, prefix, d, ffn):
        return self.linear(self.gelu(self.linear(x, f"{prefix}.fc1", d, ffn)), f"{prefix}.fc2", ffn, d)

    def model(self, inputs, outputs, opset=OPSET):
        return finish(self.nodes, inputs, outputs, self.inits, opset)


def whisper_encoder(params: Params, dtype=np.float32, batch=2, n_mels=80, frames=61, d=64, heads=4, ffn=128, layers=2,
                    clamp=None, softmax_fp32=None, hf_eager=False):
    """WhisperEncoder: Conv1d(k3, p1) + GELU, Conv1d(k3, s2, p1) + GELU, permute, + positional embedding (a Slice of
    the table), `layers` pre-LN layers, final LayerNorm. Input `input_features` [B, n_mels, frames], output
    `last_hidden_state` [B, ⌈frames/2⌉, d]. Attention: k permuted straight to [B, H, D, T], the scores multiplied
    by 1/√D; `hf_eager`: HF's eager attention instead (q scaled after its projection, k_proj without bias). fp16 (by
    default): each layer ends with the fp16 clamp (Clip to ±(65504 − 1000)) and the softmax runs in float32 between
    two Casts."""
    half = np.dtype(dtype) == np.float16
    clamp = half if clamp is None else clamp
    softmax_fp32 = half if softmax_fp32 is None else softmax_fp32
    b = Builder(params, dtype)
    seq = (frames - 1) // 2 + 1
    h = b.op("Conv", ["input_features", b.weight("conv1.weight", (d, n_mels, 3)), b.weight("conv1.bias", (d,), "bias")],
             kernel_shape=[3], pads=[1, 1], strides=[1], name="conv1")
    h = b.gelu(h)
    h = b.op("Conv", [h, b.weight("conv2.weight", (d, d, 3)), b.weight("conv2.bias", (d,), "bias")],
             kernel_shape=[3], pads=[1, 1], strides=[2], name="conv2")
    h = b.op("Transpose", [b.gelu(h)], perm=[0, 2, 1])
    pos = b.op("Slice", [b.weight("embed_positions.weight", (seq + 7, d), "embedding"), b.ints([0]), b.ints([seq]), b.ints([0])])
    h = b.op("Add", [h, pos])
    for i in range(layers):
        p = f"layers.{i}"
        a = b.attention(b.layer_norm(h, f"{p}.self_attn_layer_norm", d), f"{p}.self_attn", batch, seq, d, heads,
                        scale="q" if hf_eager else "scores_mul", k_bias=not hf_eager, k_direct=True, softmax_fp32=softmax_fp32)
        h = b.op("Add", [h, a])
        h = b.op("Add", [h, b.mlp(b.layer_norm(h, f"{p}.final_layer_norm", d), p, d, ffn)])
        if clamp:
            limit = float(np.finfo(np.float16).max) - 1000
            h = b.op("Clip", [h, b.const(-limit), b.const(limit)])
    b.layer_norm(h, "layer_norm", d, out="last_hidden_state")
    return b.model([tensor("input_features", dtype, [batch, n_mels, frames])], [tensor("last_hidden_state", dtype, [batch, seq, d])])


def bert_encoder(params: Params, dtype=np.float32, batch=2, seq=13, d=64, heads=4, ffn=128, layers=2, vocab=97,
                 max_positions=32, type_vocab=2):
    """BertModel: word + position + token-type embeddings (Gather), Add, LayerNorm; the extended attention mask
    (attention_mask [B, S] int64 → Unsqueeze(1) → Unsqueeze(2) → Cast → Sub(1, ·) → Mul(·, finfo.min)) added to
    the scores; `layers` post-LN layers with erf GELU; the pooler (token 0 by Gather → MatMul + Add → Tanh).
    Inputs input_ids, attention_mask, token_type_ids (int64 [B, S]); outputs last_hidden_state, pooler_output."""
    b = Builder(params, dtype)
    words = b.op("Gather", [b.weight("embeddings.word_embeddings.weight", (vocab, d), "embedding"), "input_ids"])
    pos_table = b.weight("embeddings.position_embeddings.weight", (max_positions, d), "embedding")
    positions = b.op("Gather", [pos_table, b.const(np.arange(seq)[None, :], np.int64)])
    types = b.op("Gather", [b.weight("embeddings.token_type_embeddings.weight", (type_vocab, d), "embedding"), "token_type_ids"])
    h = b.layer_norm(b.op("Add", [b.op("Add", [words, types]), positions]), "embeddings.LayerNorm", d, eps=1e-12)
    m = b.op("Unsqueeze", [b.op("Unsqueeze", ["attention_mask", b.ints([1])]), b.ints([2])])
    m = b.op("Cast", [m], to=elem(dtype))
    mask = b.op("Mul", [b.op("Sub", [b.const(1.0), m]), b.const(float(np.finfo(dtype).min))])
    for i in range(layers):
        p = f"encoder.layer.{i}"
        a = b.attention(h, f"{p}.attention", batch, seq, d, heads, scale="scores_div", mask=mask)
        h = b.layer_norm(b.op("Add", [a, h]), f"{p}.attention.output.LayerNorm", d, eps=1e-12)
        f = b.mlp(h, p, d, ffn)
        last = "last_hidden_state" if i == layers - 1 else None
        h = b.layer_norm(b.op("Add", [f, h]), f"{p}.output.LayerNorm", d, eps=1e-12, out=last)
    first = b.op("Gather", [h, b.const(0, np.int64)], axis=1)
    b.op("Tanh", [b.linear(first, "pooler.dense", d, d)], out="pooler_output")
    ids = [tensor(n, np.int64, [batch, seq]) for n in ("input_ids", "attention_mask", "token_type_ids")]
    return b.model(ids, [tensor("last_hidden_state", dtype, [batch, seq, d]), tensor("pooler_output", dtype, [batch, d])])


def vit_encoder(params: Params, dtype=np.float32, batch=2, channels=3, image=32, patch=8, d=64, heads=4, ffn=128, layers=2,
                softmax_roundtrip=False):
    """ViTModel: patch Conv (stride = kernel), flatten(2) (Reshape) and transpose(1, 2), a cls token expanded to the
    batch and concatenated in front, + position embeddings, `layers` pre-LN layers, final LayerNorm, token 0
    (Gather). Input pixel_values [B, C, H, W]; outputs last_hidden_state [B, N + 1, d] and cls [B, d]."""
    b = Builder(params, dtype)
    n = (image // patch) ** 2
    x = b.op("Conv", ["pixel_values", b.weight("patch_embeddings.projection.weight", (d, channels, patch, patch)),
                      b.weight("patch_embeddings.projection.bias", (d,), "bias")],
             kernel_shape=[patch, patch], strides=[patch, patch], name="patch_embeddings")
    x = b.op("Transpose", [b.op("Reshape", [x, b.ints([batch, d, n])])], perm=[0, 2, 1])
    cls = b.op("Expand", [b.weight("cls_token", (1, 1, d), "embedding"), b.ints([batch, 1, d])])
    h = b.op("Add", [b.op("Concat", [cls, x], axis=1), b.weight("position_embeddings", (1, n + 1, d), "embedding")])
    for i in range(layers):
        p = f"encoder.layer.{i}"
        a = b.attention(b.layer_norm(h, f"{p}.layernorm_before", d, eps=1e-12), f"{p}.attention", batch, n + 1, d, heads,
                        scale="scores_div", softmax_roundtrip=softmax_roundtrip)
        h = b.op("Add", [a, h])
        h = b.op("Add", [b.mlp(b.layer_norm(h, f"{p}.layernorm_after", d, eps=1e-12), p, d, ffn), h])
    h = b.layer_norm(h, "layernorm", d, eps=1e-12, out="last_hidden_state")
    b.op("Gather", [h, b.const(0, np.int64)], out="cls", axis=1)
    return b.model([tensor("pixel_values", dtype, [batch, channels, image, image])],
                   [tensor("last_hidden_state", dtype, [batch, n + 1, d]), tensor("cls", dtype, [batch, d])])
