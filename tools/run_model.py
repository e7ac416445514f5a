#!/usr/bin/env python3
"""Run an ONNX model on the wgpu execution provider and compare it with ONNX Runtime's CPU EP.

    python tools/run_model.py [model.onnx] [--option key=value ...] [--runs N] [--fp16]

Without a model it builds a Whisper-frontend-like sample (Conv1d, Conv1d s2, Transpose, MatMul, MatMul + bias).
It prints the adapter our EP offers, which node ran on which EP, the largest difference from the CPU EP per output
and timings for both. Exit status: 0 outputs match, 1 they differ beyond the tolerance, 2 the model could not
be run on our EP (library missing, registration or session creation failed, ...).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

REPO = Path(__file__).resolve().parents[1]
EP_NAME = "WgpuExecutionProvider"
REGISTRATION_NAME = "wgpu"
LIBRARY_NAME = "libonnxruntime_ep_wgpu.so"
LIBRARY_ENV = "ONNXRUNTIME_EP_WGPU_LIB"
DEFAULT_TOLERANCE = {np.dtype(np.float32): 1e-3, np.dtype(np.float16): 1e-2}
OPT_LEVELS = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}
LOG_LINE = re.compile(r"\[([VIWEF]):onnxruntime:")
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


class SetupError(Exception):
    """Anything that stops the comparison from happening at all (exit status 2)."""


# ----------------------------------------------------------------------------------------------- sample model


def build_sample_model(fp16: bool) -> onnx.ModelProto:
    """X[1,80,3000] -> Conv1d 80->384 k3 p1 -> Relu -> Conv1d 384->384 k3 s2 p1 -> Relu -> Transpose
    -> MatMul 384->1536 -> Relu -> MatMul 1536->384 -> Add bias: Y[1,1500,384]. Weights from a fixed seed."""
    rng = np.random.default_rng(0)
    dtype = np.float16 if fp16 else np.float32
    elem = TensorProto.FLOAT16 if fp16 else TensorProto.FLOAT

    def weight(name, shape, fan_in):
        return numpy_helper.from_array((rng.standard_normal(shape) / np.sqrt(fan_in)).astype(dtype), name)

    d_in, d_model, d_ff, frames = 80, 384, 1536, 3000
    initializers = [
        weight("conv1.w", [d_model, d_in, 3], d_in * 3),
        weight("conv1.b", [d_model], d_in * 3),
        weight("conv2.w", [d_model, d_model, 3], d_model * 3),
        weight("conv2.b", [d_model], d_model * 3),
        weight("fc1.w", [d_model, d_ff], d_model),
        weight("fc2.w", [d_ff, d_model], d_ff),
        weight("fc2.b", [d_model], d_ff),
    ]
    nodes = [
        helper.make_node("Conv", ["X", "conv1.w", "conv1.b"], ["c1"], "conv1", kernel_shape=[3], pads=[1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], "relu1"),
        helper.make_node(
            "Conv", ["r1", "conv2.w", "conv2.b"], ["c2"], "conv2", kernel_shape=[3], pads=[1, 1], strides=[2]
        ),
        helper.make_node("Relu", ["c2"], ["r2"], "relu2"),
        helper.make_node("Transpose", ["r2"], ["t"], "transpose", perm=[0, 2, 1]),
        helper.make_node("MatMul", ["t", "fc1.w"], ["m1"], "fc1"),
        helper.make_node("Relu", ["m1"], ["r3"], "relu3"),
        helper.make_node("MatMul", ["r3", "fc2.w"], ["m2"], "fc2"),
        helper.make_node("Add", ["m2", "fc2.b"], ["Y"], "fc2_bias"),
    ]
    graph = helper.make_graph(
        nodes,
        "whisper_frontend_sample",
        [helper.make_tensor_value_info("X", elem, [1, d_in, frames])],
        [helper.make_tensor_value_info("Y", elem, [1, frames // 2, d_model])],
        initializers,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8, producer_name="run_model.py"
    )
    onnx.checker.check_model(model)
    return model


# ----------------------------------------------------------------------------------------------- registration


def find_library(explicit: str | None) -> str:
    """--lib, else $ONNXRUNTIME_EP_WGPU_LIB, else the installed locator package, else target/release."""
    override = explicit or os.environ.get(LIBRARY_ENV)
    if override:
        if not Path(override).is_file():
            raise SetupError(f"{override} ({'--lib' if explicit else LIBRARY_ENV}) does not exist")
        return str(Path(override).resolve())
    try:
        import onnxruntime_ep_wgpu

        return onnxruntime_ep_wgpu.get_library_path()
    except (ImportError, FileNotFoundError):
        pass
    fallback = REPO / os.environ.get("CARGO_TARGET_DIR", "target") / "release" / LIBRARY_NAME
    if fallback.is_file():
        return str(fallback)
    raise SetupError(
        f"{LIBRARY_NAME} not found (no onnxruntime_ep_wgpu package with the library, no {fallback}). Build it: "
        "`cargo build --release -p onnxruntime-ep-wgpu` (then `pip install ./python`), or run `bash ci/main.sh`."
    )


_registered = False


def register(lib_path: str) -> list:
    global _registered
    try:
        ort.register_execution_provider_library(REGISTRATION_NAME, lib_path)
        _registered = True
    except Exception as e:  # noqa: BLE001 - ORT raises several exception types here
        raise SetupError(
            f"onnxruntime {ort.__version__} could not register {lib_path} as a plugin EP library:\n  {e}\n"
            "The library must export CreateEpFactories/ReleaseEpFactory (the provider/ crate); rebuild it with "
            "`cargo build --release -p onnxruntime-ep-wgpu`."
        ) from e
    devices = [d for d in ort.get_ep_devices() if d.ep_name == EP_NAME]
    if not devices:
        offered = sorted({d.ep_name for d in ort.get_ep_devices()})
        raise SetupError(
            f"{lib_path} registered, but no device of {EP_NAME} is offered (EP devices: {offered}). "
            "Is a Vulkan driver installed (Debian: mesa-vulkan-drivers, libvulkan1)?"
        )
    return devices


def describe_devices(devices: list) -> None:
    print(f"== {EP_NAME}: {len(devices)} device(s)")
    for i, d in enumerate(devices):
        hw = d.device
        print(f"  [{i}] vendor {d.ep_vendor!r}; hardware {hw.type.name} {hw.vendor!r} "
              f"vendor_id 0x{hw.vendor_id:04x} device_id 0x{hw.device_id:04x}")
        for key, value in sorted(dict(d.ep_metadata).items()):
            print(f"      metadata {key} = {value}")
        for key, value in sorted(dict(d.ep_options).items()):
            print(f"      default option {key} = {value}")


# ----------------------------------------------------------------------------------------------- sessions


@contextlib.contextmanager
def native_log(capture: bool = True):
    """Collects what ONNX Runtime (C++, the EP included) writes to fd 2 meanwhile into the yielded list.

    With capture=False (--verbose) the log goes straight to the terminal, which also keeps it if the process dies.
    """
    lines: list[str] = []
    if not capture:
        yield lines
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield lines
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            lines.extend(ANSI_ESCAPE.sub("", tmp.read().decode(errors="replace")).splitlines())


def print_log(title: str, lines: list, everything: bool = False, about_ep: bool = True) -> None:
    """Prints warnings, errors and unformatted lines, plus (`about_ep`) lines about our EP or node placement;
    every line if `everything`."""
    keep = re.compile(rf"{EP_NAME}|wgpu|placed on|not assigned", re.IGNORECASE)
    shown = []
    for line in lines:
        match = LOG_LINE.search(line)
        if everything or not match or match.group(1) in "WEF" or (about_ep and keep.search(line)):
            shown.append(line)
    if shown:
        print(f"== ONNX Runtime log: {title}")
        for line in shown:
            print(f"  {line}")


@dataclass
class Timed:
    create_s: float
    first_run_s: float
    outputs: list
    runs_s: list
    copies: dict | None = None  # our copies per timed run (host<->GPU), from the library's counters


def load_locator():
    """The locator package of this checkout (`python/onnxruntime_ep_wgpu`, loaded under a name of its own)."""
    import importlib.util

    if "ep_wgpu_locator" in sys.modules:
        return sys.modules["ep_wgpu_locator"]
    pkg = REPO / "python" / "onnxruntime_ep_wgpu"
    spec = importlib.util.spec_from_file_location("ep_wgpu_locator", pkg / "__init__.py",
                                                  submodule_search_locations=[str(pkg)])
    locator = importlib.util.module_from_spec(spec)
    sys.modules["ep_wgpu_locator"] = locator
    spec.loader.exec_module(locator)
    return locator


def copy_counter(lib_path: str):
    """A function reading our library's copy counters (through the locator), on the registered library."""
    locator = load_locator()
    return lambda: locator.copy_stats(lib_path)


