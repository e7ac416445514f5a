#!/usr/bin/env python3
"""Start-up time, each measurement in a FRESH Python process: import onnxruntime → register the library (and
`get_ep_devices`) → create the session → first run → second run → steady state (median of --steady runs), for our EP
(`ours`: with the persistent pipeline cache, option pipeline_cache=DIR; `ours-nocache`: without; `ours-default`:
no option, so the default, with XDG_CACHE_HOME in the mode's cache dir) and
the peer (ORT's WebGPU plugin EP, package
`onnxruntime-ep-webgpu`; skipped when it is not installed), plus our library's phase breakdown
(`onnxruntime_ep_wgpu.startup_stats`: enumerate, device, placement, program, upload, render, module, pipeline, ...).

    python bench/startup.py                          # the Whisper-tiny encoder fp16 (as bench/run.py builds it)
    python bench/startup.py --model m.onnx --repeat 3 --json out.json
    python bench/startup.py --configs ours,ours-nocache --modes cold,warm

Modes (the driver's shader cache and our pipeline cache live in per-configuration temp dirs):
  cold      fresh, empty dirs for every process (NVIDIA: __GL_SHADER_DISK_CACHE_PATH; Mesa: MESA_SHADER_CACHE_DIR;
            ours: the EP option pipeline_cache=DIR)
  warm      one dir per configuration, reused: the process after a cold one ("process 2" of issue 15)
  ourcache  the driver's cache cold (fresh dir) but our pipeline cache warm: what our cache gives on its own

The model: --model, else the Whisper-tiny encoder (4 layers, random weights, input 1×80×3000) exported by
`bench/cases_torch.py` when torch and transformers are installed (cached in --cache-dir), else a small
transformer-like graph made with onnx.helper (2 layers of attention + MLP; not Whisper: the table says which).
Prints a table (median over --repeat of each cell) and writes JSON (--json).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LIBRARY_NAME = "libonnxruntime_ep_wgpu.so"
OUR_EP = "WgpuExecutionProvider"
PEER_EP = "WebGpuExecutionProvider"
CONFIGS = ("ours", "ours-nocache", "ours-default", "peer")
MODES = ("cold", "warm", "ourcache")
COLUMNS = ("import", "register", "session", "first_run", "second_run", "steady")


# ------------------------------------------------------------------------------------------------ models


def transformer_like(path: str, dtype: str, seq: int = 61, d: int = 64, heads: int = 4, layers: int = 2) -> None:
    """A small encoder in onnx.helper: per layer LayerNorm → Q/K/V MatMuls → split heads → softmax(QKᵀ/√d)V →
    output projection + residual → LayerNorm → MLP (MatMul, GELU by Erf, MatMul) + residual. Sequence 61 (no tile
    multiple)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    np_t = np.float16 if dtype == "fp16" else np.float32
    elem = TensorProto.FLOAT16 if dtype == "fp16" else TensorProto.FLOAT
    rng = np.random.default_rng(0)
    inits, nodes = [], []

    def const(name, a):
        inits.append(numpy_helper.from_array(np.asarray(a, dtype=np_t) if a.dtype.kind == "f" else a, name))
        return name

    def weight(name, shape):
        return const(name, (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np_t))

    def node(op, ins, name, **attrs):
        nodes.append(helper.make_node(op, ins, [name], name=name, **attrs))
        return name

    dh = d // heads
    split_shape = const("split_shape", np.array([1, seq, heads, dh], dtype=np.int64))
    merge_shape = const("merge_shape", np.array([1, seq, d], dtype=np.int64))
    scale = const("scale", np.array(1.0 / np.sqrt(dh), dtype=np_t))
    half, one, rsqrt2 = (const(n, np.array(v, dtype=np_t)) for n, v in (("half", 0.5), ("one", 1.0),
                                                                          ("rsqrt2", 1 / np.sqrt(2))))
    x = "x"
    for li in range(layers):
        p = f"l{li}_"
        g, b = const(p + "ln1_g", np.ones(d, np_t)), const(p + "ln1_b", np.zeros(d, np_t))
        h = node("LayerNormalization", [x, g, b], p + "ln1", axis=-1, epsilon=1e-5)
        qkv = []
        for t in "qkv":
            m = node("MatMul", [h, weight(p + f"w{t}", (d, d))], p + t)
            m = node("Add", [m, const(p + f"b{t}", rng.standard_normal(d).astype(np_t) * 0.1)], p + t + "_b")
            r = node("Reshape", [m, split_shape], p + t + "_split")
            perm = [0, 2, 3, 1] if t == "k" else [0, 2, 1, 3]
            qkv.append(node("Transpose", [r], p + t + "_heads", perm=perm))
        s = node("MatMul", [qkv[0], qkv[1]], p + "scores")
        s = node("Mul", [s, scale], p + "scaled")
        a = node("Softmax", [s], p + "probs", axis=-1)
        o = node("MatMul", [a, qkv[2]], p + "ctx")
        o = node("Transpose", [o], p + "ctx_t", perm=[0, 2, 1, 3])
        o = node("Reshape", [o, merge_shape], p + "ctx_m")
        o = node("MatMul", [o, weight(p + "wo", (d, d))], p + "proj")
        x = node("Add", [x, o], p + "res1")
        g2, b2 = const(p + "ln2_g", np.ones(d, np_t)), const(p + "ln2_b", np.zeros(d, np_t))
        h = node("LayerNormalization", [x, g2, b2], p + "ln2", axis=-1, epsilon=1e-5)
        f = node("MatMul", [h, weight(p + "w1", (d, 4 * d))], p + "fc1")
        e = node("Erf", [node("Mul", [f, rsqrt2], p + "fc1_s")], p + "erf")
        f = node("Mul", [node("Mul", [f, half], p + "fc1_h"), node("Add", [e, one], p + "erf1")], p + "gelu")
        f = node("MatMul", [f, weight(p + "w2", (4 * d, d))], p + "fc2")
        x = node("Add", [x, f], p + "res2")
    nodes.append(helper.make_node("Identity", [x], ["y"], name="out"))
    graph = helper.make_graph(nodes, "transformer_like", [helper.make_tensor_value_info("x", elem, [1, seq, d])],
                              [helper.make_tensor_value_info("y", elem, [1, seq, d])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, path)


def default_model(cache_dir: Path, dtype: str) -> tuple[str, str]:
    """(path, description): the Whisper-tiny encoder when torch + transformers are here, else transformer_like."""
    sys.path.insert(0, str(REPO / "bench"))
    cache_dir.mkdir(parents=True, exist_ok=True)
    try:
        import cases_torch

        have_torch = cases_torch.have_torch_and_transformers()
    except ImportError:
        have_torch = False
    if have_torch:
        path = cache_dir / f"whisper_encoder_{dtype}.onnx"
        if not path.is_file():
            cases_torch.export_whisper_encoder(str(path), dtype)
        return str(path), f"Whisper-tiny encoder {dtype} (4 layers, transformers export)"
    path = cache_dir / f"transformer_like_{dtype}.onnx"
    if not path.is_file():
        transformer_like(str(path), dtype)
    return str(path), f"transformer-like onnx.helper graph {dtype} (torch/transformers absent: NOT Whisper)"


# ------------------------------------------------------------------------------------------------ child process


def child(spec: dict) -> dict:
    """One fresh process: the timeline of one configuration. Returns seconds per column and our phases."""
    t0 = time.perf_counter()
    import numpy as np
    import onnxruntime as ort

    out: dict = {"import": time.perf_counter() - t0}
    t = time.perf_counter()
    if spec["config"] == "peer":
        import onnxruntime_ep_webgpu as peer

        lib, ep_name = peer.get_library_path(), peer.get_ep_name()
    else:
        lib, ep_name = spec["lib"], OUR_EP
    ort.register_execution_provider_library("startup", lib)
    devices = [d for d in ort.get_ep_devices() if d.ep_name == ep_name][:1]
    out["register"] = time.perf_counter() - t
    if not devices:
        raise RuntimeError(f"{ep_name} offers no device")
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "0")
    options = dict(spec.get("options", {}))
    if spec["config"] not in ("peer", "ours-default") and spec.get("instrumented", True):
        options["pipeline_cache"] = spec["pipeline_cache"]
    so.add_provider_for_devices(devices, options)
    t = time.perf_counter()
    sess = ort.InferenceSession(spec["model"], sess_options=so)
    out["session"] = time.perf_counter() - t
    rng = np.random.default_rng(1)
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in i.shape]
        dtype = np.float16 if "float16" in i.type else np.float32
        feeds[i.name] = rng.standard_normal(shape).astype(dtype)
    locator = None
    if spec["config"] != "peer" and spec.get("instrumented", True):
        sys.path.insert(0, str(REPO / "python"))
        import onnxruntime_ep_wgpu as locator

    # Buffers our allocators created by the end of each step: a second run that still creates some is lazy work.
    created = {}
    first_done = 0.0
    starts = []  # wall-clock (epoch) second of each run's start, to line runs up with a clock trace
    for col in ("first_run", "second_run"):
        starts.append(time.time())
        t = time.perf_counter()
        result = sess.run(None, feeds)
        out[col] = time.perf_counter() - t
        first_done = first_done if col == "second_run" else time.perf_counter()
        if locator:
            created[col] = locator.memory_stats(lib)["buffers_created"]
    steady = []
    timeline = [(0.0, out["second_run"])]  # (seconds from the first result to the run, its seconds)
    for _ in range(spec["steady"]):
        starts.append(time.time())
        t = time.perf_counter()
        sess.run(None, feeds)
        steady.append(time.perf_counter() - t)
        timeline.append((t - first_done, steady[-1]))
    out["steady"] = statistics.median(steady)
    out["runs_ms"] = [out["first_run"] * 1e3, out["second_run"] * 1e3] + [x * 1e3 for x in steady]  # how it settles
    out["run_starts"] = starts
    if spec.get("settle", 0) > 0:
        settle(sess, feeds, first_done, spec["settle"], out, timeline)
    if locator:
        created["steady"] = locator.memory_stats(lib)["buffers_created"]
        out["buffers_created"] = created
    out["total_to_first_result"] = out["import"] + out["register"] + out["session"] + out["first_run"]
    out["output_checksum"] = float(np.sum(np.abs(result[0].astype(np.float64))))
    if locator:
        out["phases"] = locator.startup_stats(lib)
    return out


