#!/usr/bin/env bash
# Fifty-sixth session (issues 15 and 11). Two parts (PARTS, default "probe hs"):
# - probe: what the f16 tensor-core attention's cold compile (the long pole once the GEMMs roll: 172–186 ms alone,
#   269 beside the others) goes to. pipeline_stats on .carry/probe, one thread, the driver's cache off, modes
#   unchecked, rolled (the runtime's hint) and rolledall (DontUnroll on every loop), ROUNDS rounds (default 2).
#   .carry/probe holds the Whisper-tiny plans' tensor-core goldens plus the hand-specialised attention copies of
#   bench/experiments/attn_compile/make.py (no element-wise K/V staging; no causal paths).
# - hs: bench/host_split.py --bound on Whisper-tiny fp32 and fp16 (where a numpy run's time goes, this build).
# Stage: STATS=1 KERNEL_BENCH=0 bash bench/h200_stage.sh; then
#   mkdir -p .carry/probe && cp goldens/{<the nine names below>}.wgsl .carry/probe/ &&
#   python3 bench/experiments/attn_compile/make.py .carry/probe
# (attn_coop_f16_d64_128x32_mask_none_split, gemm_f16_coop_128x128_ss,
# gemm_f16_coop_128x256_k16_w4x4_s2_p2_ss_xact, gemm_f16_coop_64x64_at_bt_w4_ss_xact_res, gemm_f16_coop_64x64_ss_res,
# gemm_f16_coop_64x64_ss_xact, attn_coop_f32x3_d64_64x32_mask_none_split, gemm_f32_coop_128x128_k16_w2x4_s1_p1_x3f_ss,
# gemm_f32_coop_128x256_k16_w4x4_s2_p2_x3_ss_xact); goldens/ and docs/data/ moved out; carry
# [".carry", ".whl", ".gl"]. Writes $OUT/probe.tgz and $OUT/hs.txt; the tables last.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
PARTS=${PARTS:-probe hs}
if [[ " $PARTS " == *" probe "* ]]; then
  mkdir -p "$OUT/more"
  for r in $(seq 1 "${ROUNDS:-2}"); do
    __GL_SHADER_DISK_CACHE=0 timeout 150 .carry/bench/pipeline_stats --dir .carry/probe --modes unchecked,rolled,rolledall \
      --threads 1 --json "$OUT/more/stats_$r.json" >"$OUT/more/stats_$r.txt" 2>&1
  done
  tar czf "$OUT/probe.tgz" -C "$OUT" more gpu.txt && rm -rf "$OUT/more"
fi
if [[ " $PARTS " == *" hs "* ]]; then
  (cd bench && timeout 300 python3 host_split.py --lib "../$LIB" --bound --runs 300 --json "$OUT/hs.json") >"$OUT/hs.txt" 2>&1
fi
cat "$OUT/gpu.txt"
[[ -f $OUT/probe.tgz ]] && python3 bench/h200_s53_table.py "$OUT/probe.tgz"
[[ -f $OUT/hs.txt ]] && tail -4 "$OUT/hs.txt"
