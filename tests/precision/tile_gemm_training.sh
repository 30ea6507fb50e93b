#!/bin/sh
# fivefold's tile GEMM (kernels/gemm_amx.h) in a whole bf16 training run, on the scalar model of
# the AMX instructions (FIVEFOLD_AMX_GEMM=emulate), against the same run on oneDNN's bf16 GEMMs:
# 20 steps of the tiny model, loss and gradient norm within bf16's layout tolerance of oneDNN's
# at every step (2^-8 relative: np2_bf16_layouts_vs_serial's gradient-norm bound, the looser of its
# two). The two GEMMs sum the same exact products in different orders, so the runs drift apart by
# rounding alone; a packing or blocking error moves the first step's loss far past that.
# Usage: tile_gemm_training.sh FIVEFOLD CONFIG COMPARE_RUNS
fivefold=$1
config=$2
compare=$3
. "$(dirname "$0")/../parallel/tiny_job_setup.sh"
train="train --config $config --data $out/data --steps 20 --eval-every 0 --threads 2 --precision bf16 --tensorboard false"

FIVEFOLD_AMX_GEMM=off "$fivefold" $train --out "$out/onednn" >>"$log" 2>&1 || fail "the oneDNN run failed"
FIVEFOLD_AMX_GEMM=emulate "$fivefold" $train --out "$out/tiles" >"$out/tiles.log" 2>&1 || fail "the tile GEMM run failed"
cat "$out/tiles.log" >>"$log"
grep -q "fivefold's tile GEMM on a scalar model" "$out/tiles.log" || fail "the run did not say it took the tile GEMM"
python3 "$compare" "$out/onednn/metrics.jsonl" "$out/tiles/metrics.jsonl" 20 --tol 0.00390625 >>"$log" 2>&1 ||
  fail "the tile GEMM's run left oneDNN's beyond bf16's tolerance"
tail -1 "$log"
