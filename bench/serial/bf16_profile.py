#!/usr/bin/python3
"""Where a bf16 step of the `bench` model goes, kernel by kernel: one run of
`fivefold train --precision bf16` under `perf record` (no call stacks: unwinding them slows the
run enough to change where it waits), each sample charged to the kernel it ran in, summed over the
timed steps. A sample in fivefold is charged by its function's source file (the symbol table keeps
each local function under its file, so the kernels' OpenMP bodies in anonymous namespaces come
apart), or by name where one file holds several rows (attention's softmax, tiles and packing).
oneDNN's JIT code is named through its perf map (DNNL_JIT_PROFILE=2), so its GEMM kernels and its
own operand copies (packing) come apart.

usage: /usr/bin/python3 bench/serial/bf16_profile.py [--fivefold build/fivefold] [--steps 10 --warmup 3]
                                                     [--threads 2] [--precision bf16] [--save P.json]
                                                     [--train-args "--wgrad-rows false"]
       /usr/bin/python3 bench/serial/bf16_profile.py --compare B1.json,B2.json A1.json,A2.json
           (two builds side by side, each the mean of its runs)

A step ends with its optimizer. ms per step is a row's share
of the timed steps' samples (all threads) times the median step wall time, so the rows add up to
the step. A thread spinning in OpenMP (its share of a parallel region done, or the other thread in
serial code) is its own row; `of which during` names what the busy thread ran meanwhile.
"""
import argparse
import bisect
import collections
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
HZ = 1999

# (row, GEMM?, symbol pattern, source file pattern): the first row matching a sample's symbol, or
# else its function's source file.
KINDS = [
    ("GEMM operand packing (oneDNN copies, reorders)", False, r"copy_an|copy_bt|copy_at|copy_bn|_copy_a|_copy_b|reorder|"
                                                            r"matmul_copy|transpose", None),
    # Any other JIT code oneDNN made (a perf map's symbol): its GEMM kernels and their epilogues.
    ("GEMM (oneDNN kernels)", True, r"@perf-\d+\.map$|brgemm|gemm_.*kern|sgemm|gemv", None),
    # fivefold's tile GEMM (gemm_amx.cpp): its packing (multiply's parallel region inlines B's
    # tiles), then its blocks on the tile unit and their write-out.
    ("GEMM operand packing (fivefold's tile GEMM)", False,
     r"ff::\(anonymous namespace\)::(pack_[ab]_tiles?|multiply)\b", None),
    ("GEMM (fivefold's tile GEMM on AMX)", True,
     r"ff::\(anonymous namespace\)::(items<[\w:]*Tiles>|write_out\b)", None),
    ("attention: softmax", False, r"masked_online_softmax", None),
    ("attention: tile products", True, r"dot_block|dot_rows|attn16::|attn::tile", None),
    ("attention: packing", False, r"flash_bf16::pack", None),
    ("attention: the rest (block loops, exp, rescaling)", False, r"ff::attention|flash_bf16|ff::attn", r"attention"),
    ("RMSNorm", False, r"ff::rmsnorm_", r"^rmsnorm\.cpp$"),
    ("RoPE", False, r"ff::rope_", r"^rope\.cpp$"),
    ("SwiGLU", False, r"ff::swiglu_", r"^swiglu\.cpp$"),
    ("cross-entropy", False, r"ff::cross_entropy|ff::vocab_parallel", r"^(cross_entropy|vocab_parallel)\.cpp$"),
    ("embedding", False, r"ff::embedding_", r"^embedding\.cpp$"),
    ("bf16 weight copy", False, r"WeightCopy", r"^weight_copy\.cpp$"),
    ("rounding fp32 <-> bf16 (activations, gradients)", False, r"ff::convert_|ff::round_through", r"^convert\.cpp$"),
    ("optimizer (AdamW, grad norm, zeroing)", False, r"ff::adamw|ff::l2_norm|ff::scale_inplace|AdamW|Optimizer", r"^(adamw|optimizer|sgd)\.cpp$"),
    ("GEMM dispatch (oneDNN host code, fivefold's wrappers)", False, r"@libdnnl|ff::gemm|ff::matmul|ff::linear_|PackedWeights|wgrad_rows|accumulate_weight_grad", r"^(gemm.*|wgrad_rows|packed_weights)\.cpp$"),
    ("memset, memcpy (libc)", False, r"@libc\.", None),
    ("OS kernel (page faults, I/O)", False, r"@\[kernel", None),
    # Ranks only: MPI's libraries, and Comm's engine (its progress thread, waits and the sums of
    # reductions) as the exchange and reduce files define it.
    ("communication (MPI, Comm's engine, reductions)", False,
     r"@libmpi|@libopen-(pal|rte)|@mca_|ff::Comm|ff::CommRequest|ff::detail::.*(Engine|Op\b)",
     r"^(collectives|comm|comm_world|engine|exchange|groups|hierarchical|reduce)\.cpp$"),
]
SPIN = "OpenMP wait (a thread idle in a barrier)"
OTHER = "other (model glue, data, metrics)"


