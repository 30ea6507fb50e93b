#!/usr/bin/env bash
# The numbers of a set of short runs, one file per layout: every step's loss, gradient norm, lr,
# loss scale and validation loss at full precision (metrics.jsonl's doubles). A change that must
# not move any number (a refactor, a file move) is checked by running this before and after and
# comparing the two folders byte for byte:
#
#   bash scripts/fingerprint.sh /tmp/before               # on the old commit's build
#   bash scripts/fingerprint.sh /tmp/after                # on the new one
#   diff -r /tmp/before /tmp/after && echo bit-identical
#
# FIVEFOLD=path/to/binary picks the build (default build/fivefold). Each run is 20 steps of
# configs/tiny.toml (one thread per rank unless a layout says 2) on the first 4000 verses of the King James Bible; about a minute in all on 2
# cores. Timings, memory and MFU are left out: they are not the numbers a refactor must keep.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: fingerprint.sh OUT_DIR}
ff=$(realpath "${FIVEFOLD:-build/fivefold}")
mkdir -p "$out"
out=$(realpath "$out")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi

bible -f Gen1:1-Rev22:21 >"$work/kjv.txt"
head -n 4000 "$work/kjv.txt" >"$work/text.txt"
"$ff" prepare --text "$work/text.txt" --one-doc-per-line --vocab 512 --out "$work/data" >/dev/null

# name | ranks | flags (after the common ones)
layouts=(
  "serial|1|--threads 1"
  "dp2_zero3|2|--threads 1 --dp 2 --zero 3"
  "tp2_sp|2|--threads 1 --tp 2 --sp true"
  "pp2_1f1b|2|--threads 1 --pp 2 --schedule 1f1b --grad-accum 4"
  "cp2_ring|2|--threads 1 --cp 2 --cp-comm ring"
  "ep2_moe|2|--threads 1 --dp 2 --ep 2 --n-experts 4 --top-k 2"
  "bf16|1|--threads 1 --precision bf16"
  "bf16_dp2_zero3|2|--threads 1 --precision bf16 --dp 2 --zero 3 --zero3-gather bf16"
  "fp16|1|--threads 1 --precision fp16"
  "fp8_tp2|2|--threads 1 --precision fp8 --tp 2"
  "bf16_2threads|1|--threads 2 --precision bf16"
)
for entry in "${layouts[@]}"; do
  IFS='|' read -r name ranks flags <<<"$entry"
  run="$work/$name"
  # shellcheck disable=SC2086  # flags are several words
  mpirun --oversubscribe -np "$ranks" "$ff" train --config configs/tiny.toml --data "$work/data" --out "$run" \
    --steps 20 --eval-every 10 $flags >"$work/$name.log" 2>&1 ||
    { echo "$name failed:"; tail -n 20 "$work/$name.log"; exit 1; }
  python3 - "$run/metrics.jsonl" >"$out/$name.txt" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "step" not in r or "loss" not in r:
        continue
    keys = ("loss", "grad_norm", "lr", "loss_scale", "skipped", "val_loss")
    print(r["step"], " ".join(f"{k}={r[k]!r}" for k in keys if k in r))
EOF
  echo "$name: $(wc -l <"$out/$name.txt") steps"
done
