#!/usr/bin/env bash
# The open AMX measurements of bench/RESULTS.md ("bf16 on an AMX Xeon") as one kit: built here,
# carried to an AMX host (no package registry, no compiler), run there in one call.
#
#   bench/serial/amx_check.sh prepare KIT      the portable pack, perf, test_kernels, this build's
#                                             bench_tile_pack and bench_gemm_amx, and the latter of
#                                             the commits in $FIVEFOLD_COMPARE_COMMITS (default:
#                                             7463ee3, the last one measured on AMX), into the folder
#                                             KIT (54 MB with two commits: a device call carries 64 MiB)
#   bench/serial/amx_check.sh run KIT OUT      on the AMX host, from this repository: bf16_on_host.sh
#                                             with five speed rounds at 2 threads and three at every
#                                             core, the tests, the 100-step loss check, the packing
#                                             bench, every bench_gemm_amx, and bf16 profiles of the tile GEMM (the
#                                             default) and oneDNN's GEMMs; OUT gets log.txt and results.tar.gz
#                                             (two files: some hosts return only a few)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
usage() { sed -n '2,/^set -euo pipefail/{/^set/!p}' "$0"; exit 2; }
cmd=${1:-}
kit=${2:-}
[ -n "$kit" ] || usage
case "$cmd" in
  prepare)
    mkdir -p "$kit/gemm"
    "$ROOT/scripts/portable_bench.sh" all "$kit/fivefold.tar.gz"
    "$ROOT/scripts/portable_bench.sh" pack-perf "$kit/perf.tar.gz"
    cmake --build "$ROOT/build-portable-x86-64-v3" -j "${FIVEFOLD_JOBS:-2}" --target test_kernels bench_gemm_amx \
      bench_tile_pack
    cp "$ROOT/build-portable-x86-64-v3/tests/kernels/test_kernels" "$kit/"
    for bench in bench_gemm_amx bench_tile_pack; do cp "$ROOT/build-portable-x86-64-v3/bench/gemm/$bench" "$kit/gemm/"; done
    for c in ${FIVEFOLD_COMPARE_COMMITS-7463ee3}; do "$ROOT/scripts/portable_bench.sh" bench-at "$c" "$kit/gemm"; done
    du -sh "$kit"
    ;;
  run)
    out=${3:-}
    [ -n "$out" ] || usage
    mkdir -p "$out"
    results=$(mktemp -d)
    set +e
    bash "$ROOT/bench/serial/bf16_on_host.sh" "$kit/fivefold.tar.gz" "$results" --perf "$kit/perf.tar.gz" \
      --tests "$kit/test_kernels" --gemm-benches "$kit/gemm" --loss-steps 100 --no-profile-fp32 --no-peer \
      --rounds 5 --many-rounds 3 --variant "oneDNN GEMMs=FIVEFOLD_AMX_GEMM=off" --profile-variants \
      --budget "${FIVEFOLD_CHECK_BUDGET:-330}" 2>&1 | tee "$out/log.txt"
    tar -C "$results" -czf "$out/results.tar.gz" .
    rm -rf "$results"
    ;;
  *) usage ;;
esac
