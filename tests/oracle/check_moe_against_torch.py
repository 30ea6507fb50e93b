#!/usr/bin/python3
"""Check a fivefold MoE model dump against an independent float64 PyTorch mixture of experts.

Usage: /usr/bin/python3 tests/oracle/check_moe_against_torch.py DIR... [--tol 1e-4] [--verbose]

DIR is what tests/model/moe_oracle_dump.cpp writes. The attention half of each block is the
dense oracle's (check_against_torch.py); the MoE block below is written from its definition
(Mixtral's routed experts, Qwen/DeepSeek's shared expert, Switch's aux loss, ST-MoE's z-loss,
GShard's capacity priority), vectorised over experts the way PyTorch code does it, and
differentiated by autograd, so it shares no code path with the C++ loops. Checked: logits, the
loss and its aux and z parts, the routed and dropped counts, and every parameter gradient.

Exit status: 0 all within tolerance, 1 something is not, 2 the dump is malformed.
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
from check_against_torch import MalformedDump, attention, compare, parse_config, rms_norm, rope_cos_sin  # noqa: E402
from check_against_torch import expected_shapes as dense_shapes  # noqa: E402


def expected_shapes(cfg, moe):
    """The dense oracle's tensors, with each MoE block's MLP in Mixtral's (and the shared
    expert's) names."""
    C, E, Fe, S = cfg["dim"], moe["n_experts"], moe["expert_ffn_dim"], moe["shared_experts"]
    shapes = {}
    for name, shape in dense_shapes(cfg).items():
        parts = name.split(".")
        if parts[1] != "layers" or int(parts[2]) not in moe["moe_layers"] or parts[3] != "mlp":
            shapes[name] = shape
            continue
        if parts[4] != "gate_proj":
            continue
        m = f"model.layers.{parts[2]}.block_sparse_moe."
        shapes[m + "gate.weight"] = (E, C)
        if S:
            shapes[m + "shared_expert.gate_proj.weight"] = (S * Fe, C)
            shapes[m + "shared_expert.up_proj.weight"] = (S * Fe, C)
            shapes[m + "shared_expert.down_proj.weight"] = (C, S * Fe)
        for e in range(E):
            shapes[m + f"experts.{e}.w1.weight"] = (Fe, C)
            shapes[m + f"experts.{e}.w3.weight"] = (Fe, C)
            shapes[m + f"experts.{e}.w2.weight"] = (C, Fe)
    return shapes


def swiglu(x, w_gate, w_up, w_down):
    return F.linear(F.silu(F.linear(x, w_gate)) * F.linear(x, w_up), w_down)


def moe_block(h, p, pre, moe, bias):
    """(output (B,T,C), aux, z, routed counts, dropped) of one MoE MLP on normed input h."""
    B, T, C = h.shape
    x = h.reshape(-1, C)
    N, E, k = x.shape[0], moe["n_experts"], moe["top_k"]
    m = pre + "block_sparse_moe."
    logits = F.linear(x, p[m + "gate.weight"])                                       # (N, E)
    scores = F.softmax(logits, -1) if moe["router"] == "softmax" else torch.sigmoid(logits)
    # The bias moves the choice, not the gates; a stable sort keeps the lower expert on ties.
    chosen = torch.sort(-(scores.detach() + bias), dim=-1, stable=True).indices[:, :k]  # (N, k)
    picked = scores.gather(1, chosen)
    gates = picked / picked.sum(-1, keepdim=True)
    keep = torch.ones(N, k, dtype=torch.bool)
    if moe["capacity_factor"] > 0:
        cap = math.ceil(moe["capacity_factor"] * N * k / E)
        taken = [0] * E
        for j in range(k):           # every token's first choice before any second choice
            for t in range(N):
                e = int(chosen[t, j])
                if taken[e] < cap:
                    taken[e] += 1
                else:
                    keep[t, j] = False
    out = torch.zeros_like(x)
    for e in range(E):
        tok, slot = ((chosen == e) & keep).nonzero(as_tuple=True)
        if tok.numel() == 0:
            continue
        ex = m + f"experts.{e}."
        y = swiglu(x[tok], p[ex + "w1.weight"], p[ex + "w3.weight"], p[ex + "w2.weight"])
        out = out.index_add(0, tok, gates[tok, slot].unsqueeze(-1) * y)
    if moe["shared_experts"]:
        s = m + "shared_expert."
        out = out + swiglu(x, p[s + "gate_proj.weight"], p[s + "up_proj.weight"], p[s + "down_proj.weight"])
    routed = F.one_hot(chosen, E).sum((0, 1)).to(torch.float64)                      # (E)
    f = routed / (N * k)
    probs = scores if moe["router"] == "softmax" else scores / scores.sum(-1, keepdim=True)
    aux = moe["aux_loss_coeff"] * E * (f * probs.mean(0)).sum()
    z = moe["z_loss_coeff"] * (torch.logsumexp(logits, -1) ** 2).mean()
    return out.view(B, T, C), aux, z, routed, int((~keep).sum())


