#!/usr/bin/python3
"""A model that does not fit one worker: TinyLlama-1.1B's shape under ZeRO-3 on 2 ranks, fp32 and bf16.

One command, four parts, in a temporary folder (removed afterwards unless --keep):
1. the tokenizer and the data: `fivefold prepare` of the KJV (`bible`, Debian's bible-kjv) with a
   32000-token SentencePiece model, TinyLlama's vocabulary size; then a Hugging Face folder of
   TinyLlama's shape with random weights (make_hf_folder.py: bf16, sharded safetensors with an
   index, TinyLlama's config.json, that tokenizer.model);
2. `fivefold import` of that folder, its peak RSS (VmHWM, /usr/bin/time) beside the memory
   ledger's peak it prints; the RSS is counted above a baseline, the same import of a one-block,
   64-wide model of the same vocabulary less that run's ledger (the program's own pages, the
   tokenizer, the headers);
3. the start-up memory check: the same training unsharded (dp 2, zero 0) must be refused before
   any allocation, naming a layout that fits;
4. `mpirun -np 2 fivefold train` with dp 2, zero 3 for a few steps in each precision (fp32, bf16),
   at TinyLlama's sequence length (2048) under full recomputation: from the imported folder with
   `--init-from`; per rank its peak RSS, beside the ledger's peak (rank 0 prints it) and the
   start-up estimate; tokens/s and MFU (metrics.jsonl, the mean over the steps after the first,
   which pays for page faults); with --profile, the run under `perf record` and where its time
   goes, kernel by kernel (bench/serial/bf16_profile.py's rows, over both ranks' CPU time).
Each heavy part notes the load average before it: the machine may be shared; timings from a
loaded machine are not this model's speed.

usage: /usr/bin/python3 bench/big_model/run.py [--build build] [--steps 3] [--precisions fp32,bf16]
           [--seq-len 2048] [--recompute full] [--profile] [--keep DIR] [--write]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from benchlib import cpu_name, lscpu, mpi_env, publish, read_metrics  # noqa: E402

SECTION = "## A model that does not fit one worker: TinyLlama-1.1B shape, fp32 and bf16, ZeRO-3, 2 ranks"
HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = os.path.join(HERE, "tinyllama.toml")
GIB = 1 << 30
MIB = 1 << 20
SIZE = re.compile(r"([0-9.]+) (B|KiB|MiB|GiB|TiB)")
UNIT = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def run(cmd, env=None, ok=(0,)):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode not in ok:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


def load():
    return os.getloadavg()[0]


def mem_available():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def parse_size(text):
    m = SIZE.search(text)
    return float(m.group(1)) * UNIT[m.group(2)] if m else None


def ledger_peak(out, row="total"):
    """The peak column of a row (`total`, `params`, ...) of the ledger's table, in bytes, or None."""
    for line in out.splitlines():
        if line.startswith(row + " ") and len(SIZE.findall(line)) == 2:
            value, unit = SIZE.findall(line)[1]
            return float(value) * UNIT[unit]
    return None


def estimate(out):
    """The start-up estimate per rank ('memory per rank (estimated): ..., total X of Y'), in bytes."""
    m = re.search(r"memory per rank \(estimated\):.*?total ([0-9.]+ \w+)", out)
    return parse_size(m.group(1)) if m else None


def rss_by_rank(stderr):
    """{rank: peak RSS bytes} from the lines the /usr/bin/time wrapper writes."""
    return {int(r): int(kb) * 1024 for r, kb in re.findall(r"rank (\d+) peak_rss_kb (\d+)", stderr)}


def timed(rank_var):
    """A command prefix that runs the rest under /usr/bin/time, labelled with the rank."""
    return ["sh", "-c", f'exec /usr/bin/time -f "rank ${{{rank_var}:-0}} peak_rss_kb %M" "$0" "$@"']


