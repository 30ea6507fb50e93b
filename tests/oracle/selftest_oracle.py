#!/usr/bin/python3
"""Self-test of check_against_torch.py, no C++ needed.

Usage: /usr/bin/python3 tests/oracle/selftest_oracle.py [--keep DIR]

An oracle that never fails proves nothing, so this writes dumps in the C++ format from the
oracle's own float64 model and shows that the checker
  - passes a faithful dump (untied and tied heads; shuffled, padded offsets),
  - fails when one gradient element moves by 1% of its tensor's norm, when the logits move,
    and when the loss moves,
  - rejects malformed dumps with exit status 2,
and that the reference model is causal and maps query head h to kv head h // (H/Hkv).
Exit status 0 when every expectation holds.
"""

import argparse
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_against_torch as oracle  # noqa: E402

# Through the checker's own parsing, so the optional keys (head_dim, qkv_bias, rope_scaling) get
# the values a dump without them has.
TINY = oracle.parse_config({"vocab_size": 64, "dim": 32, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2,
                            "ffn_dim": 48, "seq_len": 16, "rms_eps": 1e-5, "rope_theta": 10000.0,
                            "tied_embeddings": False})
B, T = 2, 16


def random_params(cfg, gen):
    """float32-representable params. Norm weights sit near 1 (not exactly 1) so a wrong
    broadcast of the norm weight would show; matrices use std 0.3 so the logits are far from
    uniform and every gradient is well scaled."""
    out = {}
    for name, shape in oracle.expected_shapes(cfg).items():
        if len(shape) == 1:
            t = 1.0 + 0.1 * torch.randn(shape, generator=gen)
        else:
            t = 0.3 * torch.randn(shape, generator=gen)
        # Round through float32 so the dump holds exactly the values the reference uses.
        out[name] = t.float().double()
    return out


