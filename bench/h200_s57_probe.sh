#!/usr/bin/env bash
# Stages .carry/probe_new and .carry/probe_old for bench/h200_s57.sh: the Whisper-tiny fp16 plan's six tensor-core
# kernels, conv2's as this tree's golden (new) or as REV's (old, default ab8fd44: both operands transposed).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REV=${REV:-ab8fd44}
common=(attn_coop_f16_d64_128x32_mask_none_plain_split gemm_f16_coop_128x128_ss
  gemm_f16_coop_128x256_k16_w4x4_s2_p2_ss_xact gemm_f16_coop_64x64_ss_res gemm_f16_coop_64x64_ss_xact)
rm -rf .carry/probe_new .carry/probe_old
mkdir -p .carry/probe_new .carry/probe_old
for k in "${common[@]}"; do
  cp "goldens/$k.wgsl" .carry/probe_new/
  cp "goldens/$k.wgsl" .carry/probe_old/
done
cp goldens/gemm_f16_coop_64x64_w4_ss_xact_res.wgsl .carry/probe_new/
git show "$REV:goldens/gemm_f16_coop_64x64_at_bt_w4_ss_xact_res.wgsl" >.carry/probe_old/gemm_f16_coop_64x64_at_bt_w4_ss_xact_res.wgsl
ls .carry/probe_new .carry/probe_old
