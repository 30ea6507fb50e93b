#!/bin/sh
# The checks of this folder can fail: the reference rejects fivefold's numbers for a checkpoint with
# one weight perturbed and a greedy continuation with one token id changed, and compare_runs.py
# rejects a changed loss, a changed grad norm and a missing step. Uses what import does today
# (a TinyLlama-shaped folder, the tokenizer file import keeps).
# usage: selftest.sh FIVEFOLD WORKDIR
set -e
fivefold=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
rm -rf "$work" && mkdir -p "$work" && cd "$work"
expect() {  # expect STATUS COMMAND...: the command exits with STATUS
  want=$1
  shift
  set +e
  "$@"
  got=$?
  set -e
  [ "$got" = "$want" ] || { echo "FAIL selftest: exit $got, want $want: $*"; exit 1; }
}
$py "$here/make_family.py" tinyllama hf corpus.txt
$py "$here/make_family.py" tinyllama perturbed corpus.txt --perturb
"$fivefold" import --hf hf --out imported >import.log
tok=$(ls imported/tokenizer.json imported/tokenizer.model 2>/dev/null | head -n 1)
"$fivefold" prepare --text corpus.txt --one-doc-per-line --tokenizer "$tok" --val-fraction 0.2 --out data >prepare.log
"$fivefold" eval --ckpt imported --data data/val-00000.bin --max-windows 1 --batch 1 --doc-mask false --logits l.npy >eval.log
loss=$(sed -n 's/.*: loss \([^ ]*\) over .*/\1/p' eval.log)
expect 0 $py "$here/reference.py" eval hf data/val-00000.bin l.npy "$loss"
expect 1 $py "$here/reference.py" eval perturbed data/val-00000.bin l.npy "$loss"

"$fivefold" sample --ckpt imported --prompt "Kalo mine rusa to" --temperature 0 --max-tokens 8 --ids-out ids.json >sample.log
expect 0 $py "$here/reference.py" greedy hf ids.json 2048 2 512 --max-tokens 8
$py -c "
import json; g = json.load(open('ids.json')); g['continuation'][3] = (g['continuation'][3] + 1) % 512
json.dump(g, open('changed.json', 'w'))"
expect 1 $py "$here/reference.py" greedy hf changed.json 2048 2 512 --max-tokens 8

# Metrics: a run equals itself; a loss or grad norm moved by 2e-5 relative, or a missing step, does not.
$py -c "
import json
rows = [{'step': s, 'loss': 5.0 - 0.1 * s, 'grad_norm': 1.0 + 0.01 * s, 'lr': 1e-3} for s in range(1, 21)]
def write(name, rows):
    with open(name, 'w') as f:
        f.write(''.join(json.dumps(r) + '\n' for r in rows))
write('a.jsonl', rows)
write('loss.jsonl', [dict(r, loss=r['loss'] * (1 + 2e-5)) if r['step'] == 7 else r for r in rows])
write('norm.jsonl', [dict(r, grad_norm=r['grad_norm'] * (1 - 2e-5)) if r['step'] == 20 else r for r in rows])
write('short.jsonl', rows[:-1])"
expect 0 $py "$here/compare_runs.py" a.jsonl a.jsonl 20
expect 1 $py "$here/compare_runs.py" a.jsonl loss.jsonl 20
expect 1 $py "$here/compare_runs.py" a.jsonl norm.jsonl 20
expect 1 $py "$here/compare_runs.py" a.jsonl short.jsonl 20
echo "PASS selftest"
