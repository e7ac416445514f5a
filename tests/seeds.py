"""One seed per pytest process for the random data of tests that draw it without a seed of their own: a failing
test's report names it, and ONNXRUNTIME_EP_WGPU_TEST_SEED=<seed> replays the same data."""

from __future__ import annotations

import os

import numpy as np

SEED = int(os.environ.get("ONNXRUNTIME_EP_WGPU_TEST_SEED") or np.random.default_rng().integers(1 << 31))


def rng() -> np.random.Generator:
    """A new stream from the process's seed."""
    return np.random.default_rng(SEED)
