#!/bin/bash
# Two builds alternating, `small` dp 2 with one rank on each of two namespaced nodes over a
# RATE link: tokens/s, the median time each rank waits for the gradients after backward (the
# trace's "wait gradients" span, which every build has) and the last step's loss and gradient
# norm (which must be equal). Needs root.
#   bench/multinode/before_after.sh OLD_FIVEFOLD NEW_FIVEFOLD [RATE=1gbit] [ROUNDS=2] [DATA]
# DATA: a prepared corpus (default: the KJV, vocab 4096, prepared into a temporary folder).
set -euo pipefail
old=$(realpath "$1") new=$(realpath "$2") rate=${3:-1gbit} rounds=${4:-2}
cd "$(dirname "$0")/../.."
export FF_NODES_PREFIX=${FF_NODES_PREFIX:-ffo}
data=${5:-}
source bench/multinode/nodes_and_corpus.sh
echo "link $rate; CPU: $(lscpu | sed -n 's/^Model name: *//p')"
for round in $(seq "$rounds"); do
  for ff in "$old" "$new"; do
    rm -rf "$work/run"
    "$H" mpirun --hostfile "$("$H" hostfile 1)" -np 2 "$ff" train --config configs/small.toml --data "$data" \
      --out "$work/run" --dp 2 --threads 1 --steps 10 --eval-every 0 --log-every 100 --tensorboard false \
      --trace "$work/trace.json" >/dev/null
    /usr/bin/python3 - "$ff" "$round" "$work" <<'PY'
import json, statistics, sys
ff, rnd, work = sys.argv[1:4]
events = json.load(open(f"{work}/trace.json"))["traceEvents"]
recs = [json.loads(line) for line in open(f"{work}/run/metrics.jsonl")][2:]  # first 2: warm-up
tok = 4096 * len(recs) / sum(r["step_seconds"] for r in recs)
waits = [statistics.median([e["dur"] / 1e3 for e in events if e.get("pid") == pid and e.get("name") == "wait gradients"][2:])
         for pid in (0, 1)]
print(f"round {rnd} {ff}: {tok:.0f} tokens/s, wait after backward (median) rank 0 {waits[0]:.0f} ms, "
      f"rank 1 {waits[1]:.0f} ms; last loss {recs[-1]['loss']!r} grad norm {recs[-1]['grad_norm']!r}")
PY
  done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
