#!/usr/bin/env python3
"""Issue 18's measurements on models built by `bench/genai_build.py`, ours beside the peer in one process:

- placement: the ops of one profiled prefill that did not run on our EP (the int arithmetic on `attention_mask` that
  ONNX Runtime keeps on the CPU, and anything we declined);
- logits against the CPU EP (cosine over a 32-token prompt's logits; fp16 target ≥ 0.999);
- prefill of 512 and 1024 tokens (median ms, `session.run` with numpy I/O and an empty cache), the SM clock right
  after those runs, and the same prefill bound on the device, back to back;
- decode at contexts 512 and 2048: one token over a past of that length, inputs and outputs bound on the device
  (IO binding, so the KV cache stays there): median ms and back-to-back ms per token, tokens/s, and the weight bytes
  read per token as GB/s and a share of the H200's 4.8 TB/s;
- onnxruntime-genai's own generate loop (when importable): prompt time and tokens/s of 64 new tokens.

    python3 bench/genai_bench.py --models DIR --lib LIB [--only REGEX] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

sys.path.insert(0, str(Path(__file__).resolve().parent))
import iobind  # noqa: E402
import providers as prov  # noqa: E402

sys.path.insert(1, str(Path(__file__).resolve().parents[1] / "python"))  # our locator, installed or not
try:
    import onnxruntime_ep_wgpu as locator  # noqa: E402
except ImportError:
    locator = None

HBM_TBS = 4.8
PROFILE = os.environ.get("GENAI_PROFILE") == "1"
CFG = {"warmup": 2, "budget_s": 3.0, "min_runs": 5, "max_runs": 50}


def np_type(t: str):
    return {"tensor(float16)": np.float16, "tensor(float)": np.float32, "tensor(int64)": np.int64,
            "tensor(int32)": np.int32}[t]


def kv_dims(sess) -> tuple[int, int]:
    """(K/V heads, head size) of the cache inputs (fixed dims of `past_key_values.*`, else the genai config)."""
    i = next(i for i in sess.get_inputs() if i.name.startswith("past_key_values"))
    if isinstance(i.shape[1], int) and isinstance(i.shape[3], int):
        return i.shape[1], i.shape[3]
    decoder = json.loads((Path(sess._model_path).parent / "genai_config.json").read_text())["model"]["decoder"]
    return decoder["num_key_value_heads"], decoder["head_size"]


def shared_decode(sess, ctx: int, rng, spare: int = 64) -> tuple[dict, dict]:
    """One decode token over a cache genai's way (`past_present_share_buffer`): the past caches hold `ctx + spare`
    rows of which `ctx` are valid, and each present is bound to its past's device value. Returns the feeds and
    the output → input map."""
    feeds = feeds_for(sess, 1, ctx + spare, rng)
    feeds["attention_mask"] = feeds["attention_mask"][:, : ctx + 1]
    if "position_ids" in feeds:
        feeds["position_ids"] = np.array([[ctx]], feeds["position_ids"].dtype)
    shared = {o.name: o.name.replace("present.", "past_key_values.") for o in sess.get_outputs()
              if o.name.startswith("present.")}
    return feeds, shared


def feeds_for(sess, tokens: int, past: int, rng) -> dict:
    feeds = {}
    heads, head = kv_dims(sess)
    for i in sess.get_inputs():
        if i.name == "input_ids":
            feeds[i.name] = rng.integers(4, 256, (1, tokens), dtype=np.int64)
        elif i.name == "attention_mask":
            feeds[i.name] = np.ones((1, past + tokens), np_type(i.type))
        elif i.name == "position_ids":
            feeds[i.name] = np.arange(past, past + tokens, dtype=np_type(i.type))[None]
        elif i.name.startswith("past_key_values"):
            feeds[i.name] = (rng.standard_normal((1, heads, past, head)) * 0.5).astype(np_type(i.type))
        else:
            raise ValueError(f"unexpected model input {i.name}")
    return feeds


def cosine(a, b) -> float:
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-30))


def placement(p, path: str, feeds) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        sess = p.session(path, strict=False, profile_prefix=os.path.join(tmp, "p"))
        sess.run(["logits"], feeds)
        placed = prov.profile_placement(sess.end_profiling(), p.ep_name)
    return {k: placed[k] for k in ("nodes", "nodes_on_provider", "elsewhere")}


def bench_model(model_dir: Path, ps: dict, rng) -> dict:
    path = str(model_dir / "model.onnx")
    weights = sum(f.stat().st_size for f in model_dir.glob("model.onnx*"))
    row = {"model": model_dir.name, "weight_bytes": weights}
    sessions = {}
    for key, p in ps.items():
        try:
            t = time.perf_counter()
            sessions[key] = p.session(path, strict=False)
            row[f"{key}_session_s"] = round(time.perf_counter() - t, 2)
        except Exception as e:  # noqa: BLE001
            row[f"{key}_error"] = str(e)[:400]
    prompt = feeds_for(sessions.get("cpu") or next(iter(sessions.values())), 32, 0, rng)
    if "ours" in sessions:
        row["placement"] = placement(ps["ours"], path, prompt)
    logits = {}
    for key, sess in sessions.items():
        try:
            logits[key] = sess.run(["logits"], prompt)[0]
        except Exception as e:  # noqa: BLE001 - e.g. the CPU EP lacks GQA's q/k norms (Qwen3)
            row[f"{key}_run_error"] = str(e)[:400]
    # The reference: the CPU EP, else (an op it cannot run) the peer.
    ref = "cpu" if "cpu" in logits else "peer"
    row["reference"] = ref
    for key, sess in sessions.items():
        if key == "cpu" or key not in logits:
            continue
        if ref in logits and key != ref:
            row[f"{key}_cosine"] = cosine(logits[key], logits[ref])
            row[f"{key}_cosine_last"] = cosine(logits[key][:, -1], logits[ref][:, -1])
        for n in (512, 1024):
            feeds = feeds_for(sess, n, 0, rng)
            row[f"{key}_prefill{n}_ms"] = prov.median_run_ms(sess, feeds, 5, ["logits"])[1]
            # The GPU's clock right after those runs: prompts with idle gaps between them (numpy I/O) can leave
            # the H200's governor far below its 1980 MHz (`bench/prefill_split.py`), so bound runs back to back
            # (no copy, no gap) give the prefill's own time beside it.
            row[f"{key}_prefill{n}_clock"] = sm_clock()
            timed, _ = iobind.time_bound(ps[key], sess, feeds, CFG)
            if timed.get("status") == "ok":
                row[f"{key}_prefill{n}_bound_ms"] = timed["back_to_back_ms"]
        for ctx in (512, 2048):
            before = run_phases(ps[key])
            timed, _ = iobind.time_bound(ps[key], sess, feeds_for(sess, 1, ctx, rng), CFG)
            if before is not None:
                row[f"{key}_decode{ctx}_host"] = host_split(before, run_phases(ps[key]))
            if timed.get("status") != "ok":
                row[f"{key}_decode{ctx}"] = timed
                continue
            ms = timed["back_to_back_ms"]
            row[f"{key}_decode{ctx}_ms"] = timed["median_ms"]
            row[f"{key}_decode{ctx}_b2b_ms"] = ms
            row[f"{key}_decode{ctx}_tok_s"] = 1e3 / ms
            row[f"{key}_decode{ctx}_hbm"] = weights / (ms * 1e-3) / (HBM_TBS * 1e12)
            # genai's layout: one cache buffer shared by past and present (no cache copy for an EP that shares it).
            feeds, shared = shared_decode(sess, ctx, rng)
            timed, _ = iobind.time_bound(ps[key], sess, feeds, CFG, shared)
            if timed.get("status") == "ok":
                row[f"{key}_decode{ctx}_shared_b2b_ms"] = timed["back_to_back_ms"]
                row[f"{key}_decode{ctx}_shared_tok_s"] = 1e3 / timed["back_to_back_ms"]
                row[f"{key}_decode{ctx}_shared_copies"] = timed.get("copies_per_run")
            else:
                row[f"{key}_decode{ctx}_shared"] = timed
    if PROFILE and "ours" in sessions:
        for what, feeds in (("prefill512", feeds_for(sessions["ours"], 512, 0, rng)),
                            ("prefill1024", feeds_for(sessions["ours"], 1024, 0, rng)),
                            ("decode512", feeds_for(sessions["ours"], 1, 512, rng))):
            row[f"ours_profile_{what}"] = top_steps(prov.profiled_steps(sessions["ours"], feeds))
        # Decode once more with every dispatch timed on its own (which program of a step costs what).
        os.environ["ONNXRUNTIME_EP_WGPU_PROFILE_DISPATCHES"] = "1"
        try:
            steps = prov.profiled_steps(sessions["ours"], feeds_for(sessions["ours"], 1, 512, rng))
            row["ours_profile_decode512_dispatches"] = top_steps(steps, 40, by_grid=True)
        finally:
            os.environ.pop("ONNXRUNTIME_EP_WGPU_PROFILE_DISPATCHES", None)
    del sessions
    return row


def sm_clock() -> str | None:
    """The GPU's SM clock and performance state now (nvidia-smi), or None where there is none."""
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,pstate", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout.strip() or None


