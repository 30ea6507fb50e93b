#!/usr/bin/python3
"""The learning-rate scaling rule with the global batch, as validation loss at equal samples.

The serial run (global batch 8, lr tuned for 8) against dp 2 (global batch 16) with lr_scaling =
linear, sqrt or none. The warm-up spans the same samples in every run (20 serial steps = 10 dp
steps), and the cosine schedule ends at the same sample count. Evaluations every 80 sequences.

The linear rule (Goyal et al. 2017) is SGD's: one step of k·lr on a k-times batch moves as k steps
of lr do, because the SGD step is linear in the gradient. AdamW's step is not (its size is about
lr whatever the gradient's scale); its rule is the square root (Malladi et al. 2022). So the rule
is measured with --optimizer sgd and --optimizer adamw.

usage: /usr/bin/python3 bench/dp/lr_rule.py --optimizer sgd --lr 0.3 [--steps 96] [--write]
"""
import argparse
import importlib
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from benchlib import publish  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scaling import prepare  # noqa: E402
modes = importlib.import_module("async")  # bench/dp/async.py: train(), svg_plot(), val_curve()

PER_RANK = modes.PER_RANK
COLOURS = {"linear": "#d62728", "sqrt": "#2ca02c", "none": "#1f77b4"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fivefold", default=os.path.join(ROOT, "build/fivefold"))
    ap.add_argument("--text", default=os.path.join(ROOT, "data/kjv.txt"))
    ap.add_argument("--lines", type=int, default=6000)
    ap.add_argument("--steps", type=int, default=96, help="dp 2 steps (the serial run takes twice as many)")
    ap.add_argument("--optimizer", default="adamw")
    ap.add_argument("--lr", type=float, default=2e-3, help="the serial run's lr (batch 8's)")
    ap.add_argument("--grad-clip", type=float, default=1.0)
    ap.add_argument("--rules", default="linear,sqrt,none")
    ap.add_argument("--dp-warmup", type=int, default=10, help="dp 2 warm-up steps (10 = the serial's samples)")
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    rules = a.rules.split(",")
    common = ["--optimizer", a.optimizer, "--lr", str(a.lr), "--grad-clip", str(a.grad_clip)]
    n = a.steps
    with tempfile.TemporaryDirectory() as tmp:
        data, _ = prepare(a, tmp)
        out = os.path.join(tmp, "run")
        serial = modes.train(a, data, out, 1, 2 * n, common + ["--warmup-steps", "20"], eval_every=10)
        print(f"serial: val {serial['val']:.4f}", file=sys.stderr)
        runs = {}
        for rule in rules:
            flags = common + ["--warmup-steps", str(a.dp_warmup), "--lr-scaling", rule,
                              "--lr-reference-batch", str(PER_RANK)]
            runs[rule] = modes.train(a, data, out, 2, n, flags, eval_every=5)
            print(f"{rule}: val {runs[rule]['val']:.4f}", file=sys.stderr)
    s_curve = modes.val_curve(serial["recs"], PER_RANK)
    s_at = dict(s_curve)
    curves = {r: dict(modes.val_curve(runs[r]["recs"], 2 * PER_RANK)) for r in rules}
    factor = {"linear": 2.0, "sqrt": 2 ** 0.5, "none": 1.0}
    head = f"| sequences seen | serial, batch 8, lr {a.lr:g} | " + " | ".join(
        f"dp 2, batch 16, {r} ({a.lr * factor[r]:.3g})" for r in rules) + " |"
    rows = [head, "|" + "---|" * (2 + len(rules))]
    for x, y in s_curve:
        if all(x in curves[r] for r in rules):
            rows.append(f"| {x} | {y:.4f} | " + " | ".join(f"{curves[r][x]:.4f}" for r in rules) + " |")
    gap = {}
    for r in rules:
        g = [abs(curves[r][x] - y) / y for x, y in s_curve if x in curves[r]]
        late = [abs(curves[r][x] - y) / y for x, y in s_curve if x in curves[r] and x >= 0.5 * s_curve[-1][0]]
        final = s_curve[-1][0]
        gap[r] = (max(g), max(late), (curves[r][final] - s_at[final]) / s_at[final])
    name = f"lr_rule_{a.optimizer}_{a.lr:g}.svg"
    modes.svg_plot([("serial, batch 8", "black", s_curve)] +
                   [(f"dp 2, {r}", COLOURS[r], sorted(curves[r].items())) for r in rules],
                   os.path.join(ROOT, "bench/dp", name), f"small, {a.optimizer}: validation loss at equal samples")
    summary = " ".join(
        f"{r}: worst {100 * gap[r][0]:.1f}%, second half {100 * gap[r][1]:.1f}%, final {100 * gap[r][2]:+.1f}%."
        for r in rules)
    title = f"### lr scaling with the global batch, {a.optimizer} at serial lr {a.lr:g}"
    description = (f"`configs/small.toml` on the first {a.lines} KJV verses (vocab 2048), one thread per rank, "
                   f"{PER_RANK} sequences of 128 tokens per rank per step; serial {2 * n} steps, dp 2 {n} steps; "
                   f"optimizer {a.optimizer}, grad_clip {a.grad_clip:g}. Plot: `bench/dp/{name}`. Gaps are "
                   "|dp 2 − serial| / serial at equal samples (worst over every evaluation, worst over the "
                   "second half, signed at the end). Loss runs (nice 19 while other agents worked).")
    publish(title, description, "\n".join(rows), summary, a.write)


if __name__ == "__main__":
    main()