def settle(sess, feeds: dict, start: float, seconds: float, out: dict, timeline: list) -> None:
    """Runs on until `seconds` after the first result (in a cold process our tensor-core pipelines still compile
    then, and the runs take the interim plans), then 10 more: "settled" is their median, "settled_after" the time
    from the first result to the start of the first run within 10% of it. `timeline` holds the runs so far as
    (seconds from the first result to the run's start, its seconds)."""
    while time.perf_counter() - start < seconds:
        t = time.perf_counter()
        sess.run(None, feeds)
        timeline.append((t - start, time.perf_counter() - t))
    last = []
    for _ in range(10):
        t = time.perf_counter()
        sess.run(None, feeds)
        last.append(time.perf_counter() - t)
    out["settled"] = statistics.median(last)
    out["settled_after"] = next((at for at, dt in timeline if dt <= 1.1 * out["settled"]), seconds)
    out["settle_runs"] = len(timeline)


# ------------------------------------------------------------------------------------------------ parent


def find_library(explicit: str | None) -> str:
    for candidate in (explicit, os.environ.get("ONNXRUNTIME_EP_WGPU_LIB"), str(REPO / "target/release" / LIBRARY_NAME)):
        if candidate and Path(candidate).is_file():
            return str(Path(candidate).resolve())  # ORT resolves a relative path against its own folder
    raise SystemExit(f"{LIBRARY_NAME} not found: build it (cargo build --release -p onnxruntime-ep-wgpu) or pass --lib")


