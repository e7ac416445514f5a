#!/usr/bin/env python3
"""Benchmark: our EP (WgpuExecutionProvider) against ONNX Runtime's CPU EP and the WebGPU plugin EP (the peer,
`onnxruntime-ep-webgpu`), in one process, on the same inputs; cuBLAS/cuDNN through PyTorch as a reference column
where torch sees a CUDA GPU.

    python bench/run.py --quick                  # small cases, few runs (CI, software adapter)
    python bench/run.py --full                   # every case of shared/docs/targets.md (a GPU machine)
    python bench/run.py --full --only 'mlp|whisper' --option tiling=64x64
    python bench/run.py --full --write-docs docs/performance/benchmark-tables.md
    python bench/run.py --full --only 'whisper_encoder|bert|vit'   # the models, GPU profile included

Per case and provider: median/p10/p90 of `session.run` (numpy in and out, so copies count), TFLOP/s, speed-up
against the CPU EP and the peer, session creation + first run, the largest difference from the CPU EP, and
where the nodes ran (a session with CPU fallback disabled first; if that fails, a fallback session and an ORT
profile that gives the fraction of nodes and node time on the provider). With --profile (default with --full), the
model cases then get a few untimed runs of our EP with ONNXRUNTIME_EP_WGPU_PROFILE set: dispatches and GPU time per
run, and the share of that time in MatMul/Gemm/Conv steps. Writes results.json, table.md and PNG plots into --out
(default bench/out), prints progress on stderr and the tables last on stdout.
"""

from __future__ import annotations

import argparse
import faulthandler
import gc
import json
import os
import re
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cases as cases_mod  # noqa: E402
import iobind  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
import providers as prov  # noqa: E402
import report  # noqa: E402
import torchref  # noqa: E402

T0 = time.perf_counter()
# Warm-up runs, min/max timed runs, seconds of timed runs per provider and case; no new case starts after
# deadline_s, and at hard_limit_s (a case that hangs) the run prints what it has and exits with status 3.
PRESETS = {
    "quick": dict(warmup=1, min_runs=2, max_runs=5, budget_s=0.5, deadline_s=120, hard_limit_s=170),
    "full": dict(warmup=3, min_runs=3, max_runs=30, budget_s=3.0, deadline_s=480, hard_limit_s=570),
}
TOLERANCE = {"fp32": 1e-3, "fp16": 2e-2}  # max|Δ| / max|CPU| above which a row is flagged