def prepare(fivefold, work):
    text = os.path.join(work, "kjv.txt")
    with open(text, "w") as f:
        subprocess.run(["bible", "-f", "Gen1:1-Rev22:21"], stdout=f, check=True)
    data = os.path.join(work, "data")
    run([fivefold, "prepare", "--text", text, "--one-doc-per-line", "--vocab", "32000", "--out", data])
    hf = os.path.join(work, "hf")
    made = run(["/usr/bin/python3", os.path.join(HERE, "make_hf_folder.py"), hf, os.path.join(data, "tokenizer.model")])
    print(made.stdout.strip(), flush=True)
    narrow = os.path.join(work, "hf-narrow")
    run(["/usr/bin/python3", os.path.join(HERE, "make_hf_folder.py"), narrow, os.path.join(data, "tokenizer.model"),
         "--narrow"])
    return data, hf, narrow


def import_once(fivefold, hf, out):
    """(peak RSS, ledger peak) of one `fivefold import`, in bytes."""
    p = run(timed("NONE") + [fivefold, "import", "--hf", hf, "--out", out])
    return rss_by_rank(p.stderr)[0], ledger_peak(p.stdout)


def import_folder(fivefold, hf, narrow_hf, out):
    before = load()
    rss, ledger = import_once(fivefold, hf, out)
    # What import holds besides its buffers (the binary's and libraries' pages, the tokenizer, the
    # headers): the same command on a one-block, 64-wide model of the same vocabulary, less its
    # ledger. The model's import is then compared with its ledger above that baseline.
    narrow_rss, narrow_ledger = import_once(fivefold, narrow_hf, out + "-narrow")
    baseline = narrow_rss - narrow_ledger
    bare = rss_by_rank(run(timed("NONE") + [fivefold, "import", "--help"]).stderr)[0]
    print(f"import: peak RSS {rss / GIB:.2f} GiB ({(rss - baseline) / MIB:.1f} MiB above the baseline of "
          f"{baseline / MIB:.1f} MiB), ledger {ledger / MIB:.1f} MiB (load {before:.1f})", flush=True)
    return {"rss": rss, "bare": bare, "baseline": baseline, "ledger": ledger, "load": before}


def train_cmd(fivefold, data, out, extra, prefix=()):
    return list(prefix) + ["mpirun", "--oversubscribe", "-np", "2"] + timed("OMPI_COMM_WORLD_RANK") + [
        fivefold, "train", "--config", CONFIG, "--data", data, "--out", out, "--dp", "2"] + extra


def refusal(fivefold, data, work, seq_len):
    """The unsharded run on this machine: refused at start-up, naming the layout that fits."""
    p = run(train_cmd(fivefold, data, os.path.join(work, "unsharded"),
                      ["--zero", "0", "--steps", "1", "--seq_len", str(seq_len)]),
            env=mpi_env(), ok=(1,))
    out = p.stdout + p.stderr
    m = re.search(r"this run needs about ([0-9.]+ \w+) per rank.*?a layout that fits: (\S+)", out)
    if not m:
        sys.exit(f"dp 2, zero 0 was not refused with a layout that fits:\n{out[-3000:]}")
    print(f"unsharded: refused (needs {m.group(1)} per rank), suggests {m.group(2)}", flush=True)
    return {"needs": m.group(1), "suggests": m.group(2)}


def profiled(fivefold, perf_data, steps):
    """Where the run's time went: its perf samples by kernel (bench/serial/bf16_profile.py), the
    first step left out as warm-up."""
    sys.path.insert(0, os.path.join(ROOT, "bench", "serial"))
    import bf16_profile
    return bf16_profile.profile(perf_data, steps, 1, bf16_profile.source_files(fivefold))


