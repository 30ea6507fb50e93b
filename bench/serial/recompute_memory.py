#!/usr/bin/python3
"""Activation memory and speed of each recompute policy on the `bench` model, side by side.

Runs `fivefold train` on configs/bench.toml for a few steps per policy (policies alternate over
the rounds) and reads the accounted bytes and throughput from metrics.jsonl. The losses of the
three policies must agree bit for bit; the script checks that too.

usage: /usr/bin/python3 bench/serial/recompute_memory.py [--rounds 2 --steps 6] [--write]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from benchlib import publish, read_metrics  # noqa: E402
SECTION = "## Activation recomputation"
POLICIES = ("none", "selective", "full")


def run(a, policy, out):
    shutil.rmtree(out, ignore_errors=True)
    cmd = [a.fivefold, "train", "--config", os.path.join(ROOT, "configs/bench.toml"), "--data", a.data,
           "--out", out, "--steps", str(a.steps), "--recompute", policy, "--eval-every", "0"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stderr}")
    recs = read_metrics(out)
    timed = recs[1:]
    tps = 8 * 256 * len(timed) / sum(r["step_seconds"] for r in timed)
    return {"tps": tps, "act": recs[-1]["bytes"]["activations"], "work": recs[-1]["bytes"]["workspace"],
            "peak": recs[-1]["bytes"]["peak_total"], "losses": [r["loss"] for r in recs]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fivefold", default=os.path.join(ROOT, "build/fivefold"))
    ap.add_argument("--data", default=os.path.join(ROOT, "data/kjv"))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    res = {p: [] for p in POLICIES}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(a.rounds):
            for p in POLICIES:
                res[p].append(run(a, p, os.path.join(tmp, p)))
    base = res["none"][0]
    for p in POLICIES:
        if res[p][0]["losses"] != base["losses"]:
            sys.exit(f"recompute {p} changed the losses: {res[p][0]['losses']} vs {base['losses']}")
    mib = lambda b: b / 2**20
    tps0 = statistics.median(r["tps"] for r in res["none"])
    rows = ["| recompute | activations | workspace | peak total | tokens/s | vs none |", "|---|---|---|---|---|---|"]
    for p in POLICIES:
        r, tps = res[p][0], statistics.median(x["tps"] for x in res[p])
        rows.append(f"| {p} | {mib(r['act']):.1f} MiB | {mib(r['work']):.1f} MiB | {mib(r['peak']):.1f} MiB | "
                    f"{tps:.0f} | {tps / tps0:.2f}x |")
    table = "\n".join(rows)
    summary = "losses identical across policies: " + ", ".join(f"{x:.6f}" for x in base["losses"])
    description = (f"`configs/bench.toml`, {a.steps} steps per run, {a.rounds} alternating rounds (median "
                   f"tokens/s). Per-step losses of the three policies are bit-identical (checked by the "
                   f"script). Activations = what backward keeps; workspace = reused scratch, including the "
                   f"one-block recompute buffer.")
    publish(SECTION, description, table, summary, a.write)

if __name__ == "__main__":
    main()
