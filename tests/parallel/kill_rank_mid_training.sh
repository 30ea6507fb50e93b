#!/bin/sh
# A data-parallel training job whose rank 1 is killed (SIGKILL) mid-step must end by itself,
# non-zero, within 30 s, with a message naming the dead rank; and the last checkpoint written
# before the kill must still load.
# Usage: kill_rank_mid_training.sh MPIEXEC FIVEFOLD CONFIG [TRAIN OPTIONS...] (e.g. --pp 2: a
# pipeline whose other stage is then blocked in a receive from the dead rank)
mpiexec=$1
fivefold=$2
config=$3
shift 3
. "$(dirname "$0")/tiny_job_setup.sh"
data=$out/data

"$mpiexec" --oversubscribe -np 2 "$fivefold" train --config "$config" --data "$data" --out "$out/run" \
  --steps 100000 --ckpt-every 5 --eval-every 0 --threads 1 --log-every 1 "$@" >"$log" 2>&1 &
job=$!
# Wait for the first checkpoint, then kill rank 1 while it is inside a step.
for _ in $(seq 1 300); do
  [ -f "$out/run/latest" ] && break
  sleep 0.1
done
[ -f "$out/run/latest" ] || fail "no checkpoint appeared within 30 s"
sleep 0.3
victim=$(pgrep -f "fivefold train --config $config --data $data --out $out/run" | sort -n | tail -n 1)
[ -n "$victim" ] || fail "could not find the ranks' processes"
start=$(date +%s)
kill -9 "$victim"
# Bounded wait: the job must end itself; 60 s is the hang detector, 30 s the requirement.
for _ in $(seq 1 600); do
  kill -0 "$job" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$job" 2>/dev/null; then
  kill -9 "$job"
  fail "the job still ran 60 s after rank 1 was killed (a hang)"
fi
wait "$job"
code=$?
elapsed=$(($(date +%s) - start))
echo "mpirun exit code $code, ${elapsed} s after the kill"
[ "$code" -ne 0 ] || fail "mpirun exited 0 although a rank died"
[ "$elapsed" -le 30 ] || fail "the job took ${elapsed} s to end (limit 30 s)"
grep -qE "process rank [01] .*exited on signal 9" "$log" || fail "the output does not name the rank that died by signal 9"
# The last good checkpoint survives and loads.
"$fivefold" eval --ckpt "$out/run" --data "$data/val-00000.bin" --max-windows 4 >"$out/eval.txt" 2>&1 ||
  { cat "$out/eval.txt"; fail "the checkpoint left behind does not load"; }
cat "$out/eval.txt"
grep -E "process rank [01]" "$log"
echo "PASS"
