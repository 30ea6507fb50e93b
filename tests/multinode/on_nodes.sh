#!/bin/bash
# Runs one MPI program across namespaced "nodes" (tests/support/netns_nodes.sh) and removes them
# afterwards, whatever happens:
#   on_nodes.sh NODES RANKS_PER_NODE RATE PROGRAM ARGS...
# FF_NODES_MPIRUN_ARGS: more mpirun options (e.g. "--map-by node"), split at spaces.
# Exit 77 (CTest's SKIP_RETURN_CODE) with the reason when this machine cannot make namespaces.
set -uo pipefail
[ $# -ge 4 ] || { echo "usage: on_nodes.sh NODES RANKS_PER_NODE RATE PROGRAM ARGS..." >&2; exit 2; }
nodes=$1 per_node=$2 rate=$3; shift 3
harness="$(dirname "$0")/../support/netns_nodes.sh"
# A set of its own per test, so tests running side by side never share (or delete) namespaces.
export FF_NODES_PREFIX=${FF_NODES_PREFIX:-ff$(printf '%x' $$)} FF_NODES_OWNER=$$
"$harness" check || exit 77
trap '"$harness" down' EXIT
trap 'exit 143' TERM INT
"$harness" up "$nodes" "$rate" || exit 1
# In the background and waited for: a TERM (CTest's timeout, Ctrl-C) then runs the trap at once,
# whose `down` ends mpirun and the ranks with their namespaces.
timeout 600 "$harness" mpirun --hostfile "$("$harness" hostfile "$per_node")" -np $((nodes * per_node)) \
  ${OMP_NUM_THREADS:+-x OMP_NUM_THREADS} ${FF_NODES_MPIRUN_ARGS:-} "$@" &
wait $!
