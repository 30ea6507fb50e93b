#!/usr/bin/python3
"""Two builds of fivefold side by side, for a change that must not cost speed (a refactor).

In one invocation, round after round, it runs alternately:
  - serial training of configs/bench.toml with each build's `fivefold` and with PyTorch 1.13 eager
    (the peer at its best: OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset in its command alone);
  - each build's bench_allreduce (Comm against raw MPI_Allreduce in the same run, 2 ranks).
and reports each build's ratio to the peer that ran beside it, so machine weather cancels.

usage: /usr/bin/python3 bench/compare_builds.py --before BUILD_A --after BUILD_B [--rounds 3]
       [--no-comm]   (serial training only: builds without bench/comm/bench_allreduce)
       [--write [--title "## ..."]]   (replaces that section of bench/RESULTS.md; default
                                       "## Before / after a refactor")
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "bench/serial"))
from benchlib import cpu_name, mpi_env, peer_env, publish  # noqa: E402
import compare_pytorch as serial  # noqa: E402

TITLE = "## Before / after a refactor"


def comm_ratios(build, reps):
    """{size: Comm busbw / raw MPI busbw} from one run of the build's bench_allreduce."""
    bench = os.path.join(build, "bench/comm/bench_allreduce")
    out = subprocess.run(["mpirun", "-np", "2", bench, "--reps", str(reps)], env=mpi_env(),
                         capture_output=True, text=True, check=True).stdout
    ratios, in_table = {}, False
    for line in out.splitlines():
        if line.startswith("## "):
            in_table = line.startswith("## all-reduce bus bandwidth")
        elif in_table and line.startswith("|") and not line.startswith("|---"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if cells[0] != "size":
                ratios[cells[0]] = float(cells[3])
    return ratios


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True, help="build folder of the earlier commit")
    ap.add_argument("--after", required=True, help="build folder of the later commit")
    ap.add_argument("--data", default=os.path.join(ROOT, "data/kjv"))
    ap.add_argument("--before-data", help="the data folder for --before when its shard format differs "
                    "(the same text prepared by that build); default --data")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=7, help="bench_allreduce repetitions per size")
    ap.add_argument("--no-comm", action="store_true", help="leave the collectives out")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--title", default=TITLE, help="the section of bench/RESULTS.md --write replaces")
    a = ap.parse_args()
    a.batch, a.seq = 8, 256
    builds = {"before": a.before, "after": a.after}
    data = {"before": a.before_data or a.data, "after": a.data}
    tps = {k: [] for k in ("before", "after", "pytorch")}
    comm = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as workdir:
        tokens = os.path.join(workdir, "train.i32")
        serial.shard_to_int32(serial.first_train_shard(data["before"]), tokens)
        for r in range(a.rounds):
            for name, build in builds.items():
                a.fivefold, a.data = os.path.join(build, "fivefold"), data[name]
                tps[name].append(serial.fivefold_round(a, workdir)["tokens_per_s"])
                if not a.no_comm:
                    comm[name].append(comm_ratios(build, a.reps))
            out, _ = serial.run_measured(
                ["/usr/bin/python3", os.path.join(ROOT, "bench/torch_llama_bench.py"), "--json", "--steps",
                 str(a.steps), "--warmup", str(a.warmup), "--threads", str(a.threads), "--tokens", tokens],
                peer_env())
            tps["pytorch"].append(json.loads(out.strip().splitlines()[-1])["tokens_per_s"])
            print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.0f} tok/s" for k, v in tps.items()), file=sys.stderr)
    med = statistics.median
    rows = ["| | before | after | after / before |", "|---|---:|---:|---:|"]
    b, f, p = med(tps["before"]), med(tps["after"]), med(tps["pytorch"])
    rows.append(f"| serial tokens/s (median of {a.rounds} rounds; PyTorch {p:.0f}) | {b:.0f} | {f:.0f} | {f / b:.3f} |")
    rows.append(f"| serial tokens/s / PyTorch eager | {b / p:.2f}x | {f / p:.2f}x | |")
    for size in comm["before"][0] if comm["before"] else []:
        rb = med([c[size] for c in comm["before"]])
        ra = med([c[size] for c in comm["after"]])
        rows.append(f"| all-reduce {size}: Comm / raw MPI busbw | {rb:.2f} | {ra:.2f} | {ra / rb:.3f} |")
    rows.append("| per-round serial tokens/s (before; after; PyTorch) | " +
                "; ".join(", ".join(f"{x:.0f}" for x in tps[k]) for k in ("before", "after", "pytorch")) + " | | |")
    comm_desc = ("" if a.no_comm else f"; collectives: 2 ranks, float32 sum, median of {a.reps} reps, each "
                 "build's Comm against raw MPI in the same run")
    desc = (f"CPU: {cpu_name()}, 2 cores. Serial: `configs/bench.toml`, micro-batch 8, {a.threads} threads, "
            f"fp32, {a.steps} timed steps after {a.warmup} warm-up{comm_desc}. The builds and PyTorch 1.13 "
            f"eager run alternately in every round. before = `{a.before}`, after = `{a.after}`.")
    publish(a.title, desc, "\n".join(rows), write=a.write)


if __name__ == "__main__":
    main()
