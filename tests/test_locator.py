"""The `onnxruntime_ep_wgpu` locator package and its wheel (no GPU, no EP registration needed)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

import onnxruntime_ep_wgpu as locator

pytestmark = pytest.mark.smoke

REPO = Path(__file__).resolve().parents[1]
# ci/test.sh empties this folder and builds the wheel into it, so a wheel there comes from this run.
WHEEL_DIR = Path(os.environ.get("ONNXRUNTIME_EP_WGPU_WHEEL_DIR", REPO / "target" / "wheels"))


def test_ep_name():
    assert locator.get_ep_name() == "WgpuExecutionProvider"
    assert locator.get_ep_names() == ["WgpuExecutionProvider"]


def test_library_path_is_bundled_file():
    path = locator.get_library_path()
    assert os.path.isabs(path)
    assert path.endswith("/libonnxruntime_ep_wgpu.so")
    assert Path(path).is_file()
    assert Path(path).parent == Path(locator.__file__).resolve().parent


def test_version_matches_cargo_workspace():
    cargo = tomllib.loads((REPO / "Cargo.toml").read_text())
    assert locator.__version__ == cargo["workspace"]["package"]["version"]


def _run_python(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **env}, cwd="/"
    )


def test_imports_without_onnxruntime():
    code = (
        "import sys; sys.modules['onnxruntime'] = None\n"
        "import onnxruntime_ep_wgpu as m\n"
        "assert m.get_ep_name() == 'WgpuExecutionProvider'\n"
        "print(m.get_library_path())\n"
    )
    result = _run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("libonnxruntime_ep_wgpu.so")


def test_missing_library_raises_with_build_hint(tmp_path):
    package = Path(locator.__file__).resolve().parent
    shutil.copytree(package, tmp_path / package.name, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    code = (
        "import onnxruntime_ep_wgpu as m\n"
        "try:\n    m.get_library_path()\nexcept FileNotFoundError as e:\n    print(e)\n"
        "else:\n    raise SystemExit('no FileNotFoundError')\n"
    )
    result = _run_python(code, PYTHONPATH=str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "cargo build --release -p onnxruntime-ep-wgpu" in result.stdout


def test_wheel_is_tagged_for_platform_not_python():
    wheels = sorted(WHEEL_DIR.glob("onnxruntime_ep_wgpu-*.whl"))
    if not wheels:
        pytest.skip(f"no wheel built in {WHEEL_DIR} (ci/test.sh builds one)")
    assert len(wheels) == 1, f"expected one wheel in {WHEEL_DIR}, found {[w.name for w in wheels]}"
    wheel = wheels[0]
    assert wheel.name.endswith(f"-py3-none-manylinux_2_35_{os.uname().machine}.whl"), wheel.name
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        assert "onnxruntime_ep_wgpu/libonnxruntime_ep_wgpu.so" in names
        dist_info = next(n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info"))
        wheel_meta = zf.read(f"{dist_info}/WHEEL").decode()
        metadata = zf.read(f"{dist_info}/METADATA").decode()
    assert "Root-Is-Purelib: false" in wheel_meta
    assert f"Tag: py3-none-manylinux_2_35_{os.uname().machine}" in wheel_meta
    assert "Requires-Dist: onnxruntime" not in metadata
