#!/usr/bin/python3
"""MoE benchmarks on configs/small.toml's shape, in two parts run apart and one table:

  --part timing (run it through /work/bin/bench-quiet: tokens/s are timings), rounds alternating:
    1. dense `small` vs an 8-expert top-2 MoE with the same active parameters per token (expert
       width ffn_dim / 2, every block MoE), serial, 1 thread;
    2. the MoE on 2 ranks (1 thread each) with ep 1 (every rank all experts, dp 2) vs ep 2;
    3. ep 2 with one shared expert, the all-to-alls blocking vs `--ep-overlap true`: tokens/s and
       the exchange time per step the ranks were blocked on (exposed) vs in flight.
  --part quality (loss and routing only, no timing: runs at any priority):
    4. loss at equal steps of the dense model and the MoE (aux 1e-2, z 1e-3: the defaults);
    5. the expert-load histogram over training: no balancing (aux 0, z 0), the aux loss (defaults),
       the aux-loss-free bias alone (aux 0, bias step 1e-3).
  --publish T.json Q.json [--write]: the section of bench/RESULTS.md from the two parts' results.

Usage: /usr/bin/python3 bench/moe/moe_bench.py --part timing --data DATA --save T.json [--steps 30] [--rounds 3]
       /usr/bin/python3 bench/moe/moe_bench.py --part quality --data DATA --save Q.json [--steps 200]
       /usr/bin/python3 bench/moe/moe_bench.py --publish T.json Q.json [--write]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import benchlib  # noqa: E402

MOE = ["--n-experts", "8", "--top-k", "2", "--expert-ffn-dim", "344"]
NO_BALANCE = ["--aux-loss-coeff", "0", "--z-loss-coeff", "0"]
TIMING = {  # name: (flags, ranks)
    "dense": ([], 1),
    "moe": (MOE, 1),
    "ep1": (MOE + ["--ep", "1"], 2),
    "ep2": (MOE + ["--ep", "2"], 2),
    "ep2_shared": (MOE + ["--ep", "2", "--shared-experts", "1"], 2),
    "ep2_shared_overlap": (MOE + ["--ep", "2", "--shared-experts", "1", "--ep-overlap", "true"], 2),
}
QUALITY = {
    "dense": [],
    "moe": MOE,
    "none": MOE + NO_BALANCE,
    "bias": MOE + ["--aux-loss-coeff", "0", "--router-bias-update", "1e-3"],
}


def train(args, out, flags, ranks=1, threads=2):
    shutil.rmtree(out, ignore_errors=True)
    cmd = [args.fivefold, "train", "--config", os.path.join(benchlib.ROOT, "configs/small.toml"), "--data", args.data,
           "--out", out, "--steps", str(args.steps), "--eval-every", "0", "--log-every", "1000",
           "--micro-batch", "8"] + flags
    if ranks > 1:
        cmd = ["mpirun", "--oversubscribe", "-np", str(ranks)] + cmd + ["--threads", "1"]
    else:
        cmd += ["--threads", str(threads)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=dict(benchlib.mpi_env(), OMP_NUM_THREADS="1"))
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return benchlib.read_metrics(out)


def after_warmup(recs):
    return recs[3:]  # the first steps warm caches and the thread pools up


def timing(args):
    import time
    res, start = {k: [] for k in TIMING}, time.monotonic()
    for done in range(args.rounds):  # alternating, so load changes hit every variant alike
        # The quiet lane stalls everyone else: no round that would end past the budget.
        if done and (time.monotonic() - start) * (done + 1) / done > args.budget_s:
            print(f"stopping after {done} rounds: another would pass --budget-s {args.budget_s}", file=sys.stderr)
            break
        for name, (flags, ranks) in TIMING.items():
            # One thread per process: a 2-thread pool's barriers stall whenever the other core is
            # busy (even at nice 0 beside nice-19 work: the MoE ran 10x slower than on 1 thread).
            recs = after_warmup(train(args, f"/tmp/ff_moe_bench/{name}", flags, ranks, threads=1))
            row = {"tokens_per_s": statistics.median(r["tokens_per_s"] for r in recs)}
            if "ep_exchange" in recs[0].get("moe", {}):  # rank 0's exchanges
                row["wait_ms"] = statistics.median(r["moe"]["ep_exchange"]["wait_ms"] for r in recs)
                row["comm_ms"] = statistics.median(r["moe"]["ep_exchange"]["comm_ms"] for r in recs)
            res[name].append(row)
    return res


def collect_quality(args):
    """The quality runs' records as far as all of them got (runs stopped early to fit a session)."""
    runs = {name: benchlib.read_metrics(f"/tmp/ff_moe_bench/q_{name}") for name in QUALITY}
    args.steps = min(len(v) for v in runs.values())
    return {k: [{"step": r["step"], "loss": r["loss"], "moe": r.get("moe")} for r in v[:args.steps]]
            for k, v in runs.items()}


