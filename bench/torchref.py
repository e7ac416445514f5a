"""cuBLAS/cuDNN reference through PyTorch: the same shapes, timed with CUDA events around the work only (inputs
already on the GPU, no host copies). Used where torch sees a CUDA device (the H200 machine); absent otherwise.

fp32 runs in true fp32 (TF32 off for matmul and cuDNN), as in shared/docs/targets.md's reference column.
"""

from __future__ import annotations

import importlib.util

import numpy as np


def available() -> tuple[bool, str]:
    if importlib.util.find_spec("torch") is None:
        return False, "torch not installed"
    try:
        import torch

        if not torch.cuda.is_available():
            return False, f"torch {torch.__version__} sees no CUDA device"
        return True, f"torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name(0)}"
    except Exception as e:  # noqa: BLE001
        return False, f"torch unusable: {e}"


def measure(case, warmup: int = 3, runs: int = 20, budget_s: float = 2.0) -> dict:
    """{"median_ms", "p10_ms", "p90_ms", "runs"} of case.torch_fn on cuda:0, or {"error": ...}."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    try:
        fn = case.torch_fn(torch, "cuda")
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        times = []
        spent = 0.0
        while len(times) < runs and (len(times) < 3 or spent < budget_s * 1e3):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
            spent += times[-1]
        del fn
        torch.cuda.empty_cache()
    except Exception as e:  # noqa: BLE001
        return {"error": f"{type(e).__name__}: {e}".splitlines()[0][:300]}
    return {"median_ms": float(np.median(times)), "p10_ms": float(np.percentile(times, 10)),
            "p90_ms": float(np.percentile(times, 90)), "runs": len(times)}
