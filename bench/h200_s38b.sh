#!/usr/bin/env bash
# Thirty-eighth session, second device call: the eight-subgroup attention tiling and the long-K split rule as
# planned (the staged library) against the previous landing (.carry/base): the attention and model pytest files on
# this GPU, issue 13's prefill shapes beside torch (`h200_attention_ab.sh`), and Whisper-tiny fp32/fp16 host splits
# with the peer's run (`h200_host_ab.sh`). Carry [".carry", ".whl", ".gl"]; $OUT is packed into all.tgz.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
ONNXRUNTIME_EP_WGPU_LIB=$LIB timeout 240 python3 -m pytest -q -x -p no:cacheprovider tests/test_attention.py \
  tests/test_gqa.py tests/test_transformers.py >"$OUT/tests.txt" 2>&1
tail -1 "$OUT/tests.txt"
ROUNDS=2 ONLY='s4096_h8|llama_prefill_s4096|whisper' bash bench/h200_attention_ab.sh >/dev/null 2>&1
DTYPES=fp32,fp16 ROUNDS=2 MODELS=1 bash bench/h200_host_ab.sh >"$OUT/host_ab.txt" 2>&1
S=1500x1152x384,1500x1536x384,1500x384x1536
for t in auto 64x64 128x128; do
  timeout 100 .carry/bench/kernel_bench --shapes $S --dtypes f32 --paths split,fused --tiling $t --iters 5 \
    >"$OUT/kb_x3_$t.txt" 2>&1
done
timeout 60 .carry/bench/kernel_bench --shapes $S --dtypes f32 --paths auto,simt --iters 5 >"$OUT/kb_auto.txt" 2>&1
(cd "$OUT" && tar -czf /tmp/all.tgz . && mv /tmp/all.tgz .)
cat "$OUT/gpu.txt"; tail -1 "$OUT/tests.txt"
grep -E "^== |^\| (s4096|llama|whisper)" "$OUT/ab_attention.txt" | cut -c1-120
cat "$OUT/host_ab.txt" | cut -c1-200
grep -hE "^1500" "$OUT"/kb_*.txt | sort -u | cut -c1-140
