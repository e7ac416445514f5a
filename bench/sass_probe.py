"""The NVIDIA driver's machine code (SASS) of pipelines, from their pipeline-cache blobs.

NVIDIA's Vulkan driver reports no internal representation of a pipeline (VK_KHR_pipeline_executable_properties
gives registers and sizes only), but a pipeline cache holds the compiled code. `pipeline_stats --blob DIR` keeps
one cache per pipeline; on driver 580 its data is the 32-byte Vulkan header, a small entry header, then a zstd
frame. Decompressed, the entry starts with `NVDANVVMNVuc`; the 32-bit words at 0x4c and 0x50 are the code's size
and its offset (minus 8), and that range is raw Hopper instructions, which `nvdisasm --binary SM90` prints. (All of
this was found by looking, not from documentation: the layout may change with the driver; the script says so when
it does not find code.)

    python bench/sass_probe.py BLOB_DIR OUT_DIR [--sm SM90] [--nvdisasm PATH]

Needs the `zstd` command and nvdisasm (pip: nvidia-cuda-nvdisasm; Triton also ships one). Writes OUT_DIR/<blob>.sass
and prints per blob the instruction count and the selected opcodes (HMMA, LDSM, LDG/STS widths, spills).
"""

import argparse
import collections
import glob
import os
import re
import shutil
import struct
import subprocess
import sys

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
ENTRY_MAGIC = b"NVDANVVMNVuc"
SHOWN = ("HMMA", "LDSM", "LDG", "STG", "LDS", "STS", "STL", "LDL", "BAR", "PRMT", "F2F", "F2FP")


def find_nvdisasm(given):
    if given:
        return given
    found = shutil.which("nvdisasm")
    if found:
        return found
    for base in sys.path:
        for pattern in ("triton/backends/nvidia/bin/nvdisasm", "nvidia/*/bin/nvdisasm"):
            hits = glob.glob(os.path.join(base, pattern))
            if hits:
                return hits[0]
    return None


def code_of(blob):
    """The raw instructions in one pipeline's cache data, or an explanation of why there are none."""
    at = blob.find(ZSTD_MAGIC)
    if at < 0:
        return None, "no zstd frame"
    r = subprocess.run(["zstd", "-d", "-c"], input=blob[at:], capture_output=True)
    if r.returncode != 0 or not r.stdout.startswith(ENTRY_MAGIC):
        return None, f"the decompressed entry does not start with {ENTRY_MAGIC!r}"
    raw = r.stdout
    size, offset = struct.unpack_from("<II", raw, 0x4C)
    start = offset + 8
    if size == 0 or size % 16 or start + size > len(raw):
        return None, f"code size {size} at {start} does not fit the {len(raw)}-byte entry"
    return raw[start:start + size], None


def opcodes(text):
    counts = collections.Counter()
    for line in text.splitlines():
        m = re.search(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]+(?:\.[0-9A-Z]+)*)", line)
        if m:
            counts[m.group(1)] += 1
    return counts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("blobs")
    ap.add_argument("out")
    ap.add_argument("--sm", default="SM90")
    ap.add_argument("--nvdisasm")
    a = ap.parse_args()
    nvdisasm = find_nvdisasm(a.nvdisasm)
    if not nvdisasm or not shutil.which("zstd"):
        sys.exit("needs nvdisasm and zstd")
    os.makedirs(a.out, exist_ok=True)
    for path in sorted(glob.glob(os.path.join(a.blobs, "**", "*.bin"), recursive=True)):
        name = os.path.relpath(path, a.blobs).replace(os.sep, "__").removesuffix(".cache.bin")
        code, why = code_of(open(path, "rb").read())
        if code is None:
            print(f"{name}: {why}")
            continue
        raw = os.path.join(a.out, name + ".code")
        with open(raw, "wb") as f:
            f.write(code)
        r = subprocess.run([nvdisasm, "--binary", a.sm, raw], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"{name}: nvdisasm: {r.stderr.strip()[:200]}")
            continue
        with open(os.path.join(a.out, name + ".sass"), "w") as f:
            f.write(r.stdout)
        counts = opcodes(r.stdout)
        shown = ", ".join(f"{op} {n}" for op, n in sorted(counts.items()) if op.startswith(SHOWN))
        print(f"{name}: {sum(counts.values())} instructions; {shown}")


if __name__ == "__main__":
    main()
