#!/usr/bin/env bash
# Thirty-ninth session, third device call: the landed prefetching attention (the staged library; eight subgroups
# at head size 64 load the next K/V tile during a step) against the landing before it (.carry/base = cacd604) on
# issue 13's prefill shapes and Llama's 1024-token prompt beside torch SDPA, the attention pytest files with it,
# Whisper-tiny's attention and fp16 encoder with eight subgroups forced (EXP_ATTN_TILING=d64=8x32 on the
# experiment build in .carry/exp) against the planned four, and Whisper host splits base against new.
# Carry [".carry", ".whl", ".gl"]; $OUT is packed into all.tgz.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
EXP=.carry/exp/libonnxruntime_ep_wgpu.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
ROUNDS=2 TESTS=1 ONLY='s4096_h8|llama_prefill|whisper|decode_s1x4096_h32kv8_d128' bash bench/h200_attention_ab.sh \
  >/dev/null 2>&1
for r in 1 2; do
  for cfg in planned 8x32; do
    if [[ $cfg == 8x32 ]]; then export EXP_ATTN_TILING=d64=8x32; else unset EXP_ATTN_TILING; fi
    echo "== $cfg round $r" >>"$OUT/ab_whisper_tiling.txt"
    timeout 60 python3 bench/attention_bench.py --lib "$EXP" --only whisper >>"$OUT/ab_whisper_tiling.txt" 2>&1
    timeout 100 python3 bench/host_split.py --lib "$EXP" --runs 300 --dtypes fp16 --bound >"$OUT/hs_${cfg}_$r.txt" 2>&1
  done
done
unset EXP_ATTN_TILING
DTYPES=fp32,fp16 ROUNDS=2 bash bench/h200_host_ab.sh >"$OUT/host_ab.txt" 2>&1
(cd "$OUT" && tar -czf /tmp/all.tgz . && mv /tmp/all.tgz .)
cat "$OUT/gpu.txt"; tail -1 "$OUT/tests.txt"
grep -hE "^== |^\| (s4096|llama|whisper|decode)" "$OUT/ab_attention.txt" "$OUT/ab_whisper_tiling.txt" | cut -c1-110
for f in "$OUT"/hs_{planned,8x32}_[12].txt; do grep -h "^| whisper" "$f" | sed "s/^/$(basename "$f" .txt) /" | cut -c1-150; done
grep -h "^\(base\|new\) r" "$OUT/host_ab.txt" | cut -c1-150
