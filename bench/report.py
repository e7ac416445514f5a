#!/usr/bin/env python3
"""Tables, JSON, plots and docs/performance/benchmark-tables.md from the benchmark's results (bench/run.py writes results.json).

    python bench/report.py bench/out/results.json                          # print the tables
    python bench/report.py bench/out/results.json --write-docs docs/performance/benchmark-tables.md [--plots DIR]

In an existing docs file only the part between `<!-- bench:begin -->` and `<!-- bench:end -->` is replaced.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"
ORDER = ("cpu", "peer", "ours")
LABELS = {"cpu": "CPU EP", "peer": "WebGPU EP (peer)", "ours": "wgpu EP (ours)", "torch": "torch CUDA (kernel)"}
COLORS = {"cpu": "#7f7f7f", "peer": "#1f77b4", "ours": "#d62728", "torch": "#2ca02c"}


# ------------------------------------------------------------------------------------------------ numbers


def tflops(flops, ms):
    return flops / (ms * 1e-3) / 1e12 if flops and ms else None


def derive(entry: dict) -> dict:
    """Adds TFLOP/s, speed-ups and session+first-run time to each timed row of a case (in place)."""
    res = entry.get("results", {})
    cpu_ms = res.get("cpu", {}).get("median_ms")
    peer = res.get("peer", {})
    peer_ms = peer.get("median_ms") if peer.get("status") in ("ok", "partial") else None
    for key, row in list(res.items()) + [("torch", entry.get("torch") or {})]:
        if key != "torch" and "create_s" in row and "first_run_s" in row:
            row["session_first_ms"] = (row["create_s"] + row["first_run_s"]) * 1e3
        ms = row.get("median_ms")
        if ms is None or row.get("status") == "declined":  # a declined row timed the CPU EP
            continue
        row["tflops"] = tflops(entry.get("flops"), ms)
        row["vs_cpu"] = cpu_ms / ms if cpu_ms and key != "cpu" else None
        row["vs_peer"] = peer_ms / ms if peer_ms and key not in ("cpu", "peer") else None
    return entry


def _clean(x):
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def write_json(results: dict, path: Path) -> None:
    for entry in results["cases"]:
        derive(entry)
    tmp = Path(str(path) + ".tmp")
    tmp.write_text(json.dumps(_clean(results), indent=1))
    tmp.replace(path)


def progress_line(row: dict, flops) -> str:
    if "error" in row and "median_ms" not in row:
        return f"error: {row['error']}"
    if "median_ms" not in row:
        return f"{row.get('status', '?')}: {row.get('message', '')}"
    parts = [f"median {row['median_ms']:.3f} ms (p10 {row['p10_ms']:.3f}, p90 {row['p90_ms']:.3f}; {row['runs']} runs)"]
    if tflops(flops, row["median_ms"]):
        parts.append(f"{tflops(flops, row['median_ms']):.3g} TFLOP/s")
    if "create_s" in row:
        parts.append(f"session {row['create_s'] * 1e3:.0f} ms + 1st run {row['first_run_s'] * 1e3:.0f} ms")
    if row.get("diff", {}).get("max_rel") is not None:
        parts.append(f"max rel Δ {row['diff']['max_rel']:.1e}")
    if row.get("status") not in (None, "ok"):
        parts.append(f"{row['status'].upper()}: {row.get('message', '')}")
    return "; ".join(parts)


def profile_line(prof: dict) -> str:
    """One progress line for our EP's GPU profile (run.py --profile)."""
    if prof.get("status") != "ok":
        return f"GPU profile {prof.get('status', '?')}: {prof.get('message', '')}"
    share = prof.get("product_share")
    return (f"GPU {prof['gpu_ms']:.3f} ms per run in {prof['steps']} steps, {prof['dispatches']} dispatches, "
            f"{prof['partitions']} partition(s); products {'—' if share is None else f'{share:.0%}'} of GPU time; "
            f"top: {_top_ops(prof, 3)}")