def instrumented(lib: str) -> bool:
    """Whether the library reports its phases (and so knows the option pipeline_cache): a build from before
    issue 15 does not, and runs as a baseline (its rows have no phases; ours-nocache = ours)."""
    import ctypes

    return hasattr(ctypes.CDLL(lib), "onnxruntime_ep_wgpu_startup_stats")


def peer_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("onnxruntime_ep_webgpu") is not None


def spawn(spec: dict, driver_dir: str, timeout: float) -> dict:
    env = dict(os.environ)
    # The driver's own shader caches: NVIDIA and Mesa (lavapipe/llvmpipe, RADV, ANV).
    env.update(__GL_SHADER_DISK_CACHE_PATH=driver_dir, __GL_SHADER_DISK_CACHE="1", MESA_SHADER_CACHE_DIR=driver_dir)
    env.pop("MESA_SHADER_CACHE_DISABLE", None)
    if spec.get("config") == "ours-default":
        # The default option's cache directory ($XDG_CACHE_HOME/onnxruntime-ep-wgpu) in the mode's cache dir.
        env["XDG_CACHE_HOME"] = spec["pipeline_cache"]
    cmd = [sys.executable, __file__, "--child", json.dumps(spec)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    # ONNXRUNTIME_EP_WGPU_LOG_COMPILES=1: the library's lines (each compiled pipeline, each wait for one, each run on
    # interim plans, with times since its first pipeline request), passed on.
    for ln in (p.stderr or "").splitlines():
        if ln.startswith("ep-wgpu "):
            print(f"  [{spec.get('config', '?')}] {ln}", file=sys.stderr)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr or p.stdout).strip().splitlines()[-5:]
        return {"error": f"exit {p.returncode}: " + " | ".join(tail)}
    return json.loads(lines[-1])


