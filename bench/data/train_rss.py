#!/usr/bin/python3
"""Training memory does not grow with the corpus.

Each rank reads the seq_len + 1 tokens of the rows it fills by positioned reads, verifies every
shard at start in 1 MiB blocks, and orders an epoch of more than 2^22 windows by a keyed bijection
computed per slot instead of a table; so a rank's peak RSS should be the same for a corpus of
100 MB and one of 2 GB. The `small` model (seq_len 128, vocab 512 here) trains 3 steps with dp 2
(one thread per rank) on folders of random token ids written by bench_make_token_folder (16 train
shards each, u16 ids, listed in meta.json), and on a 0.5/0.5 mixture of the two. Peak RSS per rank
is its high-water mark (VmHWM, reported by /usr/bin/time as ru_maxrss). The folders are written
in a temporary folder and removed afterwards. "verify" is the start-up check of every train shard
(checksum and id range) timed by bench_make_token_folder right after writing (a warm page cache).

usage: /usr/bin/python3 bench/data/train_rss.py [--build build] [--write]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from benchlib import cpu_name, lscpu, mpi_env, publish  # noqa: E402

SECTION = "## Data: training memory against corpus size"
SIZES = (("100 MB", 50_000_000), ("2 GB", 1_073_741_824))  # u16 ids: 2 bytes a token
MB = 1 << 20


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


def tokenizer(fivefold, work):
    """A 512-token SentencePiece model from a small generated text (the ids are random anyway)."""
    words = ["and", "the", "lord", "said", "unto", "moses", "in", "land", "of", "his", "sons", "people"]
    text = os.path.join(work, "text.txt")
    with open(text, "w") as f:
        for i in range(4000):
            f.write(" ".join(words[(i * 7 + j * 3) % len(words)] for j in range(12)) + f" {i}.\n")
    run([fivefold, "prepare", "--text", text, "--vocab", "512", "--out", os.path.join(work, "tok")])
    return os.path.join(work, "tok", "tokenizer.model")


def train_rss(fivefold, data, out):
    """Peak RSS (MiB) of each of 2 dp ranks training `small` for 3 steps on `data`."""
    shutil.rmtree(out, ignore_errors=True)
    cmd = ["mpirun", "--oversubscribe", "-np", "2", "/usr/bin/time", "-f", "peak_rss_kb %M", fivefold, "train",
           "--config", os.path.join(ROOT, "configs/small.toml"), "--data", data, "--out", out, "--dp", "2",
           "--threads", "1", "--steps", "3", "--eval-every", "0"]
    p = run(cmd, env=dict(mpi_env(), OMP_NUM_THREADS="1"))
    rss = sorted(int(line.split()[1]) / 1024 for line in p.stderr.splitlines() if line.startswith("peak_rss_kb"))
    if len(rss) != 2:
        sys.exit(f"expected two ranks' peak RSS in:\n{p.stderr[-2000:]}")
    return rss


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--write", action="store_true")
    a = p.parse_args()
    run(["cmake", "--build", a.build, "-j2", "--target", "fivefold", "bench_make_token_folder"])
    fivefold = os.path.join(a.build, "fivefold")
    maker = os.path.join(a.build, "bench/data/bench_make_token_folder")
    work = tempfile.mkdtemp(prefix="ff-data-rss-")
    rows, folders = [], []
    try:
        model = tokenizer(fivefold, work)
        for name, tokens in SIZES:
            folder = os.path.join(work, name.replace(" ", ""))
            made = run([maker, folder, model, str(tokens), "16"]).stdout.split()
            stats = dict(zip(made[0::2], made[1::2]))
            gb = int(stats["bytes"]) / 1e9
            rss = train_rss(fivefold, folder, os.path.join(work, "run"))
            rows.append(f"| {name} ({int(stats['tokens']):,} tokens, 16 shards) | {rss[0]:.1f} | {rss[1]:.1f} | "
                        f"{float(stats['verify_s']):.2f} s ({float(stats['verify_s']) / gb:.2f} s/GB) |")
            folders.append(folder)
        rss = train_rss(fivefold, f"{folders[0]}:0.5,{folders[1]}:0.5", os.path.join(work, "run"))
        rows.append(f"| mixture of both, 0.5/0.5 | {rss[0]:.1f} | {rss[1]:.1f} | (both) |")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    table = ("| data folder | rank 0 peak RSS (MiB) | rank 1 peak RSS (MiB) | verify at start |\n"
             "|---|---|---|---|\n" + "\n".join(rows))
    flags = lscpu().get("Flags", "").split()
    isa = ", ".join(f for f in ("avx512f", "avx512_bf16") if f in flags) or "no AVX-512"
    model = lscpu().get("Model", "?")
    summary = (f"- CPU: {cpu_name(f'model {model}, {os.cpu_count()} cores, {isa}; shared with other work: memory figures, not timings')}.\n"
               f"- Before (computed, not measured): the loader shuffled every epoch into a table of 8 bytes a window, 64 MiB per rank more for "
               f"the 2 GB folder at seq_len 128 (8.4 M windows) and growing with the corpus.\n"
               f"- Rerun: `cmake --build build -j2 --target fivefold bench_make_token_folder && "
               f"python3 bench/data/train_rss.py`")
    publish(SECTION, __doc__.split("usage:")[0].strip(), table, summary, a.write)


if __name__ == "__main__":
    main()
