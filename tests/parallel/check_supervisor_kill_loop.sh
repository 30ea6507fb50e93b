#!/bin/sh
# The supervisor's kill loop: a 40-step tiny run on 2 ranks with a checkpoint every 5
# steps, run under `fivefold launch`, whose rank 1 is SIGKILLed before three random steps (a fault
# plan, FF_FAULT_PLAN). The supervisor must say which rank died and that it restarts, log each
# restart in metrics.jsonl, and finish the run; the final weights must equal an uninterrupted
# run's bit for bit, and metrics.jsonl must hold every step once. Before the last restart the
# newest checkpoint is damaged: the job falls back to the previous one.
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

# Before the last restart the newest checkpoint gets a flipped byte (its data file's middle): the
# restarted job must find it damaged, say so naming the file, set it aside and resume from the
# previous complete one, still reaching the uninterrupted run's weights.
cat >"$out/damage_last.sh" <<'EOF_WRAP'
attempts=$1/attempts
shift
echo x >>"$attempts"
if [ "$(wc -l <"$attempts")" -eq 4 ]; then
  f=$(dirname "$attempts")/killed/$(cat "$(dirname "$attempts")/killed/latest")/rank_00000.bin
  at=$(($(wc -c <"$f") / 2))
  byte=$(od -An -tu1 -j "$at" -N1 "$f" | tr -d ' ')
  printf "\\$(printf %03o $(((byte + 1) % 256)))" | dd of="$f" bs=1 seek="$at" conv=notrunc 2>/dev/null
  echo "damaged $f at byte $at"
fi
exec "$@"
EOF_WRAP
FF_FAULT_PLAN=$out/plan "$fivefold" launch --max-restarts 3 --backoff 0.1 --stop-grace 1 -- sh "$out/damage_last.sh" "$out" \
  "$mpiexec" --oversubscribe -np 2 "$fivefold" $train --out "$out/killed" >"$log" 2>&1 ||
  fail "the supervised run did not finish"
"$mpiexec" --oversubscribe -np 2 "$fivefold" $train --out "$out/straight" >"$out/straight.txt" 2>&1 ||
  { cat "$out/straight.txt"; fail "the uninterrupted run failed"; }

[ "$(grep -c "fivefold launch: rank 1 .*died of signal 9 (Killed). Restart [123] of 3" "$log")" -eq 3 ] ||
  fail "the supervisor did not report three deaths of rank 1 and its restarts"
grep -q "fivefold launch: the job finished after 3 restart(s)" "$log" || fail "no summary line"
[ -s "$out/plan" ] && fail "not every planned kill happened"
[ "$(grep -c '"event":"restart"' "$out/killed/metrics.jsonl")" -eq 3 ] || fail "metrics.jsonl lacks the 3 restart rows"
# Every step once, in order (the restart rows carry the step their attempt reached: not steps).
got=$(grep -v '"event":' "$out/killed/metrics.jsonl" | grep -o '"step":[0-9]*' | cut -d: -f2 | tr '\n' ' ')
want=$(seq 1 40 | tr '\n' ' ')
[ "$got" = "$want" ] || fail "metrics.jsonl steps are '$got'"
damaged=$(sed -n 's/^damaged \(.*\) at byte.*/\1/p' "$log")
[ -n "$damaged" ] || fail "the newest checkpoint was not damaged before the last restart"
grep -q "$damaged: checksum mismatch" "$log" || fail "the damaged file is not named"
grep -q "resuming from the previous complete one" "$log" || fail "no fallback to the previous checkpoint"
[ -f "${damaged%/rank_00000.bin}.damaged/rank_00000.bin" ] || fail "the damaged checkpoint was not kept aside"
# The same final weights, bit for bit.
"$fivefold" export --ckpt "$out/killed" --out "$out/killed_hf" >/dev/null 2>&1 || fail "export of the killed run failed"
"$fivefold" export --ckpt "$out/straight" --out "$out/straight_hf" >/dev/null 2>&1 || fail "export of the straight run failed"
cmp "$out/killed_hf/model.safetensors" "$out/straight_hf/model.safetensors" ||
  fail "the final weights differ from the uninterrupted run's"
grep "fivefold launch" "$log"
echo "PASS"
