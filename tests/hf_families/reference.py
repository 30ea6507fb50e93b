#!/usr/bin/python3
"""An independent float64 forward of the Hugging Face decoder families fivefold imports and
exports (Llama 2/3.x, TinyLlama, SmolLM2, Mistral without sliding windows, Qwen2/2.5), built from
a folder's config.json and safetensors alone, as `transformers` defines the models:

  embed -> [x + o(attn(rope(q), rope(k), v)) with x normed; x + down(silu(gate) * up) with x normed]
  -> final RMSNorm -> lm_head (or the embedding when tie_word_embeddings)

RMSNorm is x / sqrt(mean(x^2) + eps) * w; RoPE is the rotate-half form (the first and second half
of each head rotate together) with HF's inverse frequencies and angles, computed in float32 as
transformers does (default, "linear" and "llama3" rope_scaling), the rest in float64; head_dim may differ from hidden / heads;
grouped-query attention repeats each key/value head over its query heads; Qwen2 adds biases to
q, k and v. Nothing here comes from fivefold's code.

Checks (exit 0 pass, 1 mismatch, 2 malformed input; one summary line each):
  eval   HF_DIR SHARD LOGITS.npy LOSS   the windows of the shard (window w = tokens [wT, wT+T],
         inputs the first T, targets shifted by one; W and T from the .npy's shape) give the mean
         cross-entropy LOSS (relative 1e-5) and, at every position, the logits in the .npy
         (|diff| <= 1e-5 * max(1, max |logit|)); --dtype F32: every tensor stored so
  greedy HF_DIR IDS.json T EOS VOCAB    the continuation in IDS.json (fivefold sample --ids-out) is
         the greedy one from prefix + prompt: each step the argmax over the first VOCAB ids (the
         tokenizer's; a padded model vocabulary never emits the padding), context the last T ids,
         a stop only where the argmax is EOS
"""

import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch

EXIT_PASS, EXIT_FAIL, EXIT_MALFORMED = 0, 1, 2
TOL = 1e-5


class Malformed(Exception):
    pass


