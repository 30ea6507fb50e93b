#!/bin/sh
# The hang watchdog: rank 1 of a dp 2 job SIGSTOPs itself before step 3 (a fault plan,
# FF_FAULT_PLAN). Rank 0 then waits in the step's all-reduce; its watchdog must dump its flight
# record and end the job within collective_timeout + 10 s, and `fivefold diagnose` must name rank 1
# as the rank behind.
# Usage: check_hang_watchdog.sh MPIEXEC FIVEFOLD CONFIG
mpiexec=$1
fivefold=$2
config=$3
timeout_s=5
. "$(dirname "$0")/tiny_job_setup.sh"
echo "STOP 1 3" >"$out/plan"
FF_FAULT_PLAN=$out/plan "$mpiexec" --oversubscribe -np 2 "$fivefold" train --config "$config" --data "$out/data" \
  --out "$out/run" --steps 1000 --eval-every 0 --threads 1 --collective-timeout $timeout_s >"$log" 2>&1 &
job=$!
stopped=""
for _ in $(seq 1 600); do
  [ -z "$stopped" ] && grep -q "sends itself SIGSTOP" "$log" && stopped=$(date +%s)
  kill -0 "$job" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$job" 2>/dev/null; then
  pkill -KILL -P "$job"
  kill -9 "$job"
  fail "the job still ran 60 s after starting (the watchdog did not end it)"
fi
wait "$job"
code=$?
[ -n "$stopped" ] || fail "rank 1 never stopped itself (fault plan not taken)"
elapsed=$(($(date +%s) - stopped))
echo "mpirun exit code $code, ${elapsed} s after rank 1 stopped (collective_timeout $timeout_s s)"
[ "$code" -ne 0 ] || fail "mpirun exited 0 although the job hung"
[ "$elapsed" -le $((timeout_s + 10)) ] || fail "the job took ${elapsed} s to end (limit $((timeout_s + 10)) s)"
grep -q "past collective_timeout = $timeout_s s" "$log" || fail "no watchdog message"
[ -f "$out/run/flight/rank_0.json" ] || fail "rank 0 left no flight record"
"$fivefold" diagnose "$out/run" >"$out/diag.txt" 2>&1 || { cat "$out/diag.txt"; fail "diagnose failed"; }
cat "$out/diag.txt"
grep -q "rank 0 waits in all_reduce #" "$out/diag.txt" || fail "diagnose does not name rank 0's operation"
grep -q "^rank(s) behind: 1$" "$out/diag.txt" || fail "diagnose does not name rank 1 as behind"
echo "PASS"
