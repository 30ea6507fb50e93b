#!/usr/bin/python3
"""Check a fivefold serial-model dump against an independent float64 PyTorch LLaMA.

Usage: /usr/bin/python3 tests/oracle/check_against_torch.py DIR [--tol 1e-4] [--verbose]

DIR holds manifest.json, params.bin, grads.bin, inputs.bin, targets.bin, logits.bin, written by
the C++ dump test. The reference model below mirrors Hugging Face LlamaForCausalLM operation by
operation, but is written from the architecture description, not copied, because `transformers`
is not installed here. It runs in float64 so that its own rounding (~1e-16) is far below the
float32 error we are measuring (~1e-6), i.e. any mismatch is ours.

Exit status: 0 all tensors within tolerance, 1 some tensor is not, 2 the dump is malformed.
The model functions are importable (selftest_oracle.py builds dumps with them).
"""

import argparse
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

EXIT_PASS, EXIT_FAIL, EXIT_MALFORMED = 0, 1, 2

CONFIG_KEYS = ("vocab_size", "dim", "n_layers", "n_heads", "n_kv_heads", "ffn_dim", "seq_len",
               "rms_eps", "rope_theta", "tied_embeddings")
# Optional keys, absent from a Llama-2-shaped dump: head_dim (HF head_dim, else dim / n_heads),
# qkv_bias (Qwen2's bias on q, k and v) and rope_scaling (HF's dict: rope_type linear | llama3,
# factor, low_freq_factor, high_freq_factor, original_max_position_embeddings).
ROPE_TYPES = ("linear", "llama3")


class MalformedDump(Exception):
    """The dump does not describe a model we can rebuild; reported with exit status 2."""


# ----------------------------------------------------------------------------------------------
# Reference model (float64, functional over a name -> tensor dict, names as in HF)
# ----------------------------------------------------------------------------------------------

def expected_shapes(cfg):
    """Ordered {HF name: shape}. The checker demands the manifest lists exactly these, so a
    missing or misshapen tensor is a malformed dump rather than a silent partial check."""
    V, C, F_, L = cfg["vocab_size"], cfg["dim"], cfg["ffn_dim"], cfg["n_layers"]
    H, Hkv = cfg["n_heads"], cfg["n_kv_heads"]
    D = cfg["head_dim"]
    shapes = {"model.embed_tokens.weight": (V, C)}
    for i in range(L):
        p = f"model.layers.{i}."
        shapes[p + "input_layernorm.weight"] = (C,)
        shapes[p + "self_attn.q_proj.weight"] = (H * D, C)
        shapes[p + "self_attn.k_proj.weight"] = (Hkv * D, C)
        shapes[p + "self_attn.v_proj.weight"] = (Hkv * D, C)
        if cfg["qkv_bias"]:
            shapes[p + "self_attn.q_proj.bias"] = (H * D,)
            shapes[p + "self_attn.k_proj.bias"] = (Hkv * D,)
            shapes[p + "self_attn.v_proj.bias"] = (Hkv * D,)
        shapes[p + "self_attn.o_proj.weight"] = (C, H * D)
        shapes[p + "post_attention_layernorm.weight"] = (C,)
        shapes[p + "mlp.gate_proj.weight"] = (F_, C)
        shapes[p + "mlp.up_proj.weight"] = (F_, C)
        shapes[p + "mlp.down_proj.weight"] = (C, F_)
    shapes["model.norm.weight"] = (C,)
    if not cfg["tied_embeddings"]:
        shapes["lm_head.weight"] = (V, C)
    return shapes


def rms_norm(x, w, eps):
    # HF LlamaRMSNorm: normalise by the root mean square (no mean subtraction), eps inside the
    # rsqrt, weight applied after normalisation. HF upcasts to float32; we are already float64.
    variance = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(variance + eps))


