#!/usr/bin/python3
"""Tensor parallelism on 2 ranks: the `bench` model (configs/bench.toml, ~12M parameters) with
the same global batch (8 sequences of 256 tokens) laid out three ways, one thread per rank:

  tp 1    mpirun -np 2 fivefold train --dp 2 --micro-batch 4      (data parallel, for reference)
  tp 2    mpirun -np 2 fivefold train --tp 2 --micro-batch 8
  tp 2+sp mpirun -np 2 fivefold train --tp 2 --sp true --micro-batch 8

Reports tokens/s (median step after the warm-up steps) and the bytes rank 0 holds by category
(the memory ledger, from metrics.jsonl). Layouts alternate within each round; the table shows
the median round per layout.

usage: /usr/bin/python3 bench/tp/layouts.py [--rounds 3 --steps 12 --warmup 2] [--write]
"""
import argparse
import os
import statistics
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from benchlib import publish, train_bench_model  # noqa: E402

SECTION = "## Tensor parallel: tp 1 / tp 2 / tp 2 + sp on 2 ranks"
BATCH = 8
LAYOUTS = [("tp 1 (dp 2)", ["--dp", "2", "--tp", "1"], 2),
           ("tp 2", ["--dp", "1", "--tp", "2"], 1),
           ("tp 2 + sp", ["--dp", "1", "--tp", "2", "--sp", "true"], 1)]
MIB = 1024 * 1024


def run(a, flags, dp, out):
    recs, _ = train_bench_model(a.fivefold, out, a.steps, ["--micro-batch", str(BATCH // dp)] + flags)
    timed = recs[a.warmup:]
    return {"tok_s": statistics.median(r["tokens_per_s"] for r in timed), "bytes": recs[-1]["bytes"],
            "loss": recs[-1]["loss"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fivefold", default=os.path.join(ROOT, "build/fivefold"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    results = {name: [] for name, _, _ in LAYOUTS}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            for name, flags, dp in LAYOUTS:
                results[name].append(run(a, flags, dp, os.path.join(tmp, "run")))
            print(f"round {r + 1}: " + ", ".join(f"{n} {results[n][-1]['tok_s']:.0f} tok/s" for n, _, _ in LAYOUTS),
                  file=sys.stderr)
    pick = lambda runs: sorted(runs, key=lambda x: x["tok_s"])[len(runs) // 2]
    base = pick(results[LAYOUTS[0][0]])
    rows = ["| layout | tokens/s | vs tp 1 | activations | params + grads + AdamW | workspace | peak total (rank 0) | loss at last step |",
            "|---|---|---|---|---|---|---|---|"]
    for name, _, _ in LAYOUTS:
        x = pick(results[name])
        b = x["bytes"]
        state = b["params"] + b["grads"] + b["optimizer"]
        rows.append(f"| {name} | {x['tok_s']:.0f} | {x['tok_s'] / base['tok_s']:.2f}x | {b['activations'] / MIB:.1f} MiB | "
                    f"{state / MIB:.1f} MiB | {b['workspace'] / MIB:.1f} MiB | {b['peak_total'] / MIB:.1f} MiB | {x['loss']:.4f} |")
    table = "\n".join(rows)
    description = (f"`configs/bench.toml`, global batch {BATCH} x 256, 2 ranks x 1 thread, {a.steps} steps "
                   f"({a.warmup} warm-up steps excluded), median of {a.rounds} alternating rounds. Bytes are "
                   f"rank 0's memory ledger at the end of the run.")
    summary = ("Tensor parallelism halves the model state and (with sp) the activations per rank, at the "
               "price of four (N, C) exchanges per layer per micro-batch that data parallelism does not have; "
               "on 2 CPU cores those exchanges are CPU copies on the critical path, so it trades speed for memory.")
    publish(SECTION, description, table, summary, a.write)


if __name__ == "__main__":
    main()
