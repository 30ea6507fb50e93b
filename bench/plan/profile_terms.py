#!/usr/bin/python3
"""One measured step broken into the step-time model's terms, next to the prediction.

  bench-quiet profile_terms.py --data DIR --cluster C2.toml --save OUT.json   (runs; ~1 min)
  profile_terms.py --publish OUT.json [--write]                                (the table)

Each layout trains 14 steps on 2 ranks under `perf record --call-graph dwarf`; every sample of
steps 3..13 is charged to the first engine kernel on its call stack (GEMMs: oneDNN's JIT code,
which has no unwind information, and the linear layers' helpers), per rank, in CPU ms per step.
Wall minus CPU is the time the rank waited (MPI yields while it waits). The prediction is
`fivefold plan --layout --json` with the given calibration: its per-kind terms are the slowest
pipeline stage's."""
import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import benchlib  # noqa: E402

FIVEFOLD = os.path.join(benchlib.ROOT, "build/fivefold")
CONFIG = os.path.join(benchlib.ROOT, "configs/small.toml")
LAYOUTS = [("dp=2,mb=8,zero=0", ["--dp", "2", "--micro-batch", "8", "--zero", "0"]),
           ("tp=2,mb=16", ["--tp", "2", "--micro-batch", "16"]),
           ("pp=2,1f1b,mb=4,m=4", ["--pp", "2", "--schedule", "1f1b", "--micro-batch", "4", "--grad-accum", "4"]),
           ("dp=2,mb=8,zero=1,precision=bf16", ["--dp", "2", "--micro-batch", "8", "--zero", "1", "--precision", "bf16"])]
HZ = 1000
# First match on the call stack, innermost frame first (a bf16 GEMM's operand rounding,
# convert_from_f32, matches nothing itself and goes with the GEMM that called it).
KINDS = [("gemm", r"gemm|linear_backward|add_transposed|accumulate_weight_grad|matmul"),
         ("attention", r"attention_forward|attention_backward|attention_block_forward|attention_block_backward|attn::|flash"),
         ("elementwise", r"rmsnorm|rope_|swiglu|cross_entropy|embedding_forward|embedding_backward|vocab_parallel"),
         ("optimizer", r"adamw|l2_norm|scale_inplace|zero_grads|grad_square_sum|optimizer_step|WeightCopy"),
         ("comm", r"Engine::|CommRequest|PairwiseOp|mca_|ompi_|opal_|MPI_|process_vm|reduce_into|BucketedAllReduce|"
                  r"sched_yield|Comm::")]


def kind(frames):
    if frames and ("perf-" in frames[0][1] or "libdnnl" in frames[0][1]):
        return "gemm"  # JIT code: no frames beyond it
    for sym, _ in frames:
        for k, pat in KINDS:
            if re.search(pat, sym):
                return k
    return "other"


def samples(path):
    """(time, frames) per sample; frames: (symbol, dso), innermost first."""
    out = subprocess.run(["perf", "script", "-i", path, "-F", "time,ip,sym,dso"], capture_output=True, text=True).stdout
    cur = None
    for line in out.splitlines():
        head = re.match(r"^\s*([\d.]+):\s*$", line)
        if head:
            if cur:
                yield cur
            cur = (float(head.group(1)), [])
            continue
        m = re.match(r"^\s+[0-9a-f]+\s+(.*?)\s+\((.*)\)\s*$", line)
        if m and cur:
            cur[1].append((m.group(1), m.group(2)))
    if cur:
        yield cur


def per_step(path):
    s = list(samples(path))
    # A step ends with the optimizer: the last sample of each burst of AdamW samples.
    ad = [t for t, fr in s if fr and "adamw" in fr[0][0]]
    ends = [ad[i] for i in range(len(ad)) if i + 1 == len(ad) or ad[i + 1] - ad[i] > 0.02]
    steps = []
    for a, b in zip(ends, ends[1:]):
        c = collections.Counter(kind(fr) for t, fr in s if a < t <= b)
        steps.append({"wall": b - a, **{k: v / HZ for k, v in c.items()}})
    use = steps[2:-1]
    return {k: statistics.median(st.get(k, 0.0) for st in use) for k in
            ["wall", "gemm", "attention", "elementwise", "optimizer", "comm", "other"]} | {"steps": len(use)}


def predict(layout, cluster):
    plan = subprocess.run([FIVEFOLD, "plan", "--config", CONFIG, "--vocab-size", "4096", "--ranks", "2", "--layout",
                           layout, "--threads", "1", "--json", "--cluster", cluster], capture_output=True, text=True,
                          check=True).stdout
    return json.loads(plan.splitlines()[0])


