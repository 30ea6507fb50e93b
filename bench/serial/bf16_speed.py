#!/usr/bin/python3
"""bf16 training speed on the `bench` model: fivefold fp32, fivefold bf16 and PyTorch
1.13 with bf16 autocast, run alternately round after round in one invocation so all three see the
same machine weather. Throughput = total timed tokens / total timed seconds (warm-up steps
excluded). PyTorch runs with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (its best).

usage: /usr/bin/python3 bench/serial/bf16_speed.py [--rounds 3 --steps 8 --warmup 2 --threads 2]
                                                   [--baseline OTHER_FIVEFOLD --baseline-name NAME]
                                                   [--variant 'NAME=ARGS']... [--peer 'LABEL=ARGS']...
                                                   [--peer-python PYTHON] [--no-peer]
--baseline adds that binary's bf16 run to every round (e.g. a build of an earlier commit), so a
change is measured side by side with what it replaces. --variant 'NAME=ARGS' (repeatable) adds a
bf16 run of the same binary with more `fivefold train` arguments; leading VAR=VALUE words of ARGS
go to its environment (e.g. 'vector attention=FIVEFOLD_AMX=off', 'no row split=--wgrad-rows false').
"""
import argparse
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from compare_pytorch import first_train_shard, fivefold_round, peer_env, run_measured, shard_to_int32  # noqa: E402
import json  # noqa: E402
from benchlib import ensure_kjv  # noqa: E402


def fivefold_precision_round(a, workdir, precision):
    # compare_pytorch's round with the precision key added to its command through --fivefold.
    wrapper = os.path.join(workdir, f"ff-{precision}.sh")
    with open(wrapper, "w") as f:
        f.write(f'#!/bin/sh\nexec "{a.fivefold}" "$@" --precision {precision}\n')
    os.chmod(wrapper, 0o755)
    b = argparse.Namespace(**vars(a))
    b.fivefold = wrapper
    return fivefold_round(b, workdir)


def variant_round(a, workdir, name, args):
    """A bf16 run with more train arguments and environment (--variant)."""
    words = args.split()
    env = [w for w in words if "=" in w and not w.startswith("-")]
    rest = [w for w in words if w not in env]
    vdir = os.path.join(workdir, "variant-" + "".join(c if c.isalnum() else "_" for c in name))
    os.makedirs(vdir, exist_ok=True)
    wrapper = os.path.join(vdir, "ff.sh")
    with open(wrapper, "w") as f:
        f.write(f'#!/bin/sh\nexec env {" ".join(env)} "{a.fivefold}" "$@" {" ".join(rest)}\n')
    os.chmod(wrapper, 0o755)
    b = argparse.Namespace(**vars(a))
    b.fivefold = wrapper
    return fivefold_precision_round(b, vdir, "bf16")


def torch_round(a, tokens_file, extra_args):
    env = peer_env()
    cmd = [a.peer_python, os.path.join(ROOT, "bench/torch_llama_bench.py"), "--json", *extra_args.split(),
           "--steps", str(a.steps), "--warmup", str(a.warmup), "--threads", str(a.threads), "--tokens", tokens_file]
    out, rss = run_measured(cmd, env)
    return {"tokens_per_s": json.loads(out.strip().splitlines()[-1])["tokens_per_s"], "rss_mb": rss}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fivefold", default=os.path.join(ROOT, "build/fivefold"))
    ap.add_argument("--data", default=os.path.join(ROOT, "data/kjv"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--baseline", default=None)
    ap.add_argument("--baseline-name", default="baseline")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=ARGS",
                    help="a bf16 run with more train arguments (leading VAR=VALUE words: its environment)")
    ap.add_argument("--no-peer", action="store_true",
                    help="leave PyTorch out (where bf16 is emulated its autocast crawls: minutes per step)")
    ap.add_argument("--peer-python", default="/usr/bin/python3",
                    help="the Python whose torch is the peer (Debian's 1.13 by default)")
    ap.add_argument("--peer", action="append", default=None, metavar="LABEL=ARGS",
                    help="a PyTorch run per round: its label and torch_llama_bench.py's arguments "
                         "(repeatable; default 'PyTorch bf16 autocast=--autocast-bf16'). On torch 2.x: "
                         "'PyTorch bf16 SDPA fused=--autocast-bf16 --sdpa --adamw fused'")
    a = ap.parse_args()
    a.batch, a.seq = 8, 256
    peers = [] if a.no_peer else [p.split("=", 1) for p in (a.peer or ["PyTorch bf16 autocast=--autocast-bf16"])]
    runs = {"fivefold fp32": [], "fivefold bf16": []} | {label: [] for label, _ in peers}
    base_key = f"fivefold bf16, {a.baseline_name}"
    if a.baseline:
        runs[base_key] = []
    variants = [v.split("=", 1) for v in a.variant]
    for name, _ in variants:
        runs[f"fivefold bf16, {name}"] = []
    ensure_kjv(a.fivefold, a.data)
    with tempfile.TemporaryDirectory() as workdir:
        tokens_file = os.path.join(workdir, "train.i32")
        os.makedirs(os.path.join(workdir, "base"))
        shard_to_int32(first_train_shard(a.data), tokens_file)
        for r in range(a.rounds):
            runs["fivefold fp32"].append(fivefold_precision_round(a, workdir, "fp32"))
            runs["fivefold bf16"].append(fivefold_precision_round(a, workdir, "bf16"))
            for label, extra_args in peers:
                runs[label].append(torch_round(a, tokens_file, extra_args))
            if a.baseline:
                b = argparse.Namespace(**vars(a))
                b.fivefold = a.baseline
                runs[base_key].append(fivefold_precision_round(b, os.path.join(workdir, "base"), "bf16"))
            for name, args in variants:
                runs[f"fivefold bf16, {name}"].append(variant_round(a, workdir, name, args))
            print("round %d: " % (r + 1) + ", ".join(
                f"{k} {v[-1]['tokens_per_s']:.0f}" + (f" (loss {v[-1]['loss_last']:.4f})" if "loss_last" in v[-1] else "")
                for k, v in runs.items()),
                  file=sys.stderr, flush=True)
    med = {k: statistics.median(x["tokens_per_s"] for x in v) for k, v in runs.items()}
    bf16 = med["fivefold bf16"]
    print(f"| run | tokens/s (median of {a.rounds} alternating rounds) | per round | fivefold bf16 / this | peak RSS |")
    print("|---|---|---|---|---|")
    for k, v in runs.items():
        rounds = ", ".join("%.0f" % x["tokens_per_s"] for x in v)
        print(f"| {k} | {med[k]:.0f} | {rounds} | {bf16 / med[k]:.2f}x | {max(x['rss_mb'] for x in v):.0f} MiB |")


if __name__ == "__main__":
    main()