def run_phases(p) -> dict | None:
    """Our library's run counters (`startup_stats`: compute, run and its parts), or None for others."""
    lib = p.info.get("library") if p.key == "ours" else None
    if not lib:
        return None
    if locator is None:
        return None
    try:
        return locator.startup_stats(lib)
    except (AttributeError, OSError):
        return None


def host_split(before: dict, after: dict) -> dict:
    """Per run of our partitions: host ms in each run phase and dispatches recorded."""
    runs = max(after["run"]["count"] - before["run"]["count"], 1)
    keys = ("compute", "run", "run_values", "run_setup", "run_record", "run_submit", "run_wait")
    out = {k: round((after[k]["ms"] - before[k]["ms"]) / runs, 3) for k in keys if k in after}
    out["dispatches"] = round((after["run_record"]["count"] - before["run_record"]["count"]) / runs, 1)
    out["partition_runs"] = runs
    return out


def top_steps(steps: list[dict], n: int = 10, by_grid: bool = False) -> dict:
    """GPU ms per op kind of one run (our step profile), the largest first, and the total; `by_grid` keeps
    dispatches of different workgroup counts (one program at several shapes) apart."""
    by_ops: dict[str, list] = {}
    for st in steps:
        kind = st.get("ops", "?") + (f" {st.get('workgroups')}wg" if by_grid else "")
        entry = by_ops.setdefault(kind, [0.0, 0])
        entry[0] += st.get("gpu_ms", 0.0)
        entry[1] += 1
    top = sorted(by_ops.items(), key=lambda kv: -kv[1][0])[:n]
    return {"total_ms": sum(v[0] for v in by_ops.values()), "steps": len(steps),
            "top": [[k, round(v[0], 3), v[1]] for k, v in top]}


