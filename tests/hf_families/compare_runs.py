#!/usr/bin/python3
"""Two runs' metrics.jsonl agree step by step on loss and grad_norm (relative 1e-5), both with the
expected number of steps: a parallel layout against the serial run of the same global batch.

    compare_runs.py SERIAL/metrics.jsonl LAYOUT/metrics.jsonl STEPS [--tol 1e-5]

Exit 0 equal, 1 a difference or a step missing (the first named), 2 unreadable.
"""
import argparse
import json
import sys


def steps_of(path):
    rows = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if "step" in r and "loss" in r and "grad_norm" in r:
                rows[r["step"]] = (r["loss"], r["grad_norm"])
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("serial")
    ap.add_argument("layout")
    ap.add_argument("steps", type=int)
    ap.add_argument("--tol", type=float, default=1e-5)
    a = ap.parse_args()
    try:
        ref, got = steps_of(a.serial), steps_of(a.layout)
    except (OSError, ValueError) as e:
        print(f"MALFORMED: {e}")
        return 2
    worst = 0.0
    for step in range(1, a.steps + 1):
        if step not in ref or step not in got:
            print(f"FAIL: step {step} missing from {a.serial if step not in ref else a.layout}")
            return 1
        for what, x, y in zip(("loss", "grad_norm"), ref[step], got[step]):
            rel = abs(x - y) / max(abs(x), 1e-30)
            worst = max(worst, rel)
            if rel > a.tol:
                print(f"FAIL: step {step} {what}: serial {x:.9g} vs {a.layout} {y:.9g} (rel {rel:.1e} > {a.tol:.0e})")
                return 1
    print(f"PASS: {a.steps} steps of loss and grad_norm equal (worst rel {worst:.1e}): {a.layout}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