def quality(args):
    if args.collect:
        return collect_quality(args)
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(4) as pool:  # one thread each, all at once: these are not timings
        runs = {name: pool.submit(train, args, f"/tmp/ff_moe_bench/q_{name}", flags, 1, 1)
                for name, flags in QUALITY.items()}
    return {k: [{"step": r["step"], "loss": r["loss"], "moe": r.get("moe")} for r in f.result()]
            for k, f in runs.items()}


def timing_table(t, meta):
    def med(name, key):
        return statistics.median(r[key] for r in t[name])

    def row(label, name):
        per = ", ".join(f"{r['tokens_per_s']:.0f}" for r in t[name])
        ex = f"{med(name, 'wait_ms'):.1f} | {med(name, 'comm_ms'):.1f}" if "wait_ms" in t[name][0] else "- | -"
        return f"| {label} | {med(name, 'tokens_per_s'):.0f} | {per} | {ex} |"

    lines = [f"Timing ({meta['rounds']} rounds of {meta['steps']} steps, medians over steps 4..{meta['steps']}):", "",
             "| run | tokens/s (median) | per round | ep exchange blocked ms/step | in flight ms/step |",
             "|---|---:|---|---:|---:|",
             row("dense small (ffn 688), 1 rank x 1 thread", "dense"),
             row("MoE 8 experts top-2 (width 344: same active FFN), 1 rank x 1 thread", "moe"),
             row("MoE, 2 ranks, ep 1 (dp 2)", "ep1"), row("MoE, 2 ranks, ep 2 (dp 2)", "ep2"),
             row("MoE + 1 shared expert, ep 2, blocking all-to-alls", "ep2_shared"),
             row("MoE + 1 shared expert, ep 2, `ep_overlap`", "ep2_shared_overlap")]
    r_moe = med("moe", "tokens_per_s") / med("dense", "tokens_per_s")
    r_ep = med("ep2", "tokens_per_s") / med("ep1", "tokens_per_s")
    r_ov = med("ep2_shared_overlap", "tokens_per_s") / med("ep2_shared", "tokens_per_s")
    hidden = 1 - med("ep2_shared_overlap", "wait_ms") / med("ep2_shared_overlap", "comm_ms")
    summary = (f"MoE / dense tokens/s {r_moe:.2f}; ep 2 / ep 1 {r_ep:.2f}; overlap / blocking {r_ov:.2f}; with "
               f"`ep_overlap` rank 0 was blocked {med('ep2_shared_overlap', 'wait_ms'):.1f} ms of "
               f"{med('ep2_shared_overlap', 'comm_ms'):.1f} ms in flight per step ({100 * hidden:.0f}% hidden), "
               f"blocking: {med('ep2_shared', 'wait_ms'):.1f} of {med('ep2_shared', 'comm_ms'):.1f} ms.")
    return lines, summary


