#!/usr/bin/python3
"""Step time and exposed communication of four 4-rank layouts across two namespaced nodes x 2
ranks (tests/support/netns_nodes.sh), at several link rates, with `fivefold plan`'s prediction
beside each, from a `fivefold calibrate` run on the same nodes at the same rate.

  layouts (16 sequences per step each): dp 4; dp 4 ZeRO-3; tp 2 inside nodes x dp 2 across;
  tp 4 (the tp group spans both nodes: the wrong way round)
  exposed communication: the step time over the link less the same layout's step time on one
  host (4 ranks, shared memory only): what the slow link adds to a step.
  predicted exposed: the plan's tp + pp + dp communication terms (what it does not hide).
  without link CPU: the same plan with the cluster file's [across_nodes] cpu_seconds_per_byte
  removed (the kernel's CPU for the link's bytes not charged: the planner before that term).

As root, from the repository root:
  /usr/bin/python3 bench/multinode/run.py --data DIR [--rates 1gbit,10gbit,25gbit] [--steps 8] [--write]
DIR: a prepared data folder (`fivefold prepare`) whose vocabulary the model takes. --work keeps the
measurement, calibrations and binary elsewhere than /tmp/fivefold-multinode-bench (a second bench
beside the first; then also set FF_NODES_PREFIX)."""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import benchlib  # noqa: E402

HARNESS = os.path.join(benchlib.ROOT, "tests/support/netns_nodes.sh")
LAYOUTS = [("dp 4", "dp=4,mb=4,m=1,zero=0"), ("dp 4 ZeRO-3", "dp=4,mb=4,m=1,zero=3"),
           ("tp 2 inside x dp 2 across", "tp=2,dp=2,mb=8,m=1"), ("tp 4 across nodes", "tp=4,mb=16,m=1")]
SECTION = "## Two nodes: step time and exposed communication by layout and link rate"
WORK = "/tmp/fivefold-multinode-bench"


def env():
    return dict(benchlib.mpi_env(), OMP_NUM_THREADS="1", FF_NODES_PREFIX=os.environ.get("FF_NODES_PREFIX", "ffb"),
                FF_NODES_OWNER=str(os.getpid()))


def sh(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env(), **kw)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p.stdout


def harness(*args):
    return sh([HARNESS] + list(args)).strip()


def on_nodes(args):
    return sh([HARNESS, "mpirun", "--hostfile", harness("hostfile", "2"), "-np", "4"] + args)


def on_host(args):
    return sh(["mpirun", "--oversubscribe", "-np", "4"] + args)


def kernel_seconds():
    """This machine's system + irq + softirq CPU seconds so far (/proc/stat)."""
    fields = open("/proc/stat").readline().split()
    return (int(fields[3]) + int(fields[6]) + int(fields[7])) / os.sysconf("SC_CLK_TCK")


def train_step_seconds(launch, a, layout, name):
    """(median step seconds, the machine's kernel CPU seconds over the whole run)."""
    out = os.path.join(a.work, name)
    shutil.rmtree(out, ignore_errors=True)
    k0 = kernel_seconds()
    launch([a.fivefold, "train", "--config", os.path.join(benchlib.ROOT, a.config), "--data", a.data, "--out", out,
            "--threads", "1", "--steps", str(a.steps), "--eval-every", "0", "--log-every", "1000", "--layout", layout])
    kernel = kernel_seconds() - k0
    recs = [r for r in benchlib.read_metrics(out) if "step_seconds" in r]
    return statistics.median(r["step_seconds"] for r in recs[2:]), kernel  # the first steps warm up


def without_link_cpu(cluster):
    """A copy of the cluster file without the kernel's CPU per byte across nodes."""
    text = open(cluster).read()
    cluster = cluster.replace(".toml", "_no_link_cpu.toml")
    with open(cluster, "w") as f:
        f.write("\n".join(line for line in text.splitlines() if not line.startswith("cpu_seconds_per_byte =")) + "\n")
    return cluster


def with_link_cpu(cluster, per_byte):
    """A copy of the cluster file with [across_nodes] cpu_seconds_per_byte set (an older calibration
    that predates the key, re-predicted with another run's measurement of it)."""
    lines, table = [], None
    for line in open(cluster).read().splitlines():
        if line.startswith("["):
            if table == "[across_nodes]":
                lines.append(f"cpu_seconds_per_byte = {per_byte:.6g}")
            table = line.split()[0]
        if not (table == "[across_nodes]" and line.startswith("cpu_seconds_per_byte =")):
            lines.append(line)
    if table == "[across_nodes]":
        lines.append(f"cpu_seconds_per_byte = {per_byte:.6g}")
    cluster = cluster.replace(".toml", "_link_cpu.toml")
    with open(cluster, "w") as f:
        f.write("\n".join(lines) + "\n")
    return cluster


