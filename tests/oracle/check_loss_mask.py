#!/usr/bin/python3
"""Check one fivefold training step on loss-masked data against float64 PyTorch.

Usage: /usr/bin/python3 tests/oracle/check_loss_mask.py DIR [--tol 1e-5] [--as-if-every-token]

DIR is written by tests/train/loss_mask_oracle_dump.cpp: manifest.json (model config, batch shape,
the step's loss and gradient norm, the parameter list), params.bin (the weights the step started
from), inputs.bin and targets.bin (int32; a target of -1 is masked out of the loss). The reference
is the independent LLaMA of check_against_torch.py with the loss written as Hugging Face computes
it for completion-only fine-tuning: cross-entropy with ignore_index=-1, averaged over the targets
that are not -1; its gradient norm is the L2 norm of every parameter's gradient.

The check also demands that the mask matters here: enough targets are -1 that dividing by the
number of tokens instead of the number of loss targets would be far outside the tolerance.
Exit status: 0 pass, 1 a number differs, 2 the dump is malformed.
"""

import argparse
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_against_torch import expected_shapes, forward, parse_config  # noqa: E402

EXIT_PASS, EXIT_FAIL, EXIT_MALFORMED = 0, 1, 2


def load(dirpath):
    with open(os.path.join(dirpath, "manifest.json")) as f:
        man = json.load(f)
    cfg = parse_config(man["config"])
    B, T = man["batch"]["B"], man["batch"]["T"]
    shapes = expected_shapes(cfg)
    flat = np.fromfile(os.path.join(dirpath, "params.bin"), dtype="<f4")
    params = {}
    for e in man["params"]:
        name, off = e["name"], e["offset"]
        if name not in shapes or tuple(e["shape"]) != shapes[name]:
            raise ValueError(f"unexpected parameter {name} {e['shape']}")
        n = math.prod(shapes[name])
        params[name] = torch.from_numpy(flat[off:off + n].astype(np.float64)).view(shapes[name])
    if set(params) != set(shapes):
        raise ValueError(f"parameters missing: {sorted(set(shapes) - set(params))}")
    ids = {}
    for what in ("inputs", "targets"):
        a = np.fromfile(os.path.join(dirpath, what + ".bin"), dtype="<i4")
        if a.size != B * T:
            raise ValueError(f"{what}.bin holds {a.size} ids, expected {B * T}")
        ids[what] = torch.from_numpy(a.astype(np.int64)).view(B, T)
    return cfg, man, params, ids["inputs"], ids["targets"]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--tol", type=float, default=1e-5)
    # The selftest: our numbers as a trainer dividing by every token would report them (the same
    # sums over kept / numel). The check must then fail.
    ap.add_argument("--as-if-every-token", action="store_true")
    args = ap.parse_args(argv)
    try:
        cfg, man, params, inputs, targets = load(args.dir)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"malformed dump: {e}")
        return EXIT_MALFORMED

    leaves = {n: t.clone().requires_grad_(True) for n, t in params.items()}
    logits = forward(leaves, inputs, cfg).reshape(-1, cfg["vocab_size"])
    flat_targets = targets.reshape(-1)
    loss = F.cross_entropy(logits, flat_targets, ignore_index=-1, reduction="mean")
    grads = torch.autograd.grad(loss, list(leaves.values()))
    norm = math.sqrt(sum(float((g * g).sum()) for g in grads))
    kept = int((flat_targets != -1).sum())
    share = kept / flat_targets.numel()
    wrong = share if args.as_if_every_token else 1.0

    rows = [("loss", man["loss"] * wrong, loss.item()), ("grad_norm", man["grad_norm"] * wrong, norm),
            ("loss_targets", man["loss_targets"], kept)]
    failed = False
    for name, ours, ref in rows:
        rel = abs(ours - ref) / abs(ref)
        bad = not rel <= args.tol
        failed |= bad
        print(f"{'FAIL' if bad else 'ok':4} {name:12} ours {ours:.10g} reference {ref:.10g} rel {rel:.2e}")
    # Dividing the same sum by every token instead of the loss targets scales the loss (and the
    # gradient) by kept / numel: the batch must make that far larger than the tolerance.
    exercised = 0 < kept and share < 1 - 100 * args.tol
    print(f"{'ok' if exercised else 'FAIL':4} the batch has {kept} loss targets of {flat_targets.numel()} tokens")
    failed |= not exercised
    print("FAIL" if failed else "PASS")
    return EXIT_FAIL if failed else EXIT_PASS


if __name__ == "__main__":
    sys.exit(main())
