#!/usr/bin/env bash
# The "Portable build" section of bench/RESULTS.md in one command: brings the -march=native build
# (build-dev, or NATIVE_BUILD=DIR, configured as docs say) and the portable x86-64-v3 build
# (scripts/portable_bench.sh build) up to date, then runs bench/serial/isa_levels.py on them, the
# builds alternating round by round, and rewrites the section. Run it on a quiet machine.
#
#   bash bench/serial/isa_levels.sh [isa_levels.py options: --rounds 5, --build NAME=PATH[@TIER] ...]
set -euo pipefail
cd "$(dirname "$0")/../.."
native=${NATIVE_BUILD:-build-dev}
[ -f "$native/CMakeCache.txt" ] || {
  echo "isa_levels.sh: no configured build in $native: configure it (cmake -S . -B $native -DCMAKE_BUILD_TYPE=Release)" \
    "or set NATIVE_BUILD to the folder of a -march=native build" >&2
  exit 2
}
cmake --build "$native" -j "${FIVEFOLD_JOBS:-2}" --target fivefold
scripts/portable_bench.sh build x86-64-v3
v3=build-portable-x86-64-v3/fivefold
exec /usr/bin/python3 bench/serial/isa_levels.py --build "native=$native/fivefold" --build "x86-64-v3=$v3" \
  --build "x86-64-v3 avx512 tier=$v3@avx512" --build "x86-64-v3 base tier=$v3@base" --write "$@"