def _top_ops(prof: dict, n: int) -> str:
    total = prof.get("gpu_ms") or 0.0
    items = list((prof.get("by_ops") or {}).items())[:n]
    return ", ".join(f"{_cell(ops, 40)} {v['gpu_ms'] / total:.0%}" if total > 0 else _cell(ops, 40)
                     for ops, v in items) or "—"


# ------------------------------------------------------------------------------------------------ tables


def _ms(v):
    if v is None:
        return "—"
    return f"{v:.3f}" if v < 10 else f"{v:.1f}" if v < 1000 else f"{v:.0f}"


def _x(v):
    return "—" if v is None else f"{v:.3g}×"


def _tf(v):
    return "—" if v is None else f"{v:.3g}"


def _cell(text: str, limit: int = 90) -> str:
    text = " ".join(str(text).split()).replace("|", "/")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _placement(row: dict) -> str:
    pl = row.get("placement") or {}
    if "error" in pl:
        return "? (" + _cell(pl["error"], 30) + ")"
    if "node_fraction" not in pl:
        return "—"
    if pl.get("nodes"):
        return f"{pl['nodes_on_provider']}/{pl['nodes']} nodes, {pl['time_fraction']:.0%} time"
    return "all nodes" if pl["node_fraction"] == 1.0 else f"{pl['node_fraction']:.0%} nodes"


def _diff(row: dict, dtype: str) -> str:
    d = row.get("diff")
    if not d:
        return "—"
    if "error" in d:
        return _cell(d["error"], 30)
    flag = " ⚠" if isinstance(d["max_rel"], float) and d["max_rel"] > {"fp16": 2e-2}.get(dtype, 1e-3) else ""
    return f"{d['max_abs']:.1e} (rel {d['max_rel']:.0e}){flag}"


def detail_table(results: dict) -> str:
    head = ("| case | provider | status | median ms | p10–p90 ms | TFLOP/s | vs CPU | vs peer | session+1st ms "
            "| max Δ vs CPU | on provider |")
    lines = [head, "|" + "---|" * 11]
    for e in results["cases"]:
        derive(e)
        case = f"{e['name']}"
        if e.get("skipped"):
            lines.append(f"| {case} | — | skipped: {_cell(e['skipped'])} |" + " |" * 8)
            continue
        rows = [(k, e["results"][k]) for k in ORDER if k in e["results"]]
        if e.get("torch"):
            rows.append(("torch", e["torch"]))
        for key, r in rows:
            status = r.get("status", "ok" if "median_ms" in r else "error")
            if "median_ms" not in r:
                msg = r.get("message") or r.get("error") or ""
                if status == "unavailable":
                    msg = "see above"
                lines.append(f"| {case} | {LABELS[key]} | {status}: {_cell(msg)} |" + " — |" * 8)
                continue
            if status != "ok":
                status = f"{status}: {_cell(r.get('message', ''), 60)}"
            lines.append(
                f"| {case} | {LABELS[key]} | {status} | {_ms(r['median_ms'])} "
                f"| {_ms(r['p10_ms'])}–{_ms(r['p90_ms'])} "
                f"| {_tf(r.get('tflops'))} | {_x(r.get('vs_cpu'))} | {_x(r.get('vs_peer'))} "
                f"| {_ms(r.get('session_first_ms'))} | {_diff(r, e['dtype'])} "
                f"| {_placement(r) if key != 'torch' else 'kernel only'} |")
    return "\n".join(lines)


def _summary_cell(r: dict | None) -> str:
    if not r:
        return "—"
    if "median_ms" not in r or r.get("status") == "declined":
        return r.get("status", "error") if "error" not in r else "error"
    mark = "" if r.get("status", "ok") == "ok" else f" ({r['status']})"
    return _ms(r["median_ms"]) + mark


