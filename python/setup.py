"""Build hooks of the locator wheel (metadata lives in pyproject.toml).

- build_py bundles the Rust library: the file named by the environment variable ONNXRUNTIME_EP_WGPU_LIB, else
  `release/libonnxruntime_ep_wgpu.so` in cargo's target folder (`../target`, or $CARGO_TARGET_DIR). It fails with
  a clear message if that file does not exist.
- bdist_wheel tags the wheel `py3-none-manylinux_2_35_<arch>`: platform-specific because it carries a .so, but
  independent of the Python ABI because it has no extension module. `--plat-name` still overrides the platform.
"""

import os
import platform
import shutil
import sys
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
PACKAGE = "onnxruntime_ep_wgpu"
LIBRARY_NAME = "libonnxruntime_ep_wgpu.so"
LIBRARY_ENV = "ONNXRUNTIME_EP_WGPU_LIB"
MANYLINUX = "manylinux_2_35"


def built_library() -> Path:
    override = os.environ.get(LIBRARY_ENV)
    if override:
        # pip runs this from python/, so a relative path may be meant from there or from the repository root.
        tried = [Path(override).expanduser()]
        if not tried[0].is_absolute():
            tried.append(HERE.parent / tried[0])
        origin = f"{LIBRARY_ENV}={override}"
    else:
        target = HERE.parent / os.environ.get("CARGO_TARGET_DIR", "target")  # an absolute value replaces the base
        tried = [target / "release" / LIBRARY_NAME]
        origin = "cargo's release output"
    for path in tried:
        if path.is_file():
            return path.resolve()
    sys.exit(
        f"error: {LIBRARY_NAME} not found at {' or '.join(str(p.resolve()) for p in tried)} ({origin}).\n"
        "Build it first from the repository root: `cargo build --release -p onnxruntime-ep-wgpu`,\n"
        f"or set {LIBRARY_ENV} to the path of a built library."
    )


class BuildPyWithLibrary(build_py):
    def run(self):
        super().run()
        # Editable installs import from the source tree, so the library goes there (ignored by git).
        dest_dir = HERE / PACKAGE if self.editable_mode else Path(self.build_lib) / PACKAGE
        dest_dir.mkdir(parents=True, exist_ok=True)
        src = built_library()
        print(f"bundling {src} -> {dest_dir / LIBRARY_NAME}")
        shutil.copy2(src, dest_dir / LIBRARY_NAME)


class PlatformWheel(bdist_wheel):
    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        _, _, plat = super().get_tag()
        if not self.plat_name_supplied and sys.platform.startswith("linux"):
            plat = f"{MANYLINUX}_{platform.machine()}"
        return "py3", "none", plat


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True


setup(distclass=BinaryDistribution, cmdclass={"build_py": BuildPyWithLibrary, "bdist_wheel": PlatformWheel})