def genai_loop(model_dir: Path, registration: tuple[str, str, str], new_tokens: int = 64) -> dict:
    """onnxruntime-genai's generate loop on one EP: (registration name, library, EP name)."""
    import onnxruntime_genai as og

    name, lib, ep = registration
    if lib:
        try:
            og.register_execution_provider_library(name, lib)
        except Exception as e:  # noqa: BLE001 - already registered in this process
            if "already" not in str(e):
                raise
    config = og.Config(str(model_dir))
    config.clear_providers()
    if ep:
        config.append_provider(ep)
    model = og.Model(config)
    tok = og.Tokenizer(model)
    ids = tok.encode("The quick brown fox jumps over the lazy dog. " * 20)
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=len(ids) + new_tokens, do_sample=False)
    gen = og.Generator(model, params)
    t0 = time.perf_counter()
    gen.append_tokens(ids)
    t1 = time.perf_counter()
    before = loop_stats(lib)
    n = 0
    while not gen.is_done():
        gen.generate_next_token()
        n += 1
    t2 = time.perf_counter()
    tokens = [int(t) for t in gen.get_sequence(0)][len(ids):]
    out = {"prompt_tokens": len(ids), "prompt_ms": (t1 - t0) * 1e3, "new_tokens": n,
           "tok_s": n / max(t2 - t1, 1e-9), "tokens": tokens[:16]}
    after = loop_stats(lib)
    if before and after and n:
        # Our library's host phases per generated token (ms; count per token): where a token's time goes.
        out["ours_per_token"] = {k: [round((after[k]["ms"] - before[k]["ms"]) / n, 3),
                                     round((after[k]["count"] - before[k]["count"]) / n, 1)]
                                 for k in after if after[k]["ms"] > before[k]["ms"]}
    return out


def loop_stats(lib: str | None) -> dict | None:
    """Our `startup_stats` counters, when `lib` is our library."""
    if not lib or "wgpu" not in Path(lib).name:
        return None
    try:
        return iobind.LOCATOR.startup_stats(lib)
    except Exception:  # noqa: BLE001 - a library without the counters
        return None


