"""One run with the EP's per-dispatch profile on (`ONNXRUNTIME_EP_WGPU_PROFILE` with `..._DISPATCHES=1`), for tests
that assert which kernels ran."""

from __future__ import annotations

import json
import os


def run_dispatches(sess, feeds, tmp_path) -> tuple[list, list[str]]:
    """The outputs of one run and every dispatch's `step [program]`."""
    path = tmp_path / "dispatches.jsonl"
    path.unlink(missing_ok=True)
    os.environ.update(ONNXRUNTIME_EP_WGPU_PROFILE=str(path), ONNXRUNTIME_EP_WGPU_PROFILE_DISPATCHES="1")
    try:
        got = sess.run(None, feeds)
    finally:
        del os.environ["ONNXRUNTIME_EP_WGPU_PROFILE"], os.environ["ONNXRUNTIME_EP_WGPU_PROFILE_DISPATCHES"]
    return got, [json.loads(line)["ops"] for line in path.read_text().splitlines()]
