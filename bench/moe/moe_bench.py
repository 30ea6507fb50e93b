#!/usr/bin/python3
"""MoE benchmarks (issue 13) on configs/small.toml's shape:

  1. dense `small` vs an 8-expert top-2 MoE with the same active parameters per token (expert
     width ffn_dim / 2, every block MoE): tokens/s and loss at equal steps, serial, alternating;
  2. the MoE on 2 ranks with ep 1 (every rank all experts) vs ep 2 (4 experts each, all-to-all);
  3. the expert-load histogram over training without balancing (aux 0, z 0) and with it
     (aux 1e-2 plus the aux-loss-free bias 1e-3).

Usage: /usr/bin/python3 bench/moe/moe_bench.py --fivefold build/fivefold --data DATA [--steps 20]
       [--rounds 2] [--write]
"""
import argparse
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import benchlib  # noqa: E402

MOE = ["--n-experts", "8", "--top-k", "2", "--expert-ffn-dim", "344"]


def train(args, out, flags, ranks=1):
    import shutil
    shutil.rmtree(out, ignore_errors=True)
    cmd = [args.fivefold, "train", "--config", os.path.join(benchlib.ROOT, "configs/small.toml"), "--data", args.data,
           "--out", out, "--steps", str(args.steps), "--eval-every", "0", "--log-every", "1000",
           "--micro-batch", "8"] + flags
    if ranks > 1:
        cmd = ["mpirun", "--oversubscribe", "-np", str(ranks)] + cmd + ["--threads", "1"]
    else:
        cmd += ["--threads", "2"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=benchlib.mpi_env())
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return benchlib.read_metrics(out)


def speed(recs):
    return statistics.median(r["tokens_per_s"] for r in recs[2:])  # the first steps warm up


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fivefold", default=os.path.join(benchlib.ROOT, "build/fivefold"))
    ap.add_argument("--data", required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    tmp = "/tmp/ff_moe_bench"
    runs = {"dense": [], "moe": [], "ep1": [], "ep2": []}
    for _ in range(args.rounds):  # alternating, so load changes hit every variant alike
        runs["dense"].append(train(args, f"{tmp}/dense", []))
        runs["moe"].append(train(args, f"{tmp}/moe", MOE))
        runs["ep1"].append(train(args, f"{tmp}/ep1", MOE + ["--ep", "1"], ranks=2))
        runs["ep2"].append(train(args, f"{tmp}/ep2", MOE + ["--ep", "2"], ranks=2))
    free = train(args, f"{tmp}/free", MOE + ["--aux-loss-coeff", "0", "--z-loss-coeff", "0"])
    balanced = train(args, f"{tmp}/balanced", MOE + ["--router-bias-update", "1e-3"])

    def row(name, key):
        s = [speed(r) for r in runs[key]]
        loss = statistics.mean(r[-1]["loss"] for r in runs[key])
        return f"| {name} | {statistics.median(s):.0f} | {', '.join(f'{x:.0f}' for x in s)} | {loss:.4f} |"

    lines = ["| run | tokens/s (median) | per round | loss at step %d |" % args.steps, "|---|---:|---|---:|",
             row("dense small (ffn 688)", "dense"), row("MoE 8 experts top-2 (width 344: same active FFN)", "moe"),
             row("MoE on 2 ranks, ep 1 (dp 2)", "ep1"), row("MoE on 2 ranks, ep 2 (dp 2)", "ep2")]
    hist = ["", "Tokens per expert (share of routes, last block) and max/mean over the blocks:", "",
            "| run | step | imbalance max/mean | last block's shares, experts 0-7 |", "|---|---:|---:|---|"]
    for name, recs in (("no balancing (aux 0, z 0)", free), ("aux 1e-2 + bias 1e-3", balanced)):
        for r in recs:
            if r["step"] in (1, args.steps // 2, args.steps):
                t = r["moe"]["layers"][-1]["tokens_per_expert"]
                shares = " ".join(f"{x / sum(t):.3f}" for x in t)
                hist.append(f"| {name} | {r['step']} | {r['moe']['imbalance']:.2f} | {shares} |")
    ratio = statistics.median(speed(r) for r in runs["ep2"]) / statistics.median(speed(r) for r in runs["ep1"])
    summary = f"ep 2 / ep 1 tokens/s: {ratio:.2f}."
    uptime = open("/proc/loadavg").read().split()[:3]
    desc = ("AMD EPYC (Zen 5: family 26, AVX512-BF16), 2 cores, shared with 6 other agents' builds and tests "
            f"(load average at the end {' '.join(uptime)}): absolute numbers are low and noisy; ratios come from "
            f"runs alternated in the same rounds. configs/small.toml, micro-batch 8, {args.steps} steps, "
            f"{args.rounds} rounds.")
    benchlib.publish("## Issue 13: mixture of experts and expert parallelism", desc, "\n".join(lines + hist), summary,
                     args.write)


if __name__ == "__main__":
    main()
