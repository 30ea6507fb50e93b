#!/bin/sh
# One family end to end against the float64 reference (reference.py):
#   make_family -> import --hf -> eval (loss and logits) and greedy sample on the imported model
#   -> train --init-from 20 steps serial, dp 2 ZeRO-3, tp 2 + sp, pp 2 (losses and grad norms equal
#   serial) -> export fp32 -> the reference reads the exported folder (logits equal fivefold's on
#   the trained model) -> exported tokenizer files byte-identical to the imported ones.
# usage: run_family.sh FAMILY FIVEFOLD WORKDIR
set -e
family=$1 fivefold=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
mpi="mpirun -np 2 --oversubscribe"
rm -rf "$work" && mkdir -p "$work" && cd "$work"
step() { echo "== $*"; }
# run LOG COMMAND...: the command's output to LOG, shown when it fails (sh has no pipefail for tee).
run() {
  log=$1
  shift
  "$@" >"$log" 2>&1 || { cat "$log"; echo "FAIL $family: $*"; exit 1; }
}

step make_family
$py "$here/make_family.py" "$family" hf corpus.txt
step import
run import.log "$fivefold" import --hf hf --out imported
cat import.log
step prepare
run prepare.log "$fivefold" prepare --text corpus.txt --one-doc-per-line --tokenizer hf/tokenizer.json --val-fraction 0.2 --out data
cat prepare.log
val=data/val-00000.bin

# The imported model at its own seq_len: one window (TinyLlama's 2048 tokens need a long val shard).
step eval imported
run eval_imported.log "$fivefold" eval --ckpt imported --data $val --max-windows 1 --batch 1 --doc-mask false --logits imported.npy
cat eval_imported.log
loss=$(sed -n 's/.*: loss \([^ ]*\) over .*/\1/p' eval_imported.log)
$py "$here/reference.py" eval hf $val imported.npy "$loss"

step greedy sample
seq_len=$($py -c "import numpy as np; print(np.load('imported.npy', mmap_mode='r').shape[1])")
eos=$($py -c "import json; print(json.load(open('hf/config.json'))['eos_token_id'])")
tok_size=$($py -c "
import json; t = json.load(open('hf/tokenizer.json'))
print(max([a['id'] for a in t['added_tokens']] + list(t['model']['vocab'].values())) + 1)")
run sample.log "$fivefold" sample --ckpt imported --prompt "Kalo mine rusa to" --temperature 0 --max-tokens 12 --ids-out greedy.json
cat greedy.json
$py "$here/reference.py" greedy hf greedy.json "$seq_len" "$eos" "$tok_size" --max-tokens 12

# 20 steps from the imported weights; every layout with the serial run's global batch of 4 rows.
train="train --init-from imported --data data --steps 20 --seq-len 32 --lr 1e-3 --warmup-steps 2 --eval-every 0 --threads 1 --doc-mask false"
step train serial
run serial.log "$fivefold" $train --micro-batch 2 --grad-accum 2 --out serial
step train dp 2 zero 3
run dp2z3.log $mpi "$fivefold" $train --micro-batch 2 --grad-accum 1 --dp 2 --zero 3 --out dp2z3
step train tp 2 sp
run tp2sp.log $mpi "$fivefold" $train --micro-batch 2 --grad-accum 2 --tp 2 --sp true --out tp2sp
step train pp 2
run pp2.log $mpi "$fivefold" $train --micro-batch 2 --grad-accum 2 --pp 2 --out pp2
for layout in dp2z3 tp2sp pp2; do
  $py "$here/compare_runs.py" serial/metrics.jsonl $layout/metrics.jsonl 20
done

step export
run export.log "$fivefold" export --ckpt serial --out exported --dtype fp32
run eval_trained.log "$fivefold" eval --ckpt serial --data $val --max-windows 2 --doc-mask false --logits trained.npy
cat eval_trained.log
loss=$(sed -n 's/.*: loss \([^ ]*\) over .*/\1/p' eval_trained.log)
$py "$here/reference.py" eval exported $val trained.npy "$loss" --dtype F32
# config.json in the family's own form: every field the model's shape, rope and vocabulary take
# as the original folder has it (absent rope_scaling reads as null; fivefold keeps eps, theta and
# the rope factors as float32, so 1e-5 may come back as 9.99999975e-06).
$py - <<'PYEOF'
import json, sys
import numpy as np
def same(x, y):
    if isinstance(x, dict) and isinstance(y, dict):
        return x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)
    if isinstance(x, float) or isinstance(y, float):
        return isinstance(y, (int, float)) and isinstance(x, (int, float)) and np.float32(x) == np.float32(y)
    return x == y
a, b = json.load(open("hf/config.json")), json.load(open("exported/config.json"))
keys = ["architectures", "model_type", "hidden_act", "hidden_size", "intermediate_size", "num_hidden_layers",
        "num_attention_heads", "num_key_value_heads", "head_dim", "rms_norm_eps", "rope_theta", "rope_scaling",
        "tie_word_embeddings", "vocab_size", "max_position_embeddings", "use_sliding_window"]
diff = [f"{k}: {a.get(k)!r} -> {b.get(k)!r}" for k in keys if (k in a or k == "rope_scaling") and not same(a.get(k), b.get(k))]
if diff:
    sys.exit("FAIL exported config.json differs from the imported one: " + "; ".join(diff))
print("PASS exported config.json keeps", ", ".join(k for k in keys if k in a))
PYEOF
for f in tokenizer.json tokenizer_config.json special_tokens_map.json; do
  cmp hf/$f exported/$f
done
echo "PASS $family"
