#!/bin/sh
# Test programs remove the temporary folders they made when they exit (temp_dirs.h): a GoogleTest
# program, and an MPI test whose rank 0 shares a data folder with the others, each run in a fresh
# TMPDIR that must be empty afterwards. FIVEFOLD_KEEP_TEST_DIRS=1 keeps them (every rank its own,
# each path printed), and so does a failed test.
# usage: check_temp_dirs.sh PROBE MPIEXEC MPI_TEST
probe=$1 mpiexec=$2 mpi_test=$3
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail() {
  echo "FAIL: $1"
  cat "$scratch/log"
  ls -la "$tmp"
  exit 1
}
# run CASE COMMAND...: the command in the fresh folder $scratch/CASE ($tmp), its output in $scratch/log.
run() {
  tmp=$scratch/$1
  shift
  mkdir "$tmp"
  env -u FIVEFOLD_KEEP_TEST_DIRS TMPDIR="$tmp" "$@" >"$scratch/log" 2>&1
}
folders() { find "$tmp" -mindepth 1 -maxdepth 1 -name 'fivefold-test-*' | sort; }
# Each folder left must be printed at exit.
printed() {
  for d in $(folders); do grep -q "^  $d\$" "$scratch/log" || fail "$d was kept without being printed"; done
}

run plain "$probe" || fail "the probe failed"
[ -z "$(ls -A "$tmp")" ] || fail "the probe left folders in TMPDIR"

run keep env FIVEFOLD_KEEP_TEST_DIRS=1 "$probe" || fail "the probe failed with FIVEFOLD_KEEP_TEST_DIRS=1"
[ "$(folders | wc -l)" -eq 2 ] || fail "FIVEFOLD_KEEP_TEST_DIRS=1 kept $(folders | wc -l) folders, not the probe's 2"
printed
grep -q "FIVEFOLD_KEEP_TEST_DIRS=1" "$scratch/log" || fail "the kept folders' reason is not printed"

run failed "$probe" --gtest_also_run_disabled_tests --gtest_filter='*FailsOnPurpose' && fail "the failing probe passed"
[ "$(folders | wc -l)" -eq 1 ] || fail "a failed test kept $(folders | wc -l) folders, not its 1"
printed
grep -q "TempDirsProbe.DISABLED_FailsOnPurpose failed" "$scratch/log" || fail "the failed test is not named"

run mpi "$mpiexec" --oversubscribe -np 2 "$mpi_test" || fail "the MPI test failed"
[ -z "$(ls -A "$tmp")" ] || fail "the MPI test left folders in TMPDIR"

run mpi_keep env FIVEFOLD_KEEP_TEST_DIRS=1 "$mpiexec" --oversubscribe -np 2 -x FIVEFOLD_KEEP_TEST_DIRS "$mpi_test" ||
  fail "the MPI test failed with FIVEFOLD_KEEP_TEST_DIRS=1"
printed
# Folders are named fivefold-test-TAG-PID-N: both ranks made some, and kept them.
ranks=$(folders | sed 's/.*-\([0-9]*\)-[0-9]*$/\1/' | sort -u | wc -l)
[ "$ranks" -eq 2 ] || fail "FIVEFOLD_KEEP_TEST_DIRS=1 kept the folders of $ranks processes, not the 2 ranks'"
echo "temporary folders removed at exit, kept when asked and after a failure"
