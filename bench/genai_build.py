#!/usr/bin/env python3
"""Builds the LLMs of issue 18 as users get them: random-weight `transformers` models with the dimensions of
Llama-3.2-1B, Qwen3-0.6B and gemma-3-270m, converted by onnxruntime-genai's model builder (`-e webgpu`, fp16 and
int4). Runs where torch and transformers are installed (the H200 machine; `bench/h200_genai.sh`), with
onnxruntime-genai and onnx-ir importable (`bench/h200_stage.sh` with GENAI=1 carries them).

    python3 bench/genai_build.py --out DIR [--only REGEX] [--precisions fp16,int4]

Writes DIR/<model>-<precision>/ (model.onnx, model.onnx.data, genai_config.json, tokenizer) and skips models that
are already built. A tokenizer is trained on the fly (byte-level BPE, 2,000 tokens): the builder copies it.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

# The published configs' dimensions (Hugging Face config.json of each model).
CONFIGS = {
    "llama-3.2-1b": ("LlamaConfig", "LlamaForCausalLM", dict(
        hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
        num_key_value_heads=8, head_dim=64, vocab_size=128256, max_position_embeddings=131072, rms_norm_eps=1e-5,
        rope_theta=500000.0, tie_word_embeddings=True, hidden_act="silu",
        rope_scaling={"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                      "original_max_position_embeddings": 8192, "rope_type": "llama3"})),
    "qwen3-0.6b": ("Qwen3Config", "Qwen3ForCausalLM", dict(
        hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
        num_key_value_heads=8, head_dim=128, vocab_size=151936, max_position_embeddings=40960, rms_norm_eps=1e-6,
        rope_theta=1000000.0, tie_word_embeddings=True, hidden_act="silu")),
    "gemma-3-270m": ("Gemma3TextConfig", "Gemma3ForCausalLM", dict(
        hidden_size=640, intermediate_size=2048, num_hidden_layers=18, num_attention_heads=4,
        num_key_value_heads=1, head_dim=256, vocab_size=262144, max_position_embeddings=32768, rms_norm_eps=1e-6,
        rope_theta=1000000.0, rope_local_base_freq=10000.0, sliding_window=512, query_pre_attn_scalar=256,
        hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True)),
}

CORPUS = ("The quick brown fox jumps over the lazy dog. " * 4 + "Pack my box with five dozen liquor jugs. "
          "How vexingly quick daft zebras jump! Sphinx of black quartz, judge my vow. 0123456789 ") * 50


def tokenizer(path: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=2000, special_tokens=["<s>", "</s>", "<unk>", "<pad>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([CORPUS], trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                   pad_token="<pad>")
    fast.save_pretrained(path)


def hf_model(name: str, path: Path) -> None:
    import torch
    import transformers

    cfg_cls, model_cls, dims = CONFIGS[name]
    config = getattr(transformers, cfg_cls)(**dims, bos_token_id=0, eos_token_id=1, pad_token_id=3,
                                            torch_dtype="float16")
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    with torch.device(device):
        model = getattr(transformers, model_cls)(config).to(torch.float16)
    # Small weights keep fp16 activations finite through every layer of a random model.
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.02)
    model.to("cpu").save_pretrained(path, safe_serialization=True)
    tokenizer(path)


def build(name: str, precision: str, out: Path, work: Path) -> dict:
    target = out / f"{name}-{precision}"
    if (target / "genai_config.json").is_file():
        return {"model": name, "precision": precision, "status": "cached", "dir": str(target)}
    src = work / f"hf-{name}"
    t0 = time.perf_counter()
    if not (src / "config.json").is_file():
        hf_model(name, src)
    t1 = time.perf_counter()
    cmd = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", str(src), "-o", str(target),
           "-p", precision, "-e", "webgpu", "-c", str(work / "cache")]
    r = subprocess.run(cmd, capture_output=True, text=True)
    t2 = time.perf_counter()
    row = {"model": name, "precision": precision, "dir": str(target), "hf_s": round(t1 - t0, 1),
           "builder_s": round(t2 - t1, 1)}
    if r.returncode != 0:
        row.update(status="failed", message=(r.stderr or r.stdout)[-3000:])
    else:
        row["status"] = "ok"
        row["bytes"] = sum(f.stat().st_size for f in target.glob("model.onnx*"))
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default="/tmp/genai_work")
    ap.add_argument("--only", default=".")
    ap.add_argument("--precisions", default="fp16,int4")
    args = ap.parse_args()
    out, work = Path(args.out), Path(args.work)
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in CONFIGS:
        if not re.search(args.only, name):
            continue
        for precision in args.precisions.split(","):
            row = build(name, precision, out, work)
            print(json.dumps({k: v for k, v in row.items() if k != "message"}), flush=True)
            if "message" in row:
                print(row["message"][-1200:], flush=True)
            rows.append(row)
    (out / "build.json").write_text(json.dumps(rows, indent=1))
    return 0 if all(r["status"] != "failed" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
