#!/usr/bin/env bash
# The main job: install, build, tokenize the King James Bible, train the `small` model on it with
# two data-parallel ranks (mpirun), and print generated text. Extra arguments go to
# `fivefold train` (e.g. --steps 100 or --zero 3).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh fivefold  # the tests build in scripts/test.sh, not here
ff=build/fivefold
# Token shards of an older format (the u32 version at byte 8; src/io/tokens/token_shard.h) are refused by
# training, so a data folder prepared by an earlier fivefold is prepared again.
shard_version=$(od -An -tu4 -j8 -N4 data/kjv/train-00000.bin 2>/dev/null | tr -d ' ' || true)
if [ "$shard_version" != 3 ]; then
  rm -rf data/kjv
  mkdir -p data
  bible -f Gen1:1-Rev22:21 > data/kjv.txt
  $ff prepare --text data/kjv.txt --one-doc-per-line --vocab 4096 --out data/kjv
fi
rm -rf runs/small
# Open MPI refuses root unless told twice; containers and CI machines often run as root.
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
ranks=2
mpirun --oversubscribe -np $ranks $ff train --config configs/small.toml --out runs/small --dp $ranks "$@"
echo
echo "=== sample ==="
$ff sample --ckpt runs/small --prompt "And God said" --max-tokens 120 --temperature 0.8 --top-k 40
