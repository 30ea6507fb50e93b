#!/usr/bin/python3
"""Milliseconds per training step that the bf16 weight-gradient products dW += dy^T x take inside
real `bench` steps, from oneDNN's verbose log (DNNL_VERBOSE=1 times each primitive).
A weight gradient is the matmul reading its source transposed (`src_bf16::blocked:ba`); split by
rows (kernels/wgrad_rows.h) it is one matmul per thread, run at the same time, so a product's time
is the longest of its blocks. The first step (primitive creation, cold caches) is left out.

usage: /usr/bin/python3 bench/serial/wgrad_in_step.py FIVEFOLD [FIVEFOLD...] [--steps 6 --threads 2]
"""
import argparse
import os
import shutil
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def products(lines, blocks):
    """(wall ms, GFLOP) per weight gradient, in order: the `blocks` matmuls of one product are
    consecutive in the log."""
    found = []
    for line in lines:
        f = line.split(",")
        if len(f) < 10 or f[1] != "exec" or f[3] != "matmul" or "src_bf16::blocked:ba" not in line:
            continue
        (m, k), n = (int(v) for v in f[-2].split(":")[0].split("x")), int(f[-2].split(":")[1].split("x")[1])
        found.append((float(f[-1]), 2.0 * m * n * k * 1e-9))
    groups = [found[i:i + blocks] for i in range(0, len(found) - blocks + 1, blocks)]
    return [(max(g[0] for g in grp), sum(g[1] for g in grp)) for grp in groups]


def other_ms(lines):
    """Summed ms of every other oneDNN primitive (forward and dgrad matmuls, weight packing)."""
    total = 0.0
    for line in lines:
        f = line.split(",")
        if len(f) < 10 or f[1] != "exec":
            continue
        if not (f[3] == "matmul" and "src_bf16::blocked:ba" in line):
            total += float(f[-1])
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    print("| binary | weight gradients per step: ms | GFLOP/s | products per step | other oneDNN primitives "
          "per step (all steps): ms |\n|---|---|---|---|---|")
    for b in a.binaries:
        with tempfile.TemporaryDirectory() as work:
            env = dict(os.environ, DNNL_VERBOSE="1", OMP_NUM_THREADS=str(a.threads))
            cmd = [b, "train", "--config", os.path.join(ROOT, "configs/bench.toml"), "--data",
                   os.path.join(ROOT, "data/kjv"), "--out", os.path.join(work, "run"), "--steps", str(a.steps),
                   "--precision", "bf16", "--eval-every", "0", "--threads", str(a.threads), "--log-every", "1000"]
            log = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout.splitlines()
        # Split: the o projection's 384 rows appear as blocks of 384 / threads rows.
        split = any("src_bf16::blocked:ba" in l and f",{384 // a.threads}x" in l for l in log)
        prods = products(log, a.threads if split else 1)
        per_step = len(prods) // a.steps
        timed = prods[per_step:]
        ms = sum(p[0] for p in timed) / (a.steps - 1)
        gflop = sum(p[1] for p in timed) / (a.steps - 1)
        print(f"| {b} | {ms:.1f} | {gflop / ms * 1e3:.0f} | {per_step} | {other_ms(log) / a.steps:.1f} |")


if __name__ == "__main__":
    main()