def print_startup(lib_path: str, create_s: float, first_s: float) -> None:
    """--verbose: where start-up time went, phase by phase (the library's counters, `startup_stats`)."""
    try:
        stats = load_locator().startup_stats(lib_path)
    except (AttributeError, OSError) as e:  # an older library without the export
        print(f"== Start-up phases: not available ({e})")
        return
    print(f"== Start-up phases (session creation {create_s * 1e3:.1f} ms, first run {first_s * 1e3:.1f} ms; "
          "render/module/pipeline add the compile workers' times)")
    for phase, v in stats.items():
        if v["count"]:
            unit = "bytes" if phase.startswith("cache_") else "times"
            print(f"  {phase:<14}{v['ms']:10.1f} ms  ({v['count']} {unit})")


def make_session_options(args, profile_dir: str | None) -> ort.SessionOptions:
    so = ort.SessionOptions()
    so.graph_optimization_level = OPT_LEVELS[args.opt_level]
    if profile_dir:
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(profile_dir, "ort_profile")
    return so


def timed(fn) -> tuple:
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def time_runs(sess, feeds, args) -> list:
    """Up to --runs runs; stops early once --max-seconds have passed and at least 3 runs are done."""
    times: list[float] = []
    while len(times) < args.runs:
        times.append(timed(lambda: sess.run(None, feeds))[1])
        if sum(times) > args.max_seconds and len(times) >= min(3, args.runs):
            break
    return times


