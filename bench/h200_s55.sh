#!/usr/bin/env bash
# Fifty-fifth session, issue 15: which Whisper-tiny fp16 tensor-core kernel goes wrong when compiled rolled.
# The fifty-fifth session's first call (h200_s53.sh) found `EXP_ROLLED=1` fast and right on fp32 but wrong on fp16
# (max rel Δ 1.9). Each line here is tools/run_model.py on the fp16 export (interim plans off, so the final kernels
# run from the first run) with the experiment build:
#   base      EXP_ROLLED unset (as released)
#   rolled    EXP_ROLLED=1 (every tensor-core kernel through the passthrough module, `DontUnroll` on)
#   nomark    EXP_ROLLED=1 EXP_ROLLED_MARK=0 (the passthrough module without the hint)
#   on_<k>    EXP_ROLLED=1 EXP_ROLLED_ON=<k>: one kernel of the plan rolled, the rest as released
#   checked_<k> the same with every runtime check kept (EXP_COOP_CHECKS=bounds,loop,div), for each failing <k>
#   nomark_<k>  the same kernel alone without the hint, for each failing <k>
# Stage: the experiment build in .carry/exp/ (see h200_s53.sh); goldens/ and docs/data/ moved out; carry
# [".carry", ".whl", ".gl"]. Writes $OUT/all.tgz; prints one line per run.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
EXP=.carry/exp/libonnxruntime_ep_wgpu.so
mkdir -p "$OUT/more"
M=/tmp/whisper_fp16.onnx
(cd bench && python3 -c "from cases_torch import export_whisper_encoder as e; print(e('$M', 'fp16'))") \
  >"$OUT/more/export.txt" 2>&1 || { cat "$OUT/more/export.txt"; exit 2; }
one() {  # one NAME [VAR=VALUE ...]: prints NAME, the exit status and the output's difference line
  local name=$1; shift
  env "$@" timeout 90 python3 tools/run_model.py "$M" --lib "$EXP" --runs 3 --max-seconds 3 \
    --option interim_kernels=0 >"$OUT/more/$name.txt" 2>&1
  local rc=$?
  echo "$name rc=$rc $(grep -m1 max_abs_diff "$OUT/more/$name.txt" | sed 's/^ *//')"
  return $rc
}
{
one base
one rolled EXP_ROLLED=1
one nomark EXP_ROLLED=1 EXP_ROLLED_MARK=0
for k in ${KERNELS:-attn_coop_f16_d64_128x32_mask_none_split gemm_f16_coop_128x128_ss gemm_f16_coop_128x256_k16_w4x4_s2_p2_ss_xact gemm_f16_coop_64x64_at_bt_w4_ss_xact_res gemm_f16_coop_64x64_ss_res gemm_f16_coop_64x64_ss_xact}; do
  one "on_$k" EXP_ROLLED=1 EXP_ROLLED_ON="$k" && continue
  one "nomark_$k" EXP_ROLLED=1 EXP_ROLLED_ON="$k" EXP_ROLLED_MARK=0
  one "checked_$k" EXP_ROLLED=1 EXP_ROLLED_ON="$k" EXP_CHECKS_ON="$k" EXP_COOP_CHECKS=bounds,loop,div
done
} | tee "$OUT/more/lines.txt"
tar czf "$OUT/all.tgz" -C "$OUT" more gpu.txt && rm -rf "$OUT/more"
cat "$OUT/gpu.txt"
