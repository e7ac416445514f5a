"""Runs a test script in a fresh Python process with the EP registered, so a crash (or a test-only fault armed
through the environment) can never take pytest down with it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

TESTS = str(Path(__file__).resolve().parent)
FAULT_ENV = "ONNXRUNTIME_EP_WGPU_TEST_FAULT"

PRELUDE = """
import os, sys, time
import numpy as np
import onnxruntime as ort
sys.path.insert(0, {tests!r})
import models

LIB = {lib!r}
ort.register_execution_provider_library("wgpu_sub", LIB)
DEVS = [d for d in ort.get_ep_devices() if d.ep_name == "WgpuExecutionProvider"]
assert DEVS, "no WgpuExecutionProvider device"


def session(model, fallback=False, options=None, devs=None):
    so = ort.SessionOptions()
    so.add_provider_for_devices(devs or DEVS, options or {{}})
    if not fallback:
        so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    return ort.InferenceSession(model.SerializeToString(), sess_options=so, enable_fallback=0)


def cpu_session(model):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def expect_error(fn, *needles):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        text = str(e)
        missing = [n for n in needles if n not in text]
        assert not missing, f"error lacks {{missing}}: {{text}}"
        return text
    raise AssertionError("no error raised")
"""


def run_script(lib_path: str, code: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """Runs `code` after PRELUDE (library registered as `wgpu_sub`; helpers `session`, `cpu_session`,
    `expect_error`) in a new interpreter; `env` adds environment variables."""
    full_env = dict(os.environ)
    full_env.pop(FAULT_ENV, None)
    full_env.update(env or {})
    script = PRELUDE.format(tests=TESTS, lib=lib_path) + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout, env=full_env)


def describe(r: subprocess.CompletedProcess) -> str:
    return f"exit {r.returncode}\n--- stdout\n{r.stdout[-4000:]}\n--- stderr\n{r.stderr[-6000:]}"
