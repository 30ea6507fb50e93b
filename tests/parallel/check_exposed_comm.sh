#!/bin/sh
# metrics.jsonl's per-step exposed communication (`comm`): absent on one rank; on 2 ranks present
# every step with exposed_ms = in_compute_ms + after_backward_ms; and when rank 1 is made slow
# (simulate_straggler 1:5 sleeps it 4x its compute before each step), rank 0 spends most of its
# step waiting for the gradients after backward, which after_backward_ms must show.
# Usage: check_exposed_comm.sh MPIEXEC FIVEFOLD CONFIG
mpiexec=$1
fivefold=$2
config=$3
. "$(dirname "$0")/tiny_job_setup.sh"
train="train --config $config --data $out/data --steps 6 --eval-every 0 --threads 1 --log-every 100 --tensorboard false"

"$fivefold" $train --out "$out/serial" >>"$log" 2>&1 || fail "serial run failed"
[ "$(jq -s 'map(has("comm")) | any' "$out/serial/metrics.jsonl")" = false ] || fail "a serial run reports communication"

"$mpiexec" --oversubscribe -np 2 "$fivefold" $train --out "$out/dp2" >>"$log" 2>&1 || fail "dp 2 run failed"
jq -e -s 'length == 6 and all(.comm.exposed_ms >= 0 and .comm.in_compute_ms >= 0 and .comm.after_backward_ms > 0
          and ((.comm.in_compute_ms + .comm.after_backward_ms - .comm.exposed_ms) | fabs) < 1e-6)' \
  "$out/dp2/metrics.jsonl" >/dev/null || fail "dp 2: comm missing or exposed_ms != in_compute_ms + after_backward_ms"

"$mpiexec" --oversubscribe -np 2 "$fivefold" $train --out "$out/slow" --simulate-straggler 1:5 >>"$log" 2>&1 ||
  fail "dp 2 with a straggler failed"
# Steps 2..6 (the first has no compute time to scale yet): rank 0's wait after backward is most of its step.
share=$(jq -s '.[1:] | map(.comm.after_backward_ms / 1000 / .step_seconds) | sort | .[length / 2 | floor]' "$out/slow/metrics.jsonl")
echo "rank 0 waited after backward for a median $share of its step behind a 5x slower rank 1"
awk -v s="$share" 'BEGIN { exit !(s > 0.5) }' || fail "after_backward_ms does not show the wait for the slow rank ($share of the step)"
echo "exposed communication: ok"
