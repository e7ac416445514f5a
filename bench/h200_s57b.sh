#!/usr/bin/env bash
# Fifty-seventh session, second call: Whisper-tiny fp32/fp16 beside the peer and the CPU EP (issue 11's figure where
# the machine is an H200), then cold start-up of Whisper-tiny fp16 (issue 15) as built, with interim_grace_ms=GRACE
# (default 170: past the first call's last tensor-core compile, 166 ms on its clock) and with interim_kernels=0, two
# processes each, the peer once; warm ours and the peer once.
# Stage as for bench/h200_s57.sh. Writes $OUT/all.tgz; the tables last.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
mkdir -p "$OUT/more"
whisper_speed speed1_1
startup "$LIB" ours-nocache ours-nocache cold fp16 1 2
startup "$LIB" "grace${GRACE:-170}" ours-nocache cold fp16 1 2 X_=0 "interim_grace_ms=${GRACE:-170}"
startup "$LIB" nointerim ours-nocache cold fp16 1 2 X_=0 interim_kernels=0
startup "$LIB" peer peer cold fp16 1 1
startup "$LIB" ours-nocache ours-nocache warm fp16 1 1
startup "$LIB" peer peer warm fp16 1 1
tar czf "$OUT/all.tgz" -C "$OUT" more gpu.txt && rm -rf "$OUT/more"
cat "$OUT/gpu.txt"
whisper_lines speed1_1
python3 bench/startup_table.py "$OUT/all.tgz"
