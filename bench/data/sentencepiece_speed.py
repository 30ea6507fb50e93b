"""Times the Python sentencepiece package (Debian python3-sentencepiece) encoding every line of a
text file with THREADS threads (its batch encode): prints {"tokens": N, "seconds": S} for the
encode call alone (loading excluded).

  sentencepiece_speed.py MODEL TEXT_FILE THREADS
"""
import json
import sys
import time

import sentencepiece as spm

model, text, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
sp = spm.SentencePieceProcessor(model_file=model)
with open(text, encoding="utf-8", newline="") as f:
    lines = f.read().split("\n")
if lines and lines[-1] == "":
    lines.pop()
t0 = time.perf_counter()
ids = sp.encode(lines, num_threads=threads)
seconds = time.perf_counter() - t0
print(json.dumps({"tokens": sum(map(len, ids)), "seconds": seconds}))