def link_cpu_per_byte(cluster):
    for line in open(cluster):
        if line.startswith("cpu_seconds_per_byte ="):
            return float(line.split("=")[1].split()[0])
    return 0.0


def predict(a, layout, cluster, quiet=False):
    """(step, comm, link_cpu) seconds from `fivefold plan`. quiet: with the cores the ranks would get on an idle
    machine (the 2 nodes share its cores, so cores / 2 per node) instead of calibrate's measured
    share, which other work on a shared machine pulls down."""
    if quiet:
        text = open(cluster).read()
        cores = float(text.split("\ncores = ")[1].split()[0])
        cluster = cluster.replace(".toml", "_quiet.toml")
        with open(cluster, "w") as f:
            f.write("\n".join(f"available_cores = {cores / 2}" if line.startswith("available_cores =") else line
                              for line in text.splitlines()) + "\n")
    vocab = json.load(open(os.path.join(a.data, "meta.json")))["vocab_size"]
    out = sh([a.fivefold, "plan", "--config", os.path.join(benchlib.ROOT, a.config), "--vocab-size", str(vocab),
              "--ranks", "4", "--layout", layout, "--threads", "1", "--json", "--cluster", cluster])
    p = [json.loads(x) for x in out.splitlines() if x.startswith("{")][0]
    # link_cpu: a node's kernel CPU for the link's hidden bytes
    return p["step_seconds"], p.get("tp_comm", 0) + p.get("pp_comm", 0) + p.get("dp_comm", 0), p.get("link_cpu", 0)


