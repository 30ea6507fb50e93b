#!/usr/bin/env bash
# The 3D bf16 layout that needs 8 ranks, too heavy for CI on 2 cores: pp 2 x tp 2 + sp
# x dp 2 x ZeRO 1, 20 steps of `tiny` in bf16 against serial bf16 (losses 1e-4, gradient norms
# 2e-3 relative per step; the np 2 and np 4 layouts run in CTest as np2_bf16_layouts_vs_serial and
# np4_bf16_3d_layouts_vs_serial). A correctness run: no quiet lane needed.
#   usage: bash bench/serial/bf16_layouts_3d.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
cmake --build "$build" -j2 --target bf16_layouts > /dev/null
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
OMP_NUM_THREADS=1 mpirun --oversubscribe -np 8 -x OMP_NUM_THREADS "$build/tests/precision/bf16_layouts"