def run_ours(model_path: str, model, devices, options: dict, args, workdir: str, lib_path: str):
    """Our EP (the CPU EP takes the nodes we decline): create, run, profile one more run, then time."""
    so = make_session_options(args, workdir)
    so.add_provider_for_devices(devices, options)
    so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    so.log_severity_level = 0 if args.verbose else 1  # INFO carries the EP's claimed/declined summary
    step = "creating a session"
    with native_log(capture=not args.verbose) as log:
        try:
            sess, create_s = timed(lambda: ort.InferenceSession(model_path, sess_options=so, enable_fallback=0))
            step = "running the model"
            feeds = make_feeds(sess)
            outputs, first_s = timed(lambda: sess.run(None, feeds))
            sess.run(None, feeds)  # the profiled steady-state run
            profile_path = sess.end_profiling()
            failure = None
        except Exception as e:  # noqa: BLE001 - ORT raises several exception types
            failure = str(e)  # not the exception: its traceback would keep a half-made session alive
    if failure is not None:
        print_log(f"{step} (all lines)", log, everything=True)
        raise SetupError(f"{step} on {EP_NAME} failed: {failure}")
    print_log("session creation and first runs (filtered)", log)
    if args.verbose:
        print_startup(lib_path, create_s, first_s)
    print(f"== Session providers: {sess.get_providers()}")
    try:
        print_placement(sess, model, profile_path)
    finally:
        os.remove(profile_path)
    counter = copy_counter(lib_path)
    with native_log(capture=not args.verbose) as log:
        before = counter()
        runs = time_runs(sess, feeds, args)
        after = counter()
    print_log("timed runs (warnings and errors)", log, about_ep=False)
    copies = {k: (after[k] - before[k]) / len(runs) for k in after}
    return sess, feeds, Timed(create_s, first_s, outputs, runs, copies)


def run_cpu(model_path: str, feeds: dict, args) -> Timed:
    so = make_session_options(args, None)
    providers = ["CPUExecutionProvider"]
    sess, create_s = timed(lambda: ort.InferenceSession(model_path, sess_options=so, providers=providers))
    outputs, first_s = timed(lambda: sess.run(None, feeds))
    sess.run(None, feeds)
    return Timed(create_s, first_s, outputs, time_runs(sess, feeds, args))


# ----------------------------------------------------------------------------------------------- placement


def profile_nodes(profile_path: str) -> dict:
    """node name -> (op, provider, duration µs of its last profiled run), from ORT's Chrome-trace profile."""
    with open(profile_path) as f:
        events = json.load(f)
    nodes = {}
    for ev in events:
        args = ev.get("args") or {}
        if ev.get("cat") != "Node" or "provider" not in args:
            continue
        name = ev["name"].removesuffix("_kernel_time")
        nodes[name] = (args.get("op_name", "?"), args["provider"], ev.get("dur", 0))
    return nodes