def record(a, workdir):
    out = os.path.join(workdir, "run")
    data = os.path.join(workdir, "perf.data")
    cmd = ["perf", "record", "-q", "-F", str(HZ), "-o", data, "--",
           a.fivefold, "train", "--config", os.path.join(ROOT, "configs/bench.toml"), "--data", a.data, "--out", out,
           "--steps", str(a.steps + a.warmup), "--eval-every", "0", "--threads", str(a.threads), "--log-every", "1000",
           "--precision", a.precision] + a.train_args.split()
    subprocess.run(cmd, env=dict(os.environ, DNNL_JIT_PROFILE="2"), check=True, capture_output=True)
    return data


def source_files(binary):
    """Function name as perf prints it (no parameters; OpenMP's outlined suffix cut) -> the base
    names of the source files defining it, from the FILE entries that head each object's local
    symbols in the symbol table. A name several files define (the fp32 attention and embedding
    kernels' `backward<float>`) goes to the first row any of them matches."""
    syms = subprocess.run(["readelf", "-sW", binary], capture_output=True, text=True, check=True).stdout
    names, files, cur = [], [], "?"
    for line in syms.splitlines():
        f = line.split()
        if len(f) >= 8 and f[3] == "FILE":
            # A kernel's ISA tier (kernels/tiers/X_avx512.cpp) is the same kernel as X.cpp.
            cur = re.sub(r"_avx512(_bf16)?\.cpp$", ".cpp", f[7])
        elif len(f) >= 8 and f[3] == "FUNC" and f[4] == "LOCAL":
            names.append(f[7].split("._omp_fn")[0].split(".cold")[0])
            files.append(cur)
    if any(re.match(r"unity_\d+_cxx\.cxx$", f) for f in files):
        sys.exit(f"bf16_profile.py: {binary} is a unity build (CMAKE_UNITY_BUILD): its kernels share source files, "
                 "so their samples cannot be told apart; profile a build configured with -DCMAKE_UNITY_BUILD=OFF")
    demangled = subprocess.run(["c++filt", "-p"], input="\n".join(names), capture_output=True, text=True,
                               check=True).stdout.splitlines()
    out = collections.defaultdict(set)
    for name, file in zip(demangled, files):
        out[name].add(file)
    return out


def samples(path):
    """(tid, time, symbol, dso) per sample."""
    out = subprocess.run(["perf", "script", "-i", path, "-F", "tid,time,ip,sym,dso"], capture_output=True,
                         text=True, check=True).stdout
    for line in out.splitlines():
        m = re.match(r"^\s*(\d+)\s+([\d.]+):\s+[0-9a-f]+\s+(.*?)\s+\((.*)\)\s*$", line)
        if m:
            yield int(m.group(1)), float(m.group(2)), m.group(3), os.path.basename(m.group(4))


def classify(sym, dso, files):
    if dso.startswith("libgomp"):
        return SPIN
    key = f"{sym} @{dso}"
    srcs = files.get(sym.split("._omp_fn")[0], ())
    for row, _, pat, file_pat in KINDS:
        if (pat and re.search(pat, key)) or (file_pat and any(re.search(file_pat, f) for f in srcs)):
            return row
    return OTHER


