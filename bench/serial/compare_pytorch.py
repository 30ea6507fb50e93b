#!/usr/bin/python3
"""fivefold against PyTorch 1.13 eager on the identical `bench` model, data, batch and threads.

The two programs run alternately, round after round, in one invocation, so both see the same
machine weather. Throughput is total timed tokens over total timed seconds (the first steps are
warm-up for both); peak memory is each process's own max RSS (os.wait4). MFU for both uses the
FLOPs-per-token and the sgemm ceiling that fivefold measures at start-up (metrics.jsonl), so the
two columns share one yardstick.

usage: /usr/bin/python3 bench/serial/compare_pytorch.py [--rounds 3 --steps 12 --warmup 2]
Prints a Markdown table; --write appends nothing, it replaces the section in bench/RESULTS.md.
"""
import argparse
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from benchlib import cpu_name, peer_env, read_metrics, replace_section  # noqa: E402
SECTION = "## Serial training: fivefold vs PyTorch"


def first_train_shard(data):
    """A prepared data folder's first training shard: train-00000.bin (`fivefold prepare` today),
    train.bin (folders prepared before shards were numbered)."""
    for name in ("train-00000.bin", "train.bin"):
        if os.path.exists(os.path.join(data, name)):
            return os.path.join(data, name)
    sys.exit(f"{data}: no train-00000.bin (prepare it: fivefold prepare --text FILE --out {data})")


def shard_to_int32(shard, out):
    """Re-encodes a fivefold token shard (src/io/tokens/token_shard.h: a 40-byte header in version 1, 48 in
    versions 2 and 3; u16 or u32 ids; a version-3 loss mask after the ids is not read) as raw int32 ids."""
    with open(shard, "rb") as f:
        head = f.read(48)
        if head[:8] != b"FFTOKENS":
            sys.exit(f"{shard} is not a fivefold token shard")
        version, dtype_bytes, count = struct.unpack_from("<IIQ", head, 8)
        header_bytes = {1: 40, 2: 48, 3: 48}.get(version)
        if header_bytes is None:
            sys.exit(f"{shard}: token shard version {version} is not one this script reads")
        f.seek(header_bytes)
        raw = f.read(count * dtype_bytes)
    fmt = "H" if dtype_bytes == 2 else "I"
    ids = struct.unpack(f"<{count}{fmt}", raw)
    with open(out, "wb") as f:
        f.write(struct.pack(f"<{count}i", *ids))


def run_measured(cmd, env=None):
    # os.wait4 on our own child gives that child's rusage; Popen.wait would reap it first.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{err[-2000:]}")
    return out, usage.ru_maxrss / 1024.0


def fivefold_round(a, workdir):
    out_dir = os.path.join(workdir, "ff-run")
    shutil.rmtree(out_dir, ignore_errors=True)
    cmd = [a.fivefold, "train", "--config", os.path.join(ROOT, "configs/bench.toml"),
           "--data", a.data, "--out", out_dir, "--steps", str(a.steps + a.warmup),
           "--eval-every", "0", "--threads", str(a.threads), "--log-every", "1000"]
    _, rss = run_measured(cmd)
    recs = read_metrics(out_dir)
    timed = recs[a.warmup:]
    tokens = a.batch * a.seq * len(timed)
    seconds = sum(r["step_seconds"] for r in timed)
    flops_over_peak = recs[-1]["mfu"] / recs[-1]["tokens_per_s"]  # flops_per_token / peak
    return {"tokens_per_s": tokens / seconds, "rss_mb": rss, "flops_over_peak": flops_over_peak,
            "loss_last": recs[-1]["loss"]}


def torch_round(a, tokens_file):
    env = peer_env()
    cmd = ["/usr/bin/python3", os.path.join(ROOT, "bench/torch_llama_bench.py"), "--json",
           "--steps", str(a.steps), "--warmup", str(a.warmup), "--threads", str(a.threads),
           "--tokens", tokens_file]
    out, rss = run_measured(cmd, env)
    res = json.loads(out.strip().splitlines()[-1])
    return {"tokens_per_s": res["tokens_per_s"], "rss_mb": rss, "params": res["params"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fivefold", default=os.path.join(ROOT, "build/fivefold"))
    ap.add_argument("--data", default=os.path.join(ROOT, "data/kjv"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=12, help="timed steps per run")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--write", action="store_true", help="replace the section in bench/RESULTS.md")
    a = ap.parse_args()
    a.batch, a.seq = 8, 256  # configs/bench.toml; torch_llama_bench.py defaults match
    with tempfile.TemporaryDirectory() as workdir:
        tokens_file = os.path.join(workdir, "train.i32")
        shard_to_int32(first_train_shard(a.data), tokens_file)
        ff, pt = [], []
        for r in range(a.rounds):
            ff.append(fivefold_round(a, workdir))
            pt.append(torch_round(a, tokens_file))
            print(f"round {r + 1}: fivefold {ff[-1]['tokens_per_s']:.0f} tok/s, "
                  f"pytorch {pt[-1]['tokens_per_s']:.0f} tok/s", file=sys.stderr)
    med = lambda xs: statistics.median(xs)
    per_round = lambda runs: ", ".join("%.0f" % x["tokens_per_s"] for x in runs)
    ff_tps, pt_tps = med([x["tokens_per_s"] for x in ff]), med([x["tokens_per_s"] for x in pt])
    fop = med([x["flops_over_peak"] for x in ff])
    ff_rss, pt_rss = max(x["rss_mb"] for x in ff), max(x["rss_mb"] for x in pt)
    cmdline = "/usr/bin/python3 bench/serial/compare_pytorch.py " + " ".join(sys.argv[1:])
    rows = [
        "| | fivefold | PyTorch 1.13 eager | ratio |",
        "|---|---|---|---|",
        f"| tokens/s (median of {a.rounds} alternating rounds, {a.steps} timed steps each) | "
        f"{ff_tps:.0f} | {pt_tps:.0f} | **{ff_tps / pt_tps:.2f}x** |",
        f"| MFU (over fivefold's measured sgemm ceiling) | {100 * ff_tps * fop:.1f}% | "
        f"{100 * pt_tps * fop:.1f}% | |",
        f"| peak RSS | {ff_rss:.0f} MiB | {pt_rss:.0f} MiB | {ff_rss / pt_rss:.2f}x |",
        f"| per-round tokens/s | {per_round(ff)} | {per_round(pt)} | |",
    ]
    table = "\n".join(rows)
    print(table)
    if a.write:
        body = (f"{SECTION}\n\nModel `configs/bench.toml` ({pt[0]['params']:,} parameters, d=384, "
                f"6 layers, 6 heads, T=256, vocab 4096, micro-batch 8, fp32, AdamW), KJV tokens, "
                f"{a.threads} threads for both, {cpu_name()} (2 cores), PyTorch with OPENBLAS_CORETYPE / "
                f"OPENBLAS_L2_SIZE unset in its command alone.\n\n```\n{cmdline}\n```\n\n{table}\n")
        replace_section(SECTION, body)


if __name__ == "__main__":
    main()
