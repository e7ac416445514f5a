#!/usr/bin/env bash
# Issue 15 (thirty-fifth session): what made the cold compiles of Whisper-tiny fp16's tensor-core pipelines dearer
# (cold start 1.0-1.25 s in the 16th-21st sessions, 1.5-1.8 s on 605d31c). (1) `pipeline_stats` on one core with
# the driver's cache off, over .carry/wgsl_exp/: today's six goldens of that plan and the same GEMMs and attention
# as they were at 81d8a41 (one register set, workgroup barriers), fed8817 (two register sets) and afabbac; (2) a
# cold start with each pipeline's compile logged (ONNXRUNTIME_EP_WGPU_LOG_COMPILES=1), today's build and, with
# BASE=1, .carry/base/. Stage (here): STATS=1 KERNEL_BENCH=0 bash bench/h200_stage.sh, then
#   bash bench/h200_cold_compiles.sh --stage
# and on the H200, carrying [".carry", ".whl", ".gl"]:
#   OUT=$OUT bash bench/h200_cold_compiles.sh
# EXTRA="name=path ..." adds cold starts of other builds (e.g. the experiment build, with EXP_COOP_DEPTH=1 set).
set -uo pipefail
D=.carry/wgsl_exp
if [[ ${1:-} == --stage ]]; then
  rm -rf "$D" && mkdir -p "$D"
  for n in gemm_f16_coop_128x128_ss gemm_f16_coop_64x64_ss_res gemm_f16_coop_64x64_ss_xact \
    gemm_f16_coop_128x256_k16_w4x4_s2_p2_ss_xact gemm_f16_coop_64x64_at_bt_w4_ss_xact_res \
    attn_coop_f16_d64_64x64_mask_none_split; do
    cp "goldens/$n.wgsl" "$D/now__$n.wgsl"
  done
  for c in 81d8a41 fed8817; do
    for n in gemm_f16_coop_128x128 gemm_f16_coop_64x64_res gemm_f16_coop_64x64_xact; do
      git show "$c:goldens/$n.wgsl" >"$D/${c}__$n.wgsl"
    done
  done
  for c in afabbac 81d8a41; do
    git show "$c:goldens/attn_coop_f16_d64_64x64_mask_none_split.wgsl" >"$D/${c}__attn_coop_f16_d64_64x64_mask_none_split.wgsl"
  done
  ls "$D" | wc -l
  exit 0
fi
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for r in 1 2; do
  __GL_SHADER_DISK_CACHE=0 timeout 100 taskset -c 0 .carry/bench/pipeline_stats --dir "$D" \
    --modes unchecked --threads 1 --json "$OUT/stats_$r.json" >"$OUT/stats_$r.txt" 2>&1
  grep -v "^\s*$" "$OUT/stats_$r.txt" | cut -c1-200 | head -45
done
export ONNXRUNTIME_EP_WGPU_LOG_COMPILES=1
libs=("new=$LIB")
[[ ${BASE:-0} == 1 ]] && libs+=("base=.carry/base/libonnxruntime_ep_wgpu.so")
libs+=(${EXTRA:-})
for entry in "${libs[@]}"; do
  which=${entry%%=*} lib=${entry#*=}
  echo "=== $which"
  timeout 150 python3 bench/startup.py --lib "$lib" --configs ours-nocache --modes cold --repeat 1 \
    --json "$OUT/cold_$which.json" >"$OUT/cold_$which.txt" 2>&1
  grep -E "ep-wgpu compile|^\| ours" "$OUT/cold_$which.txt" | sed 's/^  \[[^]]*\] //' | cut -c1-170
done
