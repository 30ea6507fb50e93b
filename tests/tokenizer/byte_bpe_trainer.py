"""A small byte-level BPE trainer (GPT-2 style) for building test tokenizers.

It only has to produce a plausible vocabulary and merge list: the oracle tests compare fivefold's
encoder with Hugging Face's on whatever merges this yields, so pre-tokenisation here is a plain
`re` approximation of the GPT-2 split (Python's `re` has no \\p{L}) and ties break by pair text.
Standard library only.
"""
import heapq
import re
from collections import Counter, defaultdict


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable character table, in byte order."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1))
                 + list(range(ord("\u00ae"), ord("\u00ff") + 1)))
    table = {}
    shifted = 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + shifted)
            shifted += 1
    return table


# Letters are word characters that are neither digits nor '_'.
_WORDS = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?[^\s\w]+|\s+(?!\S)|\s+")


def word_counts(lines):
    """Counts of byte-level-mapped pre-tokens over the given text lines."""
    table = bytes_to_unicode()
    counts = Counter()
    for line in lines:
        for piece in _WORDS.findall(line):
            counts["".join(table[b] for b in piece.encode("utf-8"))] += 1
    return counts


def train(counts, n_merges):
    """Returns (vocab: token -> id, merges: [(left, right)]) with the 256 byte symbols first."""
    table = bytes_to_unicode()
    vocab = {table[b]: b for b in range(256)}
    words = [list(w) for w in counts]
    freqs = [counts[w] for w in counts]
    pair_counts = Counter()
    holders = defaultdict(set)  # pair -> indices of the words containing it
    for i, symbols in enumerate(words):
        for pair in zip(symbols, symbols[1:]):
            pair_counts[pair] += freqs[i]
            holders[pair].add(i)
    # Max-heap with lazy deletion: an entry is live only while its count is still current.
    heap = [(-c, p) for p, c in pair_counts.items()]
    heapq.heapify(heap)
    merges = []
    while len(merges) < n_merges and heap:
        neg, pair = heapq.heappop(heap)
        if pair_counts.get(pair, 0) != -neg or neg == 0:
            continue
        merged = pair[0] + pair[1]
        merges.append(pair)
        if merged not in vocab:
            vocab[merged] = len(vocab)
        touched = set()
        for i in list(holders[pair]):
            symbols = words[i]
            for p in zip(symbols, symbols[1:]):
                pair_counts[p] -= freqs[i]
                holders[p].discard(i)
                touched.add(p)
            out, k = [], 0
            while k < len(symbols):
                if k + 1 < len(symbols) and (symbols[k], symbols[k + 1]) == pair:
                    out.append(merged)
                    k += 2
                else:
                    out.append(symbols[k])
                    k += 1
            words[i] = out
            for p in zip(out, out[1:]):
                pair_counts[p] += freqs[i]
                holders[p].add(i)
                touched.add(p)
        for p in touched:
            if pair_counts[p] > 0:
                heapq.heappush(heap, (-pair_counts[p], p))
            else:
                pair_counts.pop(p, None)
    return vocab, merges
