#!/bin/bash
# Two builds alternating round by round: `fivefold train --layout LAYOUT` of configs/small.toml on
# 2 namespaced nodes x 2 ranks over a RATE link (one thread per rank). Prints each run's median
# step time (the first 2 steps skipped) and last loss and gradient norm, each round's new / old
# ratio and the median ratio. Needs root.
#   bench/multinode/layout_before_after.sh OLD_FIVEFOLD NEW_FIVEFOLD [LAYOUT] [RATE=1gbit] [ROUNDS=3] [DATA]
# LAYOUT defaults to dp=4,mb=4,m=1,zero=3. DATA: a prepared corpus (default: the KJV, vocab 4096,
# prepared into a temporary folder).
set -euo pipefail
old=$(realpath "$1") new=$(realpath "$2") layout=${3:-dp=4,mb=4,m=1,zero=3} rate=${4:-1gbit} rounds=${5:-3}
cd "$(dirname "$0")/../.."
export FF_NODES_PREFIX=${FF_NODES_PREFIX:-ffl}
data=${6:-}
source bench/multinode/nodes_and_corpus.sh
echo "layout $layout, link $rate; CPU: $(lscpu | sed -n 's/^Model name: *//p'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$rounds"); do
  for ff in "$old" "$new"; do
    rm -rf "$work/run"
    "$H" mpirun --hostfile "$("$H" hostfile 2)" -np 4 -x OMP_NUM_THREADS=1 "$ff" train --config configs/small.toml \
      --data "$data" --out "$work/run" --layout "$layout" --threads 1 --steps 10 --eval-every 0 --log-every 100 \
      --tensorboard false >/dev/null
    /usr/bin/python3 - "$ff" "$round" "$work/run/metrics.jsonl" "$work/ratios" "$old" <<'PY'
import json, statistics, sys
ff, rnd, metrics, ratios, old = sys.argv[1:6]
recs = [r for r in map(json.loads, open(metrics)) if "step_seconds" in r][2:]  # first 2: warm-up
ms = 1e3 * statistics.median(r["step_seconds"] for r in recs)
line = f"round {rnd} {ff}: step {ms:.0f} ms (median), last loss {recs[-1]['loss']!r} grad norm {recs[-1]['grad_norm']!r}"
if ff == old:
    open(ratios + ".old", "w").write(str(ms))
else:
    ratio = ms / float(open(ratios + ".old").read())
    open(ratios, "a").write(f"{ratio}\n")
    line += f"; new / old {ratio:.3f}"
print(line, flush=True)
PY
  done
done
/usr/bin/python3 -c "import statistics,sys; r=[float(x) for x in open(sys.argv[1])]; print(f'median new / old step time: {statistics.median(r):.3f} over {len(r)} rounds')" "$work/ratios"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
