#!/usr/bin/python3
"""Issue 14: synchronous DP against local SGD, DiLoCo and bounded-staleness async DP, and the
linear learning-rate scaling rule.

1. Convergence and speed: `small` on 2 ranks (one thread each, 8 sequences per rank per step), the
   same number of steps for every mode: final validation loss, training wall time, bytes each
   rank sent over the data-parallel group (Comm's counters, printed by fivefold train).
2. The same modes with rank 1 slowed 2x (--simulate-straggler 1:2): tokens/s.
3. The linear rule: serial (global batch 8, lr tuned for 8) against dp 2 (global batch 16) with
   lr_scaling = linear (and without), validation loss at equal samples; an SVG plot.

usage: nice -n 10 /usr/bin/python3 bench/dp/async.py [--steps 100] [--write]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from benchlib import mpi_env, publish, read_metrics  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scaling import prepare  # noqa: E402  (the same corpus: the first verses of the KJV, vocab 2048)

SECTION = "## Issue 14: asynchronous DP, local SGD, DiLoCo, learning-rate scaling"
PER_RANK, SEQ = 8, 128
MODES = [("sync", []),
         ("local_sgd H=8", ["--dp-mode", "local_sgd", "--sync-every", "8"]),
         ("diloco H=8", ["--dp-mode", "diloco", "--sync-every", "8"]),
         ("diloco H=32", ["--dp-mode", "diloco", "--sync-every", "32"]),
         ("async s=1", ["--dp-mode", "async", "--max-staleness", "1"]),
         ("async s=2", ["--dp-mode", "async", "--max-staleness", "2"])]


def train(a, data, out, ranks, steps, flags, eval_every=None):
    shutil.rmtree(out, ignore_errors=True)
    cmd = ["mpirun", "--oversubscribe", "-np", str(ranks), a.fivefold, "train", "--config",
           os.path.join(ROOT, "configs/small.toml"), "--data", data, "--out", out, "--threads", "1",
           "--micro-batch", str(PER_RANK), "--steps", str(steps), "--eval-every", str(eval_every or steps),
           "--eval-batches", "8", "--log-every", "1000"] + flags
    p = subprocess.run(cmd, capture_output=True, text=True, env=mpi_env())
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    recs = read_metrics(out)
    m = re.search(r"data-parallel bytes sent per rank: (\d+)", p.stdout)
    train_s = sum(r["step_seconds"] for r in recs)
    return {"recs": recs, "train_s": train_s, "val": recs[-1].get("val_loss"), "bytes": int(m.group(1)) if m else 0,
            "tok_s": len(recs) * PER_RANK * ranks * SEQ / train_s}


def svg_plot(series, path, title):
    """series: [(label, colour, [(samples, val_loss), ...])] as a small line chart."""
    W, H, L, B = 640, 400, 60, 40
    xs = [x for _, _, pts in series for x, _ in pts]
    ys = [y for _, _, pts in series for _, y in pts]
    x0, x1, y0, y1 = 0, max(xs), min(ys) - 0.05, max(ys) + 0.05
    px = lambda x: L + (W - L - 20) * (x - x0) / (x1 - x0)
    py = lambda y: H - B - (H - B - 30) * (y - y0) / (y1 - y0)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="18" text-anchor="middle">{title}</text>',
           f'<line x1="{L}" y1="{H - B}" x2="{W - 20}" y2="{H - B}" stroke="black"/>',
           f'<line x1="{L}" y1="30" x2="{L}" y2="{H - B}" stroke="black"/>',
           f'<text x="{W / 2}" y="{H - 8}" text-anchor="middle">training sequences seen</text>',
           f'<text x="14" y="{H / 2}" transform="rotate(-90 14 {H / 2})" text-anchor="middle">validation loss</text>']
    for i in range(5):
        x = x0 + (x1 - x0) * i / 4
        y = y0 + (y1 - y0) * i / 4
        out.append(f'<text x="{px(x)}" y="{H - B + 16}" text-anchor="middle">{x:.0f}</text>')
        out.append(f'<text x="{L - 6}" y="{py(y) + 4}" text-anchor="end">{y:.2f}</text>')
    for k, (label, colour, pts) in enumerate(series):
        d = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
        out.append(f'<polyline points="{d}" fill="none" stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{W - 200}" y="{50 + 16 * k}" fill="{colour}">{label}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def mode_rows(runs, slow):
    ref = runs["sync"]
    rows = ["| mode | final val loss | training wall time | bytes sent per rank (dp group) | bytes vs sync | tokens/s "
            "| rank 0 tokens/s, rank 1 slowed 2x |", "|---|---|---|---|---|---|---|"]
    for name, _ in MODES:
        r = runs[name]
        rows.append(f"| {name} | {r['val']:.4f} | {r['train_s']:.1f} s | {r['bytes'] / 1e6:.1f} MB | "
                    f"{r['bytes'] / ref['bytes']:.3f} | {r['tok_s']:.0f} | {slow[name]['tok_s']:.0f} |")
    return rows


def val_curve(recs, sequences_per_step):
    return [(r["step"] * sequences_per_step, r["val_loss"]) for r in recs if "val_loss" in r]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fivefold", default=os.path.join(ROOT, "build/fivefold"))
    ap.add_argument("--text", default=os.path.join(ROOT, "data/kjv.txt"))
    ap.add_argument("--lines", type=int, default=6000)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--straggler-steps", type=int, default=20)
    ap.add_argument("--lr", type=float, default=2e-3, help="the serial run's lr (the reference batch's)")
    ap.add_argument("--linear-only", action="store_true", help="only part 3, the linear rule")
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data, _ = prepare(a, tmp)
        out = os.path.join(tmp, "run")
        runs, slow = {}, {}
        for name, flags in ([] if a.linear_only else MODES):
            runs[name] = train(a, data, out, 2, a.steps, flags)
            print(f"{name}: {runs[name]['train_s']:.1f} s, val {runs[name]['val']:.4f}", file=sys.stderr)
        for name, flags in ([] if a.linear_only else MODES):  # short runs: only the rate matters
            slow[name] = train(a, data, out, 2, a.straggler_steps, flags + ["--simulate-straggler", "1:2"])
            print(f"{name} with a straggler: {slow[name]['tok_s']:.0f} tok/s", file=sys.stderr)
        # The linear rule: lr 2e-3 is small.toml's, taken as tuned for the serial batch of 8.
        n = a.steps
        lr = ["--lr", str(a.lr)]
        serial = train(a, data, out, 1, 2 * n, lr + ["--warmup-steps", "20"], eval_every=10)
        linear = train(a, data, out, 2, n, lr + ["--warmup-steps", "10", "--lr-scaling", "linear",
                                                 "--lr-reference-batch", str(PER_RANK)], eval_every=5)
        plain = train(a, data, out, 2, n, lr + ["--warmup-steps", "10"], eval_every=5)
    rows = [] if a.linear_only else mode_rows(runs, slow)
    s_curve, l_curve, p_curve = val_curve(serial["recs"], PER_RANK), val_curve(linear["recs"], 2 * PER_RANK), \
        val_curve(plain["recs"], 2 * PER_RANK)
    s_at = dict(s_curve)
    gaps = [abs(y - s_at[x]) / s_at[x] for x, y in l_curve if x in s_at]
    gaps_plain = [abs(y - s_at[x]) / s_at[x] for x, y in p_curve if x in s_at]
    late = [abs(y - s_at[x]) / s_at[x] for x, y in l_curve if x in s_at and x >= 0.5 * s_curve[-1][0]]
    rows2 = [f"| sequences seen | serial, batch 8, lr {a.lr:g} | dp 2, batch 16, lr_scaling linear ({2 * a.lr:g}) | "
             f"dp 2, batch 16, lr {a.lr:g} (no scaling) |",
             "|---|---|---|---|"]
    l_at, p_at = dict(l_curve), dict(p_curve)
    for x, y in s_curve:
        if x in l_at:
            rows2.append(f"| {x} | {y:.4f} | {l_at[x]:.4f} | {p_at[x]:.4f} |")
    plot = os.path.join(ROOT, f"bench/dp/lr_scaling_{a.lr:g}.svg")
    svg_plot([("serial, batch 8", "black", s_curve), ("dp 2, linear lr", "#d62728", l_curve),
              ("dp 2, unscaled lr", "#1f77b4", p_curve)], plot, "small: validation loss at equal samples")
    table = "\n".join(rows) + f"\n\nThe linear rule (plot: `bench/dp/lr_scaling_{a.lr:g}.svg`):\n\n" + "\n".join(rows2)
    load = os.getloadavg()
    summary = (f"Linear rule: dp 2 with lr_scaling = linear stays within {100 * max(gaps):.1f}% of the serial "
               f"validation loss at every evaluated sample count ({100 * max(late):.1f}% over the second half); "
               f"without scaling within {100 * max(gaps_plain):.1f}%. Load average at the end "
               f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (7 agents shared the machine's 2 cores).")
    description = (f"`configs/small.toml` on the first {a.lines} KJV verses (vocab 2048), 2 ranks, one thread "
                   f"each, {PER_RANK} sequences of {SEQ} tokens per rank per step, {a.steps} steps per mode "
                   f"(straggler rows: {a.straggler_steps} steps, rank 1 sleeps as long again as its compute). "
                   "AMD EPYC Zen 5 (family 26, AVX512-BF16), 2 cores, run under `nice -n 10`.")
    publish(SECTION, description, table, summary, a.write)


if __name__ == "__main__":
    main()
