#!/bin/sh
# Bitwise: `fivefold train` across two namespaced nodes (TCP between them) logs the same loss and
# gradient norm at every step as the same command on one host (shared memory only), for dp 4
# ZeRO-3, tp 2 x dp 2 and pp 2 x tp 2. The serial comparisons (nodes2_* tests) say both are right;
# this says the transport changes no bit (the reductions' order belongs to Comm, not to MPI).
# Usage: same_as_one_host.sh MPIEXEC FIVEFOLD CONFIG
mpiexec=$1
fivefold=$2
config=$3
here=$(dirname "$0")
. "$here/../parallel/tiny_job_setup.sh"
"$here/../support/netns_nodes.sh" check >/dev/null || { "$here/../support/netns_nodes.sh" check; exit 77; }
n=0
for layout in "--dp 4 --zero 3" "--tp 2 --dp 2" "--pp 2 --tp 2 --n-layers 4 --grad-accum 4 --micro-batch 2"; do
  n=$((n + 1))
  flags="--config $config --data $out/data --steps 20 --eval-every 0 --threads 1 $layout"
  # shellcheck disable=SC2086  # flags are several words
  "$mpiexec" --oversubscribe -np 4 "$fivefold" train $flags --out "$out/host$n" >"$log" 2>&1 ||
    fail "one host, $layout: train failed"
  # shellcheck disable=SC2086
  "$here/on_nodes.sh" 2 2 10gbit "$fivefold" train $flags --out "$out/nodes$n" >"$log" 2>&1 ||
    fail "two nodes, $layout: train failed"
  logged_steps "$out/host$n/metrics.jsonl" >"$out/host$n.txt"
  logged_steps "$out/nodes$n/metrics.jsonl" >"$out/nodes$n.txt"
  [ "$(wc -l <"$out/host$n.txt")" = 20 ] || fail "$layout: $(wc -l <"$out/host$n.txt") steps logged, expected 20"
  diff "$out/host$n.txt" "$out/nodes$n.txt" >"$log" || fail "$layout: two nodes differ from one host"
  echo "$layout: 20 steps, losses and gradient norms bitwise equal on one host and across two nodes"
done