def measure(args, model: str, lib: str) -> list[dict]:
    rows = []
    root = Path(tempfile.mkdtemp(prefix="ep_startup_"))
    configs = [c for c in args.configs.split(",") if c]
    full = instrumented(lib)
    if not full:
        print(f"{lib} reports no phases: a baseline build (no pipeline_cache option)", file=sys.stderr)
    for config in configs:
        if config == "peer" and not peer_installed():
            print("peer: onnxruntime-ep-webgpu is not installed; skipped", file=sys.stderr)
            continue
        warm_driver, warm_cache = root / config / "driver-warm", root / config / "cache-warm"
        for rep in range(args.repeat):
            for mode in args.modes.split(","):
                fresh = Path(tempfile.mkdtemp(dir=root))
                driver = warm_driver if mode == "warm" else fresh / "driver"
                cache = warm_cache if mode in ("warm", "ourcache") else fresh / "cache"
                if mode != "cold" and not warm_driver.exists():
                    # Prime the shared dirs with one process whose numbers are not kept.
                    warm_driver.mkdir(parents=True)
                    spawn(dict(config=config, lib=lib, model=model, steady=1, options=args.options, instrumented=full,
                               pipeline_cache="off" if config == "ours-nocache" else str(warm_cache)),
                          str(warm_driver), args.timeout)
                spec = dict(config=config, lib=lib, model=model, steady=args.steady, options=args.options, instrumented=full,
                            pipeline_cache="off" if config == "ours-nocache" else str(cache), settle=args.settle)
                driver.mkdir(parents=True, exist_ok=True)
                r = spawn(spec, str(driver), args.timeout)
                r.update(config=config, mode=mode, repeat=rep)
                print(f"{config:>13} {mode:>8} #{rep}: " + (r.get("error") or "  ".join(
                    f"{c} {r[c] * 1e3:.0f}" for c in COLUMNS) + " ms"), file=sys.stderr, flush=True)
                rows.append(r)
    return rows


def summarize(rows: list[dict]) -> list[dict]:
    """Median of each cell over the repeats, per (config, mode); phases likewise."""
    out = []
    keys = []
    for r in rows:
        k = (r["config"], r["mode"])
        if k not in keys:
            keys.append(k)
    for config, mode in keys:
        ok = [r for r in rows if (r["config"], r["mode"]) == (config, mode) and "error" not in r]
        if not ok:
            err = next(r["error"] for r in rows if (r["config"], r["mode"]) == (config, mode))
            out.append(dict(config=config, mode=mode, error=err))
            continue
        cell = {c: statistics.median(r[c] for r in ok) for c in (*COLUMNS, "total_to_first_result")}
        cell.update(config=config, mode=mode, n=len(ok), output_checksum=ok[0]["output_checksum"])
        if all("settled" in r for r in ok):
            cell.update({c: statistics.median(r[c] for r in ok) for c in ("settled", "settled_after")})
        if "phases" in ok[0]:
            cell["phases"] = {p: statistics.median(r["phases"][p]["ms"] for r in ok) for p in ok[0]["phases"]}
        out.append(cell)
    return out