def print_placement(sess, model: onnx.ModelProto, profile_path: str) -> None:
    nodes = profile_nodes(profile_path)
    print("== Nodes as executed (ORT profile of the 2nd run; our fused partitions show as one node each)")
    if not nodes:
        print("  (the profile holds no node events)")
    rows = [("node", "op", "provider", "µs")] + [(n, op, prov, str(dur)) for n, (op, prov, dur) in nodes.items()]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for name, op, provider, dur in rows:
        print(f"  {name:<{widths[0]}}  {op:<{widths[1]}}  {provider:<{widths[2]}}  {dur:>9}")
    per_provider: dict[str, list] = {}
    for _, provider, dur in nodes.values():
        per_provider.setdefault(provider, []).append(dur)
    for provider, durs in sorted(per_provider.items()):
        print(f"  total {provider}: {len(durs)} node(s), {sum(durs)} µs")

    if hasattr(sess, "get_provider_graph_assignment_info"):  # ORT >= 1.31 (needs record_ep_graph_assignment_info)
        print("== Graph assignment (after ORT's graph optimizations, before fusion)")
        others: dict[str, list] = {}
        for i, sub in enumerate(sess.get_provider_graph_assignment_info()):
            listed = [f"{n.name or '?'}:{n.op_type}" for n in sub.get_nodes()]
            if sub.ep_name == EP_NAME:
                print(f"  {EP_NAME} partition {i}: {', '.join(listed)}")
            else:
                others.setdefault(sub.ep_name, []).extend(listed)
        for ep, listed in others.items():
            print(f"  {ep}: {', '.join(listed)}")

    model_nodes = [n.name for n in model.graph.node if n.name]
    absent = [n for n in model_nodes if n not in nodes]
    if absent:
        print(f"  model nodes not executed under their own name (fused or rewritten): {', '.join(absent)}")


# ----------------------------------------------------------------------------------------------- comparison


def make_feeds(sess, seed: int = 1) -> dict:
    rng = np.random.default_rng(seed)
    feeds = {}
    for inp in sess.get_inputs():
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in inp.shape]
        kind = inp.type.removeprefix("tensor(").removesuffix(")")
        if kind in ("float", "float16", "double"):
            dtype = {"float": np.float32, "float16": np.float16, "double": np.float64}[kind]
            feeds[inp.name] = rng.standard_normal(shape).astype(dtype)
        elif kind in ("int64", "int32", "int8", "uint8"):
            feeds[inp.name] = rng.integers(0, 8, size=shape).astype(np.dtype(kind))
        elif kind == "bool":
            feeds[inp.name] = rng.integers(0, 2, size=shape).astype(bool)
        else:
            raise SetupError(f"input {inp.name!r} has type {inp.type}, which this tool cannot generate")
    return feeds


def compare(names: list, ours: list, cpu: list, tolerance: float | None) -> bool:
    """Per output: max |ours - cpu| and that difference relative to max |cpu|; fails above the tolerance."""
    print("== Outputs vs CPU EP")
    ok = True
    for name, a, b in zip(names, ours, cpu):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            print(f"  {name}: MISMATCH shape/dtype {a.shape} {a.dtype} vs CPU {b.shape} {b.dtype}")
            ok = False
            continue
        if a.dtype.kind not in "fc":
            equal = np.array_equal(a, b)
            print(f"  {name}: {a.shape} {a.dtype} {'equal' if equal else 'DIFFERENT'}")
            ok &= equal
            continue
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        both = np.isfinite(a64) & np.isfinite(b64)
        same_nonfinite = np.array_equal(a64[~both], b64[~both], equal_nan=True)
        max_abs = float(np.abs(a64 - b64)[both].max(initial=0.0))
        scale = float(np.abs(b64[both]).max(initial=0.0))
        rel = max_abs / scale if scale > 0 else max_abs
        tol = tolerance if tolerance is not None else DEFAULT_TOLERANCE.get(a.dtype, 1e-3)
        passed = rel <= tol and same_nonfinite
        print(f"  {name}: {a.shape} {a.dtype} max_abs_diff {max_abs:.3e} rel {rel:.3e} (tol {tol:.0e}) "
              f"{'ok' if passed else 'FAIL'}{'' if same_nonfinite else ' (inf/NaN differ)'}")
        ok &= passed
    return ok