def quality_table(q, meta):
    steps = meta["steps"]
    marks = sorted({1, steps // 4, steps // 2, steps})

    def loss_at(name, s):  # mean of the 10 steps ending at s: one step's loss is noisy
        window = [r["loss"] for r in q[name] if s - 10 < r["step"] <= s]
        return statistics.mean(window)

    lines = ["", f"Loss (mean of the 10 steps ending at each step; serial, 1 thread, the first {steps} steps of a "
             f"{meta.get('schedule', steps)}-step schedule, same data order):", "",
             "| run | " + " | ".join(f"step {s}" for s in marks[1:]) + " |", "|---|" + "---:|" * (len(marks) - 1)]
    for label, name in (("dense small", "dense"), ("MoE 8 x top-2, aux 1e-2 + z 1e-3", "moe")):
        lines.append(f"| {label} | " + " | ".join(f"{loss_at(name, s):.4f}" for s in marks[1:]) + " |")
    lines += ["", "Expert load over training: max/mean tokens per expert (worst block) and the last block's share of "
              "routes per expert:", "", "| balancing | step | max/mean | last block, experts 0-7 | loss |",
              "|---|---:|---:|---|---:|"]
    for label, name in (("none (aux 0, z 0)", "none"), ("aux loss 1e-2 (+ z 1e-3)", "moe"),
                        ("aux-loss-free bias 1e-3 (aux 0)", "bias")):
        for r in q[name]:
            if r["step"] in marks:
                t = r["moe"]["layers"][-1]["tokens_per_expert"]
                shares = " ".join(f"{x / sum(t):.3f}" for x in t)
                lines.append(f"| {label} | {r['step']} | {r['moe']['imbalance']:.2f} | {shares} | {r['loss']:.4f} |")
    late = {n: statistics.mean(r["moe"]["imbalance"] for r in q[n][-steps // 4:]) for n in ("none", "moe", "bias")}
    summary = ("Mean max/mean over the last quarter of the steps: " +
               ", ".join(f"{n} {v:.2f}" for n, v in late.items()) + ".")
    return lines, summary


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fivefold", default=os.path.join(benchlib.ROOT, "build/fivefold"))
    ap.add_argument("--data")
    ap.add_argument("--part", choices=["timing", "quality"])
    ap.add_argument("--steps", type=int)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budget-s", type=float, default=270, help="timing: no round that would end past this")
    ap.add_argument("--collect", action="store_true", help="quality: the runs already in /tmp/ff_moe_bench, "
                    "cut to the steps all of them reached")
    ap.add_argument("--save")
    ap.add_argument("--publish", nargs=2, metavar=("TIMING_JSON", "QUALITY_JSON"))
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    if args.part:
        if not args.data or not args.save:
            sys.exit("--part needs --data and --save")
        args.steps = args.steps or (30 if args.part == "timing" else 200)
        load0, schedule = open("/proc/loadavg").read().split()[:3], args.steps
        result = timing(args) if args.part == "timing" else quality(args)
        rounds = len(next(iter(result.values()))) if args.part == "timing" else 1
        meta = {"steps": args.steps, "schedule": schedule, "rounds": rounds, "load_start": load0,
                "load_end": open("/proc/loadavg").read().split()[:3], "nice": os.nice(0),
                "command": " ".join(["/usr/bin/python3", os.path.relpath(os.path.abspath(sys.argv[0]), benchlib.ROOT)] +
                                    sys.argv[1:])}
        with open(args.save, "w") as f:
            json.dump({"meta": meta, "result": result}, f)
        table = (timing_table if args.part == "timing" else quality_table)(result, meta)
        print("\n".join(table[0]) + "\n" + table[1])
        return
    if not args.publish:
        sys.exit("give --part or --publish")
    t, q = (json.load(open(p)) for p in args.publish)
    t_lines, t_sum = timing_table(t["result"], t["meta"])
    q_lines, q_sum = quality_table(q["result"], q["meta"])
    desc = ("AMD EPYC (Zen 5: family 26, AVX512-BF16), 2 cores. The timing part ran through `/work/bin/bench-quiet` "
            f"at nice {t['meta']['nice']} while other agents' work ran at nice 19 (load average at its start "
            f"{' '.join(t['meta']['load_start'])}, at its end {' '.join(t['meta']['load_end'])}), variants alternated "
            "in each round; the quality part (losses, loads) ran at nice 19 beside other work and has no timing. "
            "configs/small.toml, micro-batch 8 (1024 tokens per step), data /work/main/data/kjv. Commands:\n\n"
            f"```\n{t['meta']['command']}\n{q['meta']['command']}\n```\n\nand this section from their results:")
    table = "\n".join(t_lines + [""] + [t_sum] + q_lines + ["", q_sum])
    benchlib.publish("## Mixture of experts and expert parallelism", desc, table, "", args.write)


if __name__ == "__main__":
    main()
