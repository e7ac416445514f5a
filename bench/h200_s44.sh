#!/usr/bin/env bash
# Forty-fourth session, in parts (PARTS, default "ab infin models"):
#  ab      the forty-third session's kernels for infinities (the split GEMM's staging and max pass, the f32
#          tensor-core attention's K/V parts; .carry/bench/, this build) against the build before them
#          (.carry/base/ = 0e0c9f2): `host_split.py` fp32 and fp16, ROUNDS rounds alternating (the first with
#          --dispatches 12), `kernel_bench --unchecked` on Whisper fp32's split products, and `attention_bench.py`
#          fp32 and fp16 on Whisper's attention, each build twice; then Whisper fp32 with every split product fused
#          (`f32_split_fused=1`: fc1 on 144 workgroups of 128x128 instead of 72 of 128x256).
#  infin   tests/test_tensor_core_infinities.py and the attention and GEMM pytest files on this GPU's real
#          tensor cores (on llvmpipe they run emulated).
#  models  `run.py` beside the peer and the CPU EP (MODELS, a --only regex, default Whisper).
#  kbo     the split products' kernels as hand-edited copies (`kernel_bench --unchecked` with KERNEL_BENCH_OVERRIDE,
#          folders of .carry/kbo/): `base` (0e0c9f2's), `none` (without the infinity mark's parts), `oldlow` (also
#          0e0c9f2's low-part formula), `pair` (one branch per load for both parts), against this build's own, two
#          rounds; then f16 products of Whisper and 4096^3 on both builds' libraries' kernels (the stores' NaN test).
#  special tests/test_special_values.py with the base build's library (.carry/base/): what failed on this GPU before.
#  fuzz    tests/test_fuzz_graphs.py's random graphs on this GPU for FUZZ_SECONDS (default 90), from FUZZ_SEED; each
#          graph's seed goes to $OUT/progress.txt before it runs (a crash of the process names its graph).
#  pytest  the whole pytest suite on this GPU (TESTS_TIMEOUT seconds, default 480), failures listed; the
#          inspector from .carry/inspect.
# Stage here (goldens/ and docs/data/ moved out): `bash bench/h200_stage.sh`, the base build's library (a worktree
# of 0e0c9f2 built with its own CARGO_TARGET_DIR, stripped) into .carry/base/, the stripped inspector into
# .carry/inspect, hand-edited kernels under .carry/kbo/<variant>/<name>.wgsl; carry [".carry", ".whl", ".gl"].
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
PARTS=" ${PARTS:-ab infin models} "
BASE=.carry/base
S=1500x1152x384,1500x1536x384
if [[ $PARTS == *" ab "* ]]; then
  for r in $(seq "${ROUNDS:-2}"); do
    for build in base new; do
      dir=.carry/bench
      [[ $build == base ]] && dir=$BASE
      extra=()
      [[ $r == 1 ]] && extra=(--dispatches 12)
      timeout 90 python3 bench/host_split.py --lib "$dir/libonnxruntime_ep_wgpu.so" --runs 300 --dtypes fp32,fp16 \
        "${extra[@]}" >"$OUT/ab_${build}_$r.txt" 2>&1
      timeout 60 "$dir/kernel_bench" --shapes $S --dtypes f32 --paths auto --unchecked --iters 5 \
        >"$OUT/kb_${build}_$r.txt" 2>&1
      for dt in float32 float16; do
        timeout 60 python3 bench/attention_bench.py --lib "$dir/libonnxruntime_ep_wgpu.so" --no-torch \
          --only whisper --dtype $dt >"$OUT/attn_${build}_${dt}_$r.txt" 2>&1
      done
    done
  done
  timeout 90 python3 bench/host_split.py --lib "$LIB" --runs 300 --dtypes fp32 -o f32_split_fused=1 --dispatches 12 \
    >"$OUT/ab_fused_1.txt" 2>&1
fi
if [[ $PARTS == *" infin "* ]]; then
  ONNXRUNTIME_EP_WGPU_LIB=$LIB timeout 200 python3 -m pytest -q -p no:cacheprovider \
    tests/test_tensor_core_infinities.py tests/test_emulated_tensor_cores.py tests/test_attention.py \
    >"$OUT/tests_infin.txt" 2>&1
