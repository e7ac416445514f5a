#!/usr/bin/env bash
# Fifty-first session, call 2: wgpu's indirect-call validation off (no validation pipelines compiled into each
# device) against the build before it (.carry/base/), both opening the device at registration; issue 15's case
# (Whisper-tiny encoder fp16, bench/startup.py, fresh processes) cold and warm beside the peer. ROUNDS rounds
# (default 3), each: base ×2, new ×2, the peer, cold then warm. Then TESTS with pytest on the new build.
#   carry [".carry/bench", ".carry/base", ".whl", ".gl"]; writes $OUT/all.tgz and prints a table last.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
mkdir -p "$OUT/more"
one() { # config mode round repeat lib tag
  timeout 200 python3 bench/startup.py --lib "$5" --dtype fp16 --configs "$1" --modes "$2" --repeat "$4" \
    --json "$OUT/more/$1-$6_$2_$3.json" >"$OUT/more/$1-$6_$2_$3.txt" 2>&1
}
for r in $(seq 1 "${ROUNDS:-3}"); do
  for mode in cold warm; do
    one ours-nocache "$mode" "$r" 2 .carry/base/libonnxruntime_ep_wgpu.so base
    one ours-nocache "$mode" "$r" 2 "$LIB" new
    one peer "$mode" "$r" 1 "$LIB" x
  done
done
TESTS=${TESTS:-tests/test_early_open.py tests/test_startup.py tests/test_ep.py}
# shellcheck disable=SC2086 # a list of test files
ONNXRUNTIME_EP_WGPU_LIB=$PWD/$LIB timeout 200 python3 -m pytest -q -p no:cacheprovider $TESTS >"$OUT/more/tests.txt" 2>&1
tar czf "$OUT/all.tgz" -C "$OUT" more gpu.txt && rm -rf "$OUT/more"
cat "$OUT/gpu.txt"
tar xzf "$OUT/all.tgz" -O more/tests.txt | tail -2
python3 - "$OUT/all.tgz" <<'PY'
import json, sys, tarfile, statistics as st, collections
t = tarfile.open(sys.argv[1]); rows = collections.defaultdict(list)
for m in t.getmembers():
    if not m.name.endswith(".json"): continue
    cfg, mode = m.name.split("/")[-1].split("_")[:2]
    for r in json.load(t.extractfile(m))["rows"]: rows[(cfg, mode)].append(r)
keys = ["import", "register", "session", "first_run", "second_run", "steady"]
print("| ms | n | " + " | ".join(keys) + " | device | device_wait | import → first | without import | 2nd/steady |")
for k in sorted(rows, key=lambda k: (k[1], k[0])):
    rs = [r for r in rows[k] if all(x in r for x in keys)]
    if not rs: continue
    med = [1000 * st.median([r[x] for r in rs]) for x in keys]
    tot = 1000 * st.median([sum(r[x] for x in keys[:4]) for r in rs])
    wo = 1000 * st.median([sum(r[x] for x in keys[1:4]) for r in rs])
    ph = lambda p: st.median([r["phases"][p]["ms"] for r in rs]) if "phases" in rs[0] else float("nan")
    ratio = st.median([r["second_run"] / r["steady"] - 1 for r in rs]) * 100
    print(f"| {' '.join(k)} | {len(rs)} | " + " | ".join(f"{v:.1f}" for v in med)
          + f" | {ph('device'):.1f} | {ph('device_wait'):.1f} | {tot:.0f} | {wo:.0f} | {ratio:+.1f}% |")
PY
