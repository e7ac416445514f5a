"""The attention ablation copies (`bench/experiments/attention_ablation/make.py`, issue 11): each copy differs from
its golden in `split8` alone, so a timing against it measures the K/V hi/lo cut and nothing else."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def load_make():
    spec = importlib.util.spec_from_file_location("ablation_make", REPO / "bench/experiments/attention_ablation/make.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ablation_copies_change_split8_only(tmp_path, monkeypatch):
    make = load_make()
    monkeypatch.setattr(sys, "argv", ["make.py", "--out", str(tmp_path)])
    assert make.main() == 0
    for name in make.VARIANTS:
        golden = (REPO / "goldens" / f"{name}.wgsl").read_text()
        copy = (tmp_path / "nosplitkv" / f"{name}.wgsl").read_text()
        assert "ABLATION" in copy and "ABLATION" not in golden
        # Outside split8 the text is the golden's, byte for byte.
        start = golden.index("fn split8(")
        end = golden.index("\n}\n", start) + 3
        assert copy.startswith(golden[:start])
        assert copy.endswith(golden[end:])
        # The copy still splits per call site: every stage keeps its split8 calls.
        assert copy.count("split8(") == golden.count("split8(")