def train(fivefold, data, imported, work, a, precision):
    extra = ["--zero", "3", "--steps", str(a.steps), "--init-from", imported, "--precision", precision,
             "--seq_len", str(a.seq_len), "--recompute", a.recompute]
    # Both ranks' state must fit what the machine has free (the trainer refuses otherwise): on a
    # shared machine, wait a while for it.
    for _ in range(60):
        if mem_available() > a.wait_for_gib * GIB:
            break
        time.sleep(10)
    before, available = load(), mem_available()
    out = os.path.join(work, f"run-{precision}")
    shutil.rmtree(out, ignore_errors=True)
    perf_data = os.path.join(work, f"perf-{precision}.data")
    prefix = ["perf", "record", "-q", "-F", "1999", "-o", perf_data, "--"] if a.profile else []
    p = run(train_cmd(fivefold, data, out, extra, prefix),
            env=dict(mpi_env(), OMP_NUM_THREADS="1", DNNL_JIT_PROFILE="2" if a.profile else "0"))
    records = read_metrics(out)
    timed_steps = records[1:] or records
    result = {
        "precision": precision,
        "steps": len(records),
        "tokens_per_s": sum(r["tokens_per_s"] for r in timed_steps) / len(timed_steps),
        "step_s": sum(r["step_seconds"] for r in timed_steps) / len(timed_steps),
        "mfu": sum(r["mfu"] for r in timed_steps) / len(timed_steps),
        "peak_flops": records[-1]["peak_flops"],
        "loss": (records[0]["loss"], records[-1]["loss"]),
        "rss": rss_by_rank(p.stderr),
        "ledger0": ledger_peak(p.stdout),
        "params0": ledger_peak(p.stdout, "params"),
        "params_total": parameters(p.stdout),
        "estimate": estimate(p.stdout),
        "load": before,
        "load_after": load(),
        "available": available,
    }
    if a.profile:
        result["profile"] = profiled(fivefold, perf_data, a.steps)
        os.remove(perf_data)
    shutil.rmtree(out, ignore_errors=True)  # its final checkpoint: 13 GiB in fp32 with AdamW's moments
    print(f"train {precision}: {result['steps']} steps, {result['tokens_per_s']:.1f} tokens/s, "
          f"MFU {100 * result['mfu']:.1f}%, peak RSS "
          + ", ".join(f"rank {r} {b / GIB:.2f} GiB" for r, b in sorted(result["rss"].items()))
          + f", ledger peak (rank 0) {result['ledger0'] / GIB:.2f} GiB, estimate {result['estimate'] / GIB:.2f} GiB"
          f" (load {before:.1f} before, {result['load_after']:.1f} after)", flush=True)
    return result


def parameters(out):
    m = re.search(r"training (\d+) parameters", out)
    return int(m.group(1)) if m else None


def machine():
    """lscpu's name, and Zen 4 where it is one (family 25 with AVX-512: Zen 3 has none)."""
    info = lscpu()
    flags = info.get("Flags", "").split()
    zen4 = info.get("CPU family") == "25" and "avx512f" in flags
    isa = ", ".join(f for f in ("avx512f", "avx512_bf16") if f in flags) or "no AVX-512"
    return cpu_name(f"{'Zen 4, ' if zen4 else ''}{os.cpu_count()} cores, {isa}")


def pct(a, b):
    return f"{100 * (a / b - 1):+.1f}%" if a and b else "n/a"