def log(msg: str) -> None:
    print(f"[{time.perf_counter() - T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


def short(e: BaseException, limit: int = 400) -> str:
    text = " ".join(str(e).split())
    text = re.sub(r"^\[ONNXRuntimeError\] : \d+ : \w+ : ", "", text)
    return (text[:limit] + "…") if len(text) > limit else text


# ------------------------------------------------------------------------------------------------ inputs


def make_feeds(model_path: str, seed: int = 0, specs: dict | None = None) -> dict:
    """Random inputs for the model's graph inputs (symbolic dimensions 1): floats standard normal, integers by the
    case's specs (token ids below the vocabulary size, masks of ones with padding zeros, token types 0/1; see
    cases.input_array)."""
    proto = onnx.load(model_path, load_external_data=False)
    inits = {i.name for i in proto.graph.initializer}
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in proto.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else 1 for d in tt.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
        feeds[vi.name] = cases_mod.input_array(vi.name, shape, dtype, rng, (specs or {}).get(vi.name))
    return feeds


def max_diff(outputs: list, reference: list) -> dict:
    worst_abs, worst_rel = 0.0, 0.0
    for got, want in zip(outputs, reference):
        got, want = np.asarray(got, dtype=np.float32), np.asarray(want, dtype=np.float32)  # fp32: enough, and light
        if got.shape != want.shape:
            return {"error": f"shape {got.shape} vs CPU {want.shape}"}
        if not np.isfinite(got).all() and np.isfinite(want).all():
            return {"max_abs": float("inf"), "max_rel": float("inf")}
        d = float(np.nanmax(np.abs(got - want))) if got.size else 0.0
        scale = float(np.nanmax(np.abs(want))) if want.size else 0.0
        worst_abs, worst_rel = max(worst_abs, d), max(worst_rel, d / scale if scale else d)
    return {"max_abs": worst_abs, "max_rel": worst_rel}


# ------------------------------------------------------------------------------------------------ one provider


def time_runs(sess, feeds, cfg) -> list[float]:
    est, spent = None, 0.0
    for _ in range(cfg["warmup"]):  # slow cases (the CPU EP on big shapes) stop warming up after half the budget
        t = time.perf_counter()
        sess.run(None, feeds)
        est = time.perf_counter() - t
        spent += est
        if spent > cfg["budget_s"] / 2:
            break
    n = cfg["max_runs"] if not est else int(cfg["budget_s"] / max(est, 1e-6))
    n = max(cfg["min_runs"], min(cfg["max_runs"], n))
    times = []
    for _ in range(n):
        t = time.perf_counter()
        sess.run(None, feeds)
        times.append(time.perf_counter() - t)
    return times


def placement(p, model, feeds, scratch: str) -> dict:
    """Fraction of nodes/node time on the provider, from an ORT profile of a short fallback-allowed session."""
    sess = p.session(model, strict=False, profile_prefix=os.path.join(scratch, f"profile_{p.key}"))
    try:
        for _ in range(2):
            sess.run(None, feeds)
        path = sess.end_profiling()
    finally:
        del sess
        gc.collect()
    try:
        result = prov.profile_placement(path, p.ep_name)
    finally:
        os.remove(path)
    result["method"] = "profile (fallback session)"
    return result


def measure(p, model, feeds, reference, cfg, scratch: str) -> tuple[dict, list | None]:
    """One provider on one case: (row, outputs)."""
    if not p.available:
        return {"status": "unavailable", "message": p.reason}, None
    row: dict = {"status": "ok"}
    t = time.perf_counter()
    try:
        sess = p.session(model, strict=True)
        row["strict"] = True
    except Exception as e:  # noqa: BLE001 - a node the provider declines, or a failure
        if p.key == "cpu":
            return {"status": "error", "message": f"session: {short(e)}"}, None
        row["strict"], row["strict_error"] = False, short(e)
        try:
            t = time.perf_counter()
            sess = p.session(model, strict=False)
        except Exception as e2:  # noqa: BLE001
            return {"status": "error", "message": f"session: {short(e2)}", "strict_error": short(e)}, None
    row["create_s"] = time.perf_counter() - t
    try:
        t = time.perf_counter()
        outputs = sess.run(None, feeds)
        row["first_run_s"] = time.perf_counter() - t
        counter = iobind.CopyCounter(p)
        before = counter.read()
        times = time_runs(sess, feeds, cfg)
        copies = counter.per_run(before, counter.read(), len(times))
        if copies is not None:
            row["copies_per_run"] = copies
        if cfg.get("io_binding") and p.key != "cpu":
            try:
                row["bound"], bound_outputs = iobind.time_bound(p, sess, feeds, cfg)
                if reference is not None and bound_outputs is not None:
                    row["bound"]["diff"] = max_diff(bound_outputs, reference)
            except Exception as e:  # noqa: BLE001 - a provider without device memory, or a failure
                row["bound"] = {"status": "error", "message": short(e)}
    except Exception as e:  # noqa: BLE001
        return {"status": "error", "message": f"run: {short(e)}", "strict": row["strict"]}, None
    finally:
        del sess
        gc.collect()
    ms = np.array(times) * 1e3
    row.update(median_ms=float(np.median(ms)), p10_ms=float(np.percentile(ms, 10)),
               p90_ms=float(np.percentile(ms, 90)), runs=len(times))
    if reference is not None and p.key != "cpu":
        row["diff"] = max_diff(outputs, reference)
    if p.key == "cpu":
        row["placement"] = {"node_fraction": 1.0, "time_fraction": 1.0, "method": "CPU EP only"}
    elif row["strict"] and not cfg.get("profile_always"):
        row["placement"] = {"node_fraction": 1.0, "time_fraction": 1.0,
                            "method": "session with CPU fallback disabled"}
    else:
        try:
            row["placement"] = placement(p, model, feeds, scratch)
        except Exception as e:  # noqa: BLE001
            row["placement"] = {"error": short(e)}
    pl = row["placement"]
    if not row["strict"]:
        if pl.get("nodes_on_provider") == 0:
            row["status"] = "declined"
            row["message"] = f"every node ran on the CPU EP ({', '.join(pl.get('elsewhere', [])) or '?'})"
        else:
            row["status"] = "partial"
            elsewhere = ", ".join(pl.get("elsewhere", [])[:6])
            row["message"] = f"CPU fallback for: {elsewhere or '?'}"
    return row, outputs


# ------------------------------------------------------------------------------------------------ GPU profile

PROFILE_RUNS = 2
PRODUCT_OPS = ("MatMul", "Gemm", "Conv")  # a step whose `ops` starts with one of these is a product


def _read_lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return [line for line in f.read().splitlines() if line.strip()]
    except FileNotFoundError:
        return []


def gpu_profile(p, model, feeds, scratch: str, runs: int = PROFILE_RUNS) -> dict:
    """Our EP's per-step GPU times: one extra session with ONNXRUNTIME_EP_WGPU_PROFILE set (read per run; each run
    then appends one JSON line per step of each of its partitions), `runs` runs, the last run's lines summed. Never
    timed: the profiling runs after each normal run and slows it."""
    path = os.path.join(scratch, "wgpu_profile.jsonl")
    if os.path.exists(path):
        os.remove(path)
    counts = []  # lines in the file after each run
    os.environ[prov.PROFILE_ENV] = path
    try:
        sess = p.session(model, strict=False)
        try:
            for _ in range(runs):
                sess.run(None, feeds)
                counts.append(len(_read_lines(path)))
        finally:
            del sess
            gc.collect()
    finally:
        os.environ.pop(prov.PROFILE_ENV, None)
    lines = _read_lines(path)
    if os.path.exists(path):
        os.remove(path)
    return summarize_profile(lines, counts)


def summarize_profile(lines: list[str], counts: list[int]) -> dict:
    """The last run's lines (those written after the previous run's count) summed: dispatches, GPU ms, the share of
    GPU time in products (MatMul/Gemm/Conv steps) and the time by step kind (`ops`)."""
    per_run = [b - a for a, b in zip([0] + counts[:-1], counts)]
    last = lines[counts[-2] if len(counts) > 1 else 0:counts[-1] if counts else len(lines)]
    steps, bad = [], 0
    for line in last:
        try:
            d = json.loads(line)
            steps.append((str(d["partition"]), str(d["ops"]), int(d["dispatches"]), float(d["gpu_ms"])))
        except (ValueError, KeyError, TypeError):
            bad += 1
    out: dict = {"runs": len(counts), "lines_per_run": per_run}
    if bad:
        out["bad_lines"] = bad
    if not steps:
        out["status"] = "n/a"
        out["message"] = ("no lines (the adapter has no timestamp queries, or nothing ran on our EP)"
                          if not lines else "no valid profile line in the last run")
        return out
    total = sum(s[3] for s in steps)
    products = sum(s[3] for s in steps if s[1].startswith(PRODUCT_OPS))
    by_ops: dict[str, dict] = {}
    for _, ops, n, ms in steps:
        b = by_ops.setdefault(ops, {"steps": 0, "dispatches": 0, "gpu_ms": 0.0})
        b["steps"] += 1
        b["dispatches"] += n
        b["gpu_ms"] += ms
    out.update(
        status="ok", partitions=len({s[0] for s in steps}), steps=len(steps),
        dispatches=sum(s[2] for s in steps), gpu_ms=total,
        product_ms=products, product_share=products / total if total > 0 else None,
        by_ops=dict(sorted(by_ops.items(), key=lambda kv: -kv[1]["gpu_ms"])),
    )
    return out


# ------------------------------------------------------------------------------------------------ one case


def run_case(case, providers, cfg, scratch: str, use_torch: bool, profile: bool = False) -> dict:
    entry = {"name": case.name, "group": case.group, "dtype": case.dtype, "shape": case.shape,
             "flops": case.flops, "note": case.note, "results": {}}
    t = time.perf_counter()
    try:
        model = case.build(scratch)  # the path of an .onnx file (weights beside it)
        feeds = make_feeds(model, specs=case.inputs)
    except Exception as e:  # noqa: BLE001 - e.g. the torch export of the encoder
        entry["error"] = f"building the model failed: {short(e)}"
        log(f"  {case.name}: {entry['error']}")
        for p in providers:
            entry["results"][p.key] = {"status": "error", "message": entry["error"]}
        return entry
    entry["build_s"] = time.perf_counter() - t
    entry["note"] = case.note  # a build may add to it (e.g. which exporter made the model)
    reference = None
    for p in providers:
        row, outputs = measure(p, model, feeds, reference, cfg, scratch)
        if p.key == "cpu" and outputs is not None:
            reference = outputs
        entry["results"][p.key] = row
        log(f"  {p.label:<18} " + report.progress_line(row, case.flops))
    ours = next((p for p in providers if p.key == "ours"), None)
    row = entry["results"].get("ours", {})
    if profile and "profile" in case.tags and ours is not None and row.get("status") in ("ok", "partial"):
        try:
            row["gpu_profile"] = gpu_profile(ours, model, feeds, scratch)
        except Exception as e:  # noqa: BLE001 - a failed profile session does not stop the benchmark
            row["gpu_profile"] = {"status": "error", "message": short(e)}
        log(f"  {'wgpu EP profile':<18} " + report.profile_line(row["gpu_profile"]))
    if use_torch and case.torch_fn is not None:
        entry["torch"] = torchref.measure(case)
        log(f"  {'torch CUDA':<18} " + report.progress_line(entry["torch"], case.flops))
    for path in (model, model + ".data"):  # weight files stay: cases with the same key share them
        if os.path.exists(path):
            os.remove(path)
    return entry


# ------------------------------------------------------------------------------------------------ main


def start_watchdog(limit_s: float, results: dict, out: Path) -> None:
    def fire():
        log(f"hard limit of {limit_s:.0f} s reached inside a case: writing what was measured, exiting with 3")
        try:
            results["meta"]["aborted"] = f"hard limit {limit_s:.0f} s reached"
            report.write_json(results, out / "results.json")
            table = report.render_markdown(results)
            (out / "table.md").write_text(table)
            print(table, flush=True)
        finally:
            os._exit(3)

    timer = threading.Timer(max(1.0, limit_s - (time.perf_counter() - T0)), fire)
    timer.daemon = True
    timer.start()
    faulthandler.dump_traceback_later(limit_s + 20, exit=True)  # if the timer cannot run (GIL held)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes, few runs (CI on the software adapter)")
    ap.add_argument("--full", action="store_true", help="every case of the targets (default; --quick wins)")
    ap.add_argument("--out", default=str(prov.REPO / "bench" / "out"), help="folder for results (default bench/out)")
    ap.add_argument("--lib", help=f"our library (default: ${prov.LIB_ENV}, target/release or the package)")
    ap.add_argument("--build", action="store_true", help="cargo build --release -p onnxruntime-ep-wgpu first")
    ap.add_argument("--option", "-o", action="append", default=[], metavar="KEY=VALUE", help="option of our EP")
    ap.add_argument("--providers", default="cpu,peer,ours", help="which to run, of cpu,peer,ours")
    ap.add_argument("--no-peer", action="store_true", help="do not load the WebGPU plugin EP")
    ap.add_argument("--no-torch", action="store_true", help="no cuBLAS/cuDNN reference even if torch has CUDA")
    ap.add_argument("--only", metavar="REGEX", help="cases whose name matches")
    ap.add_argument("--warmup", type=int)
    ap.add_argument("--max-runs", type=int)
    ap.add_argument("--budget-s", type=float, help="seconds of timed runs per provider and case")
    ap.add_argument("--deadline-s", type=float, help="skip the remaining cases after this many seconds")
    ap.add_argument("--hard-limit-s", type=float, help="print what was measured and exit 3 after this many seconds")
    ap.add_argument("--io-binding", action="store_true",
                    help="also time runs with inputs and outputs bound on the provider's device (IO binding)")
    ap.add_argument("--profile-always", action="store_true", help="profile placement even when all nodes are ours")
    ap.add_argument("--profile", action=argparse.BooleanOptionalAction, default=None,
                    help=f"after the timed runs of the model cases (MLP, Whisper encoder, BERT, ViT), {PROFILE_RUNS} "
                         f"untimed runs of our EP with ${prov.PROFILE_ENV} set: dispatches and GPU ms per run, the "
                         "share in MatMul/Gemm/Conv (default: on with --full, off with --quick)")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--write-docs", metavar="PATH", help="render the results into PATH between the bench markers")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    args = ap.parse_args(argv)
    args.preset = "quick" if args.quick else "full"
    if args.profile is None:
        args.profile = args.preset == "full"
    options = {}
    for item in args.option:
        key, sep, value = item.partition("=")
        if not sep:
            ap.error(f"--option expects KEY=VALUE, got {item!r}")
        options[key] = value
    args.options = options
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    cfg = dict(PRESETS[args.preset])
    for key in ("warmup", "max_runs", "budget_s", "deadline_s", "hard_limit_s"):
        if getattr(args, key) is not None:
            cfg[key] = getattr(args, key)
    cfg["min_runs"] = min(cfg["min_runs"], cfg["max_runs"])
    cfg["profile_always"] = args.profile_always
    cfg["gpu_profile"] = args.profile
    cfg["io_binding"] = args.io_binding
    all_cases = cases_mod.quick_cases() if args.quick else cases_mod.full_cases()
    selected = [c for c in all_cases if not args.only or re.search(args.only, c.name)]
    if args.list:
        for c in selected:
            print(f"{c.name:<32} {c.group:<16} {c.shape:<14} {c.note}")
        return 0
    wanted = {k.strip() for k in args.providers.split(",") if k.strip()}

    log(f"onnxruntime {ort.__version__}; preset {args.preset}; {len(selected)} case(s); out {args.out}"
        + (f"; GPU profile of our EP for {sum('profile' in c.tags for c in selected)} case(s)" if args.profile else ""))
    if os.environ.pop(prov.PROFILE_ENV, None):  # it would profile (and slow) every timed run of our EP
        log(f"${prov.PROFILE_ENV} was set: unset for the timed runs (use --profile)")
    providers = []
    if "cpu" in wanted:
        providers.append(prov.cpu_provider())
    if "peer" in wanted:
        providers.append(prov.peer_provider(not args.no_peer))
    if "ours" in wanted:
        try:
            lib, origin = prov.find_library(args.lib, args.build)
            providers.append(prov.our_provider(lib, origin, args.options))
        except Exception as e:  # noqa: BLE001 - no library: a row saying so, not a crash
            providers.append(prov.our_provider(None, "", args.options, error=short(e)))
    for p in providers:
        detail = p.info.get("adapter") or p.info.get("hardware_vendor") or ""
        log(f"provider {p.label}: " + (f"available {detail}" if p.available else f"UNAVAILABLE: {p.reason}"))
    use_torch, torch_info = (False, "disabled (--no-torch)") if args.no_torch else torchref.available()
    log(f"cuBLAS/cuDNN reference: {'yes, ' if use_torch else 'no: '}{torch_info}")

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = {
        "meta": {
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "preset": args.preset, "argv": sys.argv[1:], "config": cfg, "environment": prov.environment(),
            "providers": {p.key: {"label": p.label, "ep_name": p.ep_name, "available": p.available,
                                  "reason": p.reason, "options": p.options, "info": p.info} for p in providers},
            "torch": {"available": use_torch, "info": torch_info},
        },
        "cases": [],
    }
    json_path = out / "results.json"
    start_watchdog(cfg["hard_limit_s"], results, out)
    with tempfile.TemporaryDirectory(prefix="ep_bench_") as scratch:
        for i, case in enumerate(selected, 1):
            if time.perf_counter() - T0 > cfg["deadline_s"]:
                log(f"({i}/{len(selected)}) {case.name}: skipped, past the {cfg['deadline_s']:.0f} s deadline")
                results["cases"].append({"name": case.name, "group": case.group, "dtype": case.dtype,
                                         "shape": case.shape, "flops": case.flops, "note": case.note,
                                         "skipped": f"deadline ({cfg['deadline_s']:.0f} s) reached", "results": {}})
                continue
            log(f"({i}/{len(selected)}) {case.name} [{case.shape}, {case.note}]")
            results["cases"].append(run_case(case, providers, cfg, scratch, use_torch, args.profile))
            report.write_json(results, json_path)  # after every case: a killed run keeps what it measured
    gc.collect()
    prov.unregister(providers)

    report.write_json(results, json_path)
    (out / "table.md").write_text(report.render_markdown(results))
    if not args.no_plots:
        for path in report.plot(results, out):
            log(f"plot {path}")
    if args.write_docs:
        report.write_docs(results, Path(args.write_docs))
        log(f"wrote {args.write_docs}")
    log(f"results: {json_path}, {out / 'table.md'}")
    faulthandler.cancel_dump_traceback_later()
    bound = iobind.table(results)
    if bound:
        (out / "iobinding.md").write_text(bound)
    print(report.render_markdown(results) + ("\n### IO binding\n\n" + bound if bound else ""), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
