#!/bin/sh
# The supervisor's kill loop (issue 10): a 40-step tiny run on 2 ranks with a checkpoint every 5
# steps, run under `fivefold launch`, whose rank 1 is SIGKILLed before three random steps (a fault
# plan, FF_FAULT_PLAN). The supervisor must say which rank died and that it restarts, log each
# restart in metrics.jsonl, and finish the run; the final weights must equal an uninterrupted
# run's bit for bit, and metrics.jsonl must hold every step once.
# Usage: check_supervisor_kill_loop.sh MPIEXEC FIVEFOLD CONFIG
mpiexec=$1
fivefold=$2
config=$3
. "$(dirname "$0")/tiny_job_setup.sh"
train="train --config $config --data $out/data --steps 40 --ckpt-every 5 --eval-every 0 --threads 1 --log-every 10"
# Three random steps, one in each third of the run, printed so a failure can be replayed.
steps=$(awk 'BEGIN { srand(); print 2 + int(rand() * 11), 14 + int(rand() * 13), 28 + int(rand() * 12) }')
echo "rank 1 is killed before steps: $steps"
for s in $steps; do echo "KILL 1 $s"; done >"$out/plan"

FF_FAULT_PLAN=$out/plan "$fivefold" launch --max-restarts 3 --backoff 0.1 -- \
  "$mpiexec" --oversubscribe -np 2 "$fivefold" $train --out "$out/killed" >"$log" 2>&1 ||
  fail "the supervised run did not finish"
"$mpiexec" --oversubscribe -np 2 "$fivefold" $train --out "$out/straight" >"$out/straight.txt" 2>&1 ||
  { cat "$out/straight.txt"; fail "the uninterrupted run failed"; }

[ "$(grep -c "fivefold launch: rank 1 .*died of signal 9 (Killed). Restart [123] of 3" "$log")" -eq 3 ] ||
  fail "the supervisor did not report three deaths of rank 1 and its restarts"
grep -q "fivefold launch: the job finished after 3 restart(s)" "$log" || fail "no summary line"
[ -s "$out/plan" ] && fail "not every planned kill happened"
[ "$(grep -c '"event":"restart"' "$out/killed/metrics.jsonl")" -eq 3 ] || fail "metrics.jsonl lacks the 3 restart rows"
# Every step once, in order.
got=$(grep -o '"step":[0-9]*' "$out/killed/metrics.jsonl" | cut -d: -f2 | tr '\n' ' ')
want=$(seq 1 40 | tr '\n' ' ')
[ "$got" = "$want" ] || fail "metrics.jsonl steps are '$got'"
# The same final weights, bit for bit.
"$fivefold" export --ckpt "$out/killed" --out "$out/killed_hf" >/dev/null 2>&1 || fail "export of the killed run failed"
"$fivefold" export --ckpt "$out/straight" --out "$out/straight_hf" >/dev/null 2>&1 || fail "export of the straight run failed"
cmp "$out/killed_hf/model.safetensors" "$out/straight_hf/model.safetensors" ||
  fail "the final weights differ from the uninterrupted run's"
grep "fivefold launch" "$log"
rm -rf "$out"
echo "PASS"
