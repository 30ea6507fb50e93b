#!/bin/sh
# The 8-rank case of checkpoint resharding (also CTest sharded_checkpoint_reshard_8_ranks): pp 2 x
# tp 2 x dp 2 ZeRO 3 saves at step 4 and serial, tp 2 x dp 2 ZeRO 3 and itself resume it, and tp 2 x
# dp 2 ZeRO 3's save resumes under pp 2 x tp 2 x dp 2, each continuing with a straight serial run's
# losses and gradient norms (1e-5), and bitwise a straight run's under the layout that saved.
# Prints one line per case and PASS/FAIL.
# usage: sh bench/ckpt/reshard_8_ranks.sh [BUILD_DIR]
build=${1:-build}
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 \
  mpirun --oversubscribe -np 8 "$build/tests/parallel/sharded_reshard" && echo PASS || { echo FAIL; exit 1; }