class Mismatch(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Reading a folder
# ---------------------------------------------------------------------------------------------

def _bf16_to_f64(raw):
    bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
    return bits.view(np.float32).astype(np.float64)


DECODE = {
    "F32": lambda raw: np.frombuffer(raw, dtype="<f4").astype(np.float64),
    "F16": lambda raw: np.frombuffer(raw, dtype="<f2").astype(np.float64),
    "BF16": _bf16_to_f64,
}
ITEM_BYTES = {"F32": 4, "F16": 2, "BF16": 2}


def read_safetensors(path, dtypes=None):
    """{name: float64 tensor} of one safetensors file (F32, F16, BF16); each name's dtype into
    `dtypes` when given."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise Malformed(f"{path}: shorter than its header length")
    (n,) = struct.unpack_from("<Q", blob, 0)
    header = json.loads(blob[8:8 + n])
    header.pop("__metadata__", None)
    data = blob[8 + n:]
    out = {}
    for name, t in header.items():
        begin, end = t["data_offsets"]
        if t["dtype"] not in DECODE:
            raise Malformed(f"{path}: {name} is {t['dtype']}; this reference reads F32, F16, BF16")
        if end - begin != math.prod(t["shape"]) * ITEM_BYTES[t["dtype"]] or end > len(data):
            raise Malformed(f"{path}: {name}'s data_offsets {t['data_offsets']} do not fit {t['dtype']}{t['shape']}")
        out[name] = torch.from_numpy(DECODE[t["dtype"]](data[begin:end]).reshape(t["shape"]).copy())
        if dtypes is not None:
            dtypes[name] = t["dtype"]
    return out


def read_weights(folder, dtypes=None):
    """Every tensor of the folder: through model.safetensors.index.json's weight_map when there
    is one (each shard read once, every name where the index says), else model.safetensors."""
    index = os.path.join(folder, "model.safetensors.index.json")
    if not os.path.exists(index):
        return read_safetensors(os.path.join(folder, "model.safetensors"), dtypes)
    with open(index) as f:
        weight_map = json.load(f)["weight_map"]
    shards = {file: read_safetensors(os.path.join(folder, file), dtypes) for file in sorted(set(weight_map.values()))}
    for file, tensors in shards.items():
        strays = [n for n in tensors if weight_map.get(n) != file]
        if strays:
            raise Malformed(f"{file} holds {strays} that the index does not place there")
    return {name: shards[file][name] for name, file in weight_map.items()}


class Config:
    """The fields of config.json the forward uses, with transformers' defaults."""

    def __init__(self, raw):
        kind = raw.get("model_type")
        if kind not in ("llama", "mistral", "qwen2"):
            raise Malformed(f"model_type {kind!r}: this reference implements llama, mistral, qwen2")
        self.kind = kind
        self.vocab = raw["vocab_size"]
        self.dim = raw["hidden_size"]
        self.layers = raw["num_hidden_layers"]
        self.heads = raw["num_attention_heads"]
        self.kv_heads = raw.get("num_key_value_heads") or self.heads
        self.ffn = raw["intermediate_size"]
        self.head_dim = raw.get("head_dim") or self.dim // self.heads
        self.eps = raw.get("rms_norm_eps", 1e-6)
        self.theta = raw.get("rope_theta", 10000.0)
        self.tied = raw.get("tie_word_embeddings", False)
        self.qkv_bias = kind == "qwen2"
        self.scaling = raw.get("rope_scaling")
        if raw.get("hidden_act", "silu") != "silu":
            raise Malformed(f"hidden_act {raw['hidden_act']!r}: the families use silu")
        if raw.get("attention_bias", False) or raw.get("mlp_bias", False):
            raise Malformed("attention_bias / mlp_bias: not part of these families")
        if kind == "qwen2" and raw.get("use_sliding_window", False):
            raise Malformed("use_sliding_window true: not implemented here")
        if kind == "mistral" and raw.get("sliding_window") not in (None, 0):
            if raw["sliding_window"] < raw.get("max_position_embeddings", 0):
                raise Malformed("sliding_window below the context: not implemented here")
        if self.scaling is not None:
            rope_type = self.scaling.get("rope_type", self.scaling.get("type"))
            if rope_type not in ("linear", "llama3", "default"):
                raise Malformed(f"rope_scaling rope_type {rope_type!r}: implemented are linear, llama3")
            self.rope_type = rope_type
        else:
            self.rope_type = "default"


def expected_shapes(c):
    q, kv = c.heads * c.head_dim, c.kv_heads * c.head_dim
    shapes = {"model.embed_tokens.weight": (c.vocab, c.dim), "model.norm.weight": (c.dim,)}
    if not c.tied:
        shapes["lm_head.weight"] = (c.vocab, c.dim)
    for l in range(c.layers):
        p = f"model.layers.{l}."
        shapes.update({p + "input_layernorm.weight": (c.dim,), p + "post_attention_layernorm.weight": (c.dim,),
                       p + "self_attn.q_proj.weight": (q, c.dim), p + "self_attn.k_proj.weight": (kv, c.dim),
                       p + "self_attn.v_proj.weight": (kv, c.dim), p + "self_attn.o_proj.weight": (c.dim, q),
                       p + "mlp.gate_proj.weight": (c.ffn, c.dim), p + "mlp.up_proj.weight": (c.ffn, c.dim),
                       p + "mlp.down_proj.weight": (c.dim, c.ffn)})
        if c.qkv_bias:
            shapes.update({p + "self_attn.q_proj.bias": (q,), p + "self_attn.k_proj.bias": (kv,),
                           p + "self_attn.v_proj.bias": (kv,)})
    return shapes


def load_model(folder, want_dtype=None):
    with open(os.path.join(folder, "config.json")) as f:
        c = Config(json.load(f))
    dtypes = {}
    w = read_weights(folder, dtypes)
    others = sorted(f"{n} {d}" for n, d in dtypes.items() if want_dtype and d != want_dtype)
    if others:
        raise Mismatch(f"{folder}: tensors not {want_dtype}: " + ", ".join(others[:4]))
    want = expected_shapes(c)
    # A tied checkpoint may still carry lm_head.weight; transformers ties it to the embedding.
    if c.tied and "lm_head.weight" in w:
        if not torch.equal(w["lm_head.weight"], w["model.embed_tokens.weight"]):
            raise Mismatch("tie_word_embeddings is true but lm_head.weight differs from the embedding")
        del w["lm_head.weight"]
    problems = [f"missing {n}" for n in want if n not in w] + [f"unexpected {n}" for n in w if n not in want]
    problems += [f"{n} is {list(w[n].shape)}, want {list(s)}" for n, s in want.items()
                 if n in w and tuple(w[n].shape) != s]
    if problems:
        raise Mismatch(f"{folder}: tensor set: " + "; ".join(problems))
    return c, w


# ---------------------------------------------------------------------------------------------
# The forward
# ---------------------------------------------------------------------------------------------

def inverse_frequencies(c):
    """transformers' ROPE_INIT_FUNCTIONS for default, linear and llama3, in its float32."""
    D = c.head_dim
    inv = 1.0 / (c.theta ** (torch.arange(0, D, 2, dtype=torch.int64).float() / D))
    if c.rope_type == "linear":
        inv = inv / c.scaling["factor"]
    elif c.rope_type == "llama3":
        factor, low, high = c.scaling["factor"], c.scaling["low_freq_factor"], c.scaling["high_freq_factor"]
        old_ctx = c.scaling["original_max_position_embeddings"]
        low_wavelen, high_wavelen = old_ctx / low, old_ctx / high
        wavelen = 2 * math.pi / inv
        scaled = torch.where(wavelen > low_wavelen, inv / factor, inv)
        smooth = (old_ctx / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
        inv = torch.where(medium, smoothed, scaled)
    return inv


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def forward(c, w, ids):
    """(B, T) int64 ids -> (B, T, vocab) float64 logits, positions 0..T-1."""
    B, T = ids.shape
    D = c.head_dim
    # transformers' rotary embedding forms the angles and their cos/sin in float32 whatever the
    # model's dtype (autocast off, explicit .float()), then casts them to it.
    angles = torch.arange(T, dtype=torch.float32)[:, None] * inverse_frequencies(c)[None, :]
    emb = torch.cat((angles, angles), dim=-1)
    cos, sin = emb.cos().double(), emb.sin().double()
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    x = w["model.embed_tokens.weight"][ids]
    for l in range(c.layers):
        p = f"model.layers.{l}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], c.eps)

        def proj(name, heads):
            y = h @ w[p + f"self_attn.{name}.weight"].T
            if c.qkv_bias:
                y = y + w[p + f"self_attn.{name}.bias"]
            return y.view(B, T, heads, D).transpose(1, 2)

        q, k, v = proj("q_proj", c.heads), proj("k_proj", c.kv_heads), proj("v_proj", c.kv_heads)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        group = c.heads // c.kv_heads
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(D)
        scores = scores.masked_fill(~causal, float("-inf"))
        att = torch.softmax(scores, dim=-1) @ v
        x = x + att.transpose(1, 2).reshape(B, T, c.heads * D) @ w[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], c.eps)
        gate = torch.nn.functional.silu(h @ w[p + "mlp.gate_proj.weight"].T)
        x = x + (gate * (h @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
    x = rms_norm(x, w["model.norm.weight"], c.eps)
    head = w["model.embed_tokens.weight"] if c.tied else w["lm_head.weight"]
    return x @ head.T


# ---------------------------------------------------------------------------------------------
# Token shards (src/io/tokens/token_shard.h's layout, read here from its documented fields)
# ---------------------------------------------------------------------------------------------

def read_shard(path):
    with open(path, "rb") as f:
        blob = f.read()
    if blob[:8] != b"FFTOKENS":
        raise Malformed(f"{path}: not an FFTOKENS shard")
    version, width = struct.unpack_from("<II", blob, 8)
    (count,) = struct.unpack_from("<Q", blob, 16)
    (flags,) = struct.unpack_from("<I", blob, 36)
    if version not in (2, 3) or width not in (2, 4) or flags & 1:
        raise Malformed(f"{path}: version {version}, {width}-byte ids, flags {flags}: expected an unmasked v2/v3 shard")
    ids = np.frombuffer(blob, dtype="<u2" if width == 2 else "<u4", count=count, offset=48)
    return torch.from_numpy(ids.astype(np.int64))


# ---------------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------------

def check_eval(args):
    c, w = load_model(args.hf_dir, args.dtype)
    theirs = torch.from_numpy(np.load(args.logits).astype(np.float64))
    if theirs.dim() != 3 or theirs.shape[2] != c.vocab:
        raise Malformed(f"{args.logits}: shape {list(theirs.shape)}, want (windows, T, {c.vocab})")
    W, T = theirs.shape[0], theirs.shape[1]
    ids = read_shard(args.shard)
    if len(ids) < W * T + 1:
        raise Malformed(f"{args.shard}: {len(ids)} tokens, fewer than {W} windows of {T} need")
    x = torch.stack([ids[i * T:i * T + T] for i in range(W)])
    y = torch.stack([ids[i * T + 1:i * T + T + 1] for i in range(W)])
    with torch.no_grad():
        logits = forward(c, w, x)
    loss = float(torch.nn.functional.cross_entropy(logits.reshape(-1, c.vocab), y.reshape(-1)))
    rel = abs(loss - args.loss) / abs(loss)
    scale = max(1.0, float(logits.abs().max()))
    worst = float((logits - theirs).abs().max()) / scale
    at = np.unravel_index(int((logits - theirs).abs().argmax()), tuple(logits.shape))
    verdict = "PASS" if rel <= TOL and worst <= TOL else "FAIL"
    print(f"{verdict} eval {args.hf_dir}: reference loss {loss:.8f} vs fivefold {args.loss:.8f} (rel {rel:.1e}); "
          f"logits of {W} windows x {T} positions x {c.vocab}: max |diff| / {scale:.2f} = {worst:.1e} at {tuple(at)} "
          f"(tol {TOL:.0e}; {c.kind}, rope {c.rope_type}, head_dim {c.head_dim}, tied {c.tied}, qkv bias {c.qkv_bias})")
    return EXIT_PASS if verdict == "PASS" else EXIT_FAIL


def check_greedy(args):
    c, w = load_model(args.hf_dir)
    with open(args.ids) as f:
        got = json.load(f)
    context = list(got["prefix"]) + list(got["prompt"])
    theirs = list(got["continuation"])
    steps = args.max_tokens
    mine = []
    with torch.no_grad():
        for i in range(steps):
            window = torch.tensor([context[-args.seq_len:]], dtype=torch.int64)
            logits = forward(c, w, window)[0, -1, :args.vocab]
            top2 = torch.topk(logits, 2)
            best = int(top2.indices[0])
            gap = float(top2.values[0] - top2.values[1])
            if i < len(theirs) and theirs[i] != best:
                # float32 against float64 may flip a near-tie and nothing else.
                if gap > TOL * max(1.0, float(top2.values[0].abs())):
                    print(f"FAIL greedy {args.hf_dir}: step {i}: fivefold chose {theirs[i]}, the reference {best} "
                          f"(logit {float(logits[theirs[i]]):.6f} vs {float(top2.values[0]):.6f}); "
                          f"fivefold {theirs}, reference so far {mine + [best]}")
                    return EXIT_FAIL
                print(f"PASS greedy {args.hf_dir}: {i} tokens equal, then a near-tie (gap {gap:.1e}) at step {i}")
                return EXIT_PASS
            if best == args.eos:
                break
            mine.append(best)
            context.append(best)
    if mine != theirs:
        print(f"FAIL greedy {args.hf_dir}: fivefold {theirs} vs reference {mine} (EOS {args.eos} ends a continuation)")
        return EXIT_FAIL
    print(f"PASS greedy {args.hf_dir}: {len(mine)} tokens equal after {len(context) - len(mine)} context ids: {mine}")
    return EXIT_PASS


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="check", required=True)
    e = sub.add_parser("eval")
    e.add_argument("hf_dir")
    e.add_argument("shard")
    e.add_argument("logits")
    e.add_argument("loss", type=float)
    e.add_argument("--dtype", choices=sorted(DECODE), help="every tensor must be stored in this dtype")
    g = sub.add_parser("greedy")
    g.add_argument("hf_dir")
    g.add_argument("ids")
    g.add_argument("seq_len", type=int)
    g.add_argument("eos", type=int)
    g.add_argument("vocab", type=int)
    g.add_argument("--max-tokens", type=int, required=True)
    args = ap.parse_args(argv)
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    try:
        return check_eval(args) if args.check == "eval" else check_greedy(args)
    except (Malformed, KeyError, ValueError, OSError) as e:
        print(f"MALFORMED {args.check}: {type(e).__name__}: {e}")
        return EXIT_MALFORMED
    except Mismatch as e:
        print(f"FAIL {args.check}: {e}")
        return EXIT_FAIL


if __name__ == "__main__":
    sys.exit(main())
