#!/usr/bin/python3
"""Runs bench_allreduce (mpirun -np 2) and gloo_allreduce.py and writes the section
"## Collectives: Comm vs raw MPI vs gloo" of bench/RESULTS.md (other sections untouched).

    cmake --build build -j2 --target bench_allreduce
    /usr/bin/python3 bench/comm/write_results.py [--build build] [--reps 11]
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from benchlib import replace_section  # noqa: E402

TITLE = "## Collectives: Comm vs raw MPI vs gloo"


def tables(text):
    """Markdown tables of the benchmark output: {heading line: [rows as lists of cells]}."""
    out, heading = {}, None
    for line in text.splitlines():
        if line.startswith("## "):
            heading = line[3:]
            out[heading] = []
        elif line.startswith("|") and heading and not line.startswith("|---"):
            out[heading].append([c.strip() for c in line.strip("|").split("|")])
    return out


def find(tabs, prefix):
    for heading, rows in tabs.items():
        if heading.startswith(prefix):
            return heading, rows
    raise SystemExit(f"benchmark output has no table '{prefix}...'; did the run fail?")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build", help="CMake build folder (relative to the repo)")
    ap.add_argument("--reps", type=int, default=11)
    args = ap.parse_args()
    bench = os.path.join(ROOT, args.build, "bench/comm/bench_allreduce")
    if not os.path.exists(bench):
        raise SystemExit(f"{bench} is missing; build it: cmake --build {args.build} -j2 --target bench_allreduce")
    env = dict(os.environ)
    if os.geteuid() == 0:  # Open MPI refuses root without these
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    load_before = os.getloadavg()[0]
    mpi = subprocess.run(["mpirun", "-np", "2", bench, "--reps", str(args.reps)], env=env,
                         capture_output=True, text=True, check=True).stdout
    gloo = subprocess.run([sys.executable, os.path.join(HERE, "gloo_allreduce.py"), "--reps", str(args.reps)],
                          capture_output=True, text=True, check=True).stdout
    load_after = os.getloadavg()[0]

    mt, gt = tables(mpi), tables(gloo)
    _, bw = find(mt, "all-reduce bus bandwidth")
    gloo_bw = {row[0]: row[1] for row in find(gt, "gloo all_reduce")[1][1:]}
    overlap_heading, overlap = find(mt, "overlap")
    idle_heading, idle = find(mt, "idle cost")

    lines = [TITLE, "",
             "Machine: the 2-vCPU Sapphire Rapids VM of the sections above; Open MPI 4.1.4 (vader shared",
             "memory, CMA single copy), PyTorch 1.13 gloo over loopback TCP. 2 ranks, float32 sum, in place.",
             f"busbw = S/t · 2(n−1)/n (nccl-tests), t = the slower rank's time per call, median of {args.reps}",
             "reps; Comm and raw `MPI_Allreduce` (same communicator) alternate within one run. "
             f"Load average {load_before:.1f} before, {load_after:.1f} after.", "",
             "```",
             f"cmake --build {args.build} -j2 --target bench_allreduce",
             f"/usr/bin/python3 bench/comm/write_results.py --build {args.build} --reps {args.reps}",
             f"#   = mpirun -np 2 {args.build}/bench/comm/bench_allreduce --reps {args.reps}",
             f"#   + /usr/bin/python3 bench/comm/gloo_allreduce.py --reps {args.reps}",
             "```", "",
             "| size | Comm busbw GB/s | raw MPI busbw GB/s | gloo busbw GB/s | Comm / raw MPI | Comm / gloo |",
             "|---|---:|---:|---:|---:|---:|"]
    for size, comm, raw, ratio in bw[1:]:
        g = gloo_bw.get(size, "nan")
        lines.append(f"| {size} | {comm} | {raw} | {g} | {ratio} | {float(comm) / float(g):.1f} |")
    lines += ["", f"Overlap ({overlap_heading.split(': ', 1)[1]}): C is calibrated to ~3x the all-reduce.", ""]
    lines += ["| " + " | ".join(r) + " |" for r in overlap[:1]] + ["|---|---:|---:|---:|---:|---:|"]
    lines += ["| " + " | ".join(r) + " |" for r in overlap[1:]]
    lines += ["", f"Idle cost ({idle_heading.split(': ', 1)[1]}):", ""]
    lines += ["| " + " | ".join(r) + " |" for r in idle[:1]] + ["|---|---:|"]
    lines += ["| " + " | ".join(r) + " |" for r in idle[1:]]
    notes = os.path.join(HERE, "results_notes.md")
    if os.path.exists(notes):
        lines += ["", open(notes).read().rstrip("\n")]
    replace_section(TITLE, "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
