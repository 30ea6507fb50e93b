#!/bin/bash
# The README's Slurm line, run: a Slurm cluster of its own (tests/support/slurm_nodes.sh: slurmctld
# and one slurmd per namespaced node) runs the README's `srun ...` line, with this build's binary,
# the tiny config and a scratch run folder, and every step's loss and gradient norm must be bitwise
# those of mpirun on one host with the same layout. Then a stop: `scancel` mid-run sends SIGTERM
# to the ranks, which save and exit 75 (train/stop_signals.h); the same line again resumes, and the
# stopped-and-resumed run must equal the uninterrupted one bitwise.
# Usage: slurm_srun.sh MPIEXEC FIVEFOLD CONFIG README
set -u
mpiexec=$1 fivefold=$2 config=$3 readme=$4
here=$(dirname "$0")
harness="$here/../support/netns_nodes.sh"
slurm="$here/../support/slurm_nodes.sh"
. "$here/../parallel/tiny_job_setup.sh"
"$slurm" check >/dev/null || { "$slurm" check; rm -rf "$out"; exit 77; }
# A set of its own (as on_nodes.sh does), swept by a later 'up' should this test be killed.
FF_NODES_PREFIX=${FF_NODES_PREFIX:-ffs$(printf '%x' $$)}
export FF_NODES_PREFIX FF_NODES_OWNER=$$
cluster=$out/slurm
trap '"$slurm" down "$cluster"; "$harness" down; rm -rf "$out"' EXIT
trap 'exit 143' TERM INT
"$harness" up 2 10gbit >"$log" 2>&1 || fail "the two nodes could not be made"
mkdir -p "$cluster"
"$slurm" up "$cluster" 2 >"$log" 2>&1 || fail "the Slurm cluster did not start"

steps=60
extra=(--data "$out/data" --steps "$steps" --eval-every 0 --threads 1)
# The README's line, word by word, with this build's binary, config and a scratch run folder.
line=$(grep -m 1 '^srun ' "$readme") || fail "no line starting with 'srun ' in $readme"
readme_srun() {  # RUN_FOLDER
  local words=() w found=0
  for w in $line; do
    case "$w" in
      build/fivefold) w=$fivefold found=$((found + 1)) ;;
      configs/small.toml) w=$config found=$((found + 1)) ;;
      /shared/runs/x) w=$1 found=$((found + 1)) ;;
    esac
    words+=("$w")
  done
  [ $found = 3 ] || fail "the README's srun line no longer names build/fivefold, configs/small.toml and /shared/runs/x: $line"
  "$slurm" run "$cluster" "${words[@]}" "${extra[@]}"
}

# The layout the README's line asks for, on one host.
layout=$(grep -o -- '--dp [0-9]*' <<<"$line") || fail "the README's srun line has no --dp"
# shellcheck disable=SC2086  # the layout is two words
"$mpiexec" --oversubscribe -np 4 "$fivefold" train --config "$config" --out "$out/host" $layout "${extra[@]}" \
  >"$log" 2>&1 || fail "one host: train failed"
logged_steps "$out/host/metrics.jsonl" >"$out/host.txt"
[ "$(wc -l <"$out/host.txt")" = $steps ] || fail "one host: $(wc -l <"$out/host.txt") steps logged, expected $steps"

readme_srun "$out/srun" >"$log" 2>&1 || fail "the README's srun line failed: $line"
logged_steps "$out/srun/metrics.jsonl" >"$out/srun.txt"
diff "$out/host.txt" "$out/srun.txt" >>"$log" || fail "srun across two nodes differs from mpirun on one host"
echo "srun across two Slurm nodes: $steps steps, losses and gradient norms bitwise those of mpirun on one host"

# scancel mid-run: Slurm sends SIGTERM to every rank; they save the step they are at and exit 75,
# which srun passes on. The same line again resumes; the two halves are the uninterrupted run.
metrics=$out/stopped/metrics.jsonl
readme_srun "$out/stopped" >"$log" 2>&1 &
srun_pid=$!
until=$((SECONDS + 60))
until grep -q '"step":3,' "$metrics" 2>/dev/null; do
  if ! kill -0 $srun_pid 2>/dev/null || [ $SECONDS -ge $until ]; then fail "the run to cancel never reached step 3"; fi
  sleep 0.05
done
job=$("$slurm" run "$cluster" squeue -h -o %i) || fail "squeue failed"
"$slurm" run "$cluster" scancel "$job" || fail "scancel $job failed"
wait $srun_pid
code=$?
[ $code = 75 ] || fail "srun exited with $code after scancel, expected 75 (the ranks saved and stopped)"
stopped=$(python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
s = [r for r in rows if r.get("event") == "stopped"]
print(s[0]["step"] if len(s) == 1 and s[0]["signal"] == "SIGTERM" else "")' "$metrics")
[ -n "$stopped" ] || fail "no single 'stopped' row naming SIGTERM in $metrics"
[ "$stopped" -lt $steps ] || fail "the run ended before scancel reached it; nothing was stopped"
[ -d "$out/stopped/step_$stopped" ] || fail "no checkpoint step_$stopped after the stop"
echo "scancel: the ranks got SIGTERM, saved step $stopped and exited 75 through srun"
readme_srun "$out/stopped" >"$log" 2>&1 || fail "the resumed run failed"
logged_steps "$metrics" >"$out/stopped.txt"
diff "$out/host.txt" "$out/stopped.txt" >>"$log" || fail "stopped at step $stopped and resumed differs from the uninterrupted run"
echo "resumed with the same line: all $steps steps bitwise equal to the uninterrupted run"