def write_dump(dirpath, cfg, params, gen):
    """Write a dump as the C++ test would: reference results rounded to float32."""
    V = cfg["vocab_size"]
    inputs = torch.randint(0, V, (B, T), generator=gen)
    targets = torch.randint(0, V, (B, T), generator=gen)
    leaves = {n: t.clone().requires_grad_(True) for n, t in params.items()}
    logits, loss, grads = oracle.reference(leaves, inputs, targets, cfg)

    # Shuffled order with a gap before each tensor: the checker must use the offsets, not
    # assume the manifest order is the memory order or that views are packed.
    names = list(params)
    order = [names[i] for i in torch.randperm(len(names), generator=gen).tolist()]
    entries, cursor = [], 0
    for n in order:
        cursor += 3
        entries.append({"name": n, "shape": list(params[n].shape), "offset": cursor})
        cursor += params[n].numel()
    flat_p = np.full(cursor, 7.0, dtype="<f4")   # padding holds junk that must be ignored
    flat_g = np.full(cursor, 7.0, dtype="<f4")
    for e in entries:
        o, k = e["offset"], params[e["name"]].numel()
        flat_p[o:o + k] = params[e["name"]].reshape(-1).numpy()
        flat_g[o:o + k] = grads[e["name"]].reshape(-1).numpy()

    os.makedirs(dirpath, exist_ok=True)
    manifest = {"config": cfg, "batch": {"B": B, "T": T}, "loss": loss.item(), "params": entries}
    with open(os.path.join(dirpath, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    flat_p.tofile(os.path.join(dirpath, "params.bin"))
    flat_g.tofile(os.path.join(dirpath, "grads.bin"))
    inputs.numpy().astype("<i4").tofile(os.path.join(dirpath, "inputs.bin"))
    targets.numpy().astype("<i4").tofile(os.path.join(dirpath, "targets.bin"))
    logits.numpy().astype("<f4").tofile(os.path.join(dirpath, "logits.bin"))
    return manifest


def run_checker(dirpath):
    """Run the checker in-process (importing torch per case would blow the time budget)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        code = oracle.main([dirpath])
    return code, buf.getvalue()


def copy_case(src, dst):
    shutil.copytree(src, dst)
    return dst


def perturb_file(path, offset, delta):
    a = np.fromfile(path, dtype="<f4")
    a[offset] += delta
    a.tofile(path)


class Results:
    def __init__(self):
        self.failures = 0

    def expect(self, what, got, want, detail=""):
        ok = got == want
        self.failures += not ok
        print(f"{'ok  ' if ok else 'BAD '} {what}: exit {got} (want {want})")
        # The checker's own last line (its summary or error) when fine; all of it when not.
        lines = detail.strip().splitlines()
        for line in (lines if not ok else lines[-1:]):
            print("       " + line)

    def truth(self, what, ok, detail=""):
        self.failures += not ok
        print(f"{'ok  ' if ok else 'BAD '} {what}{': ' + detail if detail else ''}")


def model_sanity(res, gen):
    """Properties the float64 model must have whatever the dump says."""
    cfg = TINY
    p = random_params(cfg, gen)
    x = torch.randint(0, cfg["vocab_size"], (1, T), generator=gen)
    y = x.clone()
    y[0, T // 2] = (y[0, T // 2] + 1) % cfg["vocab_size"]
    with torch.no_grad():
        lx, ly = oracle.forward(p, x, cfg), oracle.forward(p, y, cfg)
    prefix_same = torch.equal(lx[:, : T // 2], ly[:, : T // 2])
    suffix_moves = not torch.equal(lx[:, T // 2:], ly[:, T // 2:])
    res.truth("reference is causal (a token changes only its own and later logits)",
              prefix_same and suffix_moves)

    # GQA: expanding k/v weights so that query head h gets kv head h // n_rep, then running
    # with n_kv_heads = n_heads, must give the same logits as the grouped model.
    H, Hkv, D = cfg["n_heads"], cfg["n_kv_heads"], cfg["dim"] // cfg["n_heads"]
    full = dict(p)
    for i in range(cfg["n_layers"]):
        for w in ("k_proj", "v_proj"):
            name = f"model.layers.{i}.self_attn.{w}.weight"
            heads = p[name].view(Hkv, D, -1)
            full[name] = torch.cat([heads[h // (H // Hkv)] for h in range(H)], dim=0)
    cfg_full = dict(cfg, n_kv_heads=H)
    with torch.no_grad():
        diff = (oracle.forward(full, x, cfg_full) - lx).abs().max().item()
    res.truth("GQA: query head h reads kv head h // (H/Hkv)", diff < 1e-12, f"max diff {diff:.1e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep", help="write the cases here and keep them (default: temp dir)")
    args = ap.parse_args()
    torch.set_num_threads(1)   # tiny tensors: threading only adds overhead and noise
    gen = torch.Generator().manual_seed(1234)
    root = args.keep or tempfile.mkdtemp(prefix="oracle_selftest_")
    os.makedirs(root, exist_ok=True)
    res = Results()
    try:
        model_sanity(res, gen)

        clean = os.path.join(root, "clean")
        man = write_dump(clean, TINY, random_params(TINY, gen), gen)
        code, out = run_checker(clean)
        res.expect("faithful dump passes", code, 0, out)

        tied_cfg = dict(TINY, tied_embeddings=True)
        tied = os.path.join(root, "tied")
        write_dump(tied, tied_cfg, random_params(tied_cfg, gen), gen)
        code, out = run_checker(tied)
        res.expect("faithful tied-embedding dump passes", code, 0, out)

        # One element of one gradient moved by 1% of that tensor's norm: rel error 1e-2,
        # a hundred times the default tolerance. A kv projection in the last layer is chosen
        # because it is the gradient most sensitive to the GQA and RoPE conventions.
        target = f"model.layers.{TINY['n_layers'] - 1}.self_attn.k_proj.weight"
        entry = next(e for e in man["params"] if e["name"] == target)
        g = np.fromfile(os.path.join(clean, "grads.bin"), dtype="<f4")
        numel = int(np.prod(entry["shape"]))
        gnorm = float(np.linalg.norm(g[entry["offset"]:entry["offset"] + numel].astype(np.float64)))
        case = copy_case(clean, os.path.join(root, "bad_grad"))
        perturb_file(os.path.join(case, "grads.bin"), entry["offset"] + numel // 2, 0.01 * gnorm)
        code, out = run_checker(case)
        res.expect(f"1% kick to one element of grad {target} fails", code, 1, out)
        res.truth("  ...and the failure names that tensor", f"grad {target}" in out)

        lg = np.fromfile(os.path.join(clean, "logits.bin"), dtype="<f4")
        case = copy_case(clean, os.path.join(root, "bad_logits"))
        perturb_file(os.path.join(case, "logits.bin"), lg.size // 3,
                     0.01 * float(np.linalg.norm(lg.astype(np.float64))))
        code, out = run_checker(case)
        res.expect("1% kick to one logit fails", code, 1, out)

        case = copy_case(clean, os.path.join(root, "bad_loss"))
        with open(os.path.join(case, "manifest.json")) as f:
            m = json.load(f)
        m["loss"] *= 1.001
        with open(os.path.join(case, "manifest.json"), "w") as f:
            json.dump(m, f)
        code, out = run_checker(case)
        res.expect("loss off by 0.1% fails", code, 1, out)

        case = copy_case(clean, os.path.join(root, "nan_grad"))
        perturb_file(os.path.join(case, "grads.bin"), entry["offset"], float("nan"))
        code, out = run_checker(case)
        res.expect("NaN in a gradient fails", code, 1, out)

        case = copy_case(clean, os.path.join(root, "short_grads"))
        with open(os.path.join(case, "grads.bin"), "r+b") as f:
            f.truncate(os.path.getsize(os.path.join(case, "grads.bin")) - 4)
        code, out = run_checker(case)
        res.expect("truncated grads.bin is malformed", code, 2, out)

        case = copy_case(clean, os.path.join(root, "bad_shape"))
        with open(os.path.join(case, "manifest.json")) as f:
            m = json.load(f)
        m["params"][0]["shape"] = m["params"][0]["shape"][::-1] + [1]
        with open(os.path.join(case, "manifest.json"), "w") as f:
            json.dump(m, f)
        code, out = run_checker(case)
        res.expect("wrong shape in manifest is malformed", code, 2, out)

        # The real command line once, so exit statuses are proven end to end, not just main().
        proc = subprocess.run([sys.executable, oracle.__file__, os.path.join(root, "bad_grad")],
                              capture_output=True, text=True)
        res.expect("command line on the bad-gradient dump", proc.returncode, 1,
                   proc.stdout + proc.stderr)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)

    print(f"selftest {'PASSED' if res.failures == 0 else f'FAILED ({res.failures})'}")
    return 0 if res.failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
