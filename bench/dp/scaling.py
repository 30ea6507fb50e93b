#!/usr/bin/python3
"""The classic homework: the same model trained for the same tokens by 1 worker and by 2 workers
(one thread each), same global batch, so the math is the same and only the wall time should
change. Reports wall time per epoch and final validation loss for both.

The corpus is the first 6000 verses of the King James Bible (one epoch ~ 200k tokens), so a run
of two epochs of the `small` model takes about a minute per worker layout.

usage: /usr/bin/python3 bench/dp/scaling.py [--epochs 2] [--write]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from benchlib import mpi_env, publish, read_metrics  # noqa: E402

SECTION = "## Data parallel: 1 worker vs 2 workers (scaling)"
MICRO, SEQ = 16, 128  # configs/small.toml's global batch: 16 sequences of 128 tokens


def prepare(a, tmp):
    text = os.path.join(tmp, "verses.txt")
    with open(a.text) as src, open(text, "w") as dst:
        for i, line in enumerate(src):
            if i >= a.lines:
                break
            dst.write(line)
    data = os.path.join(tmp, "data")
    subprocess.run([a.fivefold, "prepare", "--text", text, "--vocab", "2048", "--out", data],
                   check=True, capture_output=True)
    meta = json.load(open(os.path.join(data, "meta.json")))
    return data, meta["train_tokens"]


def train(a, data, workers, steps, out):
    shutil.rmtree(out, ignore_errors=True)
    env = mpi_env()
    cmd = ["mpirun", "--oversubscribe", "-np", str(workers), a.fivefold, "train", "--config",
           os.path.join(ROOT, "configs/small.toml"), "--data", data, "--out", out, "--dp", str(workers),
           "--threads", "1", "--micro-batch", str(MICRO // workers), "--steps", str(steps),
           "--eval-every", str(steps), "--eval-batches", "16", "--log-every", "1000"]
    start = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.time() - start
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    recs = read_metrics(out)
    return {"train_s": sum(r["step_seconds"] for r in recs), "wall_s": wall, "val": recs[-1]["val_loss"],
            "loss": recs[-1]["loss"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fivefold", default=os.path.join(ROOT, "build/fivefold"))
    ap.add_argument("--text", default=os.path.join(ROOT, "data/kjv.txt"))
    ap.add_argument("--lines", type=int, default=6000)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3, help="alternating 1-worker/2-worker rounds; medians reported")
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data, tokens = prepare(a, tmp)
        steps_per_epoch = tokens // (MICRO * SEQ)
        steps = steps_per_epoch * a.epochs
        ones, twos = [], []
        for r in range(a.rounds):
            ones.append(train(a, data, 1, steps, os.path.join(tmp, "w1")))
            twos.append(train(a, data, 2, steps, os.path.join(tmp, "w2")))
            print(f"round {r + 1}: 1 worker {ones[-1]['train_s']:.1f} s, 2 workers {twos[-1]['train_s']:.1f} s",
                  file=sys.stderr)
    # The median round by training time; losses are the same in every round (same math, same data).
    pick = lambda runs: sorted(runs, key=lambda x: x["train_s"])[len(runs) // 2]
    one, two = pick(ones), pick(twos)
    per_epoch = lambda r: r["train_s"] / a.epochs
    rows = ["| workers | wall time per epoch (training steps) | whole run incl. start-up | final val loss | final train loss |",
            "|---|---|---|---|---|"]
    for n, r in ((1, one), (2, two)):
        rows.append(f"| {n} | {per_epoch(r):.1f} s | {r['wall_s']:.1f} s | {r['val']:.4f} | {r['loss']:.4f} |")
    table = "\n".join(rows)
    speedup = per_epoch(one) / per_epoch(two)
    loss_gap = abs(two["val"] - one["val"]) / one["val"]
    all_speedups = ", ".join(f"{x['train_s'] / y['train_s']:.2f}x" for x, y in zip(ones, twos))
    summary = (f"Speed-up {speedup:.2f}x, median of {a.rounds} rounds ({all_speedups}; target >= 1.8x); "
               f"final validation losses differ by "
               f"{100 * loss_gap:.3f}% (target within 1%). {steps} steps = {a.epochs} epochs of {tokens} tokens.")
    description = (f"`configs/small.toml` (global batch {MICRO} x {SEQ}) on the first {a.lines} verses of the "
                   f"KJV (vocab 2048), 1 thread per worker; the 2-worker run takes {MICRO // 2} sequences per "
                   f"rank per step. Rounds alternate the two layouts.")
    publish(SECTION, description, table, summary, a.write)


if __name__ == "__main__":
    main()
