#!/usr/bin/python3
"""Synchronous DP against local SGD, DiLoCo and bounded-staleness async DP.

`small` on 2 ranks (one thread each, 8 sequences per rank per step), the same steps for every mode.
Losses and timings are separate runs, so that the long loss runs need not hold the quiet lane:
  --part losses   final validation loss and the bytes each rank sent over the data-parallel group
                  (Comm's counters, printed by fivefold train) after --steps steps (any load);
  --part timing   tokens/s of each mode over --timing-steps steps (run it through bench-quiet);
  --part straggler  the same with rank 1 slowed 2x (--simulate-straggler 1:2): rank 0's tokens/s;
  --part table    joins the three (bench/dp/async_*.json) into the RESULTS.md section.
The learning-rate scaling rule is bench/dp/lr_rule.py.

usage: /usr/bin/python3 bench/dp/async.py --part losses --steps 128
       /work/bin/bench-quiet /usr/bin/python3 bench/dp/async.py --part timing --timing-steps 32
       /work/bin/bench-quiet /usr/bin/python3 bench/dp/async.py --part straggler --timing-steps 32
       /usr/bin/python3 bench/dp/async.py --part table --write
"""
import argparse
import json
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

SECTION = "## Data parallel modes: local SGD, DiLoCo, bounded-staleness async"
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


def val_curve(recs, sequences_per_step):
    return [(r["step"] * sequences_per_step, r["val_loss"]) for r in recs if "val_loss" in r]


def saved(part):
    return os.path.join(ROOT, "bench/dp", f"async_{part}.json")


def table(a):
    loss, quick, slow = (json.load(open(saved(p))) for p in ("losses", "timing", "straggler"))
    ref = loss["runs"]["sync"]
    rows = [f"| mode | final val loss ({loss['steps']} steps) | bytes sent per rank (dp group) | bytes vs sync | "
            f"tokens/s | time per step | wall time for {loss['steps']} steps at that rate | "
            "rank 0 tokens/s, rank 1 slowed 2x |", "|---|---|---|---|---|---|---|---|"]
    for name, _ in MODES:
        r, t, s = loss["runs"][name], quick["runs"][name], slow["runs"][name]
        step_s = t["train_s"] / quick["steps"]
        rows.append(f"| {name} | {r['val']:.4f} | {r['bytes'] / 1e6:.1f} MB | {r['bytes'] / ref['bytes']:.3f} | "
                    f"{t['tok_s']:.0f} | {step_s:.3f} s | {step_s * loss['steps']:.1f} s | {s['tok_s']:.0f} |")
    summary = (f"Timing runs: {quick['steps']} steps per mode, quiet lane ({quick['load']}); straggler runs: "
               f"{slow['steps']} steps, quiet lane ({slow['load']}). Loss runs: {loss['steps']} steps at nice 19 "
               "beside other agents' work (losses and bytes do not depend on the load).")
    description = (f"`configs/small.toml` on the first {a.lines} KJV verses (vocab 2048), 2 ranks, one thread "
                   f"each, {PER_RANK} sequences of {SEQ} tokens per rank per step. AMD EPYC Zen 5 (family 26, "
                   "AVX512-BF16), 2 cores; timings at nice 0 through `/work/bin/bench-quiet` while other agents' "
                   "work ran at nice 19. This kernel shares CPU time between sessions first "
                   "(sched_autogroup_enabled = 1), so per-process nice does not reach across sessions: inside the "
                   "lane the benchmark's own session was weighted (`echo -20 > /proc/self/autogroup`, then the "
                   "command; without it the same sync run measured 1329 tokens/s, a tenth). The load average "
                   "counts the other agents' runnable processes. Commands: `--part losses --steps 96`, then "
                   "`bench-quiet ... --part timing` and `--part straggler` (32 steps each), then "
                   "`--part table --write`.")
    publish(SECTION, description, "\n".join(rows), summary, a.write)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fivefold", default=os.path.join(ROOT, "build/fivefold"))
    ap.add_argument("--text", default=os.path.join(ROOT, "data/kjv.txt"))
    ap.add_argument("--lines", type=int, default=6000)
    ap.add_argument("--part", choices=["losses", "timing", "straggler", "table"], required=True)
    ap.add_argument("--steps", type=int, default=128, help="steps of the loss runs")
    ap.add_argument("--timing-steps", type=int, default=32, help="steps of the timing runs (H=32 averages once)")
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    if a.part == "table":
        return table(a)
    steps = a.steps if a.part == "losses" else a.timing_steps
    extra = ["--simulate-straggler", "1:2"] if a.part == "straggler" else []
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        data, _ = prepare(a, tmp)
        out = os.path.join(tmp, "run")
        for name, flags in MODES:
            r = train(a, data, out, 2, steps, flags + extra)
            runs[name] = {k: r[k] for k in ("val", "bytes", "train_s", "tok_s")}
            print(f"{name}: {r['train_s']:.1f} s, {r['tok_s']:.0f} tok/s, val {r['val']:.4f}", file=sys.stderr)
    load = "load at the end {:.1f} / {:.1f} / {:.1f}".format(*os.getloadavg())
    with open(saved(a.part), "w") as f:
        json.dump({"steps": steps, "load": load, "runs": runs}, f, indent=1)


if __name__ == "__main__":
    main()
