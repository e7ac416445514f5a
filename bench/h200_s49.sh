#!/usr/bin/env bash
# Forty-ninth session: issue 15's acceptance case with the `_q` interim GEMMs (the staged library, .carry/bench/),
# Whisper-tiny encoder fp16 (and fp32 with PARTS containing ab32), cold and warm, beside the peer in the same call.
# ROUNDS rounds (default 3), each: ours cold ×2, the peer cold ×1, ours warm ×2, the peer warm ×1 (bench/startup.py,
# each a fresh process). Writes $OUT/all.tgz and prints a table last.
#   bash bench/h200_stage.sh; (move goldens/ and docs/data/ out); device run with carry [".carry/bench", ".whl", ".gl"]
#   PARTS="ab ab32" ROUNDS=3 bash bench/h200_s49.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
PARTS=" ${PARTS:-ab} "
mkdir -p "$OUT/more"
one() { # dtype config mode round repeat
  timeout 200 python3 bench/startup.py --lib "$LIB" --dtype "$1" --configs "$2" --modes "$3" --repeat "$5" \
    --json "$OUT/more/$1_$2_$3_$4.json" >"$OUT/more/$1_$2_$3_$4.txt" 2>&1
}
for dt in fp16 fp32; do
  part=ab; [[ $dt == fp32 ]] && part=ab32
  [[ $PARTS == *" $part "* ]] || continue
  for r in $(seq 1 "${ROUNDS:-3}"); do
    one "$dt" ours-nocache cold "$r" 2; one "$dt" peer cold "$r" 1
    one "$dt" ours-nocache warm "$r" 2; one "$dt" peer warm "$r" 1
  done
done
tar czf "$OUT/all.tgz" -C "$OUT" more gpu.txt && rm -rf "$OUT/more"
cat "$OUT/gpu.txt"
python3 - "$OUT/all.tgz" <<'PY'
import json, sys, tarfile, statistics as st, collections
t = tarfile.open(sys.argv[1]); rows = collections.defaultdict(list)
for m in t.getmembers():
    if not m.name.endswith(".json"): continue
    dt, cfg, mode = m.name.split("/")[-1].split("_")[:3]
    for r in json.load(t.extractfile(m))["rows"]: rows[(dt, cfg, mode)].append(r)
keys = ["import", "register", "session", "first_run", "second_run", "steady"]
print("| ms | n | " + " | ".join(keys) + " | import → first |")
for k in sorted(rows):
    rs = rows[k]; med = [1000 * st.median([r[x] for r in rs]) for x in keys]
    tot = 1000 * st.median([sum(r[x] for x in keys[:4]) for r in rs])
    print(f"| {' '.join(k)} | {len(rs)} | " + " | ".join(f"{v:.1f}" for v in med) + f" | {tot:.0f} |")
PY
