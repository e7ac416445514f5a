#!/usr/bin/env bash
# Thirty-ninth session, first device call: the split tensor-core attention whose last workgroup of each query
# tile combines the key chunks (the staged library) against the landing before it (.carry/base = cacd604):
# issue 13's shapes beside torch SDPA (f16, and Whisper in f32), the attention pytest files on this GPU, then
# Whisper-tiny fp32/fp16 host splits against cacd604 and 97832fc (.carry/pre: before the 16-deep fused split).
# Carry [".carry", ".whl", ".gl"]; $OUT is packed into all.tgz.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
BASE=.carry/base/libonnxruntime_ep_wgpu.so
if [[ ${ATTN:-1} == 1 ]]; then
  ROUNDS=2 TESTS=1 ONLY='s4096_h8|llama_prefill_s4096|whisper|decode_s1x4096_h32kv8_d128' \
    bash bench/h200_attention_ab.sh >/dev/null 2>&1
  for r in 1 2; do
    for entry in "base=$BASE" "new=$LIB"; do
      echo "== ${entry%%=*} round $r" >>"$OUT/ab_attention_f32.txt"
      timeout 90 python3 bench/attention_bench.py --lib "${entry#*=}" --only whisper --dtype float32 \
        >>"$OUT/ab_attention_f32.txt" 2>&1
    done
  done
fi
DTYPES=fp32,fp16 ROUNDS=2 EXTRA="pre=.carry/pre/libonnxruntime_ep_wgpu.so" bash bench/h200_host_ab.sh \
  >"$OUT/host_ab.txt" 2>&1
(cd "$OUT" && tar -czf /tmp/all.tgz . && mv /tmp/all.tgz .)
cat "$OUT/gpu.txt"; tail -1 "$OUT/tests.txt" 2>/dev/null
grep -sE "^== |^\| (s4096|llama|whisper|decode)" "$OUT/ab_attention.txt" "$OUT/ab_attention_f32.txt" | cut -c1-150
grep -h "^\(base\|pre\|new\) r" "$OUT/host_ab.txt"
