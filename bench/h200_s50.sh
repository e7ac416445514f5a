#!/usr/bin/env bash
# Prepared in the forty-ninth session for the next device call (PARTS, default "floor decode startup"):
#  floor    bench/experiments/dispatch_floor/floor.py: the floor of a dependent step beside steps streaming 16.8 MB,
#           ours (step profile) and torch's (CUDA events): what issue 13's decode target leaves a kernel.
#  decode   bench/attention_bench.py on the decode shapes (issue 13), beside torch SDPA.
#  startup  bench/h200_s49.sh's issue 15 case (Whisper-tiny fp16, cold and warm, beside the peer; ROUNDS, default 2).
# Stage: bash bench/h200_stage.sh (KERNEL_BENCH=0), move goldens/ and docs/data/ out, carry
# [".carry/bench", ".whl", ".gl"]. Writes $OUT/all.tgz and prints a short table last.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
PARTS=" ${PARTS:-floor decode startup} "
mkdir -p "$OUT/more"
if [[ $PARTS == *" floor "* ]]; then
  timeout 120 python3 bench/experiments/dispatch_floor/floor.py --lib "$LIB" >"$OUT/more/floor.txt" 2>&1
fi
if [[ $PARTS == *" decode "* ]]; then
  timeout 200 python3 bench/attention_bench.py --lib "$LIB" --only decode >"$OUT/more/decode.txt" 2>&1
fi
if [[ $PARTS == *" startup "* ]]; then
  OUT="$OUT/more/startup" PARTS="ab" ROUNDS="${ROUNDS:-2}" bash bench/h200_s49.sh >"$OUT/more/startup.txt" 2>&1
fi
tar czf "$OUT/all.tgz" -C "$OUT" more gpu.txt && rm -rf "$OUT/more"
cat "$OUT/gpu.txt"
tar xzf "$OUT/all.tgz" -O more/floor.txt more/decode.txt more/startup.txt 2>/dev/null | grep -E "^\|" | cut -c1-160