def scaled_inv_freq(inv_freq, scaling):
    """HF's rope_scaling applied to the plain frequencies. linear: position interpolation, every
    position divided by factor (the same angles as every frequency divided by it). llama3 (Llama
    3.1's published rule): a wavelength 2 pi / f shorter than original / high_freq_factor is kept,
    one longer than original / low_freq_factor is divided by factor, and in between the frequency
    is interpolated by smooth = (original / wavelength - low) / (high - low)."""
    if scaling is None:
        return inv_freq
    factor = scaling["factor"]
    if scaling["rope_type"] == "linear":
        return inv_freq / factor
    low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
    original = scaling["original_max_position_embeddings"]
    out = []
    for f in inv_freq.tolist():
        wavelength = 2 * math.pi / f
        if wavelength < original / high:
            out.append(f)
        elif wavelength > original / low:
            out.append(f / factor)
        else:
            smooth = (original / wavelength - low) / (high - low)
            out.append((1 - smooth) * f / factor + smooth * f)
    return torch.tensor(out, dtype=torch.float64)


def rope_cos_sin(T, D, theta, dtype, scaling=None):
    # HF rotary embedding: frequencies for the first half of the head dim, duplicated with cat
    # (not interleaved), so dimension j pairs with j + D/2 — the "rotate-half" convention.
    inv_freq = 1.0 / (theta ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
    inv_freq = scaled_inv_freq(inv_freq, scaling)
    pos = torch.arange(T, dtype=torch.float64)
    freqs = torch.outer(pos, inv_freq)                      # (T, D/2)
    emb = torch.cat((freqs, freqs), dim=-1)                 # (T, D)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def attention(x, p, prefix, cfg, cos, sin):
    B, T, C = x.shape
    H, Hkv = cfg["n_heads"], cfg["n_kv_heads"]
    D = cfg["head_dim"]

    def bias(name):  # Qwen2: nn.Linear(bias=True) on q, k and v only
        return p[prefix + name + ".bias"] if cfg["qkv_bias"] else None

    q = F.linear(x, p[prefix + "q_proj.weight"], bias("q_proj")).view(B, T, H, D).transpose(1, 2)
    k = F.linear(x, p[prefix + "k_proj.weight"], bias("k_proj")).view(B, T, Hkv, D).transpose(1, 2)
    v = F.linear(x, p[prefix + "v_proj.weight"], bias("v_proj")).view(B, T, Hkv, D).transpose(1, 2)
    q = q * cos + rotate_half(q) * sin
    k = k * cos + rotate_half(k) * sin
    # Grouped-query attention as HF repeat_kv: each kv head is repeated for n_rep consecutive
    # query heads, so query head h reads kv head h // n_rep (not h % Hkv).
    n_rep = H // Hkv
    k = k[:, :, None].expand(B, Hkv, n_rep, T, D).reshape(B, H, T, D)
    v = v[:, :, None].expand(B, Hkv, n_rep, T, D).reshape(B, H, T, D)
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(D)                                 # (B,H,T,T)
    future = torch.ones(T, T, dtype=torch.bool).triu(1)
    scores = scores.masked_fill(future, float("-inf"))
    y = F.softmax(scores, dim=-1) @ v                                                 # (B,H,T,D)
    y = y.transpose(1, 2).reshape(B, T, H * D)
    return F.linear(y, p[prefix + "o_proj.weight"])


def forward(p, inputs, cfg):
    """Logits (B, T, V) of HF LlamaForCausalLM for int64 inputs (B, T), params p by HF name."""
    B, T = inputs.shape
    C, H, eps = cfg["dim"], cfg["n_heads"], cfg["rms_eps"]
    emb = p["model.embed_tokens.weight"]
    cos, sin = rope_cos_sin(T, cfg["head_dim"], cfg["rope_theta"], emb.dtype, cfg["rope_scaling"])
    x = F.embedding(inputs, emb)                                                      # (B,T,C)
    for i in range(cfg["n_layers"]):
        pre = f"model.layers.{i}."
        h = rms_norm(x, p[pre + "input_layernorm.weight"], eps)
        x = x + attention(h, p, pre + "self_attn.", cfg, cos, sin)
        h = rms_norm(x, p[pre + "post_attention_layernorm.weight"], eps)
        gate = F.linear(h, p[pre + "mlp.gate_proj.weight"])                          # (B,T,F)
        up = F.linear(h, p[pre + "mlp.up_proj.weight"])                              # (B,T,F)
        x = x + F.linear(F.silu(gate) * up, p[pre + "mlp.down_proj.weight"])
    x = rms_norm(x, p["model.norm.weight"], eps)
    # Tied: the head reuses the embedding tensor itself, so autograd sums both gradient paths
    # into model.embed_tokens.weight, which is what a tied engine must report.
    head = emb if cfg["tied_embeddings"] else p["lm_head.weight"]
    return F.linear(x, head)                                                          # (B,T,V)


def loss_fn(logits, targets):
    V = logits.shape[-1]
    return F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1), reduction="mean")