def run(a):
    env = dict(benchlib.mpi_env(), OMP_NUM_THREADS="1")
    wrap = "/tmp/fivefold-profile/wrap.sh"
    os.makedirs("/tmp/fivefold-profile", exist_ok=True)
    with open(wrap, "w") as f:
        f.write("#!/bin/bash\nexec perf record -q -F %d --call-graph dwarf,16384 -o /tmp/fivefold-profile/$1.$OMPI_COMM_WORLD_RANK.data"
                " -- \"${@:2}\"\n" % HZ)
    os.chmod(wrap, 0o755)
    out = {"load_start": open("/proc/loadavg").read().split()[:3], "layouts": {}}
    for name, flags in LAYOUTS:
        tag = re.sub(r"[^a-z0-9]+", "_", name)
        subprocess.run(["rm", "-rf", f"/tmp/fivefold-profile/{tag}"])
        subprocess.run(["mpirun", "--oversubscribe", "-np", "2", wrap, tag, FIVEFOLD, "train", "--config", CONFIG,
                        "--data", a.data, "--out", f"/tmp/fivefold-profile/{tag}", "--threads", "1", "--steps", "14",
                        "--eval-every", "0", "--log-every", "1000"] + flags, env=env, check=True,
                       capture_output=True)
        out["layouts"][name] = {"predicted": predict(name, a.cluster), "perf": [f"/tmp/fivefold-profile/{tag}.{r}.data" for r in (0, 1)]}
    out["load_end"] = open("/proc/loadavg").read().split()[:3]
    json.dump(out, open(a.save, "w"), indent=1)  # --publish sorts the samples, outside the quiet lane


def publish(a):
    d = json.load(open(a.publish))
    for name, r in d["layouts"].items():
        if "measured" not in r:  # first publish: the samples into terms, kept in the JSON
            r["measured"] = [per_step(path) for path in r.pop("perf")]
            print(name, json.dumps(r["measured"]), flush=True)
        if a.cluster:  # the prediction again, by this build, from the calibration of the lane call
            r["predicted"] = predict(name, a.cluster)
    json.dump(d, open(a.publish, "w"), indent=1)


    ms = lambda x: f"{1e3 * x:.1f}"  # noqa: E731
    table = ("| layout | term | predicted (ms/step) | measured rank 0 | measured rank 1 |\n|---|---|---|---|---|\n")
    for name, r in d["layouts"].items():
        p, m = r["predicted"], r["measured"]
        t = p.get("terms", {})
        rows = [("GEMMs", t.get("gemm", 0), "gemm"), ("attention", t.get("attention", 0), "attention"),
                ("norms, RoPE, SwiGLU, loss", t.get("elementwise", 0), "elementwise"),
                ("optimizer (+ bf16 weight copy)", t.get("optimizer", 0), "optimizer"),
                ("collectives (CPU in MPI)", p["tp_comm"] + p["pp_comm"] + p["dp_comm"], "comm"),
                ("other (data, metrics, copies)", 0.0, "other")]
        for label, pv, key in rows:
            table += f"| {name} | {label} | {ms(pv)} | {ms(m[0][key])} | {ms(m[1][key])} |\n"
        cpu = [sum(x[k] for k in ("gemm", "attention", "elementwise", "optimizer", "comm", "other")) for x in m]
        table += f"| {name} | waiting (wall - CPU); predicted: bubble | {ms(p['bubble'])} | " \
                 f"{ms(m[0]['wall'] - cpu[0])} | {ms(m[1]['wall'] - cpu[1])} |\n"
        table += f"| {name} | **step** | **{ms(p['step_seconds'])}** | **{ms(m[0]['wall'])}** | **{ms(m[1]['wall'])}** |\n"
    desc = (f"configs/small.toml on 2 ranks, 1 thread each, AMD EPYC (Zen 5, family 26, AVX512-BF16), 2 cores, through "
            f"`/work/bin/bench-quiet` (nice 0, other agents' work at nice 19; load at the start "
            f"{' '.join(d['load_start'])}, at the end {' '.join(d['load_end'])}). Measured: `perf record --call-graph "
            f"dwarf` at {HZ} Hz, each sample charged to the first engine kernel on its stack, medians of steps 3..13 in "
            f"CPU ms per step (perf's own unwinding adds to the wall). Predicted: `fivefold plan --layout --json` with the "
            f"calibration in the same lane call; its terms are the slowest pipeline stage's. Commands:\n\n```\n"
            f"/work/bin/bench-quiet sh -c '/usr/bin/python3 bench/plan/validate.py --data /work/main/data/kjv --measure "
            f"V.json && /usr/bin/python3 bench/plan/profile_terms.py --data /work/main/data/kjv --cluster V.json.c2.toml "
            f"--save P.json'\n```\n\n(one lane call together with the measurements of \"Planner validation\", whose calibration it uses; V.json and P.json "
            f"are bench/plan/validation_measured.json and bench/plan/profile_terms.json), and the table from it:")
    benchlib.publish("## Planner: a measured step by the model's terms", desc, table, "", a.write)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data")
    ap.add_argument("--cluster")
    ap.add_argument("--save")
    ap.add_argument("--publish")
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    publish(a) if a.publish else run(a)


if __name__ == "__main__":
    main()
