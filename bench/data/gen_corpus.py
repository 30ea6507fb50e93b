#!/usr/bin/env python3
"""Writes a synthetic jsonl.zst corpus of at least --gb gigabytes (uncompressed) for the prepare
benchmark: documents of 3-40 sentences drawn from a fixed pool, so the text has a Zipf-like word
distribution a BPE tokenizer compresses like prose. Deterministic for a seed.

    python3 bench/data/gen_corpus.py --gb 2 --out /tmp/ff-corpus/corpus.jsonl.zst
"""
import argparse
import json
import os
import random
import subprocess


def word_pool(rng, n):
    syllables = ["ka", "lo", "mi", "ne", "ru", "ta", "shi", "vo", "en", "al", "or", "is", "the", "and", "of", "de"]
    words = set()
    while len(words) < n:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))))
    return sorted(words)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gb", type=float, default=2.0)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    words = word_pool(rng, 8000)
    cum, total = [], 0.0
    for i in range(len(words)):
        total += 1.0 / (i + 1)
        cum.append(total)
    sentences = []
    for _ in range(20000):
        n = rng.randint(4, 18)
        s = " ".join(rng.choices(words, cum_weights=cum, k=n))
        sentences.append(s[0].upper() + s[1:] + rng.choice([".", ".", ".", "?", "!"]))
    target = int(a.gb * 1e9)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    # Written under another name and renamed when complete, so a killed run leaves no corpus the
    # benchmark would take for a whole one.
    partial = a.out + ".partial"
    z = subprocess.Popen(["zstd", "-q", "-3", "-T2", "-f", "-o", partial], stdin=subprocess.PIPE)
    written = docs = 0
    while written < target:
        chunk = []
        for _ in range(1000):
            paragraphs = [" ".join(rng.choices(sentences, k=rng.randint(1, 8))) for _ in range(rng.randint(1, 5))]
            line = json.dumps({"id": docs, "text": "\n\n".join(paragraphs)}) + "\n"
            docs += 1
            chunk.append(line)
        data = "".join(chunk).encode()
        z.stdin.write(data)
        written += len(data)
    z.stdin.close()
    if z.wait() != 0:
        raise SystemExit("zstd failed")
    os.replace(partial, a.out)
    print(f"{a.out}: {docs} documents, {written / 1e9:.2f} GB uncompressed, "
          f"{os.path.getsize(a.out) / 1e9:.2f} GB on disk")


if __name__ == "__main__":
    main()