def reference(params64, inputs, targets, cfg):
    """(logits, loss, {name: grad}) in float64; params64 are leaves with requires_grad."""
    logits = forward(params64, inputs, cfg)
    loss = loss_fn(logits, targets)
    names = list(params64)
    grads = torch.autograd.grad(loss, [params64[n] for n in names])
    return logits.detach(), loss.detach(), dict(zip(names, grads))


# ----------------------------------------------------------------------------------------------
# Dump loading and validation: every problem here is MalformedDump (exit 2), never a crash
# ----------------------------------------------------------------------------------------------

def _int_field(d, key, where, minimum=1):
    v = d.get(key)
    # bool is an int subclass in Python; true/false for a size is a malformed manifest.
    if not isinstance(v, int) or isinstance(v, bool) or v < minimum:
        raise MalformedDump(f"{where}.{key} must be an integer >= {minimum}, got {v!r}")
    return v


def _rope_scaling(raw):
    if raw is None:
        return None
    if not isinstance(raw, dict) or raw.get("rope_type") not in ROPE_TYPES:
        raise MalformedDump(f"config.rope_scaling must be an object with rope_type in {ROPE_TYPES}, "
                            f"got {raw!r}")
    keys = ["factor"]
    if raw["rope_type"] == "llama3":
        keys += ["low_freq_factor", "high_freq_factor", "original_max_position_embeddings"]
    out = {"rope_type": raw["rope_type"]}
    for k in keys:
        v = raw.get(k)
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not v > 0:
            raise MalformedDump(f"config.rope_scaling.{k} must be a positive number, got {v!r}")
        out[k] = float(v)
    return out


def parse_config(raw):
    if not isinstance(raw, dict):
        raise MalformedDump("manifest.config must be an object")
    missing = [k for k in CONFIG_KEYS if k not in raw]
    if missing:
        raise MalformedDump(f"manifest.config lacks {', '.join(missing)}")
    cfg = {k: _int_field(raw, k, "config") for k in
           ("vocab_size", "dim", "n_layers", "n_heads", "n_kv_heads", "ffn_dim", "seq_len")}
    for k in ("rms_eps", "rope_theta"):
        v = raw[k]
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not v > 0:
            raise MalformedDump(f"config.{k} must be a positive number, got {v!r}")
        cfg[k] = float(v)
    if not isinstance(raw["tied_embeddings"], bool):
        raise MalformedDump(f"config.tied_embeddings must be true/false, "
                            f"got {raw['tied_embeddings']!r}")
    cfg["tied_embeddings"] = raw["tied_embeddings"]
    if "head_dim" in raw:
        cfg["head_dim"] = _int_field(raw, "head_dim", "config")
    elif cfg["dim"] % cfg["n_heads"]:
        raise MalformedDump(f"dim {cfg['dim']} is not divisible by n_heads {cfg['n_heads']}")
    else:
        cfg["head_dim"] = cfg["dim"] // cfg["n_heads"]
    if cfg["head_dim"] % 2:
        raise MalformedDump(f"head dim {cfg['head_dim']} must be even for RoPE")
    cfg["qkv_bias"] = raw.get("qkv_bias", False)
    if not isinstance(cfg["qkv_bias"], bool):
        raise MalformedDump(f"config.qkv_bias must be true/false, got {cfg['qkv_bias']!r}")
    cfg["rope_scaling"] = _rope_scaling(raw.get("rope_scaling"))
    if cfg["n_heads"] % cfg["n_kv_heads"]:
        raise MalformedDump(f"n_heads {cfg['n_heads']} is not a multiple of "
                            f"n_kv_heads {cfg['n_kv_heads']}")
    return cfg


