#!/usr/bin/env python3
"""How a run's submissions are chunked, on whole models with numpy I/O (each run starts on an idle GPU): the
Whisper-tiny encoder, BERT-base and ViT-base exported once, one session each, and every setting of an experiment
build's `EXP_SUBMIT_CHUNKS` (read at each run; `bench/README.md`) timed in alternating rounds in the same session.

    python3 bench/chunks_ab.py --lib EXPERIMENT_LIB --settings "4,8,16,32,64,128,256;16,64,256;16" [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cases_torch as ct  # noqa: E402
import providers as prov  # noqa: E402
from run import make_feeds  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--settings", required=True, help="';'-separated EXP_SUBMIT_CHUNKS values")
    ap.add_argument("--only", default="whisper|bert|vit")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--runs", type=int, default=60)
    args = ap.parse_args()
    ours = prov.our_provider(str(Path(args.lib).resolve()), "--lib", {})
    all_cases = [ct.whisper_encoder_case(d) for d in ("fp32", "fp16")]
    all_cases += [ct.bert_base_case("fp16"), ct.vit_base_case("fp16")]
    with tempfile.TemporaryDirectory() as scratch:
        for case in all_cases:
            if not re.search(args.only, case.name):
                continue
            path = case.build(scratch)
            sess = ours.session(path, strict=True)
            feeds = make_feeds(path, specs=case.inputs)
            row = {"case": case.name}
            for r in range(args.rounds):
                for s in args.settings.split(";"):
                    os.environ["EXP_SUBMIT_CHUNKS"] = s
                    row.setdefault(s, []).append(round(prov.median_run_ms(sess, feeds, args.runs)[1], 3))
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
