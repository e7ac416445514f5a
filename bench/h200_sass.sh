#!/usr/bin/env bash
# The driver's machine code for chosen kernels, on the H200: `pipeline_stats --blob` compiles each into a pipeline
# cache of its own (driver disk cache off) and keeps the cache's data; `bench/sass_probe.py` finds the code in it and
# disassembles it with nvdisasm (Triton's copy, which the H200's torch brings), where `zstd` is there too. The blobs
# come back in $OUT/sass.tgz either way: `python bench/sass_probe.py blob sass` here (pip nvidia-cuda-nvdisasm).
# Stage with STATS=1 bash bench/h200_stage.sh. Writes $OUT/probe.txt, $OUT/stats.txt and $OUT/sass.tgz.
#   ONLY=gemm_f16_coop_64x64_ss.wgsl,attn_coop_f16_d64_64x64_mask_none.wgsl bash bench/h200_sass.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
ONLY=${ONLY:-gemm_f16_coop_128x256_k16_w4x4_s2_p2_ss.wgsl,attn_coop_f16_d64_64x64_mask_none.wgsl,gemm_f16_coop_64x64_ss.wgsl}
rm -rf "$OUT/blob" "$OUT/sass"
__GL_SHADER_DISK_CACHE=0 timeout 300 .carry/bench/pipeline_stats --dir "${WGSL_DIR:-goldens}" --only "$ONLY" \
  --modes unchecked --blob "$OUT/blob" --threads 8 >"$OUT/stats.txt" 2>&1
timeout 300 python3 bench/sass_probe.py "$OUT/blob" "$OUT/sass" >"$OUT/probe.txt" 2>&1
tar czf "$OUT/sass.tgz" -C "$OUT" blob $([[ -d $OUT/sass ]] && echo sass) && rm -rf "$OUT/blob" "$OUT/sass"
grep -E "^\| |statistics" "$OUT/stats.txt" | head -12
cut -c1-400 "$OUT/probe.txt" | head -40
