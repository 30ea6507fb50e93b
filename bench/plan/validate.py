#!/usr/bin/python3
"""The planner against measured runs. Two phases, so the timing runs happen once, in
the quiet lane, and the predictions never see them:

  measure:  bench-quiet validate.py --data DIR --measure OUT.json
            a serial run of the MoE model (its routing: `calibrate --routing-run`, not timed), then
            --passes times (default 3): `fivefold calibrate` on 2 and 4 ranks (OUT.p<pass>.c2.toml,
            .c4.toml), then `fivefold train` of every layout below, the passes in alternating order:
            per pass the median step time of steps 3.., per layout the median over passes (all kept),
            rank 0's ledger peak. About 7 minutes quiet per pass of 14 steps.
            bench-quiet validate.py --data DIR --measure OUT.json --append: more passes into OUT.json
            (the alternating order continues), as a second lane call.
  predict:  validate.py --data DIR --measured OUT.json [--write]
            `fivefold plan --layout` of each with every pass's calibration of its rank count, the
            median over passes; the table of predicted vs measured, Kendall's tau of the step-time
            order, where the measured-best lands."""
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

SMALL, MOE = "configs/small.toml", "bench/plan/small_moe.toml"
LAYOUTS = [  # (ranks, model config, layout keys); 16 sequences of 128 tokens per step everywhere.
    # Each names mb and m as the runs used them: plan would otherwise fill m in from the config's
    # batch (its global batch kept over the layout's replicas), and predict other layouts than were timed.
    (2, SMALL, "dp=2,mb=8,m=1,zero=0"), (2, SMALL, "dp=2,mb=8,m=1,zero=1"), (2, SMALL, "dp=2,mb=8,m=1,zero=2"),
    (2, SMALL, "dp=2,mb=8,m=1,zero=3"), (2, SMALL, "dp=2,mb=8,m=1,zero=0,recompute=selective"),
    (2, SMALL, "dp=2,mb=8,m=1,zero=0,recompute=full"), (2, SMALL, "dp=2,mb=8,m=1,zero=1,precision=bf16"),
    (2, SMALL, "tp=2,mb=16,m=1"), (2, SMALL, "tp=2,sp,mb=16,m=1"), (2, SMALL, "pp=2,1f1b,mb=4,m=4"),
    (2, SMALL, "pp=2,gpipe,mb=4,m=4"), (2, SMALL, "pp=2,zb-h1,mb=4,m=4"), (2, SMALL, "cp=2,cp_comm=ring,mb=16,m=1"),
    (2, SMALL, "cp=2,cp_comm=a2a,mb=16,m=1"), (2, MOE, "dp=2,ep=2,mb=8,m=1"),
    (4, SMALL, "dp=4,mb=4,m=1,zero=1"), (4, SMALL, "dp=2,tp=2,mb=8,m=1,zero=1"), (4, SMALL, "tp=2,pp=2,1f1b,mb=4,m=4"),
    (4, SMALL, "dp=2,pp=2,1f1b,mb=4,m=2"), (4, SMALL, "dp=2,cp=2,cp_comm=allgather,mb=8,m=1"),
    (4, SMALL, "dp=2,tp=2,sp,mb=8,m=1,precision=bf16"), (4, MOE, "dp=4,ep=4,mb=4,m=1"),
]
KEYS = {"dp": "--dp", "tp": "--tp", "pp": "--pp", "mb": "--micro-batch", "m": "--grad-accum", "zero": "--zero",
        "recompute": "--recompute", "chunks": "--chunks", "cp": "--cp", "cp_comm": "--cp-comm", "ep": "--ep",
        "precision": "--precision"}
FIVEFOLD = os.path.join(benchlib.ROOT, "build/fivefold")


def check_layouts():
    """Every layout names its micro-batch and micro-batch count, as its timed runs used them."""
    for ranks, _, layout in LAYOUTS:
        keys = {item.partition("=")[0] for item in layout.split(",")}
        if not {"mb", "m"} <= keys:
            sys.exit(f"validate.py: the layout {layout} ({ranks} ranks) must name mb= and m=: without them train "
                     "takes the config's and plan fills m in from the config's global batch, and the two differ")


def train_flags(layout):
    flags = []
    for item in layout.split(","):
        k, _, v = item.partition("=")
        if k == "sp":
            flags += ["--sp", "true"]
        elif k in ("1f1b", "gpipe", "zb-h1", "interleaved"):
            flags += ["--schedule", k]
        else:
            flags += [KEYS[k], v]
    return flags


