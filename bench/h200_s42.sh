#!/usr/bin/env bash
# Forty-second session, in parts (PARTS, default "probe models"):
#  probe   issue 15: what the NVIDIA driver takes to compile tensor-core shaders of growing size. `pipeline_stats`
#          on one core, the driver's cache off, two rounds, over .carry/wgsl_probe/: bench/experiments/compile_probe/
#          (a plain kernel, one 16x16x16 product, a K loop of one product, a 64x64 tile read straight from storage)
#          and Whisper fp16's tensor-core goldens, the 64x64 one also with a plain epilogue and with no write-out.
#          MODES (default checked,unchecked) may add one of wgpu's checks alone: bounded, clamped, divchecked.
#  cold    issue 15: cold starts of Whisper fp16 (fresh process, empty driver cache, each compile logged), our
#          default against validation=debug (every shader with wgpu's checks), REPEAT processes each (default 1).
#  checks  issue 15: the experiment build (.carry/exp/, `--features wgsl-override`) with EXP_COOP_CHECKS = each of
#          CHECKS (default "prod none loop div bounds bounds,loop,div"; prod: unset): a cold start of Whisper fp16 with each compile
#          logged, and `host_split.py` fp16 and fp32 (steady speed, error against the CPU EP).
#  ab      issues 11 and 13: the tensor-core attention without wgpu's loop-bounding counter (.carry/new/, this
#          session's rule) against the build before (.carry/bench/): `host_split.py` fp16 and fp32, ROUNDS rounds
#          alternating, and `attention_bench.py` (--no-torch, ATTN regex) for both, plus the decode kernels without
#          the counter too (the experiment build with EXP_CHECKS_ON=attn_decode EXP_COOP_CHECKS=bounds,div).
#  more    issue 11: which other kernels lose time to wgpu's loop counter: the experiment build as is, then with
#          EXP_CHECKS_ON = each of PATTERNS (default "norm_ ew_ softmax") and EXP_COOP_CHECKS=bounds,div,
#          `host_split.py` fp32 and fp16 (one round each, --dispatches 12 with the first).
#  models  issue 11: the read-back rule (e36817a) on Whisper with numpy I/O (`host_split.py`, ROUNDS rounds,
#          default 3) and `run.py` beside the peer and the CPU EP (MODELS, a --only regex, trims it).
# Stage here: `STATS=1 KERNEL_BENCH=0 bash bench/h200_stage.sh && bash bench/h200_s42.sh --stage`; carry
# [".carry", ".whl", ".gl"].
set -uo pipefail
D=.carry/wgsl_probe
if [[ ${1:-} == --stage ]]; then
  rm -rf "$D" && mkdir -p "$D"
  cp bench/experiments/compile_probe/*.wgsl "$D/"
  for n in gemm_f16_coop_64x64_ss_xact gemm_f16_coop_64x64_ss_res gemm_f16_coop_128x128_ss \
    gemm_f16_coop_128x256_k16_w4x4_s2_p2_ss_xact gemm_f16_coop_64x64_at_bt_w4_ss_xact_res \
    attn_coop_f16_d64_64x64_mask_none_split; do
    cp "goldens/$n.wgsl" "$D/g_$n.wgsl"
  done
  python3 - "$D" <<'PY'
import pathlib, sys
d = pathlib.Path(sys.argv[1])
s = (d / "g_gemm_f16_coop_64x64_ss_xact.wgsl").read_text()
head = "fn epilogue(acc: f32, bias_index: u32) -> f32 {"
i = s.index(head)
j = s.index("\n}\n", i) + 3
plain = s[:i] + head + "\n    return p.alpha * acc;\n}\n" + s[j:]
(d / "x_64x64_ss_xact_plain_epilogue.wgsl").write_text(plain)
k = plain.index("    let c_base = batch_offset(batch, p.c_bs);")
keep = "".join(f"    coopStoreT({a}, &c_tile[sg * 256u], 16u);\n" for a in ("acc0_0", "acc0_1", "acc1_0", "acc1_1"))
(d / "x_64x64_ss_xact_no_writeout.wgsl").write_text(plain[:k] + keep + "    subgroupBarrier();\n    out[tid] = f16(c_tile[tid]);\n}\n")
PY
  ls "$D"
  exit 0
fi
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
PARTS=" ${PARTS:-probe models} "
if [[ $PARTS == *" probe "* ]]; then
  for r in 1 2; do
    __GL_SHADER_DISK_CACHE=0 timeout 200 taskset -c 0 .carry/bench/pipeline_stats --dir "$D" --threads 1 \
      --modes "${MODES:-checked,unchecked}" --json "$OUT/probe_$r.json" >"$OUT/probe_$r.txt" 2>&1
  done
fi
if [[ $PARTS == *" cold "* ]]; then
  export ONNXRUNTIME_EP_WGPU_LOG_COMPILES=1
  for cfg in default debug; do
    opt=()
    [[ $cfg == debug ]] && opt=(-o validation=debug)
    timeout 200 python3 bench/startup.py --lib "$LIB" --configs ours-nocache --modes cold --repeat "${REPEAT:-1}" \
      "${opt[@]}" --json "$OUT/cold_$cfg.json" >"$OUT/cold_$cfg.txt" 2>&1
  done
  unset ONNXRUNTIME_EP_WGPU_LOG_COMPILES
fi
if [[ $PARTS == *" checks "* ]]; then
  for c in ${CHECKS:-prod none loop div bounds bounds,loop,div}; do
    tag=${c//,/_}
    if [[ $c == prod ]]; then unset EXP_COOP_CHECKS; else export EXP_COOP_CHECKS=$c; fi
    ONNXRUNTIME_EP_WGPU_LOG_COMPILES=1 timeout 200 python3 bench/startup.py \
      --lib .carry/exp/libonnxruntime_ep_wgpu.so --configs ours-nocache --modes cold --repeat 1 \
      --json "$OUT/checks_cold_$tag.json" >"$OUT/checks_cold_$tag.txt" 2>&1
    timeout 120 python3 bench/host_split.py --lib .carry/exp/libonnxruntime_ep_wgpu.so \
      --runs 300 --dtypes fp16,fp32 >"$OUT/checks_hs_$tag.txt" 2>&1
  done
  unset EXP_COOP_CHECKS
fi
if [[ $PARTS == *" ab "* ]]; then
  for r in $(seq "${ROUNDS:-3}"); do
    for build in base new; do
      lib=.carry/bench/libonnxruntime_ep_wgpu.so
      [[ $build == new ]] && lib=.carry/new/libonnxruntime_ep_wgpu.so
      timeout 90 python3 bench/host_split.py --lib "$lib" --runs 300 --dtypes fp16,fp32 >"$OUT/ab_${build}_$r.txt" 2>&1
    done
  done
  A=${ATTN:-decode_s1x4096_h32kv8_d128|decode_s1x512_h32kv8_d64|whisper|s4096_h8_d64$|llama_prefill_s4096}
  timeout 100 python3 bench/attention_bench.py --lib .carry/bench/libonnxruntime_ep_wgpu.so --no-torch --only "$A" \
    >"$OUT/attn_base.txt" 2>&1
  timeout 100 python3 bench/attention_bench.py --lib .carry/new/libonnxruntime_ep_wgpu.so --no-torch --only "$A" \
    >"$OUT/attn_new.txt" 2>&1
  EXP_CHECKS_ON=attn_decode EXP_COOP_CHECKS=bounds,div timeout 100 python3 bench/attention_bench.py \
    --lib .carry/exp/libonnxruntime_ep_wgpu.so --no-torch --only "$A" >"$OUT/attn_decode_noloop.txt" 2>&1
fi
if [[ $PARTS == *" more "* ]]; then
  X=.carry/exp/libonnxruntime_ep_wgpu.so
  timeout 90 python3 bench/host_split.py --lib "$X" --runs 300 --dtypes fp32,fp16 --dispatches 12 \
    >"$OUT/more_asis.txt" 2>&1
  for pat in ${PATTERNS:-norm_ ew_ softmax}; do
    EXP_CHECKS_ON=$pat EXP_COOP_CHECKS=bounds,div timeout 90 python3 bench/host_split.py --lib "$X" --runs 300 \
      --dtypes fp32,fp16 >"$OUT/more_$pat.txt" 2>&1
  done
fi
if [[ $PARTS == *" models "* ]]; then
  for r in $(seq "${ROUNDS:-3}"); do
    extra=()
    [[ $r == 1 ]] && extra=(--bound)
    timeout 90 python3 bench/host_split.py --lib "$LIB" --runs 400 --dtypes fp32,fp16 "${extra[@]}" \
      >"$OUT/hs_new_$r.txt" 2>&1
  done
  timeout 200 python3 bench/run.py --full --lib "$LIB" --io-binding --no-plots --no-torch \
    --only "${MODELS:-whisper_encoder|bert|vit}" --out "$OUT/models" >"$OUT/models.txt" 2>&1
fi
cat "$OUT/gpu.txt"
python3 - "$OUT" <<'PY'
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
rows = {}
for r in (1, 2):
    f = out / f"probe_{r}.json"
    if not f.exists():
        continue
    for x in json.loads(f.read_text()):
        v = rows.setdefault((x.get("shader"), x.get("mode")), {})
        v[r] = round(x["compile_ms"]) if "compile_ms" in x else x.get("error", "?")[:60]
        st = x.get("stats") or {}
        v["regs"], v["bin"] = st.get("Register Count", ""), st.get("Binary Size", "")
if rows:
    print("| shader | mode | compile ms r1 | r2 | registers | binary B |")
    for (s, m), v in sorted(rows.items()):
        print(f"| {s} | {m} | {v.get(1)} | {v.get(2)} | {v.get('regs')} | {v.get('bin')} |")
PY
for c in default debug; do
  f=$OUT/cold_$c.txt
  [[ -f $f ]] || continue
  echo "=== cold $c"
  grep -E "ep-wgpu compile|^\| ours" "$f" | grep -E "coop|attn|^\| ours" | sed 's/^  \[[^]]*\] //' | cut -c1-150
done
for f in "$OUT"/checks_cold_*.txt; do
  [[ -f $f ]] || continue
  echo "=== $(basename "$f" .txt)"
  grep -E "ep-wgpu compile|^\| ours" "$f" | grep -E "coop|attn|^\| ours" | sed 's/^  \[[^]]*\] //;s/wgsl [0-9]* B, module [0-9.]* ms, //' | cut -c1-120
  grep -h "^| whisper" "${f/cold/hs}" | cut -c1-140
done
for f in "$OUT"/ab_*_*.txt; do [[ -f $f ]] && grep -h "^| whisper" "$f" | sed "s|^|$(basename "$f" .txt) |" | cut -c1-150; done
for f in "$OUT"/more_*.txt; do [[ -f $f ]] && grep -h "^| whisper" "$f" | sed "s|^|$(basename "$f" .txt) |" | cut -c1-150; done
[[ -f $OUT/more_asis.txt ]] && grep -o '"top_dispatches": \[.*\]' "$OUT/more_asis.txt" | cut -c1-1500
for f in "$OUT"/attn_*.txt; do
  [[ -f $f ]] || continue
  echo "=== $(basename "$f" .txt)"
  grep -E "^\| [a-z]" "$f" | grep -v "^| case" | cut -c1-110
done
for f in "$OUT"/hs_*_*.txt; do [[ -f $f ]] && grep -h "^| whisper" "$f" | sed "s|^|$(basename "$f" .txt) |" | cut -c1-150; done
[[ -f $OUT/models.txt ]] && grep -E "^\| (whisper|bert|vit)" "$OUT/models.txt" | tail -12 | cut -c1-130
true
