#!/usr/bin/python3
"""Sharded checkpoints: memory.

Part 1, memory. The 110M model (dim 1024, 8 layers, 16 heads, ffn 2816, vocab 4096, seq 128,
micro-batch 1) under ZeRO-3 on 2 and 4 ranks, one thread per rank: a run that trains 2 steps and
saves, then a run that resumes from that checkpoint, trains 1 step and saves. Each rank reports
its peak RSS (VmHWM) beside the memory ledger's peak (bench_ckpt_memory). Before sharded
checkpoints every rank built the full params and both moments to save, and read the whole file
twice to resume (measured then: 2.60 GB RSS at 1.19 GiB ledger on 2 ranks).

The cost of saving (part 2 before) is bench/ckpt/async_cost.py's, in its own section.

usage: /usr/bin/python3 bench/ckpt/memory.py [--data DIR] [--write]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from benchlib import mpi_env, publish, read_metrics  # noqa: E402

SECTION = "## Sharded checkpoints: peak RSS against the ledger"
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


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default=os.path.join(ROOT, "data/kjv"))
    p.add_argument("--bench-memory", dest="bench_memory", default=os.path.join(ROOT, "build/bench/ckpt/bench_ckpt_memory"))
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
    load1 = os.getloadavg()[0]
    table = ("| ranks | run | rank | ledger peak (GB) | peak RSS, VmHWM (GB) | RSS over ledger |\n"
             "|---|---|---|---|---|---|\n" + "\n".join(rows))
    cpu = "AMD EPYC (Zen 5, family 26, AVX512-BF16), 2 cores"
    summary = f"Machine: {cpu}, shared by other agents (load average {load0:.1f} at the start, {load1:.1f} at the end)."
    publish(SECTION, __doc__.split("usage:")[0].strip(), table, summary, a.write)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
