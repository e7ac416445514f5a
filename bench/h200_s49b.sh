#!/usr/bin/env bash
# Forty-ninth session, call 3: where a warm process's second run goes (bench/experiments/second_run/phases.py), for
# Whisper-tiny fp16 and fp32 with the staged library (.carry/bench/): per run, wall time beside our own phases; a
# first process warms the driver's cache, the second is measured, with the SM clock sampled every 5 ms beside it.
# Then `bench/run.py` on Whisper-tiny fp32 and fp16 beside the peer and the CPU EP (issue 11).
#   device run with carry [".carry/bench", ".whl", ".gl"]: bash bench/h200_s49b.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
mkdir -p "$OUT/more"
for dt in fp16 fp32; do
  M=$(python3 -c "import sys; sys.path.insert(0, 'bench'); import startup; from pathlib import Path; \
print(startup.default_model(Path('bench/out/startup'), '$dt')[0])" 2>/dev/null | tail -1)
  dir=$(mktemp -d)
  __GL_SHADER_DISK_CACHE_PATH=$dir timeout 120 python3 bench/experiments/second_run/phases.py "$PWD/$LIB" "$M" \
    >"$OUT/more/prime_$dt.txt" 2>&1
  for i in 1 2; do
    nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw --format=csv,noheader -lms 5 \
      >"$OUT/more/clk_${dt}_$i.txt" 2>&1 &
    clk=$!
    __GL_SHADER_DISK_CACHE_PATH=$dir timeout 120 python3 bench/experiments/second_run/phases.py "$PWD/$LIB" "$M" \
      >"$OUT/more/phases_${dt}_$i.txt" 2>&1
    kill $clk 2>/dev/null; wait $clk 2>/dev/null
  done
done
[[ ${MODELS:-1} == 1 ]] && timeout 150 python3 bench/run.py --full --lib "$LIB" --io-binding --no-plots --no-torch --only whisper_encoder \
  --out "$OUT/more/models" >"$OUT/more/models.txt" 2>&1
tar czf "$OUT/all.tgz" -C "$OUT" more gpu.txt && rm -rf "$OUT/more"
cat "$OUT/gpu.txt"
python3 - "$OUT/all.tgz" <<'PY'
import json, sys, tarfile
t = tarfile.open(sys.argv[1])
for m in sorted(t.getmembers(), key=lambda m: m.name):
    if "/phases_" not in m.name: continue
    lines = [l for l in t.extractfile(m).read().decode().splitlines() if l.startswith("{")]
    if not lines: print(m.name, "no result"); continue
    d = json.loads(lines[-1]); print("==", m.name.split("/")[-1])
    for k in ["first", "runs", "after_0.002s", "after_0.02s", "after_0.1s"]:
        rows = [d[k]] if k == "first" else d[k][:6]
        print(f"{k:12s} " + "  ".join(f"{r['wall']:.2f}/{r['faults']}/{r['run_record']:.2f}/{r['run_wait']:.2f}/{r['copy_in']:.2f}/{r['copy_out_wait']:.2f}/{r['copy_out']:.2f}" for r in rows))
    import statistics as st
    print("steady(8:)   " + "/".join(f"{st.median(r[p] for r in d['runs'][8:]):.2f}" for p in ["wall", "faults", "run_record", "run_wait", "copy_in", "copy_out_wait", "copy_out"]))
try:
    print("\n".join(l[:200] for l in t.extractfile("more/models.txt").read().decode().splitlines() if "median" in l or "profile" in l))
except KeyError:
    print("no models.txt")
print("(wall/faults/record/wait/copy_in/copy_out_wait/copy_out ms)")
PY