def tile_fraction(path, sym):
    """The share of `sym`'s samples on its bf16 dot-product instructions (vdpbf16ps) or within
    two instructions of one: the tile products the compiler inlined into attention's block loops
    (a sample lands on an instruction at most a few after the one that stalled)."""
    out = subprocess.run(["perf", "annotate", "-i", path, "--stdio", "-s", sym], capture_output=True,
                         text=True).stdout
    ins = [(float(m.group(1)), m.group(2)) for m in
           (re.match(r"^\s*([\d.]+)\s*:\s+[0-9a-f]+:\s+(\S+)", line) for line in out.splitlines()) if m]
    total = sum(p for p, _ in ins)
    near = [any(op.startswith("vdpbf16ps") for _, op in ins[max(0, i - 2):i + 3]) for i in range(len(ins))]
    return sum(p for (p, _), n in zip(ins, near) if n) / total if total else 0.0


def profile(path, steps, warmup, files):
    s = sorted(samples(path), key=lambda x: x[1])
    rows = [classify(sym, dso, files) for _, _, sym, dso in s]
    ad = [t for (_, t, _, _), row in zip(s, rows) if row.startswith("optimizer")]
    # The optimizer runs once per step: the run's `steps` bursts of its samples are split at the
    # steps - 1 widest gaps between them (a fixed gap would split a burst the OS paused).
    cuts = sorted(sorted(range(len(ad) - 1), key=lambda i: ad[i + 1] - ad[i])[len(ad) - steps:])
    ends = [ad[i] for i in cuts] + ad[-1:]
    timed = ends[warmup - 1:] if warmup >= 1 else ends
    if len(timed) < 3:
        sys.exit(f"{path}: found {len(ends)} step ends, too few to time")
    lo, hi = timed[0], timed[-1]
    walls = [b - a for a, b in zip(timed, timed[1:])]
    steps = len(walls)
    # Who was busy while a thread spun: the nearest sample of another thread.
    by_tid = collections.defaultdict(list)
    for (tid, t, _, _), row in zip(s, rows):
        if lo < t <= hi and row != SPIN:
            by_tid[tid].append((t, row))
    count = collections.Counter()
    during = collections.defaultdict(collections.Counter)
    for (tid, t, _, _), row in zip(s, rows):
        if not lo < t <= hi:
            continue
        count[row] += 1
        if row == SPIN:
            best = None
            for other, lst in by_tid.items():
                if other == tid or not lst:
                    continue
                i = bisect.bisect(lst, (t, ""))
                for j in (i - 1, i):
                    if 0 <= j < len(lst) and (best is None or abs(lst[j][0] - t) < best[0]):
                        best = (abs(lst[j][0] - t), lst[j][1])
            if best and best[0] < 5.0 / HZ:
                during[SPIN][best[1]] += 1
    # Attention's block loops inline its tile products: their samples move to the tile row.
    tiles, rest = "attention: tile products", "attention: the rest (block loops, exp, rescaling)"
    syms = collections.Counter(sym for (_, t, sym, _), row in zip(s, rows) if row == rest and lo < t <= hi)
    for sym, n in syms.items():
        moved = round(n * tile_fraction(path, sym))
        count[rest] -= moved
        count[tiles] += moved
    total = sum(count.values())
    wall = statistics.median(walls)
    gemm_rows = {row for row, g, _, _ in KINDS if g}
    table = {row: {"share": n / total, "ms": 1e3 * wall * n / total, "cpu_ms": 1e3 * n / HZ / steps,
                   "gemm": row in gemm_rows} for row, n in count.most_common()}
    spin_during = {row: n / total for row, n in during[SPIN].most_common(4)}
    return {"steps": steps, "step_ms": 1e3 * wall, "samples": total, "rows": table, "spin_during": spin_during,
            "non_gemm_share": sum(r["share"] for r in table.values() if not r["gemm"])}


def busy_non_gemm(p):
    """The share of the threads' busy time (OpenMP waits left out) that is not a GEMM: what the
    kernels cost, whatever the machine's other load made the threads wait."""
    busy = {k: r for k, r in p["rows"].items() if k != SPIN}
    total = sum(r["share"] for r in busy.values())
    return sum(r["share"] for r in busy.values() if not r["gemm"]) / total


