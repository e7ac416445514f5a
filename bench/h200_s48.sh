#!/usr/bin/env bash
# Forty-eighth session, in parts (PARTS, default "probe ab timeline itest"):
#  probe    pipeline_stats on .carry/probe/ (the SIMT kernels a cold Whisper-tiny fp16 start may compile, and
#           hand-edited copies of gemm_f16_64x64_v4 named q_*), the driver's cache off, modes unchecked and bounded
#           (wgpu's loop counter): 8 threads over all, then 1 thread over the interim candidates.
#  probe2   pipeline_stats, 1 thread, on .carry/probe2/ (the interim GEMMs of Whisper-tiny fp16 with and without their
#           stores in one loop, `_q`).
#  ab       bench/startup.py, Whisper-tiny fp16, cold: the staged library (base, .carry/bench/) beside NEW_LIB (default
#           .carry/new/: the attention's unfused interim plan), ROUNDS rounds (default 3) of 2 processes each,
#           alternating, then the peer (3 processes); WHO (default "base new loop kk") names the configurations
#           (env_of below); unf = NEW_LIB (the unfused interim attention alone), quick = QUICK_LIB (with the `_q`
#           interim GEMMs).
#  timeline bench/experiments/interim/timeline.py: one cold process of each library.
#  itest    tests/test_interim_attention.py and tests/test_interim_kernels.py with NEW_LIB on this GPU.
# Stage here (goldens/ and docs/data/ moved out): base in .carry/bench/ with pipeline_stats (STATS=1 bash
# bench/h200_stage.sh), the new library in .carry/new/; carry [".carry", ".whl", ".gl"].
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
PARTS=" ${PARTS:-probe ab timeline itest} "
NEW_LIB=${NEW_LIB:-.carry/new/libonnxruntime_ep_wgpu.so}
lib_of() { case $1 in base) echo "$LIB" ;; quick) echo "$QUICK_LIB" ;; *) echo "$NEW_LIB" ;; esac; }
QUICK_LIB=${QUICK_LIB:-.carry/quick/libonnxruntime_ep_wgpu.so}
# The experiment configurations of NEW_LIB (built with --features wgsl-override): loop = the SIMT kernels named *_v4*
# compiled with wgpu's loop counter; kk = the interim GEMMs' WGSL with an inner K loop whose trip count the driver
# cannot see (.carry/ovr_kk/).
env_of() { case $1 in loop) echo "EXP_CHECKS_ON=_v4 EXP_COOP_CHECKS=loop" ;; kk) echo "EXP_WGSL_OVERRIDE=$PWD/.carry/ovr_kk" ;; *) echo "EXP_NONE=1" ;; esac; }
WHO=${WHO:-base new loop kk}
M=$(python3 -c "import sys; sys.path.insert(0, 'bench'); import startup; from pathlib import Path; \
print(startup.default_model(Path('bench/out/startup'), 'fp16')[0])" 2>/dev/null | tail -1)
mkdir -p "$OUT/more"
if [[ $PARTS == *" probe "* ]]; then
  __GL_SHADER_DISK_CACHE=0 timeout 200 .carry/bench/pipeline_stats --dir .carry/probe --modes unchecked,bounded \
    --threads 8 --json "$OUT/more/probe_t8.json" >"$OUT/more/probe_t8.txt" 2>&1
  __GL_SHADER_DISK_CACHE=0 timeout 200 .carry/bench/pipeline_stats --dir .carry/probe --modes unchecked,bounded \
    --only q_,gemm_f16_64x64_v4,gemm_f16_32x64_v4,attn_flash_f16_d64_32x32_mask_none,softmax_f16_row,norm_layer_f16_bias_v4 \
    --threads 1 --json "$OUT/more/probe_t1.json" >"$OUT/more/probe_t1.txt" 2>&1
fi
if [[ $PARTS == *" probe2 "* ]]; then
  __GL_SHADER_DISK_CACHE=0 timeout 200 .carry/bench/pipeline_stats --dir .carry/probe2 --modes unchecked,bounded \
    --threads 1 --json "$OUT/more/probe_t1.json" >"$OUT/more/probe2_t1.txt" 2>&1
fi
if [[ $PARTS == *" ab "* ]]; then
  for r in $(seq 1 "${ROUNDS:-3}"); do
    for who in $WHO; do
      env $(env_of $who) timeout 200 python3 bench/startup.py --lib "$(lib_of $who)" --dtype fp16 --configs ours-nocache --modes cold \
        --repeat 2 --json "$OUT/more/ab_${who}_$r.json" >"$OUT/more/ab_${who}_$r.txt" 2>&1
    done
  done
  timeout 200 python3 bench/startup.py --lib "$LIB" --dtype fp16 --configs peer --modes cold --repeat 3 \
    --json "$OUT/more/ab_peer.json" >"$OUT/more/ab_peer.txt" 2>&1
fi
if [[ $PARTS == *" timeline "* ]]; then
  for who in $WHO; do
    dir=$(mktemp -d)
    env $(env_of $who) __GL_SHADER_DISK_CACHE_PATH=$dir timeout 120 python3 bench/experiments/interim/timeline.py "$PWD/$(lib_of $who)" "$M" \
      >"$OUT/more/tl_$who.txt" 2>&1
  done
fi
if [[ $PARTS == *" itest "* ]]; then
  ONNXRUNTIME_EP_WGPU_LIB=$PWD/${ITEST_LIB:-$NEW_LIB} timeout 300 python3 -m pytest -q -p no:cacheprovider -rf \
    tests/test_interim_attention.py tests/test_interim_kernels.py >"$OUT/more/itest.txt" 2>&1
fi
cat "$OUT/gpu.txt"
python3 - "$OUT" <<'PY'
import json, sys, os
out = sys.argv[1]
for name in ["probe_t1.json", "probe_t8.json"]:
    p = os.path.join(out, "more", name)
    if not os.path.exists(p):
        print("missing", name); continue
    rows = json.load(open(p))
    by = {}
    for r in rows:
        by.setdefault(r["shader"], {})[r["mode"]] = (r["compile_ms"], r["stats"].get("Register Count", "?"))
    print("==", name, len(rows))
    for s in sorted(by, key=lambda s: -by[s].get("unchecked", (0,))[0])[:70 if "t8" in name else 40]:
        u = by[s].get("unchecked", (0, "?")); b = by[s].get("bounded", (0, "?"))
        print(f"{u[0]:7.1f} {b[0]:7.1f} r{u[1]}/{b[1]} {s}"[:110])
PY
for f in "$OUT"/more/ab_*.txt; do [[ -f $f ]] && grep -E "^ +(ours|peer).* #[0-9]" "$f" | sed "s/^ *[a-z-]* *//; s/^/$(basename "$f" .txt) /" | cut -c1-140; done
for f in "$OUT"/more/tl_*.txt; do [[ -f $f ]] && { echo "=== $(basename "$f")"; grep -E "SESSION|RUN [0-2] |compile |interim|unfused" "$f" \
  | sed 's/: wgsl [0-9]* B,//' | cut -c1-110 | head -30; }; done
[[ -f $OUT/more/itest.txt ]] && { echo "=== itest"; grep -E "^FAILED|^ERROR|passed|failed" "$OUT/more/itest.txt" | tail -8 | cut -c1-220; }
# Only eight files come back from a call: everything goes in one archive.
(cd "$OUT" && tar -czf /tmp/all.tgz . && rm -rf more && mv /tmp/all.tgz .)
true
