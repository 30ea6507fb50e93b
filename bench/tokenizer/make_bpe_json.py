#!/usr/bin/env python3
"""Writes a byte-level BPE tokenizer.json (GPT-2 layout, or Llama 3's split pattern with --llama3)
learned from a text file, for benchmarks and comparisons: merges of the most frequent adjacent
pair, repeated, over the file's space-separated words. Small and slow on purpose (pure Python);
the file's format, not the vocabulary's quality, is what the benchmarks need.

    python3 bench/tokenizer/make_bpe_json.py TEXT MERGES OUT.json [--llama3]
"""
import collections
import json
import sys

LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
          r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def byte_alphabet():
    keep = [b for b in range(256) if 33 <= b <= 126 or 161 <= b <= 172 or b >= 174]
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars


def learn(text, n_merges):
    alphabet = byte_alphabet()
    words = collections.Counter(" " + w for w in text.replace("\n", " \n ").split(" "))
    pieces = {w: [alphabet[b] for b in w.encode()] for w in words}
    vocab = {alphabet[b]: b for b in range(256)}
    merges = []
    for _ in range(n_merges):
        pairs = collections.Counter()
        for w, count in words.items():
            p = pieces[w]
            for a, b in zip(p, p[1:]):
                pairs[(a, b)] += count
        if not pairs:
            break
        (a, b), _ = pairs.most_common(1)[0]
        merges.append(f"{a} {b}")
        vocab.setdefault(a + b, len(vocab))
        for w in words:
            p, out, i = pieces[w], [], 0
            while i < len(p):
                if i + 1 < len(p) and p[i] == a and p[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(p[i])
                    i += 1
            pieces[w] = out
    return vocab, merges


def main():
    text_path, n_merges, out_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    llama3 = "--llama3" in sys.argv[4:]
    vocab, merges = learn(open(text_path, encoding="utf-8").read(), n_merges)
    n = len(vocab)
    added = [{"id": n + i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, c in enumerate(["<|endoftext|>", "<|begin_of_text|>"])]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": not llama3}
    pre = byte_level if not llama3 else {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": LLAMA3}, "behavior": "Isolated", "invert": False}, byte_level]}
    post = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True}
    if llama3:
        post = {"type": "Sequence", "processors": [post, {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [], "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [n + 1],
                                                                "tokens": ["<|begin_of_text|>"]}}}]}
    doc = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
           "pre_tokenizer": pre, "post_processor": post,
           "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
           "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                     "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                     "ignore_merges": llama3, "vocab": vocab, "merges": merges}}
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