def _read(dirpath, fname, dtype, count, what):
    path = os.path.join(dirpath, fname)
    if not os.path.isfile(path):
        raise MalformedDump(f"{path} is missing")
    size = os.path.getsize(path)
    itemsize = np.dtype(dtype).itemsize
    if count is None:
        if size % itemsize:
            raise MalformedDump(f"{path}: {size} bytes is not a whole number of {itemsize}-byte "
                                f"elements")
        count = size // itemsize
    elif size != count * itemsize:
        raise MalformedDump(f"{path}: {size} bytes, expected {count * itemsize} "
                            f"({what} = {count} elements of {itemsize} bytes)")
    # Explicit little-endian dtypes: the format is LE regardless of the host.
    return np.fromfile(path, dtype=dtype, count=count)


def load_dump(dirpath):
    """Validate the dump against its manifest and return plain float64/int64 torch tensors."""
    mpath = os.path.join(dirpath, "manifest.json")
    if not os.path.isfile(mpath):
        raise MalformedDump(f"{mpath} is missing")
    try:
        with open(mpath) as f:
            man = json.load(f)
    except (OSError, ValueError) as e:
        raise MalformedDump(f"{mpath}: not valid JSON ({e})")
    if not isinstance(man, dict):
        raise MalformedDump("manifest must be a JSON object")
    for k in ("config", "batch", "loss", "params"):
        if k not in man:
            raise MalformedDump(f"manifest lacks '{k}'")
    cfg = parse_config(man["config"])
    if not isinstance(man["batch"], dict):
        raise MalformedDump("manifest.batch must be an object")
    B = _int_field(man["batch"], "B", "batch")
    T = _int_field(man["batch"], "T", "batch")
    if T > cfg["seq_len"]:
        raise MalformedDump(f"batch.T {T} exceeds config.seq_len {cfg['seq_len']}")
    loss = man["loss"]
    if not isinstance(loss, (int, float)) or isinstance(loss, bool):
        raise MalformedDump(f"manifest.loss must be a number, got {loss!r}")

    want = expected_shapes(cfg)
    entries = man["params"]
    if not isinstance(entries, list):
        raise MalformedDump("manifest.params must be a list")
    layout = {}
    for j, e in enumerate(entries):
        if not isinstance(e, dict) or not {"name", "shape", "offset"} <= set(e):
            raise MalformedDump(f"manifest.params[{j}] needs name, shape and offset")
        name, shape = e["name"], e["shape"]
        if name in layout:
            raise MalformedDump(f"parameter {name} listed twice")
        if name not in want:
            hint = " (tied_embeddings is true)" if name == "lm_head.weight" else ""
            raise MalformedDump(f"unexpected parameter {name!r}{hint}")
        if (not isinstance(shape, list) or tuple(shape) != want[name]):
            raise MalformedDump(f"{name}: shape {shape}, expected {list(want[name])}")
        off = _int_field(e, "offset", f"params[{j}]", minimum=0)
        layout[name] = (off, math.prod(shape))
    absent = [n for n in want if n not in layout]
    if absent:
        more = f" (+{len(absent) - 3} more)" if len(absent) > 3 else ""
        raise MalformedDump(f"manifest lacks parameters {', '.join(absent[:3])}{more}")
    # Offsets may leave gaps (padding for sharding) but views must not overlap.
    spans = sorted((off, off + n, name) for name, (off, n) in layout.items())
    for (a0, a1, an), (b0, b1, bn) in zip(spans, spans[1:]):
        if b0 < a1:
            raise MalformedDump(f"{an} [{a0}, {a1}) overlaps {bn} [{b0}, {b1})")
    need = spans[-1][1]

    flat_p = _read(dirpath, "params.bin", "<f4", None, "params")
    if flat_p.size < need:
        raise MalformedDump(f"params.bin has {flat_p.size} floats, the manifest needs {need}")
    # Same layout means same length: a shorter grads.bin is a truncated write.
    flat_g = _read(dirpath, "grads.bin", "<f4", flat_p.size, "same length as params.bin")
    inputs = _read(dirpath, "inputs.bin", "<i4", B * T, "B*T")
    targets = _read(dirpath, "targets.bin", "<i4", B * T, "B*T")
    logits = _read(dirpath, "logits.bin", "<f4", B * T * cfg["vocab_size"], "B*T*V")
    V = cfg["vocab_size"]
    for what, ids in (("inputs", inputs), ("targets", targets)):
        bad = (ids < 0) | (ids >= V)
        if bad.any():
            j = int(np.argmax(bad))
            raise MalformedDump(f"{what}.bin[{j}] = {int(ids[j])} is outside [0, {V})")
    if not np.isfinite(flat_p).all():
        raise MalformedDump("params.bin holds NaN or Inf; the reference cannot be built")

    def views(flat):
        return {n: torch.from_numpy(flat[o:o + k].astype(np.float64)).view(want[n])
                for n, (o, k) in layout.items()}

    return {
        "cfg": cfg, "B": B, "T": T, "loss": float(loss),
        "params": views(flat_p), "grads": views(flat_g),
        "inputs": torch.from_numpy(inputs.astype(np.int64)).view(B, T),
        "targets": torch.from_numpy(targets.astype(np.int64)).view(B, T),
        "logits": torch.from_numpy(logits.astype(np.float64)).view(B, T, V),
        "order": list(want),
    }


