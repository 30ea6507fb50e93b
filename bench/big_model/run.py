#!/usr/bin/python3
"""A model that does not fit one worker: TinyLlama-1.1B's shape in bf16 under ZeRO-3 on 2 ranks.

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
4. `mpirun -np 2 fivefold train` in bf16 with dp 2, zero 3 for a few steps: from the imported
   folder with `--init-from` when the binary has it, otherwise from a random init of the same
   shape; per rank its peak RSS, beside the ledger's peak (rank 0 prints it) and the start-up
   estimate; tokens/s and MFU (metrics.jsonl, the mean over the steps after the first, which pays
   for page faults).
Each heavy part notes the load average before it: the machine may be shared; timings from a
loaded machine are not this model's speed.

usage: /usr/bin/python3 bench/big_model/run.py [--build build] [--steps 3] [--keep DIR] [--write]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from benchlib import cpu_name, lscpu, mpi_env, publish, read_metrics  # noqa: E402

SECTION = "## A model that does not fit one worker: TinyLlama-1.1B shape, bf16, ZeRO-3, 2 ranks"
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


def train_cmd(fivefold, data, out, extra):
    return ["mpirun", "--oversubscribe", "-np", "2"] + timed("OMPI_COMM_WORLD_RANK") + [
        fivefold, "train", "--config", CONFIG, "--data", data, "--out", out, "--dp", "2"] + extra


def refusal(fivefold, data, work):
    """The unsharded run on this machine: refused at start-up, naming the layout that fits."""
    p = run(train_cmd(fivefold, data, os.path.join(work, "unsharded"), ["--zero", "0", "--steps", "1"]),
            env=mpi_env(), ok=(1,))
    out = p.stdout + p.stderr
    m = re.search(r"this run needs about ([0-9.]+ \w+) per rank.*?a layout that fits: (\S+)", out)
    if not m:
        sys.exit(f"dp 2, zero 0 was not refused with a layout that fits:\n{out[-3000:]}")
    print(f"unsharded: refused (needs {m.group(1)} per rank), suggests {m.group(2)}", flush=True)
    return {"needs": m.group(1), "suggests": m.group(2)}


def train(fivefold, data, imported, work, steps):
    has_init_from = "init-from" in run([fivefold, "train", "--help"]).stdout
    extra = ["--zero", "3", "--steps", str(steps)]
    if has_init_from:
        extra += ["--init-from", imported]
    before, available = load(), mem_available()
    out = os.path.join(work, "run")
    p = run(train_cmd(fivefold, data, out, extra), env=dict(mpi_env(), OMP_NUM_THREADS="1"))
    records = read_metrics(out)
    timed_steps = records[1:] or records
    result = {
        "start": "--init-from the import" if has_init_from else "random init (no --init-from in this build)",
        "steps": len(records),
        "tokens_per_s": sum(r["tokens_per_s"] for r in timed_steps) / len(timed_steps),
        "mfu": sum(r["mfu"] for r in timed_steps) / len(timed_steps),
        "loss": (records[0]["loss"], records[-1]["loss"]),
        "rss": rss_by_rank(p.stderr),
        "ledger0": ledger_peak(p.stdout),
        "params0": ledger_peak(p.stdout, "params"),
        "params_total": parameters(p.stdout),
        "estimate": estimate(p.stdout),
        "load": before,
        "available": available,
    }
    print(f"train: {result['steps']} steps from {result['start']}, {result['tokens_per_s']:.1f} tokens/s, "
          f"MFU {100 * result['mfu']:.1f}%, peak RSS "
          + ", ".join(f"rank {r} {b / GIB:.2f} GiB" for r, b in sorted(result["rss"].items()))
          + f", ledger peak (rank 0) {result['ledger0'] / GIB:.2f} GiB, estimate {result['estimate'] / GIB:.2f} GiB"
          f" (load {before:.1f})", flush=True)
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


def table(imp, ref, tr):
    rows = ["| part | rank | steps | tokens/s (2 ranks) | MFU | peak RSS (GiB) | ledger peak (GiB) | RSS over ledger "
            "| start-up estimate (GiB) | load before |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    rows.append(f"| import (1 process; RSS over ledger counted above the baseline: the same import of a one-block, "
                f"64-wide model of the vocabulary, {imp['baseline'] / MIB:.1f} MiB beyond its ledger; a bare "
                f"`import --help` is {imp['bare'] / MIB:.0f} MiB) | - | - | - | - | {imp['rss'] / GIB:.3f} "
                f"| {imp['ledger'] / GIB:.3f} | {pct(imp['rss'] - imp['baseline'], imp['ledger'])} "
                f"| - | {imp['load']:.1f} |")
    for r, rss in sorted(tr["rss"].items()):
        ledger = tr["ledger0"] if r == 0 else None
        rows.append(f"| train dp 2 zero 3 bf16, {tr['start']} | {r} | {tr['steps']} | {tr['tokens_per_s']:.1f} "
                    f"| {100 * tr['mfu']:.1f}% | {rss / GIB:.2f} | {f'{ledger / GIB:.2f}' if ledger else 'not printed'} "
                    f"| {pct(rss, ledger)} | {tr['estimate'] / GIB:.2f} | {tr['load']:.1f} |")
    rows.append(f"| train dp 2 zero 0 bf16 (unsharded) | - | refused at start-up: needs {ref['needs']} per rank; "
                f"suggests `{ref['suggests']}` | | | | | | | |")
    return "\n".join(rows)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--keep", help="work in this folder and keep it (default: a temporary one, removed)")
    p.add_argument("--write", action="store_true", help="replace this section of bench/RESULTS.md")
    a = p.parse_args()
    run(["cmake", "--build", a.build, "-j2", "--target", "fivefold"])
    fivefold = os.path.join(a.build, "fivefold")
    work = a.keep or tempfile.mkdtemp(prefix="ff-big-model-")
    os.makedirs(work, exist_ok=True)
    try:
        data, hf, narrow_hf = prepare(fivefold, work)
        imported = os.path.join(work, "imported")
        shutil.rmtree(imported, ignore_errors=True)
        imp = import_folder(fivefold, hf, narrow_hf, imported)
        ref = refusal(fivefold, data, work)
        shutil.rmtree(os.path.join(work, "run"), ignore_errors=True)
        tr = train(fivefold, data, imported, work, a.steps)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    commit = run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"]).stdout.strip()
    worst = max(rss / tr["ledger0"] - 1 for rss in tr["rss"].values()) if tr["ledger0"] else float("nan")
    summary_line = (f"big_model: import RSS {imp['rss'] / MIB:.1f} MiB, {pct(imp['rss'] - imp['baseline'], imp['ledger'])} "
                    f"over its ledger {imp['ledger'] / MIB:.1f} MiB above the baseline; train dp2 zero3 bf16 {tr['steps']} steps "
                    f"{tr['tokens_per_s']:.1f} tok/s MFU {100 * tr['mfu']:.1f}%, RSS per rank "
                    + "/".join(f"{b / GIB:.2f}" for _, b in sorted(tr["rss"].items()))
                    + f" GiB vs rank 0's ledger {tr['ledger0'] / GIB:.2f} GiB (worst {100 * worst:+.1f}%), "
                    f"ledger params {tr['params0'] / GIB:.2f} of the model's {4 * tr['params_total'] / GIB:.2f} GiB fp32; "
                    f"unsharded refused -> {ref['suggests']}")
    summary = (f"- CPU: {machine()}; load average before each part in the table "
               f"(the machine is shared: timings at a load above 2 are not this model's speed).\n"
               f"- Commit: {commit}. MemAvailable before training: {tr['available'] / GIB:.1f} GiB.\n"
               f"- The ledger never holds the whole model on a rank: rank 0's params peak {tr['params0'] / GIB:.2f} GiB "
               f"(its half of the fp32 weights; under ZeRO-3 there is no 16-bit copy, and whole tensors exist only "
               f"in the workspace's gather pool, three at a time) against {4 * tr['params_total'] / GIB:.2f} GiB for the whole model in fp32. Rank 1 "
               f"prints no ledger (only rank 0 does); the start-up estimate is rank 0's, the largest.\n"
               f"- MFU divides by the bf16 ceiling of the cores (the AVX512-BF16 dot-product peak where the CPU "
               f"has it, else the FMA peak).\n"
               f"- Loss (random weights, so ~ln 32000 = 10.37): {tr['loss'][0]:.4f} at step 1, {tr['loss'][1]:.4f} "
               f"at step {tr['steps']}.\n"
               f"- Rerun: `cmake --build build -j2 --target fivefold && /usr/bin/python3 bench/big_model/run.py`\n\n"
               f"{summary_line}")
    publish(SECTION, __doc__.split("usage:")[0].strip(), table(imp, ref, tr), summary, a.write)


if __name__ == "__main__":
    main()
