#!/bin/sh
# Runs comm_failure_probe under mpirun and checks that the whole job ended by itself, non-zero,
# within 30 s, with the expected message. Usage: check_failure.sh MPIEXEC PROBE MODE
mpiexec=$1
probe=$2
mode=$3
case $mode in
  abort) expect="rank 1: probe: rank 1 gives up on purpose" ;;
  sigkill) expect="exited on signal 9" ;;
  timeout) expect="rank 0: all_reduce of 1048576 f32 (sum) on a group of 2 did not complete within 2" ;;
  *) echo "unknown mode '$mode'; use abort, sigkill or timeout"; exit 2 ;;
esac

fail() {
  echo "FAIL ($mode): $1"
  exit 1
}

start=$(date +%s)
out=$(timeout 60 "$mpiexec" --oversubscribe -np 2 "$probe" "$mode" 2>&1)
code=$?
elapsed=$(($(date +%s) - start))
echo "$out"
echo "mpirun exit code $code after ${elapsed} s"
[ "$code" -ne 124 ] || fail "the job hung until the 60 s timeout killed it"
[ "$code" -ne 0 ] || fail "mpirun exited 0 although a rank failed"
[ "$elapsed" -le 30 ] || fail "the job took ${elapsed} s to end (limit 30 s)"
printf '%s\n' "$out" | grep -qF "$expect" || fail "the output lacks: $expect"
echo "PASS ($mode)"