# ----------------------------------------------------------------------------------------------
# Comparison
# ----------------------------------------------------------------------------------------------

def compare(ours, ref):
    """(relative L2 error, max abs diff). NaN/Inf in ours makes both inf so it always fails."""
    if not torch.isfinite(ours).all():
        return math.inf, math.inf
    diff = ours - ref
    ref_norm = ref.norm().item()
    # A reference that is exactly zero (e.g. a gradient nothing reaches) has no scale; then the
    # absolute norm of our error is the only meaningful number.
    rel = diff.norm().item() / ref_norm if ref_norm > 0 else diff.norm().item()
    return rel, diff.abs().max().item()


def check(dump, tol, verbose=False, out=None):
    """Print failures (or every tensor if verbose) and a summary; return the exit status."""
    out = out or sys.stdout   # looked up per call so that redirect_stdout (selftest) works
    cfg = dump["cfg"]
    leaves = {n: t.clone().requires_grad_(True) for n, t in dump["params"].items()}
    ref_logits, ref_loss, ref_grads = reference(leaves, dump["inputs"], dump["targets"], cfg)

    rows = [("logits",) + compare(dump["logits"], ref_logits)]
    loss_ours = torch.tensor(dump["loss"], dtype=torch.float64)
    rows.append(("loss",) + compare(loss_ours.view(1), ref_loss.view(1)))
    for name in dump["order"]:
        rows.append(("grad " + name,) + compare(dump["grads"][name], ref_grads[name]))

    # `not rel <= tol` rather than `rel > tol` so that a NaN metric counts as a failure.
    failed = [r for r in rows if not r[1] <= tol]
    width = max(len(r[0]) for r in rows)
    for name, rel, mx in (rows if verbose else failed):
        mark = "FAIL" if not rel <= tol else "ok"
        print(f"{mark:4} {name:<{width}}  rel {rel:.3e}  max_abs {mx:.3e}", file=out)
    worst = max(rows, key=lambda r: r[1] if not math.isnan(r[1]) else math.inf)
    status = "FAIL" if failed else "PASS"
    print(f"{status}: {len(rows) - len(failed)}/{len(rows)} tensors within rel tol {tol:g} "
          f"(loss ours {dump['loss']:.6f} ref {ref_loss.item():.6f}; worst {worst[0]} "
          f"rel {worst[1]:.3e})", file=out)
    return EXIT_FAIL if failed else EXIT_PASS


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", help="dump directory written by the C++ test")
    ap.add_argument("--tol", type=float, default=1e-4,
                    help="max relative L2 error ||ours-ref||/||ref|| per tensor (default 1e-4)")
    ap.add_argument("--verbose", action="store_true", help="print every tensor, not only failures")
    args = ap.parse_args(argv)
    try:
        dump = load_dump(args.dir)
    except MalformedDump as e:
        print(f"malformed dump: {e}", file=sys.stderr)
        return EXIT_MALFORMED
    return check(dump, args.tol, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