def print_table(p):
    print("| kernel | ms per step | share of step | CPU ms per step | GEMM |")
    print("|---|---:|---:|---:|---|")
    for row, r in p["rows"].items():
        extra = ""
        if row == SPIN and p["spin_during"]:
            extra = " (of which during: " + ", ".join(f"{k} {100 * v:.1f}%" for k, v in p["spin_during"].items()) + ")"
        print(f"| {row}{extra} | {r['ms']:.1f} | {100 * r['share']:.1f}% | {r['cpu_ms']:.1f} | "
              f"{'yes' if r['gemm'] else 'no'} |")
    print(f"| **step** ({p['steps']} steps, median) | **{p['step_ms']:.1f}** | | | not GEMM: "
          f"**{100 * p['non_gemm_share']:.1f}%**; of the busy time: **{100 * busy_non_gemm(p):.1f}%** |")


def mean_profile(runs):
    """Several profiles of one build (alternating runs) as one: each row's numbers averaged, a row
    missing from a run counted as zero there."""
    if len(runs) == 1:
        return runs[0]
    names = list(dict.fromkeys(k for r in runs for k in r["rows"]))
    rows = {}
    for k in names:
        got = [r["rows"].get(k) for r in runs]
        rows[k] = {f: statistics.mean(g[f] if g else 0.0 for g in got) for f in ("share", "ms", "cpu_ms")}
        rows[k]["gemm"] = next(g for g in got if g)["gemm"]
    rows = dict(sorted(rows.items(), key=lambda kv: -kv[1]["share"]))
    return {"rows": rows, "step_ms": statistics.mean(r["step_ms"] for r in runs),
            "non_gemm_share": statistics.mean(r["non_gemm_share"] for r in runs)}


def print_compare(before, after):
    rows = list(before["rows"]) + [r for r in after["rows"] if r not in before["rows"]]
    print("| kernel | GEMM | before: ms per step | share | CPU ms | after: ms per step | share | CPU ms |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        b, a = before["rows"].get(row), after["rows"].get(row)
        g = (b or a)["gemm"]
        cell = lambda r: f"{r['ms']:.1f} | {100 * r['share']:.1f}% | {r['cpu_ms']:.1f}" if r else "- | - | -"  # noqa: E731
        print(f"| {row} | {'yes' if g else 'no'} | {cell(b)} | {cell(a)} |")
    print(f"| **step** | | **{before['step_ms']:.1f}** | not GEMM **{100 * before['non_gemm_share']:.1f}%** | | "
          f"**{after['step_ms']:.1f}** | not GEMM **{100 * after['non_gemm_share']:.1f}%** | |")
    print(f"| **not GEMM, of the busy time (waits left out)** | | | **{100 * busy_non_gemm(before):.1f}%** | | | "
          f"**{100 * busy_non_gemm(after):.1f}%** | |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fivefold", default=os.path.join(ROOT, "build/fivefold"))
    ap.add_argument("--data", default=os.path.join(ROOT, "data/kjv"))
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--precision", default="bf16")
    ap.add_argument("--train-args", default="", help="more `fivefold train` flags, e.g. '--wgrad-rows false'")
    ap.add_argument("--symbols", help="the ELF binary behind --fivefold when that is a wrapper script "
                                      "(its symbol table maps functions to source files)")
    ap.add_argument("--save", help="write the profile as JSON (for --compare)")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="comma-separated profiles of each build")
    a = ap.parse_args()
    if a.compare:
        print_compare(*(mean_profile([json.load(open(p)) for p in side.split(",")]) for side in a.compare))
        return
    if not shutil.which("perf"):
        sys.exit("perf is not on PATH: install linux-perf (Debian) to profile")
    sys.path.insert(0, os.path.dirname(HERE))
    from benchlib import ensure_kjv
    ensure_kjv(a.fivefold, a.data)
    load = open("/proc/loadavg").read().split()[:3]
    with tempfile.TemporaryDirectory() as workdir:
        files = source_files(a.symbols or a.fivefold)  # before the run: a unity build is refused at once
        p = profile(record(a, workdir), a.steps + a.warmup, a.warmup, files)
    p["load_start"] = load
    p["load_end"] = open("/proc/loadavg").read().split()[:3]
    print(f"{a.precision} step of configs/bench.toml, {a.threads} threads, {p['samples']} samples at {HZ} Hz; "
          f"load average {' '.join(load)} at the start")
    print_table(p)
    if a.save:
        with open(a.save, "w") as f:
            json.dump(p, f, indent=1)


if __name__ == "__main__":
    main()