def forward(p, inputs, cfg, moe):
    B, T = inputs.shape
    eps = cfg["rms_eps"]
    emb = p["model.embed_tokens.weight"]
    cos, sin = rope_cos_sin(T, cfg["head_dim"], cfg["rope_theta"], emb.dtype, cfg["rope_scaling"])
    x = F.embedding(inputs, emb)
    aux_terms, layers = [], []
    for i in range(cfg["n_layers"]):
        pre = f"model.layers.{i}."
        h = rms_norm(x, p[pre + "input_layernorm.weight"], eps)
        x = x + attention(h, p, pre + "self_attn.", cfg, cos, sin)
        h = rms_norm(x, p[pre + "post_attention_layernorm.weight"], eps)
        if i in moe["moe_layers"]:
            bias = torch.tensor(moe["router_bias"][i * moe["n_experts"]:(i + 1) * moe["n_experts"]],
                                dtype=torch.float64)
            y, aux, z, routed, dropped = moe_block(h, p, pre, moe, bias)
            x = x + y
            aux_terms += [aux, z]
            layers.append({"layer": i, "aux": aux.item(), "z": z.item(), "routed": routed.tolist(),
                           "dropped": dropped})
        else:
            x = x + swiglu(h, p[pre + "mlp.gate_proj.weight"], p[pre + "mlp.up_proj.weight"],
                           p[pre + "mlp.down_proj.weight"])
    x = rms_norm(x, p["model.norm.weight"], eps)
    head = emb if cfg["tied_embeddings"] else p["lm_head.weight"]
    return F.linear(x, head), sum(aux_terms), layers


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dumps", nargs="+", help="one or more dump folders (one process: torch loads once)")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    return max(check_dump(d, args) for d in args.dumps)


def check_dump(d, args):
    try:
        man = json.load(open(os.path.join(d, "manifest.json")))
        cfg, moe = parse_config(man["config"]), man["moe"]
        want = expected_shapes(cfg, moe)
        got = {e["name"]: (tuple(e["shape"]), e["offset"]) for e in man["params"]}
        if set(got) != set(want) or any(got[n][0] != want[n] for n in want):
            wrong = sorted(set(got) ^ set(want)) or [n for n in want if got[n][0] != want[n]]
            print(f"MALFORMED: the dump's tensors differ from the MoE layout: {wrong[:4]}")
            return 2
        flat_p = np.fromfile(os.path.join(d, "params.bin"), dtype="<f4")
        flat_g = np.fromfile(os.path.join(d, "grads.bin"), dtype="<f4")
        B, T = man["batch"]["B"], man["batch"]["T"]
        inputs = torch.from_numpy(np.fromfile(os.path.join(d, "inputs.bin"), dtype="<i4").astype(np.int64))
        targets = torch.from_numpy(np.fromfile(os.path.join(d, "targets.bin"), dtype="<i4").astype(np.int64))
        our_logits = torch.from_numpy(np.fromfile(os.path.join(d, "logits.bin"), dtype="<f4").astype(np.float64))
    except (OSError, KeyError, ValueError, MalformedDump) as e:
        print(f"MALFORMED: {e}")
        return 2

    def view(flat, name):
        off, shape = got[name][1], want[name]
        return torch.from_numpy(flat[off:off + math.prod(shape)].astype(np.float64)).view(shape)

    params = {n: view(flat_p, n).requires_grad_(True) for n in want}
    logits, aux_total, layers = forward(params, inputs.view(B, T), cfg, moe)
    # A target of -1 is masked out of the loss (completion-only fine-tuning): the mean is over the rest.
    ce = F.cross_entropy(logits.reshape(-1, cfg["vocab_size"]), targets, ignore_index=-1)
    loss = ce + aux_total
    grads = torch.autograd.grad(loss, list(params.values()))

    rows = [("logits", *compare(our_logits, logits.detach().reshape(-1)))]
    rows.append(("loss", abs(man["loss"] - loss.item()) / abs(loss.item()), abs(man["loss"] - loss.item())))
    rows.append(("ce_loss", abs(man["ce_loss"] - ce.item()) / abs(ce.item()), abs(man["ce_loss"] - ce.item())))
    for ours, ref in zip(man["layers"], layers):
        for key in ("aux", "z"):
            diff = abs(ours[key] - ref[key])
            rows.append((f"layer {ref['layer']} {key} loss", diff / max(abs(ref[key]), 1e-30), diff))
        # Routing is discrete: the counts must be equal, not close.
        same = ours["routed"] == ref["routed"] and ours["dropped"] == ref["dropped"] and ours["layer"] == ref["layer"]
        rows.append((f"layer {ref['layer']} routed {ref['routed']} dropped {ref['dropped']}",
                     0.0 if same else math.inf, 0.0))
    if len(man["layers"]) != len(layers):
        rows.append(("MoE layer count", math.inf, 0.0))
    for name, g in zip(want, grads):
        rows.append((name, *compare(view(flat_g, name), g)))
    failed = [r for r in rows if not r[1] <= args.tol]
    for name, rel, mx in rows:
        if args.verbose or not rel <= args.tol:
            print(f"{'FAIL' if not rel <= args.tol else 'ok':4} {name}: rel {rel:.3e} max abs {mx:.3e}")
    print(f"{'PASS' if not failed else 'FAIL'} {d}: {len(rows) - len(failed)}/{len(rows)} checks within rel tol "
          f"{args.tol:g} (loss {loss.item():.6f}, aux+z {float(aux_total):.6f})")
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
