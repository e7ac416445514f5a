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


def load_decode_make():
    path = REPO / "bench/experiments/decode_ablation/make.py"
    spec = importlib.util.spec_from_file_location("decode_ablation_make", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_decode_ablation_copies_cut_what_they_name(tmp_path, monkeypatch):
    """The decode attention's ablations (`bench/experiments/decode_ablation/make.py`, issues 13 and 18): each copy
    is its golden with only the named part cut, so a timing against the golden measures that part."""
    make = load_decode_make()
    monkeypatch.setattr(sys, "argv", ["make.py", "--out", str(tmp_path)])
    assert make.main() == 0
    golden = (REPO / "goldens" / f"{make.NAME}.wgsl").read_text()
    copies = {v: (tmp_path / v / f"{make.NAME}.wgsl").read_text() for v in make.VARIANTS}
    for variant, copy in copies.items():
        assert copy != golden, variant
        golden_lines, copy_lines = golden.splitlines(), copy.splitlines()
        # Only lines are added or commented out; none of the golden's other lines changes.
        kept = [line for line in copy_lines if "ABLATION" not in line and not line.startswith("    let keep = ")]
        assert set(kept) <= set(golden_lines) | {"    if (keep == 1234.5) {", "        part[tid] = keep;", "    }",
                                                 "    return;", "    let c1 = c0;"}, variant
    assert "let c1 = c0;" in copies["noloop"] and "let c1 = c0;" in copies["bare"]
    assert copies["nolast"].count("return; // ABLATION") == 1
    assert "storageBarrier();" not in copies["nosb"].replace("// ABLATION: storageBarrier();", "")
    assert "off < 1u" in copies["nomerge"] and "off < sg_size" not in copies["nomerge"]
    assert copies["partsink"].count("// ABLATION") == 4
    for cut in ("nopart", "nolds", "bare"):
        assert "let keep = acc0[0]" in copies[cut]
