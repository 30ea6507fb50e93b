#!/usr/bin/env python3
"""The prepare benchmark: a corpus of at least 2 GB (bench/data/gen_corpus.py, jsonl.zst in /tmp)
prepared by `fivefold prepare` with a reused SentencePiece tokenizer; peak RSS (/usr/bin/time -v),
MB/s of uncompressed text and tokens/s. A corpus a tenth the size, prepared at 1 and 2 encoder
threads, gives the scaling and shows the peak RSS does not grow with the corpus.

    python3 bench/data/bench_prepare.py [--fivefold build/fivefold] [--dir /tmp/ff-corpus] [--write]

--write replaces the "Streaming prepare" section of bench/RESULTS.md with the table.
"""
import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def run(cmd, **kw):
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    return subprocess.run(cmd, check=True, **kw)


def ensure_corpus(path, gb):
    if not os.path.exists(path):
        run([sys.executable, os.path.join(HERE, "gen_corpus.py"), "--gb", str(gb), "--out", path])
    size_file = path + ".bytes"
    if not os.path.exists(size_file):
        p = subprocess.Popen(["zstd", "-dc", path], stdout=subprocess.PIPE)
        n = 0
        while True:
            b = p.stdout.read(1 << 22)
            if not b:
                break
            n += len(b)
        p.wait()
        with open(size_file, "w") as f:
            f.write(str(n))
    return int(open(size_file).read())


def prepare(ff, inputs, out, extra):
    cmd = ["/usr/bin/time", "-v", ff, "prepare", "--input", inputs, "--out", out] + extra
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"prepare failed:\n{r.stdout}\n{r.stderr}")
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1))
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", r.stderr).group(1)
    secs = 0.0
    for part in wall.split(":"):
        secs = secs * 60 + float(part)
    meta = json.load(open(os.path.join(out, "meta.json")))
    return rss_kb / 1024.0, secs, meta["train_tokens"] + meta["val_tokens"], meta


def cpu_name():
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    name = re.search(r"Model name:\s*(.+)", out).group(1).strip()
    cpus = re.search(r"^CPU\(s\):\s*(\d+)", out, re.M).group(1)
    flags = re.search(r"Flags:\s*(.+)", out)
    f = flags.group(1).split() if flags else []
    isa = ", ".join(x for x, flag in (("AVX-512", "avx512f"), ("AVX512-BF16", "avx512_bf16")) if flag in f)
    load = os.getloadavg()[0]
    return f"{name}, {cpus} cores ({isa or 'no AVX-512'}), load average {load:.1f} at the end"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fivefold", default=os.path.join(ROOT, "build", "fivefold"))
    ap.add_argument("--dir", default="/tmp/ff-corpus")
    ap.add_argument("--gb", type=float, default=2.0)
    ap.add_argument("--small-threads", default="1,2")
    ap.add_argument("--big-threads", default="1,2")
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    big = os.path.join(a.dir, "corpus.jsonl.zst")
    small = os.path.join(a.dir, "small.jsonl.zst")
    big_bytes = ensure_corpus(big, a.gb)
    small_bytes = ensure_corpus(small, a.gb / 10)

    # The tokenizer is trained once on the small corpus's first 32 MB; the timed runs reuse it,
    # so they measure streaming and encoding alone.
    tok_dir = os.path.join(a.dir, "tok")
    if not os.path.exists(os.path.join(tok_dir, "tokenizer.model")):
        sample = os.path.join(a.dir, "tok-sample.jsonl")
        text = subprocess.run(f"zstd -dc {small} | head -c 32000000", shell=True, capture_output=True).stdout
        with open(sample, "wb") as f:
            f.write(text[: text.rfind(b"\n") + 1])
        run([a.fivefold, "prepare", "--input", sample, "--out", tok_dir, "--vocab", "4096",
             "--val-fraction", "0"], stdout=subprocess.DEVNULL)
    tok = os.path.join(tok_dir, "tokenizer.model")

    rows = []
    for corpus, nbytes, threads_list in ((small, small_bytes, a.small_threads.split(",")),
                                         (big, big_bytes, a.big_threads.split(","))):
        for t in [t for t in threads_list if t]:
            out = os.path.join(a.dir, f"out-{os.path.basename(corpus).split('.')[0]}-{t}")
            load_before = os.getloadavg()[0]
            rss, secs, tokens, meta = prepare(a.fivefold, corpus, out, ["--tokenizer", tok, "--threads", t])
            load = f"{min(load_before, os.getloadavg()[0]):.1f}-{max(load_before, os.getloadavg()[0]):.1f}"
            rows.append((corpus, nbytes, os.path.getsize(corpus), int(t), load, secs, tokens, rss,
                         len(meta["train_shards"]) + len(meta["val_shards"]), meta["train_documents"] + meta["val_documents"]))
            print(rows[-1], file=sys.stderr, flush=True)

    lines = ["| corpus (jsonl.zst) | threads | load average | wall s | MB/s (text) | tokens/s | tokens/s per thread | peak RSS MiB | documents | shards |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for corpus, nbytes, zbytes, t, load, secs, tokens, rss, shards, docs in rows:
        lines.append(f"| {nbytes / 1e9:.2f} GB text ({zbytes / 1e9:.2f} GB on disk) | {t} | {load} | {secs:.0f} | "
                     f"{nbytes / 1e6 / secs:.1f} | {tokens / secs:,.0f} | {tokens / secs / t:,.0f} | {rss:.0f} | {docs:,} | {shards} |")
    table = "\n".join(lines)
    section = f"""## Streaming prepare

`fivefold prepare` streams a corpus larger than memory: one reader thread (zstd/gzip decompression,
jsonl parsing), N SentencePiece encoder threads and one in-order writer, with at most 2N + 2
batches of about 1 MB of text alive at once; shards are written as they fill. Peak RSS stays
flat when the corpus grows tenfold, and well under 512 MiB.

{table}

- CPU: {cpu_name()}; the load average (before and after each run) says how busy the machine
  was: compare rows of one load only. Peak RSS from `/usr/bin/time -v`.
- Corpus: `bench/data/gen_corpus.py` (synthetic jsonl.zst, documents of 1-5 paragraphs), tokenizer:
  SentencePiece BPE, vocab 4096, trained once on 32 MB and reused (`--tokenizer`), so the runs time
  reading, encoding and writing only. MB/s counts uncompressed text.
- Rerun: `python3 bench/data/bench_prepare.py --fivefold build/fivefold --write` (writes the corpora
  to /tmp/ff-corpus).
"""
    print(section)
    if a.write:
        path = os.path.join(ROOT, "bench", "RESULTS.md")
        text = open(path).read()
        m = re.search(r"^## Streaming prepare\n.*?(?=^## |\Z)", text, re.S | re.M)
        text = text[:m.start()] + section + "\n" + text[m.end():] if m else text.rstrip("\n") + "\n\n" + section
        open(path, "w").write(text)


if __name__ == "__main__":
    main()