def kendall_tau(a, b):
    n, s = len(a), 0
    for i in range(n):
        for j in range(i + 1, n):
            s += (1 if (a[i] - a[j]) * (b[i] - b[j]) > 0 else -1 if (a[i] - a[j]) * (b[i] - b[j]) < 0 else 0)
    return s / (n * (n - 1) / 2)


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, env=dict(benchlib.mpi_env(), OMP_NUM_THREADS="1"))
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p.stdout


def cpu_description():
    """The CPU as lscpu names it, its family and the bf16 units oneDNN can use (none: emulated)."""
    flags = benchlib.lscpu().get("Flags", "").split()
    units = "AMX" if "amx_bf16" in flags else "AVX512-BF16" if "avx512_bf16" in flags else \
        "no bf16 units: bf16 emulated on " + ("AVX512" if "avx512f" in flags else "AVX2")
    return benchlib.cpu_name(units)


def measure(a):
    """Every layout `passes` times, the passes in alternating order (forward, backward, forward...)
    so a slow stretch of the machine falls on different layouts each pass; per layout the median
    over passes of each pass's median step (steps 3..), with the spread kept."""
    global FIVEFOLD
    t0 = time.time()
    # A private copy of the binary: a rebuild during the (long) measurement must not change it.
    os.makedirs("/tmp/fivefold-plan-validate", exist_ok=True)
    FIVEFOLD = shutil.copy2(FIVEFOLD, "/tmp/fivefold-plan-validate/fivefold")
    call = {"load_start": open("/proc/loadavg").read().split()[:3], "passes": a.passes, "lane": a.lane}
    samples = {f"{r}:{layout}": [] for r, _, layout in LAYOUTS}
    routing = "/tmp/fivefold-plan-validate/routing"
    if a.append:  # a further lane call: the first call's calibrations and passes stay
        out = json.load(open(a.measure))
        if out.get("calibration") != "every pass":
            sys.exit(f"{a.measure} was measured with one calibration for all passes: measure afresh, not --append")
        for key, m in out["runs"].items():
            samples[key] = [(t, b) for t, b in zip(m["passes"], m["peak_passes"])]
        first = out["passes"]
    else:
        out, first = {"steps": a.steps, "cpu": cpu_description(), "calls": [], "runs": {}, "calibration": "every pass"}, 0
        # The router's spread over ep ranks: a serial run of the MoE model on the same data and
        # steps (one rank, no layout under validation), read by calibrate into [routing].
        subprocess.run(["rm", "-rf", routing])
    if not os.path.exists(os.path.join(routing, "metrics.jsonl")):
        run([FIVEFOLD, "train", "--config", os.path.join(benchlib.ROOT, MOE), "--data", a.data, "--out", routing,
             "--threads", "1", "--steps", str(a.steps), "--eval-every", "0", "--log-every", "1000"])
    for p in range(first, first + a.passes):
        # The machine's speed drifts by tens of percent over minutes (a VM's neighbours): one
        # calibration at the start would judge later passes by an earlier machine. Each pass is
        # predicted from the calibration made just before it.
        for n in (2, 4):
            run(["mpirun", "--oversubscribe", "-np", str(n), FIVEFOLD, "calibrate", "--threads", "1", "--out",
                 calibration_file(a.measure, out, p, n), "--routing-run", routing])
        for ranks, config, layout in (LAYOUTS if p % 2 == 0 else LAYOUTS[::-1]):
            rundir = f"/tmp/fivefold-plan-validate/{ranks}_{layout.replace(',', '_')}"
            subprocess.run(["rm", "-rf", rundir])
            run(["mpirun", "--oversubscribe", "-np", str(ranks), FIVEFOLD, "train", "--config",
                 os.path.join(benchlib.ROOT, config), "--data", a.data, "--out", rundir, "--threads", "1", "--steps",
                 str(out["steps"]), "--eval-every", "0", "--log-every", "1000"] + train_flags(layout))
            recs = [r for r in benchlib.read_metrics(rundir) if "step_seconds" in r]
            samples[f"{ranks}:{layout}"].append((statistics.median(r["step_seconds"] for r in recs[2:]),
                                                 recs[-1]["bytes"]["peak_total"]))
            print(p, layout, samples[f"{ranks}:{layout}"][-1], flush=True)
    for key, s in samples.items():
        out["runs"][key] = {"step_seconds": statistics.median(t for t, _ in s), "passes": [t for t, _ in s],
                            "peak_passes": [b for _, b in s], "peak_bytes": max(b for _, b in s)}
    out["passes"] = first + a.passes
    call["load_end"] = open("/proc/loadavg").read().split()[:3]
    call["seconds"] = time.time() - t0
    out["calls"].append(call)
    json.dump(out, open(a.measure, "w"), indent=1)


