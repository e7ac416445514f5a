#!/usr/bin/env bash
# Thirty-eighth session, third device call (H200): issue 13's prefill shapes beside torch with the eight-subgroup
# attention (the staged library) against the previous landing (.carry/base), the attention pytest files on this GPU,
# then Whisper-tiny fp32/fp16 host splits with the whole run timed in one pass (`run_gpu_ms`: where back to back
# loses time between steps). Carry [".carry", ".whl", ".gl"]; $OUT is packed into all.tgz.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
[[ ${ATTN:-1} == 1 ]] && ROUNDS=2 TESTS=1 ONLY='s4096_h8|llama_prefill_s4096|whisper' bash bench/h200_attention_ab.sh >/dev/null 2>&1
for r in 1 2; do
  timeout 150 python3 bench/host_split.py --lib "$LIB" --runs 300 --dtypes fp32,fp16 --bound >"$OUT/hs_run_$r.txt" 2>&1
done
(cd "$OUT" && tar -czf /tmp/all.tgz . && mv /tmp/all.tgz .)
cat "$OUT/gpu.txt"; tail -1 "$OUT/tests.txt" 2>/dev/null
grep -sE "^== |^\| (s4096|llama|whisper)" "$OUT/ab_attention.txt" | cut -c1-120
grep -h "^| whisper" "$OUT"/hs_run_*.txt
