#!/bin/bash
# Slurm on namespaced nodes (tests/support/slurm_nodes.sh): two compute nodes running slurmd and a
# head node running slurmctld, where srun is typed. Every step's loss and gradient norm is checked
# bitwise against mpirun on one host with the same layout.
#   readme: the README's `srun ...` line, with this build's binary, the tiny config and a scratch
#           run folder. Then `scancel` mid-run: Slurm sends SIGTERM to the ranks, which save and
#           exit 75 (train/stop_signals.h); the same line again resumes to the same bits.
#   launch: `fivefold launch -- srun ...`: rank 3 (on node 1) is killed at a random step, launch
#           reads srun's words for it and restarts; later a SIGTERM to launch reaches the ranks
#           (launch -> SIGUSR1 -> srun forwards it), which save, and launch exits 75; launch again
#           finishes the run. Every step logged, redone ones included, is the uninterrupted run's.
# Usage: slurm_srun.sh readme|launch MPIEXEC FIVEFOLD CONFIG README   (FF_FAULT_STEP fixes the step)
set -u
mode=$1 mpiexec=$2 fivefold=$3 config=$4 readme=$5
case "$mode" in readme | launch) ;; *) echo "mode must be readme or launch, got '$mode'" >&2; exit 2 ;; esac
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
"$harness" up 3 10gbit >"$log" 2>&1 || fail "the three nodes could not be made"
mkdir -p "$cluster"
"$slurm" up "$cluster" 2 >"$log" 2>&1 || fail "the Slurm cluster did not start"

steps=60
extra=(--data "$out/data" --steps "$steps" --ckpt-every 5 --eval-every 0 --threads 1)
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

# Waits until METRICS logs step STEP; fails should the job (PID) end first or 120 s pass.
wait_for_step() {  # METRICS STEP PID
  local until=$((SECONDS + 120))
  until grep -q "\"step\":$2," "$1" 2>/dev/null; do
    if ! kill -0 "$3" 2>/dev/null || [ $SECONDS -ge $until ]; then fail "the job never reached step $2"; fi
    sleep 0.05
  done
}
# The step of METRICS's one "stopped" row if SIGNAL stopped it, else nothing.
stopped_step() {  # METRICS SIGNAL
  python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
s = [r for r in rows if r.get("event") == "stopped"]
print(s[0]["step"] if len(s) == 1 and s[0]["signal"] == sys.argv[2] else "")' "$1" "$2"
}

case "$mode" in
readme)
readme_srun "$out/srun" >"$log" 2>&1 || fail "the README's srun line failed: $line"
logged_steps "$out/srun/metrics.jsonl" >"$out/srun.txt"
diff "$out/host.txt" "$out/srun.txt" >>"$log" || fail "srun across two nodes differs from mpirun on one host"
echo "srun across two Slurm nodes: $steps steps, losses and gradient norms bitwise those of mpirun on one host"

# scancel mid-run: Slurm sends SIGTERM to every rank; they save the step they are at and exit 75,
# which srun passes on. The same line again resumes; the two halves are the uninterrupted run.
metrics=$out/stopped/metrics.jsonl
readme_srun "$out/stopped" >"$log" 2>&1 &
srun_pid=$!
wait_for_step "$metrics" 3 $srun_pid
job=$("$slurm" run "$cluster" squeue -h -o %i) || fail "squeue failed"
"$slurm" run "$cluster" scancel "$job" || fail "scancel $job failed"
wait $srun_pid
code=$?
[ $code = 75 ] || fail "srun exited with $code after scancel, expected 75 (the ranks saved and stopped)"
stopped=$(stopped_step "$metrics" SIGTERM)
[ -n "$stopped" ] || fail "no single 'stopped' row naming SIGTERM in $metrics"
[ "$stopped" -lt $steps ] || fail "the run ended before scancel reached it; nothing was stopped"
[ -d "$out/stopped/step_$stopped" ] || fail "no checkpoint step_$stopped after the stop"
echo "scancel: the ranks got SIGTERM, saved step $stopped and exited 75 through srun"
readme_srun "$out/stopped" >"$log" 2>&1 || fail "the resumed run failed"
logged_steps "$metrics" >"$out/stopped.txt"
diff "$out/host.txt" "$out/stopped.txt" >>"$log" || fail "stopped at step $stopped and resumed differs from the uninterrupted run"
echo "resumed with the same line: all $steps steps bitwise equal to the uninterrupted run"
;;

launch)
metrics=$out/launch/metrics.jsonl
# A plain command, not a function: in the background, $! is then launch itself (every wrapper execs).
# shellcheck disable=SC2206  # the layout is two words
launch_srun=("$slurm" run "$cluster" "$fivefold" launch --max-restarts 2 --backoff 1 --
             srun --nodes=2 --ntasks-per-node=2 "$fivefold" train --config "$config" --out "$out/launch" $layout "${extra[@]}")
fault_step=${FF_FAULT_STEP:-$((6 + RANDOM % 20))}
echo "KILL 3 $fault_step" >"$out/fault_plan"
echo "rank 3 killed before step $fault_step"
FF_FAULT_PLAN=$out/fault_plan "${launch_srun[@]}" >"$log" 2>&1 &
launch_pid=$!
wait_for_step "$metrics" $((fault_step + 10)) $launch_pid
kill -TERM $launch_pid
wait $launch_pid
code=$?
[ $code = 75 ] || fail "launch exited with $code after SIGTERM, expected 75 (the ranks saved and stopped)"
restarts=$(grep -c '"event":"restart"' "$metrics")
[ "$restarts" = 1 ] || fail "$restarts restarts logged, expected 1"
grep '"event":"restart"' "$metrics" | grep -q "\"reason\":\"rank 3 on ${FF_NODES_PREFIX}1 ended: Killed\"" ||
  fail "the restart does not name rank 3 on ${FF_NODES_PREFIX}1: $(grep '"event":"restart"' "$metrics")"
stopped=$(stopped_step "$metrics" SIGUSR1)
[ -n "$stopped" ] || fail "no single 'stopped' row naming SIGUSR1 (launch's stop, forwarded by srun) in $metrics"
echo "launch over srun: restarted once after rank 3 on ${FF_NODES_PREFIX}1 died; SIGTERM stopped it at step $stopped, exit 75"
"${launch_srun[@]}" >"$log" 2>&1 || fail "launch again after the stop failed"
# Redone steps appear twice; once duplicates are dropped, every step must be the uninterrupted run's.
logged_steps "$metrics" | sort -u | sort -n -k 1,1 >"$out/launch.txt"
diff "$out/host.txt" "$out/launch.txt" >>"$log" || fail "a step of the restarted and stopped run differs from the uninterrupted run"
echo "resumed: every logged step bitwise equal to the uninterrupted run"
;;
esac