def summary_table(results: dict) -> str:
    lines = ["| case | CPU EP ms | peer ms | ours ms | torch CUDA ms | ours TFLOP/s | ours vs CPU | ours vs peer |",
             "|" + "---|" * 8]
    for e in results["cases"]:
        derive(e)
        res = e.get("results", {})
        ours_row = res.get("ours")
        ours = ours_row if (ours_row or {}).get("status") in ("ok", "partial") else {}
        if e.get("skipped"):
            lines.append(f"| {e['name']} | skipped |" + " |" * 6)
            continue
        lines.append(
            f"| {e['name']} | {_summary_cell(res.get('cpu'))} | {_summary_cell(res.get('peer'))} "
            f"| {_summary_cell(ours_row)} | {_summary_cell(e.get('torch'))} | {_tf(ours.get('tflops'))} "
            f"| {_x(ours.get('vs_cpu'))} | {_x(ours.get('vs_peer'))} |")
    return "\n".join(lines)


def profile_table(results: dict) -> str:
    """Our EP's GPU profile per case (run.py --profile), beside its median and session + first run; "" when no case
    was profiled."""
    lines = ["| case | ours median ms | session+1st ms | GPU ms/run | GPU/median | dispatches/run | steps "
             "| products | top steps (share of GPU time) |", "|" + "---|" * 9]
    for e in results["cases"]:
        derive(e)
        r = e.get("results", {}).get("ours") or {}
        prof = r.get("gpu_profile")
        if not prof:
            continue
        first = f"| {e['name']} | {_ms(r.get('median_ms'))} | {_ms(r.get('session_first_ms'))} "
        if prof.get("status") != "ok":
            lines.append(first + f"| {prof.get('status', '?')}: {_cell(prof.get('message', ''), 70)} |" + " — |" * 5)
            continue
        busy = prof["gpu_ms"] / r["median_ms"] if r.get("median_ms") else None
        share = prof.get("product_share")
        lines.append(first + f"| {_ms(prof['gpu_ms'])} | {'—' if busy is None else f'{busy:.0%}'} "
                     f"| {prof['dispatches']} | {prof['steps']} | {'—' if share is None else f'{share:.0%}'} "
                     f"| {_top_ops(prof, 3)} |")
    return "\n".join(lines) if len(lines) > 2 else ""


def header(results: dict) -> str:
    m = results["meta"]
    env, provs = m.get("environment", {}), m.get("providers", {})
    ours = provs.get("ours", {})
    peer = provs.get("peer", {})
    info, pinfo = ours.get("info", {}), peer.get("info", {})
    lines = [
        f"- date: {m.get('date')}; preset `{m.get('preset')}`; ONNX Runtime {env.get('onnxruntime')}; "
        f"Python {env.get('python')}; numpy {env.get('numpy')}",
        f"- adapter (ours): {info.get('adapter', '—')}; driver: {info.get('driver', '—')}"
        + (f"; nvidia-smi: {env['nvidia_smi']}" if env.get("nvidia_smi") else ""),
        f"- CPU: {env.get('cpu', '?')} ({env.get('cpu_count')} threads)",
        "- ours: " + (f"{info.get('version', '?')} from {info.get('library_from', '?')}, options "
                      f"{ours.get('options') or '{}'}" if ours.get("available")
                      else f"unavailable: {ours.get('reason', 'not run')}"),
        "- peer: " + (f"onnxruntime-ep-webgpu {pinfo.get('version', '?')} on {pinfo.get('hardware_type', '?')} "
                      f"{pinfo.get('hardware_vendor', '')}" if peer.get("available")
                      else f"unavailable: {peer.get('reason', 'not run')}"),
        f"- cuBLAS/cuDNN reference: {m.get('torch', {}).get('info', '—')}",
        *([f"- **aborted**: {m['aborted']}; the cases after the last row were not measured"]
          if m.get("aborted") else []),
        "- times: `session.run` with numpy inputs and outputs (copies included); median of the timed runs after "
        "warm-up; torch: CUDA events around the kernels only. TFLOP/s counts MatMul/Gemm/Conv work only.",
    ]
    return "\n".join(lines)