def table(imp, ref, runs, a):
    rows = ["| part | rank | steps | tokens/s (2 ranks) | step (s) | MFU | peak RSS (GiB) | ledger peak (GiB) "
            "| RSS over ledger | start-up estimate (GiB) | load before / after |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    rows.append(f"| import (1 process; RSS over ledger counted above the baseline: the same import of a one-block, "
                f"64-wide model of the vocabulary, {imp['baseline'] / MIB:.1f} MiB beyond its ledger; a bare "
                f"`import --help` is {imp['bare'] / MIB:.0f} MiB) | - | - | - | - | - | {imp['rss'] / GIB:.3f} "
                f"| {imp['ledger'] / GIB:.3f} | {pct(imp['rss'] - imp['baseline'], imp['ledger'])} "
                f"| - | {imp['load']:.1f} |")
    for tr in runs:
        for r, rss in sorted(tr["rss"].items()):
            ledger = tr["ledger0"] if r == 0 else None
            rows.append(f"| train dp 2 zero 3 {tr['precision']}, seq {a.seq_len}, recompute {a.recompute} | {r} "
                        f"| {tr['steps']} | {tr['tokens_per_s']:.1f} | {tr['step_s']:.1f} | {100 * tr['mfu']:.1f}% "
                        f"| {rss / GIB:.2f} | {f'{ledger / GIB:.2f}' if ledger else 'not printed'} | {pct(rss, ledger)} "
                        f"| {tr['estimate'] / GIB:.2f} | {tr['load']:.1f} / {tr['load_after']:.1f} |")
    rows.append(f"| train dp 2 zero 0 bf16, seq {a.seq_len} (unsharded) | - | refused at start-up: needs {ref['needs']} per rank; "
                f"suggests `{ref['suggests']}` | | | | | | | | |")
    return "\n".join(rows)


def profile_table(runs):
    """Each precision's share of the ranks' CPU time by kernel, side by side."""
    names = list(dict.fromkeys(k for tr in runs for k in tr["profile"]["rows"]))
    head = "| kernel | GEMM | " + " | ".join(f"{tr['precision']}: s per step | share" for tr in runs) + " |"
    rows = [head, "|---|---|" + "---:|---:|" * len(runs)]
    for k in names:
        cells = []
        for tr in runs:
            r = tr["profile"]["rows"].get(k)
            cells.append(f"{r['share'] * tr['step_s']:.2f} | {100 * r['share']:.1f}%" if r else "- | -")
        gemm = next(tr["profile"]["rows"][k]["gemm"] for tr in runs if k in tr["profile"]["rows"])
        rows.append(f"| {k} | {'yes' if gemm else 'no'} | " + " | ".join(cells) + " |")
    rows.append("| **step** (the trainer's mean over the timed steps) | | " + " | ".join(
        f"**{tr['step_s']:.1f}** | not GEMM **{100 * tr['profile']['non_gemm_share']:.1f}%**" for tr in runs) + " |")
    return "\n".join(rows)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--precisions", default="fp32,bf16")
    p.add_argument("--seq-len", type=int, default=2048, help="TinyLlama's context; the config's own is 256")
    p.add_argument("--recompute", default="full", choices=["none", "selective", "full"])
    p.add_argument("--profile", action="store_true", help="train under perf record and print where the time goes")
    p.add_argument("--reuse", action="store_true",
                   help="with --keep: take its data, import and finished precisions from an earlier run")
    p.add_argument("--wait-for-gib", type=float, default=22.0,
                   help="before each training run wait (up to 10 minutes) until this much memory is available")
    p.add_argument("--keep", help="work in this folder and keep it (default: a temporary one, removed)")
    p.add_argument("--write", action="store_true", help="replace this section of bench/RESULTS.md")
    a = p.parse_args()
    if a.profile and a.steps < 3:
        sys.exit("--profile needs --steps 3 or more: one warm-up step and two timed ones")
    if a.profile and not shutil.which("perf"):
        sys.exit("--profile needs perf on PATH: install linux-perf (Debian)")
    run(["cmake", "--build", a.build, "-j2", "--target", "fivefold"])
    fivefold = os.path.join(a.build, "fivefold")
    work = a.keep or tempfile.mkdtemp(prefix="ff-big-model-")
    os.makedirs(work, exist_ok=True)
    try:
        reuse = os.path.join(work, "import.json")
        if a.reuse and os.path.exists(reuse):
            data, imported = os.path.join(work, "data"), os.path.join(work, "imported")
            imp = json.load(open(reuse))
        else:
            data, hf, narrow_hf = prepare(fivefold, work)
            imported = os.path.join(work, "imported")
            shutil.rmtree(imported, ignore_errors=True)
            imp = import_folder(fivefold, hf, narrow_hf, imported)
            json.dump(imp, open(reuse, "w"))
        ref = refusal(fivefold, data, work, a.seq_len)
        runs = []
        for precision in a.precisions.split(","):
            saved = os.path.join(work, f"train-{precision}.json")
            if a.reuse and os.path.exists(saved):
                done = json.load(open(saved))
                done["rss"] = {int(r): b for r, b in done["rss"].items()}  # JSON keys are strings
                runs.append(done)
                continue
            runs.append(train(fivefold, data, imported, work, a, precision))
            json.dump(runs[-1], open(saved, "w"))
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    commit = run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"]).stdout.strip()
    tr0 = runs[0]
    lines = []
    for tr in runs:
        worst = max(rss / tr["ledger0"] - 1 for rss in tr["rss"].values()) if tr["ledger0"] else float("nan")
        lines.append(f"train dp2 zero3 {tr['precision']} seq {a.seq_len} {tr['steps']} steps {tr['tokens_per_s']:.1f} tok/s "
                     f"MFU {100 * tr['mfu']:.1f}% of {tr['peak_flops'] / 1e9:.0f} GFLOP/s, RSS per rank "
                     + "/".join(f"{b / GIB:.2f}" for _, b in sorted(tr["rss"].items()))
                     + f" GiB vs rank 0's ledger {tr['ledger0'] / GIB:.2f} GiB (worst {100 * worst:+.1f}%)")
    summary_line = (f"big_model: import RSS {imp['rss'] / MIB:.1f} MiB, {pct(imp['rss'] - imp['baseline'], imp['ledger'])} "
                    f"over its ledger {imp['ledger'] / MIB:.1f} MiB above the baseline; " + "; ".join(lines)
                    + f"; ledger params {tr0['params0'] / GIB:.2f} of the model's {4 * tr0['params_total'] / GIB:.2f} GiB "
                    f"fp32; unsharded refused -> {ref['suggests']}")
    summary = (f"- CPU: {machine()}; load average before and after each part in the table "
               f"(a load above 2 means other work shared the cores: those timings are not this model's speed).\n"
               f"- Commit: {commit}. MemAvailable before training: {tr0['available'] / GIB:.1f} GiB.\n"
               f"- The ledger never holds the whole model on a rank: rank 0's params peak {tr0['params0'] / GIB:.2f} GiB "
               f"(its half of the fp32 weights; under ZeRO-3 there is no 16-bit copy, and whole tensors exist only "
               f"in the workspace's gather pool, three at a time) against {4 * tr0['params_total'] / GIB:.2f} GiB for the "
               f"whole model in fp32. Rank 1 prints no ledger (only rank 0 does); the start-up estimate is rank 0's, "
               f"the largest.\n"
               f"- MFU divides by the cores' peak for the run's GEMM inputs, as the trainer measures it at start-up: "
               f"the FMA peak for fp32, the AVX512-BF16 dot-product peak for bf16 where the CPU has it "
               + ", ".join(f"({tr['precision']}: {tr['peak_flops'] / 1e9:.0f} GFLOP/s)" for tr in runs) + ".\n"
               + "".join(f"- Loss, {tr['precision']} (random weights, so ~ln 32000 = 10.37): {tr['loss'][0]:.4f} at step 1, "
                         f"{tr['loss'][1]:.4f} at step {tr['steps']}.\n" for tr in runs)
               + f"\n{summary_line}")
    if all("profile" in tr for tr in runs):
        summary += ("\n\nWhere the step's time goes (`--profile`): both ranks under `perf record`, each sample "
                    "charged to its kernel as bench/serial/bf16_profile.py charges it; seconds per step are a row's "
                    "share of the timed steps' samples (both ranks' CPU time) times the trainer's step time. In fp32 "
                    "attention's tile products are FMAs inlined in its block loops, so they sit in \"the rest\"; the "
                    "bf16 tile products are told apart by their dot-product instructions.\n\n" + profile_table(runs))
    publish(SECTION, __doc__.split("usage:")[0].strip(), table(imp, ref, runs, a), summary, a.write)


if __name__ == "__main__":
    main()