def table(summary: list[dict]) -> str:
    head = "| ms | " + " | ".join(COLUMNS) + " | import → first result |"
    lines = [head, "|" + "---|" * (len(COLUMNS) + 2)]
    for s in summary:
        name = f"{s['config']}, {s['mode']}"
        if "error" in s:
            lines.append(f"| {name} | error: {s['error'][:80]} |")
            continue
        cells = " | ".join(f"{s[c] * 1e3:.1f}" for c in COLUMNS)
        lines.append(f"| {name} | {cells} | {s['total_to_first_result'] * 1e3:.0f} |")
    settled = [s for s in summary if "settled" in s]
    if settled:
        lines += ["", "| after the compiles, ms | settled run | second run against it | first within 10% of it, s after the first result |",
                  "|---|---|---|---|"]
        for s in settled:
            lines.append(f"| {s['config']}, {s['mode']} | {s['settled'] * 1e3:.2f} | "
                         f"{(s['second_run'] / s['settled'] - 1) * 100:+.1f}% | {s['settled_after']:.2f} |")
    phases = [s for s in summary if "phases" in s]
    if phases:
        names = list(phases[0]["phases"])
        lines += ["", "| our phases, ms | " + " | ".join(names) + " |", "|" + "---|" * (len(names) + 1)]
        for s in phases:
            lines.append(f"| {s['config']}, {s['mode']} | " + " | ".join(f"{s['phases'][p]:.1f}" for p in names)
                         + " |")
        lines.append("")
        lines.append("render/module/pipeline: summed over the parallel compile workers; first_run includes pipeline_wait "
                     "(and prepare when the shapes were not static at Compile); cache_load/cache_save: ms (their byte counts are in the JSON's raw rows).")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--model", help="ONNX model (default: Whisper-tiny encoder, see above)")
    p.add_argument("--dtype", choices=("fp16", "fp32"), default="fp16", help="of the default model (default fp16)")
    p.add_argument("--lib", help=f"our {LIBRARY_NAME} (default: $ONNXRUNTIME_EP_WGPU_LIB, else target/release)")
    p.add_argument("--configs", default=",".join(CONFIGS), help=f"comma-separated, of {CONFIGS}")
    p.add_argument("--modes", default="cold,warm", help=f"comma-separated, of {MODES} (default cold,warm)")
    p.add_argument("--repeat", type=int, default=3, help="processes per (config, mode); cells are medians")
    p.add_argument("--steady", type=int, default=20, help="runs whose median is the steady state (default 20)")
    p.add_argument("--settle", type=float, default=0,
                   help="then run on for this many seconds after the first result and report the settled run (default 0: no)")
    p.add_argument("--option", "-o", action="append", default=[], metavar="KEY=VALUE", help="our EP option")
    p.add_argument("--cache-dir", default=str(REPO / "bench" / "out" / "startup"), help="where models are cached")
    p.add_argument("--timeout", type=float, default=600, help="seconds per process")
    p.add_argument("--json", help="write the rows and the summary here")
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(args.child))), flush=True)
        return 0
    args.options = dict(o.split("=", 1) for o in args.option)
    bad = [m for m in args.modes.split(",") if m not in MODES] + [c for c in args.configs.split(",") if c not in CONFIGS]
    if bad:
        p.error(f"unknown mode/config: {bad}")
    lib = find_library(args.lib)
    model, what = (args.model, args.model) if args.model else default_model(Path(args.cache_dir), args.dtype)
    print(f"model: {what}\nlibrary: {lib}", file=sys.stderr)
    rows = measure(args, model, lib)
    summary = summarize(rows)
    print(f"Start-up, {what}; each row a fresh process, median of {args.repeat}\n")
    print(table(summary))
    if args.json:
        Path(args.json).write_text(json.dumps(dict(model=what, library=lib, rows=rows, summary=summary), indent=1))
    return 0 if all("error" not in s for s in summary) else 1


if __name__ == "__main__":
    sys.exit(main())
