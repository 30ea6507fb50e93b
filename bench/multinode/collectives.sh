#!/bin/bash
# Comm's collectives (flat pairwise, hierarchical all-reduce) against MPI's tuned and han across
# two namespaced nodes x 2 ranks, at each link rate. As root, from the repository root:
#   bench/multinode/collectives.sh [BUILD_DIR] [RATES...]     (default: build-dev  1gbit 10gbit unlimited)
# Prints one table per (rate, MPI component) for bench/RESULTS.md.
set -euo pipefail
build=${1:-build-dev}; shift || true
rates=("$@"); [ ${#rates[@]} -gt 0 ] || rates=(1gbit 10gbit unlimited)
H=tests/support/netns_nodes.sh
export FF_NODES_PREFIX=${FF_NODES_PREFIX:-ffc} FF_NODES_OWNER=$$
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$H" check
trap '"$H" down' EXIT
trap 'exit 143' TERM INT
"$H" up 2 "${rates[0]}" >/dev/null
echo "# $(date -u +%FT%TZ) $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
for rate in "${rates[@]}"; do
  "$H" rate "$rate" >/dev/null
  for coll in ${FF_BENCH_MPI_COLLS:-tuned han}; do
    extra=(); [ "$coll" = han ] && extra=(--mca coll_han_priority 100)
    echo; echo "## link $rate, MPI $coll (load $(cut -d' ' -f1-3 /proc/loadavg))"
    "$H" mpirun --hostfile "$("$H" hostfile 2)" -np 4 "${extra[@]}" \
      "$build/bench/multinode/bench_xnode_collectives" --reps "${FF_BENCH_REPS:-5}" --label "$coll" 2>&1 |
      grep -v '^\[' || echo "(MPI $coll: the run failed, see above)"
  done
done
