#!/usr/bin/python3
"""Does the portable build cost speed here? The `bench` model trained serially by each build in
fp32 and bf16, the builds alternating round after round in one invocation, so both see the same
machine weather; tokens/s = timed tokens over timed seconds (warm-up steps excluded), the median
over rounds, and each build's ratio to the first. Beside it, the CPU seconds each whole run used
(user + system, start-up included): on a machine other work shares, wall time moves with the
neighbours while the CPU a run needs does not, so at --threads 1 (no threads waiting on each
other) the CPU ratio is the comparison of the code the two ISA levels compiled.

A build given as NAME=PATH@TIER runs with FIVEFOLD_MAX_CPU_ISA=TIER (kernels/cpu_isa.h): the
x86-64-v3 binary with its own kernels held to their base tier is what an AVX2 CPU (Zen 3)
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
    description = (ABOUT + "\n\n" + reading(med, cpu, first) + "\n\n" +
                   f"CPU: {benchlib.cpu_name()}. `bench` model, {a.threads} threads, {a.steps} timed steps after "
                   f"{a.warmup} warm-up, the builds and precisions alternating each round. Load average "
                   f"{load_start[0]:.2f} at the start, {load_end[0]:.2f} at the end. Builds: "
                   + ", ".join(f"{n} = `{p}`" for n, p in builds.items()) + ".")
    benchlib.publish("## Portable build: ISA level against -march=native", description, table, write=a.write)


# What the section says whatever the numbers: --write rewrites the whole section, this included.
ABOUT = """`scripts/portable_bench.sh build` compiles for `-march=x86-64-v3` (AVX2, FMA, BMI2, F16C: Zen 1-3,
Haswell and later run it) instead of `-march=native`. fivefold's own vector kernels are compiled
again for the tiers above (`src/kernels/tiers/`) and picked per call from cpuid (`kernel_isa()`):
the three attention kernels (fp32 flash, fp32 block, bf16 flash with its `vdpbf16ps` tile products)
for AVX-512 and for AVX-512 + AVX512-BF16, the element-wise kernels (RMSNorm, RoPE, SwiGLU, the
loss, AdamW with the gradient norm and scaling, the bf16 rounding of activations, gradients and GEMM
operands) for AVX-512, and the f16 conversions; so this one binary runs `vdpbf16ps` and 64-byte
vectors here. oneDNN picks its own GEMM ISA as before. Rows: `native` (`-march=native`: GCC 12's
znver3 tuning with every AVX-512 extension of this Zen 4), `x86-64-v3` (the tiers it picks here:
avx512_bf16, whose element-wise kernels are the avx512 ones), the same binary with
`FIVEFOLD_MAX_CPU_ISA=avx512` (what an AVX-512 CPU without bf16 dot products, Ice Lake say, runs)
and `=base` (its AVX2 code, what a Zen 3 runs, measured on this CPU). Tiers compute the same
functions with sums rounded apart: `test_kernels` passes in the x86-64-v3 build under each tier
(CTest `kernels_max_isa_*` repeats it so), CTest `kernel_tier_bits` checks
that every element-wise result no vectorised sum feeds has the same bits in each tier, and
`kernel_tier_objects` that no tier's AVX-512 code sits in a symbol other objects share. The
`-march=native` build compiles no tier (its own target has them): `scripts/fingerprint.sh` is
bit-identical to before. In the x86-64-v3 binary the element-wise tiers move training numbers only
through those sums: its fingerprint at `FIVEFOLD_MAX_CPU_ISA=base` is bit-identical to the binary
without them; on its avx512_bf16 pick, against that binary, fp32 losses over the 20 steps differ by
at most 2e-8 (relative) and gradient norms by 3e-7, bf16, fp16 and fp8 losses by 1e-4 and
gradient norms by 5e-3 (an fp32 ulp there can flip a 16-bit rounding). Rerun (builds both, then
this): `bash bench/serial/isa_levels.sh`."""


def reading(med, cpu, first):
    """The table's ratios in words: the portable binary against native, and what its tiers are worth,
    in tokens/s and in CPU seconds (what a run costs, which other work on the machine moves less)."""
    def ratio(a, b, p):
        return med[(a, p)] / med[(b, p)] if (a, p) in med and (b, p) in med else None

    def cpu_ratio(a, b, p):
        return cpu[(b, p)] / cpu[(a, p)]
    v3, v3_512, v3_base = "x86-64-v3", "x86-64-v3 avx512 tier", "x86-64-v3 base tier"
    parts = []
    if ratio(v3, first, "fp32") is not None:
        parts.append(f"the one portable binary runs at **{ratio(v3, first, 'fp32'):.2f}x** the {first} build in fp32 "
                     f"and **{ratio(v3, first, 'bf16'):.2f}x** in bf16 (by CPU seconds "
                     f"{cpu_ratio(v3, first, 'fp32'):.2f}x and {cpu_ratio(v3, first, 'bf16'):.2f}x)")
    if ratio(v3, v3_base, "bf16") is not None:
        parts.append(f"picking the tiers at run time is worth {ratio(v3, v3_base, 'bf16'):.2f}x in bf16 over its AVX2 "
                     f"code and {ratio(v3, v3_base, 'fp32'):.2f}x in fp32 (CPU seconds "
                     f"{cpu_ratio(v3, v3_base, 'bf16'):.2f}x and {cpu_ratio(v3, v3_base, 'fp32'):.2f}x)")
    if ratio(v3, v3_512, "bf16") is not None:
        parts.append(f"`vdpbf16ps` alone (against the avx512 tier's widened products) {ratio(v3, v3_512, 'bf16'):.2f}x "
                     f"(CPU seconds {cpu_ratio(v3, v3_512, 'bf16'):.2f}x)")
    others = [n for n, _ in med if n not in (first, v3, v3_512, v3_base)]
    for n in dict.fromkeys(others):
        parts.append(f"{n}: {ratio(n, first, 'fp32'):.2f}x the {first} build in fp32, {ratio(n, first, 'bf16'):.2f}x "
                     f"in bf16 (CPU seconds {cpu_ratio(n, first, 'fp32'):.2f}x and {cpu_ratio(n, first, 'bf16'):.2f}x)")
    return ("Reading it (medians): " + "; ".join(parts) + ".") if parts else ""


if __name__ == "__main__":
    main()
