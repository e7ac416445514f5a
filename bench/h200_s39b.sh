#!/usr/bin/env bash
# Thirty-ninth session, second device call: the tensor-core attention loading the next K/V tile into registers during
# a step (EXP_ATTN_PREFETCH=f16,x3 on the experiment build in .carry/exp) against the same library without it, on
# issue 13's shapes (f16) and Whisper's f32 attention, the attention pytest files with it on this GPU, then
# Whisper-tiny host splits for: control, prefetch, one register set (EXP_COOP_DEPTH=1: the MLP's serial split
# product with less code) and the fused split for every split product (f32_split_fused=1), alternating, with prefix
# profiles of fp32. Carry [".carry", ".whl", ".gl"]; $OUT is packed into all.tgz. EXP_ATTN_PREFETCH existed only in
# the build of its commit; since 51f7d95 the kernel prefetches by rule (`coop::prefetches`).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
EXP=.carry/exp/libonnxruntime_ep_wgpu.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
set_cfg() {
  unset EXP_ATTN_PREFETCH EXP_COOP_DEPTH
  OPTS=()
  case $1 in
    pf) export EXP_ATTN_PREFETCH=f16,x3 ;;
    depth1) export EXP_COOP_DEPTH=1 ;;
    fused) OPTS=(-o f32_split_fused=1) ;;
  esac
}
for r in 1 2; do
  for cfg in ctl pf; do
    set_cfg $cfg
    echo "== $cfg round $r" >>"$OUT/ab_attention.txt"
    timeout 90 python3 bench/attention_bench.py --lib "$EXP" --only 's4096_h8|llama_prefill_s4096|whisper' \
      >>"$OUT/ab_attention.txt" 2>&1
    echo "== $cfg round $r" >>"$OUT/ab_attention_f32.txt"
    timeout 60 python3 bench/attention_bench.py --lib "$EXP" --only whisper --dtype float32 --no-torch \
      >>"$OUT/ab_attention_f32.txt" 2>&1
  done
done
set_cfg pf
ONNXRUNTIME_EP_WGPU_LIB=$EXP timeout 150 python3 -m pytest -q -x -p no:cacheprovider tests/test_attention.py \
  tests/test_gqa.py >"$OUT/tests_pf.txt" 2>&1
for r in 1 2; do
  for cfg in ctl pf depth1 fused; do
    set_cfg $cfg
    timeout 100 python3 bench/host_split.py --lib "$EXP" --runs 300 --dtypes fp32,fp16 --bound "${OPTS[@]}" \
      >"$OUT/hs_${cfg}_$r.txt" 2>&1
  done
done
for cfg in ctl pf depth1 fused; do
  set_cfg $cfg
  timeout 100 python3 bench/prefix_profile.py --lib "$EXP" --dtypes fp32 --rounds 2 "${OPTS[@]}" >"$OUT/prefix_$cfg.txt" 2>&1
done
(cd "$OUT" && tar -czf /tmp/all.tgz . && mv /tmp/all.tgz .)
cat "$OUT/gpu.txt"; tail -1 "$OUT/tests_pf.txt"
grep -hE "^== |^\| (s4096|llama|whisper)" "$OUT/ab_attention.txt" "$OUT/ab_attention_f32.txt" | cut -c1-110
for f in "$OUT"/hs_*_[12].txt; do grep -h "^| whisper" "$f" | sed "s/^/$(basename "$f" .txt) /" | cut -c1-150; done
grep -hE "^## " "$OUT"/prefix_*.txt
