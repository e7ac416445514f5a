"""A small decoder-only LLM graph shaped like onnxruntime-genai's model builder output (`-e webgpu`), built with
onnx.helper: Gather embeddings; per layer SkipSimplifiedLayerNormalization, Q/K/V MatMuls, GroupQueryAttention
(do_rotary, cos/sin caches, past_key_values.* / present.*), the output MatMul, the MLP with SiLU as Sigmoid + Mul;
a final SkipSimplifiedLayerNormalization and the LM head. seqlens_k and total_sequence_length come from
attention_mask as the builder computes them (ReduceSum/Sub/Cast and Shape/Gather/Cast).

The builder's int4 form (`nbits=True`, as its `-p int4` Llama): every projection and the LM head a MatMulNBits
(4 bits, symmetric, no zero points), the embeddings a GatherBlockQuantized over the LM head's packed weights (tied
embeddings), and, with `packed_gqa=True`, one Q/K/V projection whose packed output GroupQueryAttention takes as its
query (key and value empty). `gqa` adds GroupQueryAttention attributes (local_window_size, softcap,
rotary_interleaved)."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

ELEM = {np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16}


def llm_model(dtype=np.float16, layers=2, hidden=256, heads=4, kv_heads=2, ffn=384, vocab=300, max_seq=256, seed=0,
              packed_qkv=False, nbits=False, packed_gqa=False, block=32, accuracy_level=0, gqa=None):
    rng = np.random.default_rng(seed)
    d = hidden // heads
    elem = ELEM[dtype]
    inits, nodes = [], []

    def w(name, shape, scale=0.05):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(dtype), name))
        return name

    def node(op, ins, outs, domain="", **attrs):
        nodes.append(helper.make_node(op, ins, outs, name=f"{op}_{len(nodes)}", domain=domain, **attrs))
        return outs[0]

    def quantized(name, k, n, scale):
        """MatMulNBits weights of [K, N] as 4-bit blocks along K: B [N, blocks, block / 2] and scales [N, blocks]."""
        blocks = -(-k // block)
        q = rng.integers(0, 16, (n, blocks, block)).astype(np.uint8)
        inits.append(numpy_helper.from_array((q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8), f"{name}.B"))
        scales = rng.uniform(0.5 * scale, 1.5 * scale, (n, blocks)).astype(dtype)
        inits.append(numpy_helper.from_array(scales.ravel(), f"{name}.scales"))
        return scales

    def proj(src, k, n, name, out):
        """`src` [.., K] times a random [K, N] weight: a MatMul, or the int4 MatMulNBits of the builder's int4 form."""
        if not nbits:
            return node("MatMul", [src, w(name, (k, n))], [out])
        quantized(name, k, n, 0.01)  # (q - 8) * scale: about 0.05 per weight, as the float form's
        return node("MatMulNBits", [src, f"{name}.B", f"{name}.scales"], [out], domain="com.microsoft", K=k, N=n,
                    bits=4, block_size=block, accuracy_level=accuracy_level)

    inv = 1.0 / (10000 ** (np.arange(0, d, 2) / d))
    angles = np.arange(max_seq)[:, None] * inv[None, :]
    inits.append(numpy_helper.from_array(np.cos(angles).astype(dtype), "cos_cache"))
    inits.append(numpy_helper.from_array(np.sin(angles).astype(dtype), "sin_cache"))
    inits.append(numpy_helper.from_array(np.array([1], np.int64), "axis1"))
    inits.append(numpy_helper.from_array(np.array(1, np.int64), "one64"))
    # seqlens_k = ReduceSum(mask, 1) - 1; total_sequence_length = Shape(mask)[1].
    node("ReduceSum", ["attention_mask", "axis1"], ["mask_sum"], keepdims=0)
    node("Sub", ["mask_sum", "one64"], ["seqlens64"])
    node("Cast", ["seqlens64"], ["seqlens_k"], to=TensorProto.INT32)
    node("Shape", ["attention_mask"], ["mask_shape"])
    node("Gather", ["mask_shape", "one64"], ["total64"], axis=0)
    node("Cast", ["total64"], ["total_seq"], to=TensorProto.INT32)
    if nbits:  # tied embeddings: the LM head's 4-bit weights, gathered by row
        assert hidden % block == 0, "a tied table needs whole blocks"
        scales = quantized("lm_head", hidden, vocab, 0.1)
        table = numpy_helper.to_array(next(i for i in inits if i.name == "lm_head.B")).reshape(vocab, hidden // 2)
        inits.append(numpy_helper.from_array(table, "embed.table"))
        inits.append(numpy_helper.from_array(scales, "embed.scales"))
        x = node("GatherBlockQuantized", ["embed.table", "input_ids", "embed.scales"], ["embedded"],
                 domain="com.microsoft", bits=4, block_size=block, gather_axis=0, quantize_axis=1)
    else:
        x = node("Gather", [w("embed", (vocab, hidden), 1.0), "input_ids"], ["embedded"])
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
              helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "total"])]
    outputs = [helper.make_tensor_value_info("logits", elem, ["batch", "seq", vocab])]
    residual = None
    for i in range(layers):
        ln = w(f"ln{i}", (hidden,), 1.0)
        if residual is None:
            h = node("SimplifiedLayerNormalization", [x, ln], [f"h{i}"], axis=-1, epsilon=1e-5)
            residual = x
        else:
            h, residual = f"h{i}", f"res{i}"
            node("SkipSimplifiedLayerNormalization", [x, residual_prev, ln], [h, "", "", residual],
                 domain="com.microsoft", epsilon=1e-5)
        if packed_gqa:  # one projection whose packed output is GroupQueryAttention's query (the int4 Llama)
            q, k, v = proj(h, hidden, hidden + 2 * kv_heads * d, f"wqkv{i}", f"qkv{i}"), "", ""
        elif packed_qkv:  # one projection, then Split (Qwen3 as genai's builder emits it)
            qkv = proj(h, hidden, hidden + 2 * kv_heads * d, f"wqkv{i}", f"qkv{i}")
            inits.append(numpy_helper.from_array(np.array([hidden, kv_heads * d, kv_heads * d], np.int64), f"sz{i}"))
            q, k, v = f"q{i}", f"k{i}", f"v{i}"
            node("Split", [qkv, f"sz{i}"], [q, k, v], axis=-1)
        else:
            q = proj(h, hidden, hidden, f"wq{i}", f"q{i}")
            k = proj(h, hidden, kv_heads * d, f"wk{i}", f"k{i}")
            v = proj(h, hidden, kv_heads * d, f"wv{i}", f"v{i}")
        past_k, past_v = f"past_key_values.{i}.key", f"past_key_values.{i}.value"
        for name in (past_k, past_v):
            inputs.append(helper.make_tensor_value_info(name, elem, ["batch", kv_heads, "past", d]))
        pres_k, pres_v = f"present.{i}.key", f"present.{i}.value"
        for name in (pres_k, pres_v):
            outputs.append(helper.make_tensor_value_info(name, elem, ["batch", kv_heads, "total", d]))
        attn = node("GroupQueryAttention", [q, k, v, past_k, past_v, "seqlens_k", "total_seq", "cos_cache",
                                            "sin_cache"], [f"attn{i}", pres_k, pres_v], domain="com.microsoft",
                    num_heads=heads, kv_num_heads=kv_heads, do_rotary=1, scale=1.0 / np.sqrt(d), **(gqa or {}))
        o = proj(attn, hidden, hidden, f"wo{i}", f"o{i}")
        ln2 = w(f"ln2_{i}", (hidden,), 1.0)
        node("SkipSimplifiedLayerNormalization", [o, residual, ln2], [f"m{i}", "", "", f"mres{i}"],
             domain="com.microsoft", epsilon=1e-5)
        gate = proj(f"m{i}", hidden, ffn, f"wg{i}", f"g{i}")
        up = proj(f"m{i}", hidden, ffn, f"wu{i}", f"u{i}")
        sig = node("Sigmoid", [gate], [f"sg{i}"])
        silu = node("Mul", [gate, sig], [f"silu{i}"])
        act = node("Mul", [silu, up], [f"act{i}"])
        x = proj(act, ffn, hidden, f"wd{i}", f"down{i}")
        residual_prev = f"mres{i}"  # the next layer's skip norm (or the final one) adds it
    node("SkipSimplifiedLayerNormalization", [x, residual_prev, w("ln_f", (hidden,), 1.0)], ["final"],
         domain="com.microsoft", epsilon=1e-5)
    if nbits:
        node("MatMulNBits", ["final", "lm_head.B", "lm_head.scales"], ["logits"], domain="com.microsoft", K=hidden,
             N=vocab, bits=4, block_size=block, accuracy_level=accuracy_level)
    else:
        node("MatMul", ["final", w("lm_head", (hidden, vocab))], ["logits"])
    graph = helper.make_graph(nodes, "llm", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 9
    return model


def llm_feeds(model, batch: int, tokens: int, past: int, rng, dtype=np.float16) -> dict:
    vocab = model.graph.output[0].type.tensor_type.shape.dim[2].dim_value
    feeds = {"input_ids": rng.integers(0, vocab, (batch, tokens), dtype=np.int64),
             "attention_mask": np.ones((batch, past + tokens), np.int64)}
    for i in model.graph.input:
        if i.name.startswith("past_key_values"):
            dims = i.type.tensor_type.shape.dim
            feeds[i.name] = (rng.standard_normal((batch, dims[1].dim_value, past, dims[3].dim_value)) * 0.5).astype(dtype)
    return feeds