def calibration_file(measured, out, p, ranks):
    """Pass p's calibration on `ranks` ranks; files measured before per-pass calibration have one."""
    return f"{measured}.p{p}.c{ranks}.toml" if out.get("calibration") == "every pass" else f"{measured}.c{ranks}.toml"


def predict(a):
    measured = json.load(open(a.measured))
    vocab = json.load(open(os.path.join(a.data, "meta.json")))["vocab_size"]
    per_pass = measured.get("calibration") == "every pass"
    rows, pred_t, meas_t, passes, pass_pred = [], [], [], [], []
    for ranks, config, layout in LAYOUTS:
        m = measured["runs"][f"{ranks}:{layout}"]
        preds = []  # per calibration: (the plan's prediction, its ledger by pp rank)
        for p in range(measured["passes"] if per_pass else 1):
            cmd = [FIVEFOLD, "plan", "--config", os.path.join(benchlib.ROOT, config), "--vocab-size", str(vocab),
                   "--ranks", str(ranks), "--layout", layout, "--threads", "1", "--json", "--cluster",
                   calibration_file(a.measured, measured, p, ranks)]
            lines = [json.loads(x) for x in run(cmd).splitlines() if x.startswith("{")]
            preds.append((lines[0], lines[1]["ledger_total_by_pp_rank"]))
        pred, ledger = preds[0]  # memory does not depend on the calibration
        pass_pred.append([q["step_seconds"] for q, _ in preds])
        pt, mt = statistics.median(pass_pred[-1]), m["step_seconds"]
        pred_t.append(pt)
        meas_t.append(mt)
        passes.append(m.get("passes", [mt]))
        rows.append((ranks, os.path.basename(config), pred["layout"], ledger[0], m["peak_bytes"], pt, mt))
    table = ("| ranks | model | layout | predicted rank-0 peak (MiB) | measured (MiB) | error | predicted step (ms) | "
             "measured (ms) | spread | error |\n|---|---|---|---|---|---|---|---|---|---|\n")
    for (r, model, layout, pm, mm, pt, mt), ps in zip(rows, passes):
        table += (f"| {r} | {model} | {layout} | {pm / 2**20:.2f} | {mm / 2**20:.2f} | {100 * (pm - mm) / mm:+.1f}% | "
                  f"{1e3 * pt:.1f} | {1e3 * mt:.1f} | {100 * (max(ps) - min(ps)) / mt:.0f}% | "
                  f"{100 * (pt - mt) / mt:+.1f}% |\n")
    mem_err = [abs(pm - mm) / mm for *_, pm, mm, _, _ in rows]
    t_err = [abs(pt - mt) / mt for *_, pt, mt in rows]
    best = min(range(len(rows)), key=lambda i: meas_t[i])
    order = sorted(range(len(rows)), key=lambda i: pred_t[i])
    summary = (f"memory: worst error {100 * max(mem_err):.1f}%, within 5%: {sum(e <= 0.05 for e in mem_err)}/{len(rows)}; "
               f"step time: median error {100 * statistics.median(t_err):.0f}%, worst {100 * max(t_err):.0f}%, within "
               f"15%: {sum(e <= 0.15 for e in t_err)}/{len(rows)}; Kendall tau {kendall_tau(pred_t, meas_t):.2f}; the "
               f"measured-best layout ({rows[best][2]}, {1e3 * meas_t[best]:.1f} ms) is predicted #{order.index(best) + 1}"
               f" ({100 * (pred_t[best] - pred_t[order[0]]) / pred_t[order[0]]:.1f}% behind the predicted first).")
    calls = measured.get("calls") or [{k: measured[k] for k in ("load_start", "load_end", "seconds")} |
                                      {"passes": measured.get("passes", 1)}]
    lane = calls[0].get("lane", "/work/bin/bench-quiet")
    cmd = (f"{lane + ' ' if lane else ''}/usr/bin/python3 bench/plan/validate.py --data /work/main/data/kjv --steps "
           f"{measured['steps']} --passes {calls[0]['passes']} --measure bench/plan/validation_measured.json")
    quiet = ("nice 0, every other process at nice 19, `sched_autogroup_enabled` = 0" if lane else
             "nothing else running on the machine")
    how = "; ".join(f"call {i + 1}: {c['passes']} passes, load average at the start {' '.join(c['load_start'])}, at "
                    f"the end {' '.join(c['load_end'])}, {c['seconds']:.0f} s" for i, c in enumerate(calls))
    desc = (f"Models configs/small.toml and {MOE} (4 experts, top 2), {measured['steps']} steps (median of steps 3..), "
            f"{measured.get('passes', 1)} passes over the layouts in alternating order (measured: the median over passes), "
            f"1 thread per rank, {measured.get('cpu', 'AMD EPYC (Zen 5, family 26, AVX512-BF16)')}, 2 cores. Measured in {len(calls)} call(s) of "
            f"`{cmd}`" + (f" then `... --passes {calls[1]['passes']} --append`" if len(calls) > 1 else "") +
            f" ({quiet}; {how}). Predicted by `fivefold "
            f"plan --layout --cluster` with `fivefold calibrate` run on 2 and on 4 ranks " + (
                "before every pass (the prediction: the median over passes of the plan from each pass's calibration; "
                if per_pass else "in the first call (") + f"with "
            f"`--routing-run` of a serial {measured['steps']}-step run of the MoE model: the router's spread over ep "
            f"ranks): every coefficient comes from calibrate (or a formula), none is fitted to these runs. Spread: "
            f"(slowest - fastest pass) / median. The table from the measurement:")
    n_pass = min(len(p) for p in passes)
    if n_pass > 1:  # the pairs the measurement itself orders: every pass of one below every pass of the other
        apart = [(i, j) for i in range(len(rows)) for j in range(i + 1, len(rows))
                 if max(passes[i]) < min(passes[j]) or max(passes[j]) < min(passes[i])]
        right = sum((pred_t[i] - pred_t[j]) * (meas_t[i] - meas_t[j]) > 0 for i, j in apart)
        summary += (f" Of the {len(apart)} pairs of layouts whose passes do not overlap (the order the measurement "
                    f"resolves), the prediction orders {right} the same way (tau {(2 * right - len(apart)) / max(1, len(apart)):.2f}).")
    if n_pass > 1:  # the noise ceiling: the passes against one another, and each against the prediction
        by_pass = [[p[k] for p in passes] for k in range(n_pass)]
        between = [kendall_tau(by_pass[i], by_pass[j]) for i in range(n_pass) for j in range(i + 1, n_pass)]
        # With a calibration per pass, each pass against the prediction from its own calibration.
        own = [[q[k] for q in pass_pred] for k in range(n_pass)] if per_pass else [pred_t] * n_pass
        summary += (f" Per pass: Kendall tau against the prediction {', '.join(f'{kendall_tau(o, b):.2f}' for o, b in zip(own, by_pass))};"
                    f" between passes (measured against measured) {', '.join(f'{t:.2f}' for t in between)}; spread: median {100 * statistics.median((max(p) - min(p)) / statistics.median(p) for p in passes):.0f}%.")
    benchlib.publish("## Planner validation", desc, table, summary, a.write)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--steps", type=int, default=14)
    ap.add_argument("--passes", type=int, default=3, help="measure every layout this many times, alternating order")
    ap.add_argument("--measure", default="", help="run calibrate and the layouts, write this JSON")
    ap.add_argument("--measured", default="", help="predict against this JSON (and its .c2/.c4.toml)")
    ap.add_argument("--append", action="store_true", help="with --measure: add --passes passes to an existing OUT.json")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--lane", default="/work/bin/bench-quiet",
                    help="with --measure: how the call was isolated, for the table's text ('' : the machine was idle)")
    ap.add_argument("--only", default="", help="smoke test: only the layouts containing this text")
    a = ap.parse_args()
    if a.only:
        LAYOUTS[:] = [x for x in LAYOUTS if a.only in x[2]]
    check_layouts()
    if bool(a.measure) == bool(a.measured):
        sys.exit("give --measure OUT.json (timed runs) or --measured OUT.json (predictions)")
    measure(a) if a.measure else predict(a)


if __name__ == "__main__":
    main()
