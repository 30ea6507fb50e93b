#!/usr/bin/python3
"""Does the portable build cost speed here? The `bench` model trained serially by each build in
fp32 and bf16, the builds alternating round after round in one invocation, so both see the same
machine weather; tokens/s = timed tokens over timed seconds (warm-up steps excluded), the median
over rounds, and each build's ratio to the first. Beside it, the CPU seconds each whole run used
(user + system, start-up included): on a machine other work shares, wall time moves with the
neighbours while the CPU a run needs does not, so at --threads 1 (no threads waiting on each
other) the CPU ratio is the comparison of the code the two ISA levels compiled.

A build given as NAME=PATH@TIER runs with FIVEFOLD_MAX_CPU_ISA=TIER (kernels/cpu_isa.h): the
x86-64-v3 binary with its attention kernels held to their base tier is what an AVX2 CPU (Zen 3)
runs, here beside the same binary on the AVX-512 / AVX512-BF16 tiers it picks on this CPU.

usage: /usr/bin/python3 bench/serial/isa_levels.py [--build NAME=PATH[@TIER]]... [--rounds 3
           --steps 8 --warmup 2 --threads 1] [--data data/kjv] [--write]
The default builds: native = build/fivefold, x86-64-v3 = build-portable-x86-64-v3/fivefold, the
same @base, and x86-64-v4-bf16 = build-portable-x86-64-v4-bf16/fivefold where it exists;
`scripts/portable_bench.sh build x86-64-v3 x86-64-v4-bf16` makes the portable ones.
"""
import argparse
import os
import resource
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import benchlib  # noqa: E402
from bf16_speed import fivefold_precision_round  # noqa: E402


def tier_wrapper(spec, path):
    """The binary of PATH[@TIER]: PATH itself, or a script running it under FIVEFOLD_MAX_CPU_ISA=TIER."""
    binary, _, tier = spec.partition("@")
    binary = os.path.abspath(binary)
    if not tier:
        return binary
    with open(path, "w") as f:
        f.write(f'#!/bin/sh\nFIVEFOLD_MAX_CPU_ISA={tier} exec "{binary}" "$@"\n')
    os.chmod(path, 0o755)
    return path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", action="append", default=None, help="NAME=PATH[@TIER] of a fivefold binary (TIER: FIVEFOLD_MAX_CPU_ISA)")
    ap.add_argument("--data", default=os.path.join(ROOT, "data/kjv"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--write", action="store_true", help="replace the section in bench/RESULTS.md")
    a = ap.parse_args()
    v3 = os.path.join(ROOT, "build-portable-x86-64-v3/fivefold")
    v4 = os.path.join(ROOT, "build-portable-x86-64-v4-bf16/fivefold")
    builds = dict(b.split("=", 1) for b in (a.build or [
        f"native={os.path.join(ROOT, 'build/fivefold')}", f"x86-64-v3={v3}", f"x86-64-v3 base tier={v3}@base"]
        + ([f"x86-64-v4-bf16={v4}"] if os.path.exists(v4) else [])))
    a.batch, a.seq = 8, 256  # configs/bench.toml
    benchlib.ensure_kjv(os.path.abspath(next(iter(builds.values())).partition("@")[0]), a.data)
    load_start = os.getloadavg()
    runs = {(name, p): [] for name in builds for p in ("fp32", "bf16")}
    with tempfile.TemporaryDirectory() as workdir:
        binaries = {name: tier_wrapper(spec, os.path.join(workdir, f"tier-{i}.sh"))
                    for i, (name, spec) in enumerate(builds.items())}
        for r in range(a.rounds):
            for (name, precision), results in runs.items():
                b = argparse.Namespace(**vars(a))
                b.fivefold = binaries[name]
                os.makedirs(os.path.join(workdir, name), exist_ok=True)
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                tokens_per_s = fivefold_precision_round(b, os.path.join(workdir, name), precision)["tokens_per_s"]
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
                results.append((tokens_per_s, cpu))
            print(f"round {r + 1}: " + ", ".join(f"{n} {p} {v[-1][0]:.0f} tokens/s {v[-1][1]:.1f} CPU s"
                                                  for (n, p), v in runs.items()),
                  file=sys.stderr, flush=True)
    load_end = os.getloadavg()
    first = next(iter(builds))
    med = {k: statistics.median(x[0] for x in v) for k, v in runs.items()}
    cpu = {k: statistics.median(x[1] for x in v) for k, v in runs.items()}
    rows = [f"| {n} | {p} | {med[(n, p)]:.0f} | {', '.join('%.0f' % x[0] for x in v)} | "
            f"{med[(n, p)] / med[(first, p)]:.3f} | {cpu[(n, p)]:.1f} | {cpu[(first, p)] / cpu[(n, p)]:.3f} |"
            for (n, p), v in runs.items()]
    table = (f"| build | precision | tokens/s (median of {a.rounds}) | per round | tokens/s over {first}'s | "
             f"CPU s per run (median) | {first}'s CPU over this |\n|---|---|---|---|---|---|---|\n" + "\n".join(rows))
    description = (f"CPU: {benchlib.cpu_name()}. `bench` model, {a.threads} threads, {a.steps} timed steps after "
                   f"{a.warmup} warm-up, the builds and precisions alternating each round. Load average "
                   f"{load_start[0]:.2f} at the start, {load_end[0]:.2f} at the end. Builds: "
                   + ", ".join(f"{n} = `{p}`" for n, p in builds.items()) + ".")
    benchlib.publish("## Portable build: ISA level against -march=native", description, table, write=a.write)


if __name__ == "__main__":
    main()