fi
if [[ $PARTS == *" models "* ]]; then
  timeout 150 python3 bench/run.py --full --lib "$LIB" --io-binding --no-plots --no-torch \
    --only "${MODELS:-whisper_encoder}" --out "$OUT/models" >"$OUT/models.txt" 2>&1
fi
if [[ $PARTS == *" kbo "* ]]; then
  for r in 1 2; do
    for v in ${KBO:-cur base none oldlow pair}; do
      ov=()
      [[ $v != cur ]] && ov=(env KERNEL_BENCH_OVERRIDE=.carry/kbo/$v)
      "${ov[@]}" timeout 60 .carry/bench/kernel_bench --shapes $S --dtypes f32 --paths auto --unchecked --iters 5 \
        >"$OUT/kbo_${v}_$r.txt" 2>&1
    done
  done
fi
if [[ $PARTS == *" special "* ]]; then
  ONNXRUNTIME_EP_WGPU_LIB=$BASE/libonnxruntime_ep_wgpu.so timeout 120 python3 -m pytest -q -p no:cacheprovider \
    tests/test_special_values.py tests/test_bad_input.py -k "special or nan or clip or sin" >"$OUT/special_base.txt" 2>&1
fi
if [[ $PARTS == *" fuzz "* ]]; then
  ONNXRUNTIME_EP_WGPU_FUZZ_PROGRESS=$OUT/progress.txt \
  ONNXRUNTIME_EP_WGPU_LIB=$LIB ONNXRUNTIME_EP_WGPU_FUZZ_SEED=${FUZZ_SEED:-900000} ONNXRUNTIME_EP_WGPU_FUZZ_ITERATIONS=1000000 \
    ONNXRUNTIME_EP_WGPU_FUZZ_SECONDS=${FUZZ_SECONDS:-90} timeout $((${FUZZ_SECONDS:-90} + 60)) python3 -m pytest -q -s -x \
    -p no:cacheprovider tests/test_fuzz_graphs.py -k random >"$OUT/fuzz.txt" 2>&1
fi
if [[ $PARTS == *" pytest "* ]]; then
  [[ -f .carry/inspect ]] && export ONNXRUNTIME_EP_WGPU_INSPECT=$PWD/.carry/inspect
  ONNXRUNTIME_EP_WGPU_LIB=$LIB timeout "${TESTS_TIMEOUT:-480}" python3 -m pytest -q -p no:cacheprovider -rf \
    --ignore=tests/test_locator.py -o faulthandler_timeout=120 tests >"$OUT/tests_all.txt" 2>&1
fi
(cd "$OUT" && tar -czf /tmp/all.tgz . && mv /tmp/all.tgz .)
cat "$OUT/gpu.txt"
for f in "$OUT"/ab_*_*.txt; do [[ -f $f ]] && grep -h "^| whisper" "$f" | sed "s|^|$(basename "$f" .txt) |" | cut -c1-150; done
for f in "$OUT"/kb_*.txt; do [[ -f $f ]] && grep -hE "^1500" "$f" | sed "s|^|$(basename "$f" .txt) |" | cut -c1-140; done
for f in "$OUT"/kbo_*.txt; do [[ -f $f ]] && grep -hE "^1500" "$f" | sed "s|^|$(basename "$f" .txt) |" | cut -c1-140; done
[[ -f $OUT/fuzz.txt ]] && { echo "=== fuzz (last seed started: $(cat "$OUT/progress.txt" 2>/dev/null))"
  grep -E "matched|seed|FAILED|passed|failed|Error|Fatal" "$OUT/fuzz.txt" | grep -v MergeShapeInfo | tail -12 | cut -c1-250; }
for f in "$OUT"/attn_*.txt; do
  [[ -f $f ]] && grep -E "^\| whisper" "$f" | sed "s|^|$(basename "$f" .txt) |" | cut -c1-130
done
for f in special_base tests_infin tests_all; do
  [[ -f $OUT/$f.txt ]] && { echo "=== $f"; grep -E "^FAILED|^ERROR|passed|failed" "$OUT/$f.txt" | tail -40 | cut -c1-220; }
done
[[ -f $OUT/models.txt ]] && grep -E "^\| (whisper|bert|vit)" "$OUT/models.txt" | tail -8 | cut -c1-130
true
