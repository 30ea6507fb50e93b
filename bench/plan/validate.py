#!/usr/bin/python3
"""The planner against measured runs (issue 15): for each layout on 2 and 4 ranks, `fivefold plan
--layout` predicts the step time and rank 0's ledger peak; `fivefold train` measures them
(median step time of the timed steps, the ledger's peak_total of rank 0 from metrics.jsonl).
Prints predicted vs measured, the errors, and Kendall's tau of the step-time order.

usage: bench/plan/validate.py --data DIR [--cluster cluster.toml] [--steps N] [--write]"""
import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import benchlib  # noqa: E402

LAYOUTS = [  # (ranks, layout keys)
    (2, "dp=2,mb=8,zero=0"), (2, "dp=2,mb=8,zero=1"), (2, "dp=2,mb=8,zero=2"), (2, "dp=2,mb=8,zero=3"),
    (2, "dp=2,mb=8,zero=0,recompute=selective"), (2, "dp=2,mb=8,zero=0,recompute=full"),
    (2, "tp=2,mb=16"), (2, "tp=2,sp,mb=16"), (2, "pp=2,1f1b,mb=4,m=4"), (2, "pp=2,gpipe,mb=4,m=4"),
    (2, "pp=2,zb-h1,mb=4,m=4"), (4, "dp=4,mb=4,zero=1"), (4, "dp=2,tp=2,mb=8,zero=1"),
    (4, "tp=2,pp=2,1f1b,mb=4,m=4"), (4, "dp=2,pp=2,1f1b,mb=4,m=2"),
]
KEYS = {"dp": "--dp", "tp": "--tp", "pp": "--pp", "mb": "--micro-batch", "m": "--grad-accum", "zero": "--zero",
        "recompute": "--recompute", "chunks": "--chunks"}


def train_flags(layout):
    flags = []
    for item in layout.split(","):
        k, _, v = item.partition("=")
        if k == "sp":
            flags += ["--sp", "true"]
        elif k in ("1f1b", "gpipe", "zb-h1", "interleaved"):
            flags += ["--schedule", k]
        else:
            flags += [KEYS[k], v]
    return flags


def kendall_tau(a, b):
    n, s = len(a), 0
    for i in range(n):
        for j in range(i + 1, n):
            s += (1 if (a[i] - a[j]) * (b[i] - b[j]) > 0 else -1 if (a[i] - a[j]) * (b[i] - b[j]) < 0 else 0)
    return s / (n * (n - 1) / 2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--config", default=os.path.join(benchlib.ROOT, "configs/small.toml"))
    ap.add_argument("--cluster", default="")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    fivefold = os.path.join(benchlib.ROOT, "build/fivefold")
    vocab = json.load(open(os.path.join(a.data, "meta.json"))).get("vocab_size", 1024) \
        if os.path.exists(os.path.join(a.data, "meta.json")) else 1024
    rows, pred_t, meas_t = [], [], []
    for ranks, layout in LAYOUTS:
        cmd = [fivefold, "plan", "--config", a.config, "--vocab-size", str(vocab), "--ranks", str(ranks), "--layout",
               layout, "--threads", "1", "--json"] + (["--cluster", a.cluster] if a.cluster else [])
        out = subprocess.run(cmd, capture_output=True, text=True, env=benchlib.mpi_env())
        lines = [json.loads(x) for x in out.stdout.splitlines() if x.startswith("{")]
        if not lines:
            sys.exit(f"plan failed: {' '.join(cmd)}\n{out.stdout}{out.stderr}")
        pred, ledger = lines[0], lines[1]["ledger_total_by_pp_rank"]
        run = f"/tmp/fivefold-plan-validate/{layout.replace(',', '_')}"
        subprocess.run(["rm", "-rf", run])
        tcmd = ["mpirun", "--oversubscribe", "-np", str(ranks), fivefold, "train", "--config", a.config, "--data",
                a.data, "--out", run, "--threads", "1", "--steps", str(a.steps), "--eval-every", "0",
                "--log-every", "1000"] + train_flags(layout)
        p = subprocess.run(tcmd, capture_output=True, text=True, env=benchlib.mpi_env())
        if p.returncode != 0:
            sys.exit(f"failed: {' '.join(tcmd)}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
        recs = benchlib.read_metrics(run)
        measured_t = statistics.median(r["step_seconds"] for r in recs[2:])
        measured_mem = recs[-1]["bytes"]["peak_total"]
        pm, pt = ledger[0], pred["step_seconds"]
        pred_t.append(pt)
        meas_t.append(measured_t)
        rows.append((ranks, pred["layout"], pm, measured_mem, pt, measured_t))
        print(rows[-1], flush=True)
    table = ("| ranks | layout | predicted rank-0 peak (MiB) | measured (MiB) | error | predicted step (ms) | "
             "measured (ms) | error |\n|---|---|---|---|---|---|---|---|\n")
    for r, layout, pm, mm, pt, mt in rows:
        table += (f"| {r} | {layout} | {pm / 2**20:.2f} | {mm / 2**20:.2f} | {100 * (pm - mm) / mm:+.1f}% | "
                  f"{1e3 * pt:.1f} | {1e3 * mt:.1f} | {100 * (pt - mt) / mt:+.1f}% |\n")
    mem_err = max(abs(pm - mm) / mm for _, _, pm, mm, _, _ in rows)
    t_err = [abs(pt - mt) / mt for *_, pt, mt in rows]
    best_measured = min(range(len(rows)), key=lambda i: meas_t[i])
    rank_pred = sorted(range(len(rows)), key=lambda i: pred_t[i]).index(best_measured) + 1
    summary = (f"worst memory error {100 * mem_err:.1f}%; step time error median {100 * statistics.median(t_err):.0f}%, "
               f"worst {100 * max(t_err):.0f}%, within 15%: {sum(e <= 0.15 for e in t_err)}/{len(rows)}; Kendall tau "
               f"{kendall_tau(pred_t, meas_t):.2f}; the measured-best layout ({rows[best_measured][1]}) is predicted "
               f"#{rank_pred}.")
    load = os.getloadavg()
    desc = (f"Model {os.path.relpath(a.config, benchlib.ROOT)}, {a.steps} steps (median of steps 3..), 1 thread per "
            f"rank, AMD EPYC (Zen 5, family 26, AVX512-BF16), 2 cores shared with 7 agents (load average at the end "
            f"{load[0]:.1f}). Predicted by `fivefold plan --layout` with "
            f"{'--cluster ' + a.cluster if a.cluster else 'this machine (cached FMA peak, default links)'}.")
    benchlib.publish("## Planner validation (issue 15)", desc, table, summary, a.write)


if __name__ == "__main__":
    main()