def print_timings(ours: Timed, cpu: Timed) -> None:
    def stats(t: Timed):
        ms = sorted(x * 1e3 for x in t.runs_s)
        p = lambda q: float(np.percentile(ms, q))  # noqa: E731
        return t.create_s * 1e3, t.first_run_s * 1e3, statistics.median(ms), p(10), p(90)

    print("== Timings in ms (session = creation; runs after two warm-up runs)")
    print(f"  {'':<24} {'session':>9} {'1st run':>9} {'median':>9} {'p10':>9} {'p90':>9} {'runs':>5}")
    for label, t in ((EP_NAME, ours), ("CPUExecutionProvider", cpu)):
        print("  {:<24} {:>9.1f} {:>9.1f} {:>9.2f} {:>9.2f} {:>9.2f}".format(label, *stats(t)), f"{len(t.runs_s):>5}")
    print(f"  speed-up vs CPU (median): {statistics.median(cpu.runs_s) / statistics.median(ours.runs_s):.2f}x")
    if ours.copies is not None:
        c = ours.copies
        print("== Copies per timed run on our EP (numpy inputs and outputs; IO binding avoids the host ones)")
        for label, key in (("host->GPU", "host_to_device"), ("GPU->host", "device_to_host"),
                           ("GPU->GPU", "device_to_device")):
            print(f"  {label:<10} {c[key]:>6.1f} copies {c[key + '_bytes']:>14,.0f} bytes")


# ----------------------------------------------------------------------------------------------- main


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", nargs="?", help="ONNX model (default: the bundled Whisper-frontend-like sample)")
    p.add_argument("--option", "-o", action="append", default=[], metavar="KEY=VALUE",
                   help="EP option (reaches the EP as ep.wgpuexecutionprovider.KEY); repeatable")
    p.add_argument("--runs", type=int, default=20, help="timed runs per EP (default 20)")
    p.add_argument("--max-seconds", type=float, default=60.0,
                   help="stop timing an EP after this long, once 3 runs are done (default 60)")
    p.add_argument("--fp16", action="store_true", help="build the sample model in float16")
    p.add_argument("--tolerance", type=float,
                   help="max |ours-cpu| / max|cpu| per output (default 1e-3 fp32, 1e-2 fp16)")
    p.add_argument("--opt-level", choices=list(OPT_LEVELS), default="all", help="ORT graph optimizations (default all)")
    p.add_argument("--lib", help=f"path of {LIBRARY_NAME} "
                   f"(default: ${LIBRARY_ENV}, else the locator package, else target/release)")
    p.add_argument("--save-model", metavar="PATH", help="also write the sample model to PATH")
    p.add_argument("--verbose", "-v", action="store_true", help="let ORT log everything (VERBOSE) straight to stderr")
    args = p.parse_args(argv)
    if args.model and args.fp16:
        p.error("--fp16 applies to the bundled sample only; pass a float16 model instead")
    if args.runs < 1:
        p.error("--runs must be at least 1")
    options = {}
    for item in args.option:
        key, sep, value = item.partition("=")
        if not sep or not key:
            p.error(f"--option expects KEY=VALUE, got {item!r}")
        options[key] = value
    return args, options


def run(args, options: dict, workdir: str) -> bool:
    print(f"onnxruntime {ort.__version__}, onnx {onnx.__version__}, numpy {np.__version__}")
    if args.model:
        model_path = args.model
        model = onnx.load(model_path, load_external_data=False)
    else:
        model = build_sample_model(args.fp16)
        model_path = os.path.join(workdir, "sample.onnx")
        onnx.save(model, model_path)
        print(f"sample model ({'float16' if args.fp16 else 'float32'})", end="")
        if args.save_model:
            onnx.save(model, args.save_model)
            print(f", saved to {args.save_model}", end="")
        print()
    print(f"model: {model_path}; EP options: {options or '{}'}")

    lib_path = find_library(args.lib)
    print(f"library: {lib_path}")
    devices = register(lib_path)
    describe_devices(devices)

    sess, feeds, ours = run_ours(model_path, model, devices, options, args, workdir, lib_path)
    cpu = run_cpu(model_path, feeds, args)
    ok = compare([o.name for o in sess.get_outputs()], ours.outputs, cpu.outputs, args.tolerance)
    print_timings(ours, cpu)
    return ok


def main(argv=None) -> int:
    args, options = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="run_model_") as workdir:
        try:
            ok = run(args, options, workdir)
        except SetupError as e:
            print(f"error: {e}", file=sys.stderr)
            ok = None
    gc.collect()  # sessions hold the library: release them before unregistering
    if _registered:
        ort.unregister_execution_provider_library(REGISTRATION_NAME)
    if ok is None:
        return 2
    print("PASS: outputs match the CPU EP" if ok else "FAIL: outputs differ from the CPU EP beyond the tolerance")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
