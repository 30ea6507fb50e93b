#!/usr/bin/python3
"""fivefold fp32 vs bf16 alone, alternating rounds (bf16_speed.py's rounds without PyTorch, which could
not finish a round in a 5-minute quiet-lane call). usage: bf16_vs_fp32_only.py ROUNDS STEPS"""
import argparse, os, statistics, sys, tempfile
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from bf16_speed import fivefold_precision_round
a = argparse.Namespace(fivefold=os.path.join(ROOT, "build/fivefold"), data=os.path.join(ROOT, "data/kjv"), rounds=int(sys.argv[1]),
                       steps=int(sys.argv[2]), warmup=2, threads=2, batch=8, seq=256)
runs = {"fp32": [], "bf16": []}
with tempfile.TemporaryDirectory() as w:
    for r in range(a.rounds):
        for p in runs:
            runs[p].append(fivefold_precision_round(a, w, p)["tokens_per_s"])
        print("round", r + 1, {k: round(v[-1]) for k, v in runs.items()}, flush=True)
med = {k: statistics.median(v) for k, v in runs.items()}
print("median", {k: round(v) for k, v in med.items()}, "bf16/fp32 %.2fx" % (med["bf16"] / med["fp32"]))