PROFILE_NOTE = ("GPU ms/run: the sum of our EP's steps' GPU times (timestamp queries around each step's dispatches, "
                "5 repeats averaged, `ONNXRUNTIME_EP_WGPU_PROFILE`) in the last of 2 untimed runs; GPU/median: that "
                "over the timed median (the rest is copies, CPU work and waiting); products: the share of GPU time "
                "in steps whose ops start with MatMul, Gemm or Conv; n/a: the adapter has no timestamp queries.")


def render_markdown(results: dict) -> str:
    text = (f"## Benchmark results\n\n{header(results)}\n\n### Per provider\n\n{detail_table(results)}\n\n"
            f"### Summary\n\n{summary_table(results)}\n")
    prof = profile_table(results)
    if prof:
        text += f"\n### GPU profile (ours)\n\n{PROFILE_NOTE}\n\n{prof}\n"
    return text


# ------------------------------------------------------------------------------------------------ docs


def write_docs(results: dict, path: Path) -> None:
    m = results["meta"]
    body = (f"{BEGIN}\n<!-- generated by bench/run.py / bench/report.py from results.json; edits here are "
            f"overwritten -->\n\n{render_markdown(results)}\nCommand: `bench/run.py {' '.join(m.get('argv', []))}`\n"
            f"{END}")
    if path.is_file():
        text = path.read_text()
        if BEGIN in text and END in text and text.index(BEGIN) < text.index(END):
            text = text[: text.index(BEGIN)] + body + text[text.index(END) + len(END):]
        else:
            text = text.rstrip("\n") + "\n\n" + body + "\n"
    else:
        text = ("# Performance\n\nOur EP beside ONNX Runtime's CPU EP and the WebGPU plugin EP, measured in one "
                "process by `bench/run.py` (targets: shared/docs/targets.md).\n\n" + body + "\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


# ------------------------------------------------------------------------------------------------ plots


def _series(results: dict, group_filter=None):
    """[(entry, {key: tflops})] of the cases with FLOPs, in order."""
    out = []
    for e in results["cases"]:
        if not e.get("flops") or e.get("skipped") or (group_filter and not group_filter(e)):
            continue
        derive(e)
        vals = {k: r.get("tflops") for k, r in e["results"].items() if r.get("status") in ("ok", "partial")}
        if e.get("torch", {}).get("tflops"):
            vals["torch"] = e["torch"]["tflops"]
        out.append((e, vals))
    return out


def plot(results: dict, out_dir: Path) -> list[Path]:
    """throughput.png (TFLOP/s per case and provider, by group), matmul_scaling.png, speedup.png; [] without
    matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plots", file=sys.stderr)
        return []
    written = []
    series = _series(results)
    groups = list(dict.fromkeys(e["group"] for e, _ in series))
    if groups:
        keys = [k for k in (*ORDER, "torch") if any(v.get(k) for _, v in series)]
        fig, axes = plt.subplots(len(groups), 1, figsize=(11, 2.8 * len(groups) + 0.8), squeeze=False)
        for ax, group in zip(axes[:, 0], groups):
            items = [(e, v) for e, v in series if e["group"] == group]
            width = 0.8 / max(len(keys), 1)
            for j, key in enumerate(keys):
                xs = [i + (j - (len(keys) - 1) / 2) * width for i in range(len(items))]
                ys = [v.get(key) or 0 for _, v in items]
                ax.bar(xs, ys, width, label=LABELS[key], color=COLORS[key], hatch="//" if key == "torch" else None)
                for x, (e, v) in zip(xs, items):
                    status = e["results"].get(key, {}).get("status")
                    if not v.get(key) and key != "torch" and status:
                        ax.text(x, 0.02, status, rotation=90, fontsize=7, ha="center", va="bottom",
                                transform=ax.get_xaxis_transform())
            ax.set_xticks(range(len(items)), [f"{e['shape']} {e['dtype']}" for e, _ in items], fontsize=8)
            ax.set_ylabel("TFLOP/s")
            ax.set_title(group, fontsize=10, loc="left")
            ys = [v[k] for _, v in items for k in keys if v.get(k)]
            if ys and max(ys) / min(ys) > 20:
                ax.set_yscale("log")
                ax.set_ylim(bottom=min(ys) / 2, top=max(ys) * 2)
            ax.grid(axis="y", alpha=0.3)
        axes[0, 0].legend(fontsize=8, ncol=len(keys), loc="upper left")
        fig.suptitle(_title(results), fontsize=9)
        fig.tight_layout()
        written.append(_save(fig, out_dir / "throughput.png", plt))

        mm = [(e, v) for e, v in series if e["group"] == "matmul"]
        if mm:
            fig, ax = plt.subplots(figsize=(8, 4.5))
            for key in keys:
                for dtype, style in (("fp32", "-o"), ("fp16", "--s")):
                    pts = [(int(e["name"].split("_")[1]), v[key]) for e, v in mm if e["dtype"] == dtype and v.get(key)]
                    if pts:
                        ax.plot(*zip(*pts), style, color=COLORS[key], label=f"{LABELS[key]} {dtype}")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("N (square MatMul N×N×N, B constant)")
            ax.set_ylabel("TFLOP/s")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
            ax.set_title(_title(results), fontsize=9)
            fig.tight_layout()
            written.append(_save(fig, out_dir / "matmul_scaling.png", plt))

    rows = [(e, e["results"]["ours"]) for e in results["cases"]
            if e.get("results", {}).get("ours", {}).get("status") in ("ok", "partial")]
    if rows:
        fig, ax = plt.subplots(figsize=(11, 4.5))
        xs = range(len(rows))
        for off, key, label, color in ((-0.2, "vs_cpu", "ours vs CPU EP", COLORS["cpu"]),
                                       (0.2, "vs_peer", "ours vs peer", COLORS["peer"])):
            ax.bar([x + off for x in xs], [r.get(key) or 0 for _, r in rows], 0.4, label=label, color=color)
        ax.axhline(1.0, color="black", lw=0.8)
        ax.set_xticks(list(xs), [e["name"] for e, _ in rows], rotation=60, ha="right", fontsize=7)
        ax.set_ylabel("speed-up (median, ×)")
        ax.set_yscale("log")
        ax.legend(fontsize=8)
        ax.set_title(_title(results), fontsize=9)
        fig.tight_layout()
        written.append(_save(fig, out_dir / "speedup.png", plt))
    return written


def _title(results: dict) -> str:
    m = results["meta"]
    provs = m.get("providers", {})
    adapter = provs.get("ours", {}).get("info", {}).get("adapter", "?")
    missing = [LABELS.get(k, k) for k, p in provs.items() if not p.get("available")]
    return (f"{adapter}; ONNX Runtime {m.get('environment', {}).get('onnxruntime')}; {m.get('date')}"
            + (f"; unavailable: {', '.join(missing)}" if missing else ""))


def _save(fig, path: Path, plt) -> Path:
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# ------------------------------------------------------------------------------------------------ CLI


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", help="results.json written by bench/run.py")
    ap.add_argument("--write-docs", metavar="PATH", help="render into PATH (between the bench markers)")
    ap.add_argument("--plots", metavar="DIR", help="also write the PNG plots into DIR")
    args = ap.parse_args(argv)
    results = json.loads(Path(args.results).read_text())
    if args.write_docs:
        write_docs(results, Path(args.write_docs))
        print(f"wrote {args.write_docs}", file=sys.stderr)
    if args.plots:
        Path(args.plots).mkdir(parents=True, exist_ok=True)
        for p in plot(results, Path(args.plots)):
            print(f"plot {p}", file=sys.stderr)
    print(render_markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
