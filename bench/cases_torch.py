"""Benchmark cases exported from torch with random weights (nothing is downloaded): the Whisper-tiny encoder,
BERT-base and ViT-base/16 from their transformers configs, and torchvision's ResNet-50 and MobileNetV3 (the `Case`
type, its helpers and the onnx.helper cases are in `cases.py`)."""

from __future__ import annotations

import importlib.util

import numpy as np
import onnx

from cases import Case, input_array, np_dtype

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