def measure(a, rates):
    """Step times on one host and over the link at each rate, and a calibration per rate."""
    m = {"load_start": open("/proc/loadavg").read().split()[:3], "host": {}, "nodes": {}, "steps": a.steps,
         "kernel_host": {}, "kernel_nodes": {}}
    t0 = time.time()
    for label, layout in LAYOUTS:
        m["host"][label], m["kernel_host"][label] = train_step_seconds(on_host, a, layout, "host")
        print("one host", label, m["host"][label], flush=True)
    harness("check")
    try:
        harness("up", "2", rates[0])
        for i, rate in enumerate(rates):
            harness("rate", rate)
            # calibrate's default 3 sweeps, each rate their median: one sweep's GEMM rates at one
            # link rate came out 15-25% below the next rate's in the same run, and moved the
            # prediction by as much.
            on_nodes([a.fivefold, "calibrate", "--threads", "1", "--out",
                      os.path.join(a.work, f"cluster_{rate}.toml")])
            # Alternating order from rate to rate, so a slow stretch of the machine spreads over layouts.
            for label, layout in (LAYOUTS if i % 2 == 0 else LAYOUTS[::-1]):
                key = f"{rate}|{label}"
                m["nodes"][key], m["kernel_nodes"][key] = train_step_seconds(on_nodes, a, layout, "nodes")
                print(rate, label, m["nodes"][f"{rate}|{label}"], flush=True)
    finally:
        harness("down")
    m["load_end"], m["seconds"] = open("/proc/loadavg").read().split()[:3], time.time() - t0
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--config", default="configs/small.toml")
    ap.add_argument("--rates", default="1gbit,10gbit,25gbit")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--fivefold", default=os.path.join(benchlib.ROOT, "build-dev/fivefold"))
    ap.add_argument("--work", default=WORK, help="where the measurement, calibrations and binary are kept")
    ap.add_argument("--predict-only", action="store_true",
                    help="take the measurement and calibrations of the last run from --work (with the binary "
                         "--fivefold names if given, else the one saved there)")
    ap.add_argument("--link-cpu-from", metavar="DIR",
                    help="with --predict-only: each rate's cpu_seconds_per_byte from DIR's calibrations (another "
                         "run's --work), for calibrations that predate the key")
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    rates = a.rates.split(",")
    saved = os.path.join(a.work, "measured.json")
    if a.predict_only:
        if "--fivefold" not in sys.argv:
            a.fivefold = os.path.join(a.work, "fivefold")
        m = json.load(open(saved))
    else:
        # A private copy of the binary: a rebuild during the measurement must not change it.
        a.fivefold = shutil.copy2(a.fivefold, os.path.join(a.work, "fivefold"))
        m = measure(a, rates)
        json.dump(m, open(saved, "w"), indent=1)
    table = ("| link | layout | measured step (ms) | one host (ms) | exposed comm (ms) | predicted step (ms) | "
             "predicted comm (ms) | error | without link CPU (ms) | error | predicted, idle-machine cores (ms) | "
             "error |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    errors, bare_errors, quiet_errors, per_byte = [], [], [], []
    kernel_table = ("| link | layout | kernel CPU per step over the link, measured (ms) | plan's link_cpu, both nodes "
                    "(ms) |\n|---|---|---|---|\n")
    within = lambda errs: f"{sum(abs(e) <= 0.15 for e in errs)}/{len(errs)}"  # noqa: E731
    for rate in rates:
        cluster = os.path.join(a.work, f"cluster_{rate}.toml")
        if a.link_cpu_from:
            cluster = with_link_cpu(cluster, link_cpu_per_byte(os.path.join(a.link_cpu_from, f"cluster_{rate}.toml")))
        per_byte.append(f"{rate} {1e9 * link_cpu_per_byte(cluster):.2f}")
        for label, layout in LAYOUTS:
            t, host = m["nodes"][f"{rate}|{label}"], m["host"][label]
            pt, pcomm, plink = predict(a, layout, cluster)
            if m.get("kernel_nodes"):  # the machine's kernel CPU per step, over the link less on one host
                extra = (m["kernel_nodes"][f"{rate}|{label}"] - m["kernel_host"][label]) / m["steps"]
                kernel_table += f"| {rate} | {label} | {1e3 * extra:.0f} | {2e3 * plink:.0f} |\n"
            bt = predict(a, layout, without_link_cpu(cluster))[0]
            qt = predict(a, layout, cluster, quiet=True)[0]
            errors.append((pt - t) / t)
            bare_errors.append((bt - t) / t)
            quiet_errors.append((qt - t) / t)
            table += (f"| {rate} | {label} | {1e3 * t:.0f} | {1e3 * host:.0f} | {1e3 * (t - host):.0f} | "
                      f"{1e3 * pt:.0f} | {1e3 * pcomm:.0f} | {100 * errors[-1]:+.0f}% | {1e3 * bt:.0f} | "
                      f"{100 * bare_errors[-1]:+.0f}% | {1e3 * qt:.0f} | {100 * quiet_errors[-1]:+.0f}% |\n")
    summary = (f"Predicted step time within 15% of the measurement: {within(errors)} with calibrate's measured core "
               f"share, {within(bare_errors)} without the link's CPU, {within(quiet_errors)} with the idle machine's "
               f"cores. The kernel's CPU per byte a node sends or receives across, as calibrate measured it (ns): "
               f"{', '.join(per_byte)}.")
    desc = (f"Model {a.config}, {m['steps']} steps (median of steps 3..), 16 sequences per step, 1 thread per "
            f"rank, 2 nodes x 2 ranks (network namespaces on one machine, {benchlib.cpu_name()}, {os.cpu_count()} "
            f"cores shared by all 4 ranks), the link limited by tc tbf. Load average {' '.join(m['load_start'])} at "
            f"the start, {' '.join(m['load_end'])} at the end, {m['seconds']:.0f} s. Exposed communication: the step "
            f"over the link less the same layout's step on one host (4 ranks, shared memory only; negative: noise "
            f"larger than the link's cost). Predicted: `fivefold plan --layout L --cluster C`, C from `fivefold "
            f"calibrate` run on the same two nodes at the same rate just before (its [across_nodes] class measured "
            f"over the link); predicted comm: the plan's tp + pp + dp terms. Without link CPU: the same plan with "
            f"the file's cpu_seconds_per_byte removed (the kernel's work for the link's hidden bytes not charged). "
            f"The last two columns: the same plan "
            f"with `available_cores` set to what an idle machine gives each node (its cores / 2) instead of the "
            f"share calibrate measured while other jobs ran.")
    if m.get("kernel_nodes"):
        summary += ("\n\nThe link's kernel CPU in the runs themselves: this machine's system + irq + softirq seconds "
                    "over each run (start-up included) over the link less the same layout's on one host, per step; "
                    "beside it the plan's `link_cpu` (the kernel's CPU for the data-parallel bytes the compute "
                    "hides, a node's) for both nodes.\n\n" + kernel_table)
    benchlib.publish(SECTION, desc, table, summary, a.write)


if __name__ == "__main__":
    main()
