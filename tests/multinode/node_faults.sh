#!/bin/bash
# A node or its link dies mid-run under `fivefold launch`; the job restarts from its last
# checkpoint and every step's loss and gradient norm equal those of an uninterrupted run, bitwise.
#   kill: at a random step every process of node 1's namespace (its ranks and Open MPI's daemon)
#         gets SIGKILL at once. The namespace stays, as a crashed host that reboots at once, so the
#         first restart finds the node back. launch must notice within a bound (timed here).
#   link: node 1's veth goes down for longer than collective_timeout. The watchdog ends the job
#         naming the node the collective waits on; a restart while the link is still down fails
#         (Open MPI's daemon there cannot reach mpirun) and backs off longer; the test brings the
#         link up once that second failure is logged, and the next restart finishes the run.
# Every wait is bounded; the namespaces go on exit, also on failure.
# Usage: node_faults.sh kill|link MPIEXEC FIVEFOLD CONFIG   (FF_FAULT_STEP fixes the step)
set -u
mode=$1 mpiexec=$2 fivefold=$3 config=$4
here=$(dirname "$0")
harness="$here/../support/netns_nodes.sh"
. "$here/../parallel/tiny_job_setup.sh"
"$harness" check >/dev/null || { "$harness" check; rm -rf "$out"; exit 77; }
FF_NODES_PREFIX=ffk$(printf '%x' $$)
export FF_NODES_PREFIX FF_NODES_OWNER=$$
node1=${FF_NODES_PREFIX}1
trap '"$harness" down; rm -rf "$out"' EXIT
trap 'exit 143' TERM INT
"$harness" up 2 10gbit >"$log" 2>&1 || fail "the two nodes could not be made"

steps=40
timeout_s=10  # collective_timeout
flags="--config $config --data $out/data --steps $steps --ckpt-every 5 --eval-every 0 --threads 1 --log-every 1000
       --tp 2 --dp 2 --collective-timeout $timeout_s"
# shellcheck disable=SC2086  # flags are several words
"$mpiexec" --oversubscribe -np 4 "$fivefold" train $flags --out "$out/reference" >"$log" 2>&1 ||
  fail "the uninterrupted run failed"

metrics=$out/run/metrics.jsonl
rows() { grep -c "\"event\":\"$1\"" "$metrics" 2>/dev/null; }
# Waits up to $2 seconds for a shell condition; false when it never held.
wait_for() {
  local until=$((SECONDS + $2))
  while ! eval "$1"; do
    [ $SECONDS -lt $until ] || return 1
    kill -0 "$launch_pid" 2>/dev/null || return 1
    sleep 0.1
  done
}

# shellcheck disable=SC2086
"$fivefold" launch --max-restarts 4 --backoff 1 --stop-grace 1 -- \
  "$harness" mpirun --hostfile "$("$harness" hostfile 2)" -np 4 -x OMP_NUM_THREADS \
  "$fivefold" train $flags --out "$out/run" >"$out/launch.txt" 2>&1 &
launch_pid=$!
fault_step=${FF_FAULT_STEP:-$((8 + RANDOM % 20))}
echo "fault at step $fault_step"
# The job's own output, then why the test gave up.
give_up() { cat "$out/launch.txt" >>"$log"; fail "$1"; }
wait_for "grep -q '\"step\":$fault_step,' '$metrics' 2>/dev/null" 120 || give_up "step $fault_step never came"
start=$(date +%s.%N)
case "$mode" in
  kill)
    # shellcheck disable=SC2046  # one pid a word
    kill -9 $(ip netns pids "$node1") 2>/dev/null
    wait_for '[ "$(rows restart)" -ge 1 ]' 60 || give_up "launch did not restart within 60 s of the node's death"
    echo "launch noticed the dead node and restarted after $(echo "$(date +%s.%N) - $start" | bc) s" ;;
  link)
    ip -n "$node1" link set ffnet down
    wait_for '[ "$(rows restart)" -ge 2 ]' 120 ||
      give_up "no second restart within 120 s of the link going down"
    echo "two failed attempts $(echo "$(date +%s.%N) - $start" | bc) s after the link went down; link up"
    ip -n "$node1" link set ffnet up ;;
  *) fail "mode must be kill or link, got '$mode'" ;;
esac
timeout 300 tail --pid="$launch_pid" -f /dev/null || fail "launch still running 300 s after the fault"
wait "$launch_pid"
code=$?
cat "$out/launch.txt" >"$log"
[ $code = 0 ] || fail "launch exited with $code, expected 0 (the run finished after restarts)"

# The restarts, their reasons and back-offs; then every logged step against the reference.
reference=$out/reference/metrics.jsonl
python3 - "$mode" "$metrics" "$reference" "$FF_NODES_PREFIX" "$steps" >>"$log" <<'EOF' || fail "see above"
import json, re, sys
mode, faulted, reference, prefix, steps = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
def records(path):
    return [json.loads(line) for line in open(path)]
ref = {r["step"]: (r["loss"], r["grad_norm"]) for r in records(reference) if "loss" in r}
rows = records(faulted)
restarts = [r for r in rows if r.get("event") == "restart"]
for r in restarts:
    print(f"restart {r['restart']} after step {r['step']}, back-off {r['backoff_s']} s: {r['reason']}")
bad = []
if mode == "kill":
    if len(restarts) != 1: bad.append(f"{len(restarts)} restarts, expected 1 (the node was back at once)")
    elif "node" not in restarts[0]["reason"] or "launcher exited with code" in restarts[0]["reason"]:
        bad.append("the restart's reason does not say a node was lost: " + restarts[0]["reason"])
else:
    if len(restarts) < 2: bad.append(f"{len(restarts)} restarts, expected at least 2")
    else:
        first = restarts[0]["reason"]
        if not re.search(r"past collective_timeout .* on node " + prefix + "[01]", first):
            bad.append("the first restart is not the watchdog naming the node it waits on: " + first)
        if "daemon" not in restarts[1]["reason"]:
            bad.append("the second restart (link still down) is not a daemon failing to start: "
                       + restarts[1]["reason"])
    backoffs = [r["backoff_s"] for r in restarts]
    if any(b <= a for a, b in zip(backoffs, backoffs[1:])): bad.append(f"back-offs do not grow: {backoffs}")
# Every step row, the ones an attempt redid included, must be the uninterrupted run's bits.
seen = set()
for r in rows:
    if "loss" not in r: continue
    seen.add(r["step"])
    if (r["loss"], r["grad_norm"]) != ref.get(r["step"]):
        bad.append(f"step {r['step']}: loss {r['loss']!r} grad_norm {r['grad_norm']!r}, "
                   f"uninterrupted {ref.get(r['step'])!r}")
if seen != set(range(1, steps + 1)) or len(ref) != steps:
    bad.append(f"steps logged: {sorted(seen)}; uninterrupted: {len(ref)}")
for b in bad: print("FAIL:", b)
if not bad: print(f"all {steps} steps bitwise equal to the uninterrupted run")
sys.exit(1 if bad else 0)
EOF
grep -E "^(restart|all )" "$log"
# Nothing of the job is left on either node (a daemon cut off by the link ends once it is back).
wait_for_gone() {
  local until=$((SECONDS + 30))
  while [ -n "$(ip netns pids "${FF_NODES_PREFIX}0")$(ip netns pids "$node1")" ]; do
    [ $SECONDS -lt $until ] || return 1
    sleep 0.2
  done
}
wait_for_gone || fail "processes left on the nodes 30 s after launch ended: $(ip netns pids "${FF_NODES_PREFIX}0")
  $(ip netns pids "$node1")"
echo "no process left on the nodes"
