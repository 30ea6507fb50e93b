#!/usr/bin/python3
"""The attention kernels of two builds side by side: each build's bench_attention (the `bench`
model's shape, fp32 and bf16, best of 20 calls) alternately, round after round, and the median of
each row per build with the ratio before / after.

usage: /usr/bin/python3 bench/gemm/compare_attention.py --before BUILD_A --after BUILD_B [--rounds 6]
       [--write [--title "## ..."]]   (replaces that section of bench/RESULTS.md)
Each build needs its bench_attention: `cmake --build BUILD --target bench_attention`.
"""
import argparse
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from benchlib import cpu_name, publish  # noqa: E402

SECTIONS = ("fp32", "bf16", "bf16, dS rounded once")


def parse(text):
    """{(section, row): ms} from one bench_attention run."""
    times, section = {}, SECTIONS[0]
    for line in text.splitlines():
        if line.startswith(" bf16 operands"):
            section = SECTIONS[1]
        elif line.startswith(" the same with dS rounded once"):
            section = SECTIONS[2]
        parts = line.split()
        if len(parts) >= 3 and parts[0] in ("forward", "backward", "total") and parts[2] == "ms":
            times[(section, parts[0])] = float(parts[1])
    return times


def run(build, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    binary = os.path.join(build, "bench/gemm/bench_attention")
    return parse(subprocess.run([binary], env=env, capture_output=True, text=True, check=True).stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True, help="build folder of the earlier commit")
    ap.add_argument("--after", required=True, help="build folder of the later commit")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--title", default="## Attention kernels: before / after")
    args = ap.parse_args()
    samples = {"before": [], "after": []}
    for r in range(args.rounds):
        for name in ("before", "after"):
            samples[name].append(run(getattr(args, name), args.threads))
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    rows = ["| kernel | before: ms (median) | after: ms (median) | before / after | after, per round |",
            "|---|---:|---:|---:|---|"]
    for key in samples["before"][0]:
        before = statistics.median(s[key] for s in samples["before"])
        after_rounds = [s[key] for s in samples["after"]]
        after = statistics.median(after_rounds)
        rows.append(f"| {key[0]} {key[1]} | {before:.3f} | {after:.3f} | {before / after:.2f}x | "
                    f"{', '.join(f'{t:.2f}' for t in after_rounds)} |")
    description = (f"CPU: {cpu_name()}. `bench_attention` of each build alternately, {args.rounds} rounds, "
                   f"{args.threads} threads; each run reports the best of 20 calls, the table the median over "
                   "rounds.")
    publish(args.title, description, "\n".join(rows), write=args.write)


if __name__ == "__main__":
    main()