def genai_subprocess(model_dir: Path, registration: tuple) -> dict:
    """`genai_loop` in a fresh process: genai 0.18 crashes on a second model in one process."""
    cmd = [sys.executable, __file__, "--genai-one", json.dumps([str(model_dir), *registration])]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return {"error": "timed out"}
    lines = [x for x in r.stdout.splitlines() if x.startswith("{")]
    if r.returncode != 0 or not lines:
        return {"error": f"exit {r.returncode}: {(r.stderr or r.stdout)[-400:]}"}
    return json.loads(lines[-1])


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--genai-one":
        model_dir, *registration = json.loads(sys.argv[2])
        print(json.dumps(genai_loop(Path(model_dir), tuple(registration))), flush=True)
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--only", default=".")
    ap.add_argument("--out", default=".")
    ap.add_argument("--no-genai", action="store_true")
    ap.add_argument("--providers", default="cpu,ours,peer",
                    help="which to measure (a second build of ours alone: --providers ours --no-genai)")
    args = ap.parse_args()
    lib = str(Path(args.lib).resolve())
    make = {"cpu": prov.cpu_provider, "ours": lambda: prov.our_provider(lib, "--lib", {}),
            "peer": lambda: prov.peer_provider(True)}
    ps = {k: make[k]() for k in args.providers.split(",")}
    ps = {k: p for k, p in ps.items() if p.available}
    rng = np.random.default_rng(0)
    rows = []
    dirs = sorted(d for d in Path(args.models).iterdir() if (d / "genai_config.json").is_file())
    for d in dirs:
        if not re.search(args.only, d.name):
            continue
        try:
            row = bench_model(d, ps, rng)
        except Exception as e:  # noqa: BLE001
            row = {"model": d.name, "error": str(e)[:600]}
        if not args.no_genai:
            regs = {"ours": ("g_wgpu", lib, prov.OUR_EP)}
            if "cpu_run_error" not in row:  # genai crashes when a session run fails
                regs = {"cpu": ("cpu", None, None), **regs}
            if "peer" in ps:
                regs["peer"] = ("g_webgpu", ps["peer"].info["library"], ps["peer"].ep_name)
            for key, reg in regs.items():
                row[f"{key}_genai"] = genai_subprocess(d, reg)
            want = row.get("cpu_genai", {}).get("tokens")
            for key in ("ours", "peer"):
                got = row.get(f"{key}_genai", {}).get("tokens")
                if want and got:
                    row[f"{key}_genai_same_tokens"] = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b),
                                                           min(len(got), len(want)))
        print(json.dumps(row, default=str), flush=True)
        rows.append(row)
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "genai.json").write_text(json.dumps(rows, indent=1, default=str))
    print(table(rows))
    return 0


def table(rows: list[dict]) -> str:
    def f(r, k, fmt="{:.2f}"):
        v = r.get(k)
        return fmt.format(v) if isinstance(v, (int, float)) else "—"

    lines = ["| model | off our EP | cos | prefill 512 ours/peer | 1024 ours/peer | bound 512 | bound 1024 "
             "| decode 512 tok/s ours/peer | 2048 ours/peer | shared cache 512 | 2048 | HBM@512 | genai tok/s ours/peer |",
             "|---" * 13 + "|"]
    for r in rows:
        off = ",".join(r.get("placement", {}).get("elsewhere", [])) or "—"
        genai = "/".join(f(r.get(f"{k}_genai", {}), "tok_s", "{:.0f}") for k in ("ours", "peer"))
        lines.append(
            f"| {r['model']} | {off} | {f(r, 'ours_cosine', '{:.5f}')} "
            f"| {f(r, 'ours_prefill512_ms')}/{f(r, 'peer_prefill512_ms')} "
            f"| {f(r, 'ours_prefill1024_ms')}/{f(r, 'peer_prefill1024_ms')} "
            f"| {f(r, 'ours_prefill512_bound_ms')}/{f(r, 'peer_prefill512_bound_ms')} "
            f"| {f(r, 'ours_prefill1024_bound_ms')}/{f(r, 'peer_prefill1024_bound_ms')} "
            f"| {f(r, 'ours_decode512_tok_s', '{:.0f}')}/{f(r, 'peer_decode512_tok_s', '{:.0f}')} "
            f"| {f(r, 'ours_decode2048_tok_s', '{:.0f}')}/{f(r, 'peer_decode2048_tok_s', '{:.0f}')} "
            f"| {f(r, 'ours_decode512_shared_tok_s', '{:.0f}')}/{f(r, 'peer_decode512_shared_tok_s', '{:.0f}')} "
            f"| {f(r, 'ours_decode2048_shared_tok_s', '{:.0f}')}/{f(r, 'peer_decode2048_shared_tok_s', '{:.0f}')} "
            f"| {f(r, 'ours_decode512_hbm', '{:.0%}')} | {genai} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
