#!/usr/bin/python3
"""Sharded checkpoints (issue 10): memory and the cost of saving.

Part 1, memory. The 110M model (dim 1024, 8 layers, 16 heads, ffn 2816, vocab 4096, seq 128,
micro-batch 1) under ZeRO-3 on 2 and 4 ranks, one thread per rank: a run that trains 2 steps and
saves, then a run that resumes from that checkpoint, trains 1 step and saves. Each rank reports
its peak RSS (VmHWM) beside the memory ledger's peak (bench_ckpt_memory). Before sharded
checkpoints every rank built the full params and both moments to save, and read the whole file
twice to resume (issue 10's table: 2.60 GB RSS at 1.19 GiB ledger on 2 ranks).

Part 2, cost. The bench model (configs/bench.toml, ~12M parameters) on 2 ranks (dp 2, ZeRO 1),
30 steps, without periodic saves, with a synchronous save every 10 steps, and with an
asynchronous one every 10 steps (every run also saves at its end, outside the timed steps).
Runs alternate within each round; median step time over the steps after the first, median of
the rounds; the synchronous stall is (wall time with sync saves - wall time without) / saves.

usage: /usr/bin/python3 bench/ckpt/memory.py [--data DIR] [--rounds 3] [--write]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from benchlib import mpi_env, publish, read_metrics  # noqa: E402

SECTION = "## Issue 10: sharded checkpoints: peak RSS against the ledger, and the cost of saving"
MODEL_110M = ["dim=1024", "n_layers=8", "n_heads=16", "n_kv_heads=16", "ffn_dim=2816", "seq_len=128",
              "micro_batch=1", "vocab_size=4096"]
GB = 1e9


def mpirun(ranks, cmd):
    full = ["mpirun", "--oversubscribe", "-np", str(ranks)] + cmd
    env = dict(mpi_env(), OMP_NUM_THREADS="1")
    t0 = time.time()
    p = subprocess.run(full, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(full)}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p.stdout, time.time() - t0


def memory_rows(a, ranks, work):
    run = os.path.join(work, f"run{ranks}")
    shutil.rmtree(run, ignore_errors=True)
    rows = []
    for what, steps in (("save (2 steps, then save)", 2), ("resume (load, 1 step, save)", 3)):
        out, _ = mpirun(ranks, [a.bench_memory, os.path.join(ROOT, "configs/bench.toml"), a.data, run, str(steps)] +
                        MODEL_110M)
        per_rank = [line.split() for line in out.splitlines() if line.startswith("rank ")]
        for f in per_rank:
            ledger, rss = float(f[3]), float(f[5])
            rows.append(f"| {ranks} | {what} | {f[1]} | {ledger / GB:.3f} | {rss / GB:.3f} | "
                        f"{100 * (rss - ledger) / ledger:+.1f}% |")
    return rows


def cost_run(a, flags, work):
    out = os.path.join(work, "cost")
    shutil.rmtree(out, ignore_errors=True)
    _, wall = mpirun(2, [a.fivefold, "train", "--config", os.path.join(ROOT, "configs/bench.toml"), "--data",
                         a.data, "--out", out, "--threads", "1", "--steps", "30", "--eval-every", "0",
                         "--log-every", "1000", "--dp", "2", "--zero", "1", "--micro-batch", "4"] + flags)
    recs = read_metrics(out)
    return statistics.median(r["step_seconds"] for r in recs[1:]), wall


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default=os.path.join(ROOT, "data/kjv"))
    p.add_argument("--fivefold", default=os.path.join(ROOT, "build/fivefold"))
    p.add_argument("--bench-memory", dest="bench_memory", default=os.path.join(ROOT, "build/bench/ckpt/bench_ckpt_memory"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--write", action="store_true")
    a = p.parse_args()
    if not os.path.exists(a.bench_memory):  # benchmarks are not in the default build
        subprocess.run(["cmake", "--build", os.path.join(ROOT, "build"), "-j2", "--target", "bench_ckpt_memory"],
                       check=True)
    work = tempfile.mkdtemp(prefix="ckpt-bench-")
    load0 = os.getloadavg()[0]
    rows = []
    for ranks in (2, 4):
        rows += memory_rows(a, ranks, work)
    variants = [("no periodic saves", ["--ckpt-every", "0"]),
                ("sync save every 10", ["--ckpt-every", "10"]),
                ("async save every 10", ["--ckpt-every", "10", "--ckpt-async", "true"])]
    results = {name: [] for name, _ in variants}
    for _ in range(a.rounds):
        for name, flags in variants:
            results[name].append(cost_run(a, flags, work))
    load1 = os.getloadavg()[0]
    base_step = statistics.median(s for s, _ in results["no periodic saves"])
    base_wall = statistics.median(w for _, w in results["no periodic saves"])
    cost = ["| run | median step (s) | vs no saves | median wall (s) | wall vs no saves |", "|---|---|---|---|---|"]
    for name, _ in variants:
        step = statistics.median(s for s, _ in results[name])
        wall = statistics.median(w for _, w in results[name])
        cost.append(f"| {name} | {step:.3f} | {100 * (step / base_step - 1):+.1f}% | {wall:.1f} | "
                    f"{100 * (wall / base_wall - 1):+.1f}% |")
    sync_wall = statistics.median(w for _, w in results["sync save every 10"])
    stall = (sync_wall - base_wall) / 2  # two periodic saves (steps 10, 20); the final one in every run
    table = ("| ranks | run | rank | ledger peak (GB) | peak RSS, VmHWM (GB) | RSS over ledger |\n"
             "|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n\n" + "\n".join(cost))
    cpu = "AMD EPYC (Zen 5, family 26, AVX512-BF16), 2 cores"
    summary = (f"Synchronous save stall, from the wall times: {stall:.2f} s per save. Machine: {cpu}, shared by 7 "
               f"agents (load average {load0:.1f} at the start, {load1:.1f} at the end); all runs under nice -n 10.")
    publish(SECTION, __doc__.split("usage:")[0].strip(), table, summary, a.write)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
