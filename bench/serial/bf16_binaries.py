#!/usr/bin/python3
"""bf16 step time of several fivefold builds on the `bench` model, alternating round after round in
one invocation (what each of a series of commits bought). Throughput = timed tokens / timed seconds
(warm-up steps excluded), as bf16_speed.py measures it.

usage: /usr/bin/python3 bench/serial/bf16_binaries.py NAME=BINARY [NAME=BINARY ...]
                                                      [--rounds 3 --steps 8 --warmup 2 --threads 2]
"""
import argparse
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from bf16_speed import fivefold_precision_round  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("builds", nargs="+", help="NAME=BINARY")
    ap.add_argument("--data", default=os.path.join(ROOT, "data/kjv"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    a.batch, a.seq = 8, 256
    builds = [b.split("=", 1) for b in a.builds]
    runs = {name: [] for name, _ in builds}
    with tempfile.TemporaryDirectory() as workdir:
        for r in range(a.rounds):
            for name, binary in builds:
                b = argparse.Namespace(**vars(a))
                b.fivefold = binary
                d = os.path.join(workdir, name)
                os.makedirs(d, exist_ok=True)
                runs[name].append(fivefold_precision_round(b, d, "bf16")["tokens_per_s"])
            print("round %d: " % (r + 1) + ", ".join(f"{k} {v[-1]:.0f}" for k, v in runs.items()), file=sys.stderr,
                  flush=True)
    first = statistics.median(runs[builds[0][0]])
    tokens = a.batch * a.seq
    print(f"| build | bf16 tokens/s (median of {a.rounds}) | per round | ms per step | saved vs {builds[0][0]} |")
    print("|---|---|---|---|---|")
    for name, v in runs.items():
        med = statistics.median(v)
        rounds = ", ".join("%.0f" % x for x in v)
        print(f"| {name} | {med:.0f} | {rounds} | {1000 * tokens / med:.1f} | {1000 * tokens / first - 1000 * tokens / med:+.1f} ms |")


if __name__ == "__main__":
    main()
