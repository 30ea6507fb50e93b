#!/usr/bin/env python3
"""Writes a byte-level BPE tokenizer.json (GPT-2 layout, or Llama 3's split pattern with --llama3)
learned from a text file, for benchmarks: the tokenizer oracle's own trainer and tokenizer.json
layout (tests/tokenizer/byte_bpe_trainer.py, make_fixtures.byte_level_json) with a chosen number
of merges and text, so the benchmarks time the same kind of file the oracle checks.

    python3 bench/tokenizer/make_bpe_json.py TEXT MERGES OUT.json [--llama3]
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "tokenizer"))
import byte_bpe_trainer  # noqa: E402
import make_fixtures  # noqa: E402


def main():
    text_path, n_merges, out_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    style = "llama3" if "--llama3" in sys.argv[4:] else "gpt2"
    with open(text_path, encoding="utf-8") as f:
        counts = byte_bpe_trainer.word_counts(f.read().split("\n"))
    vocab, merges = byte_bpe_trainer.train(counts, n_merges)
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(make_fixtures.byte_level_json(vocab, merges, style), f, ensure_ascii=False)


if __name__ == "__main__":
    main()
