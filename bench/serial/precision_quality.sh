#!/usr/bin/env bash
# Training quality by precision, one command: trains `small` on the KJV for 400 steps
# in fp32, bf16, fp16 and fp8 (same config, seed and data; one after another), then writes the
# Markdown table (bench/serial/precision_quality.md) and the training-loss curves
# (bench/serial/precision_curves.svg). These are loss runs, not timing: no quiet lane needed.
#
# usage: bash bench/serial/precision_quality.sh [FIVEFOLD] [DATA] [RUNS_DIR]
#   defaults: build/fivefold, data/kjv, runs/quality. A precision whose run already finished
#   (its metrics.jsonl holds step 400) is not trained again; delete its folder to redo it.
set -euo pipefail
cd "$(dirname "$0")/../.."
ff=${1:-build/fivefold}
data=${2:-data/kjv}
runs=${3:-runs/quality}
steps=${STEPS:-400}  # PRECISIONS="fp32 bf16" trains only those; THREADS=1: one core per run
mkdir -p "$runs"
for p in ${PRECISIONS:-fp32 bf16 fp16 fp8}; do
  if [ -f "$runs/$p/metrics.jsonl" ] && grep -q "\"step\":$steps," "$runs/$p/metrics.jsonl"; then continue; fi
  rm -rf "${runs:?}/$p"
  "$ff" train --config configs/small.toml --data "$data" --steps "$steps" --precision "$p" \
    --threads "${THREADS:-0}" --out "$runs/$p" > "$runs/$p.log" 2>&1
done
/usr/bin/python3 bench/serial/precision_quality.py "$runs" bench/serial/precision_curves.svg \
  | tee bench/serial/precision_quality.md
