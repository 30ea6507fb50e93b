#!/bin/sh
# A layout whose tp group spans nodes trains, with a warning naming the group and the fix; one
# whose tp fits inside the nodes gets none, also when mpirun deals the ranks out node by node
# (--map-by node: the mesh gathers each node's ranks itself).
# Usage: tp_across_nodes_warns.sh FIVEFOLD CONFIG
fivefold=$1
config=$2
here=$(dirname "$0")
. "$here/../parallel/tiny_job_setup.sh"
train() {  # NODES RANKS_PER_NODE TRAIN OPTIONS...
  nodes=$1 per_node=$2
  shift 2
  "$here/on_nodes.sh" "$nodes" "$per_node" 10gbit "$fivefold" train --config "$config" --data "$out/data" \
    --out "$out/run$nodes$per_node" --steps 2 --eval-every 0 --threads 1 "$@" >"$log" 2>&1
}

train 2 1 --tp 2
code=$?
[ $code = 77 ] && { cat "$log"; exit 77; }
[ $code = 0 ] || fail "tp 2 over two nodes of one rank failed (exit $code)"
grep -q "warning: tp 2 puts the tp group of ranks {0, 1} on nodes 0 and 1" "$log" ||
  fail "no warning naming the tp group that spans nodes 0 and 1"
echo "tp across nodes: warned"

FF_NODES_MPIRUN_ARGS="--map-by node" train 2 2 --tp 2 --dp 2 || fail "tp 2 x dp 2 with --map-by node failed"
grep -q "warning: tp" "$log" && fail "tp 2 x dp 2 on two nodes of two ranks warned, but its tp groups fit inside the nodes"
echo "tp inside nodes (--map-by node): no warning"
