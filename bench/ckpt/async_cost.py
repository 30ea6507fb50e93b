#!/usr/bin/python3
"""The cost of saving while training: the bench model (configs/bench.toml, ~12M
parameters) on 2 ranks (dp 2, ZeRO 1, one thread per rank, micro-batch 4), 20 steps, without
periodic saves, with a synchronous save every 10 steps and with an asynchronous one every 10 steps
(so one periodic save, at step 10, with 10 steps after it to hide behind; every run also saves at
its end, outside the steps; ~80 MB per rank per save). The three runs
alternate within each round, each round starting with the next variant (a load that drifts
during the rounds then falls on every variant alike); medians over the rounds.

- mean step: the mean of metrics.jsonl's step_seconds over steps 2-20. A synchronous save happens
  between steps, outside them; an asynchronous one's writer thread runs during the steps that
  follow it, so what it costs training shows here.
- wall: the whole mpirun, saves included. The synchronous save's stall is its wall time over the
  run without saves, per periodic save (1); the same for the asynchronous save is what training
  still waits for (the copy into the staging buffer, a write not done by the next save).
- CPU: user + system seconds of every process of the run (getrusage of the waited-for
  children): what the writer thread takes from training on a machine with no idle core, apart
  from waits on the disk, which cost no CPU.

usage: /usr/bin/python3 bench/ckpt/async_cost.py [--data DIR] [--rounds 2] [--write]
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from benchlib import mpi_env, publish, read_metrics  # noqa: E402

SECTION = "## Checkpoints: the cost of an asynchronous save"
STEPS, EVERY = 20, 10
SAVES = (STEPS - 1) // EVERY  # periodic saves (step 10); the final one (step 20) is in every run


def run(a, flags, out):
    shutil.rmtree(out, ignore_errors=True)
    cmd = ["mpirun", "--oversubscribe", "-np", "2", a.fivefold, "train", "--config",
           os.path.join(ROOT, "configs/bench.toml"), "--data", a.data, "--out", out, "--threads", "1",
           "--steps", str(a.steps), "--eval-every", "0", "--log-every", "1000", "--dp", "2", "--zero", "1",
           "--micro-batch", a.micro_batch] + flags
    t0, r0 = time.time(), resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, capture_output=True, text=True, env=dict(mpi_env(), OMP_NUM_THREADS="1"))
    wall, r1 = time.time() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    steps = [r["step_seconds"] for r in read_metrics(out) if "step_seconds" in r]
    return statistics.mean(steps[1:]), wall, cpu


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default=os.path.join(ROOT, "data/kjv"))
    p.add_argument("--fivefold", default=os.path.join(ROOT, "build/fivefold"))
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--steps", type=int, default=STEPS, help="only to smoke-test the script")
    p.add_argument("--write", action="store_true")
    p.add_argument("--micro-batch", dest="micro_batch", default="4")
    a = p.parse_args()
    work = tempfile.mkdtemp(prefix="ckpt-cost-")
    load0 = os.getloadavg()[0]
    variants = [("no periodic saves", ["--ckpt-every", "0"]),
                ("sync save every 10", ["--ckpt-every", str(EVERY)]),
                ("async save every 10", ["--ckpt-every", str(EVERY), "--ckpt-async", "true"])]
    results = {name: [] for name, _ in variants}
    for r in range(a.rounds):
        for name, flags in variants[r % 3:] + variants[:r % 3]:
            results[name].append(run(a, flags, os.path.join(work, "run")))
    load1 = os.getloadavg()[0]
    step = {n: statistics.median(x[0] for x in r) for n, r in results.items()}
    wall = {n: statistics.median(x[1] for x in r) for n, r in results.items()}
    cpu = {n: statistics.median(x[2] for x in r) for n, r in results.items()}
    base = variants[0][0]
    rows = ["| run | mean step (s) | vs no saves | wall (s) | wall vs no saves | stall per save (s) | CPU (s) | "
            "CPU vs no saves |", "|---|---|---|---|---|---|---|---|"]
    for name, _ in variants:
        stall = "" if name == base else f"{(wall[name] - wall[base]) / SAVES:.2f}"
        rows.append(f"| {name} | {step[name]:.3f} | {100 * (step[name] / step[base] - 1):+.1f}% | {wall[name]:.1f} | "
                    f"{100 * (wall[name] / wall[base] - 1):+.1f}% | {stall} | {cpu[name]:.1f} | "
                    f"{100 * (cpu[name] / cpu[base] - 1):+.1f}% |")
    per_round = "; ".join(f"{n}: " + ", ".join(f"{x[0]:.3f}" for x in r) for n, r in results.items())
    summary = (f"Mean step per round (s): {per_round}. Machine: AMD EPYC (Zen 5, family 26, AVX512-BF16), "
               f"2 cores; run at nice {os.nice(0)} (0 = through /work/bin/bench-quiet, with other agents' work at "
               f"nice 19; load average {load0:.1f} at the start, {load1:.1f} at the end).")
    publish(SECTION, __doc__.split("usage:")[0].strip(), "\n".join(rows), summary, a.write)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
