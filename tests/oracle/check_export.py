#!/usr/bin/python3
"""Check a `fivefold export` folder against the independent float64 LLaMA of the oracle.

Usage: /usr/bin/python3 tests/oracle/check_export.py HF_DIR SHARD FIVEFOLD_LOSS [--max-windows K]
                                                     [--tol 1e-5]

HF_DIR holds model.safetensors and config.json as written by `fivefold export`. The weights are
read by the small safetensors reader below (the `safetensors` package is not installed, and an
independent reader also checks the writer), the model is built from config.json alone (so the
config must be enough for Hugging Face to rebuild it), and the mean cross-entropy over the
shard's windows is computed exactly as `fivefold eval` defines it: window w is tokens
[w*T, w*T+T], inputs the first T, targets shifted by one, T = max_position_embeddings. That mean
must match FIVEFOLD_LOSS (what `fivefold eval` printed for the checkpoint) within a relative tol.

Exit status: 0 match, 1 mismatch or wrong tensor set, 2 malformed input. One summary line.
"""

import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_against_torch as oracle  # noqa: E402
import check_moe_against_torch as moe_oracle  # noqa: E402

EXIT_PASS, EXIT_FAIL, EXIT_MALFORMED = 0, 1, 2

# safetensors dtype -> numpy little-endian dtype. The exporter writes F32 only, but reading the
# others lets a wrong dtype be reported as a wrong dtype rather than as a parse error.
DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4"}

SHARD_MAGIC = b"FFTOKENS"
# Header bytes by format version (src/io/tokens/token_shard.h): version 2 added the tokenizer checksum;
# version 3 keeps its header and may append a loss mask (flags bit 0), one bit per token.
SHARD_HEADERS = {1: 40, 2: 48, 3: 48}


class Malformed(Exception):
    """Input we cannot interpret at all; exit status 2."""


class Mismatch(Exception):
    """Well-formed input that disagrees with the expectation; exit status 1."""


# ----------------------------------------------------------------------------------------------
# Readers: every structural problem becomes Malformed with the reason, never a traceback
# ----------------------------------------------------------------------------------------------

def read_safetensors(path):
    """({name: (dtype, shape, float64 tensor or None)}, metadata) from a safetensors file."""
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except OSError as e:
        raise Malformed(f"cannot read {path}: {e.strerror}")
    if len(blob) < 8:
        raise Malformed(f"{path}: shorter than the 8-byte header length")
    (n,) = struct.unpack_from("<Q", blob, 0)
    if n > len(blob) - 8:
        raise Malformed(f"{path}: header length {n} exceeds the file size {len(blob)}")
    try:
        header = json.loads(blob[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise Malformed(f"{path}: header is not JSON ({e})")
    if not isinstance(header, dict):
        raise Malformed(f"{path}: header is not a JSON object")
    metadata = header.pop("__metadata__", {})
    # The format requires string -> string metadata; anything else breaks HF's loader.
    if not isinstance(metadata, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise Malformed(f"{path}: __metadata__ must map strings to strings")
    data = memoryview(blob)[8 + n:]
    tensors, spans = {}, []
    for name, t in header.items():
        if not isinstance(t, dict) or set(t) != {"dtype", "shape", "data_offsets"}:
            raise Malformed(f"{path}: tensor {name!r} must have exactly dtype, shape, data_offsets")
        dtype, shape, off = t["dtype"], t["shape"], t["data_offsets"]
        if not (isinstance(shape, list) and all(isinstance(d, int) and not isinstance(d, bool)
                                                and d >= 0 for d in shape)):
            raise Malformed(f"{path}: tensor {name!r} has a bad shape {shape!r}")
        if not (isinstance(off, list) and len(off) == 2 and all(
                isinstance(o, int) and not isinstance(o, bool) for o in off)
                and 0 <= off[0] <= off[1] <= len(data)):
            raise Malformed(f"{path}: tensor {name!r} has bad data_offsets {off!r} "
                            f"(data section is {len(data)} bytes)")
        if dtype not in DTYPES:
            raise Malformed(f"{path}: tensor {name!r} has unsupported dtype {dtype!r}")
        numel = math.prod(shape)
        itemsize = np.dtype(DTYPES[dtype]).itemsize
        if (off[1] - off[0]) != numel * itemsize:
            raise Malformed(f"{path}: tensor {name!r} spans {off[1] - off[0]} bytes but "
                            f"{dtype}{shape} needs {numel * itemsize}")
        arr = np.frombuffer(data[off[0]:off[1]], dtype=DTYPES[dtype]).reshape(shape)
        tensors[name] = (dtype, tuple(shape), torch.from_numpy(arr.astype(np.float64)))
        if off[1] > off[0]:
            spans.append((off[0], off[1], name))
    # Overlapping tensors would silently alias weights (a copy bug in the writer), and the spec
    # forbids them; holes are allowed by the spec, so only overlaps are rejected.
    spans.sort()
    for (_, e0, a), (b1, _, b) in zip(spans, spans[1:]):
        if b1 < e0:
            raise Malformed(f"{path}: tensors {a!r} and {b!r} overlap")
    return tensors, metadata


def _pos_int(raw, key):
    v = raw.get(key)
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise Malformed(f"config.json: {key} must be an integer >= 1, got {v!r}")
    return v


def read_config(path):
    """The oracle's cfg dict, translated from the HF config.json keys."""
    try:
        with open(path) as f:
            raw = json.load(f)
    except OSError as e:
        raise Malformed(f"cannot read {path}: {e.strerror}")
    except ValueError as e:
        raise Malformed(f"{path}: not JSON ({e})")
    if not isinstance(raw, dict):
        raise Malformed(f"{path}: not a JSON object")
    # HF defaults num_key_value_heads to num_attention_heads and tie_word_embeddings to true
    # when absent; demanding both explicitly keeps the export unambiguous for older loaders.
    cfg = {
        "vocab_size": _pos_int(raw, "vocab_size"),
        "dim": _pos_int(raw, "hidden_size"),
        "n_layers": _pos_int(raw, "num_hidden_layers"),
        "n_heads": _pos_int(raw, "num_attention_heads"),
        "n_kv_heads": _pos_int(raw, "num_key_value_heads"),
        "ffn_dim": _pos_int(raw, "intermediate_size"),
        # fivefold eval's window length is the training seq_len, which export writes here.
        "seq_len": _pos_int(raw, "max_position_embeddings"),
        "rms_eps": raw.get("rms_norm_eps"),
        "rope_theta": raw.get("rope_theta"),
        "tied_embeddings": raw.get("tie_word_embeddings"),
    }
    # Reuse the oracle's validation (positivity, divisibility, even head dim); it raises its own
    # exception type, which is the same "cannot rebuild the model" condition.
    try:
        cfg = oracle.parse_config(cfg)
    except oracle.MalformedDump as e:
        raise Malformed(f"{path}: {e}")
    # Mixtral: every block an MoE of softmax top-k experts (check_moe_against_torch.py's block;
    # evaluation is the token loss alone, dropless).
    if raw.get("model_type") == "mixtral":
        cfg["moe"] = {"n_experts": _pos_int(raw, "num_local_experts"),
                      "top_k": _pos_int(raw, "num_experts_per_tok"),
                      "expert_ffn_dim": cfg["ffn_dim"], "shared_experts": 0, "router": "softmax",
                      "aux_loss_coeff": 0.0, "z_loss_coeff": 0.0, "capacity_factor": 0,
                      "moe_layers": list(range(cfg["n_layers"])),
                      "router_bias": [0.0] * (cfg["n_layers"] * raw["num_local_experts"])}
    # The oracle implements exactly SiLU and no biases; a different declared activation or
    # biased attention would mean HF builds another model than the one checked here.
    if raw.get("hidden_act", "silu") != "silu" or raw.get("attention_bias", False) is not False:
        raise Mismatch(f"{path}: hidden_act={raw.get('hidden_act')!r} "
                       f"attention_bias={raw.get('attention_bias')!r}; expected silu / false")
    return cfg


def read_shard(path, vocab_size):
    """(int64 token ids, bool loss mask or None) of an FFTOKENS shard."""
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except OSError as e:
        raise Malformed(f"cannot read {path}: {e.strerror}")
    if len(blob) < 12 or blob[:8] != SHARD_MAGIC:
        raise Malformed(f"{path}: not an FFTOKENS shard")
    version, = struct.unpack_from("<I", blob, 8)
    header = SHARD_HEADERS.get(version, 0)
    if not header or len(blob) < header:
        raise Malformed(f"{path}: unsupported FFTOKENS version {version} or truncated header")
    width, = struct.unpack_from("<I", blob, 12)
    count, = struct.unpack_from("<Q", blob, 16)
    if width not in (2, 4):
        raise Malformed(f"{path}: bytes per token is {width}, expected 2 or 4")
    flags = struct.unpack_from("<I", blob, 36)[0] if version == 3 else 0
    mask_bytes = (count + 7) // 8 if flags & 1 else 0
    if len(blob) != header + count * width + mask_bytes:
        raise Malformed(f"{path}: header says {count} tokens of {width} bytes (and {mask_bytes} bytes of loss "
                        f"mask) but the file has {len(blob) - header} payload bytes")
    ids = np.frombuffer(blob, dtype="<u2" if width == 2 else "<u4", count=count, offset=header)
    ids = torch.from_numpy(ids.astype(np.int64))
    mask = None
    if mask_bytes:
        bits = np.frombuffer(blob, dtype=np.uint8, count=mask_bytes, offset=header + count * width)
        mask = torch.from_numpy(np.unpackbits(bits, bitorder="little")[:count].astype(bool))
    # An id outside the exported vocab would make F.embedding fail or silently test garbage.
    if count and int(ids.max()) >= vocab_size:
        raise Malformed(f"{path}: token id {int(ids.max())} >= vocab_size {vocab_size}")
    return ids, mask


# ----------------------------------------------------------------------------------------------
# The check
# ----------------------------------------------------------------------------------------------

def check_tensors(tensors, cfg):
    """Exactly the expected names, each F32 with the HF shape; params by name in float64."""
    want = moe_oracle.expected_shapes(cfg, cfg["moe"]) if "moe" in cfg else oracle.expected_shapes(cfg)
    missing = [n for n in want if n not in tensors]
    extra = [n for n in tensors if n not in want]
    wrong = [f"{n} {tensors[n][0]}{list(tensors[n][1])} (want F32{list(s)})"
             for n, s in want.items()
             if n in tensors and (tensors[n][1] != tuple(s) or tensors[n][0] != "F32")]
    problems = []
    if missing:
        problems.append("missing " + ", ".join(missing))
    if extra:
        problems.append("unexpected " + ", ".join(extra))
    if wrong:
        problems.append("wrong " + "; ".join(wrong))
    if problems:
        raise Mismatch("tensor set: " + " | ".join(problems))
    return {n: tensors[n][2] for n in want}


def mean_window_loss(params, cfg, ids, max_windows, batch=8, mask=None):
    """The fivefold eval definition: mean token cross-entropy over windows of T+1 tokens with
    stride T, in order, the first max_windows of them when max_windows > 0. With a loss mask, the
    mean over the targets whose mask bit is set (Hugging Face's ignore_index)."""
    T = cfg["seq_len"]
    windows = (len(ids) - 1) // T
    if windows < 1:
        raise Malformed(f"shard has {len(ids)} tokens, fewer than seq_len + 1 = {T + 1}")
    if max_windows > 0:
        windows = min(windows, max_windows)
    total, targets = 0.0, 0
    with torch.no_grad():
        # Batches only bound memory; the sum is per token, so batching does not change it.
        for w0 in range(0, windows, batch):
            ws = range(w0, min(windows, w0 + batch))
            x = torch.stack([ids[w * T: w * T + T] for w in ws])
            y = torch.stack([ids[w * T + 1: w * T + T + 1] for w in ws])
            if mask is not None:
                keep = torch.stack([mask[w * T + 1: w * T + T + 1] for w in ws])
                y = torch.where(keep, y, torch.full_like(y, -1))
            targets += int((y != -1).sum())
            logits = moe_oracle.forward(params, x, cfg, cfg["moe"])[0] if "moe" in cfg else oracle.forward(params, x, cfg)
            total += float(torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), y.reshape(-1), ignore_index=-1, reduction="sum"))
    if targets == 0:
        raise Malformed("the shard's loss mask leaves no target in the windows checked")
    return total / targets, windows


def run(args):
    cfg = read_config(os.path.join(args.hf_dir, "config.json"))
    tensors, _ = read_safetensors(os.path.join(args.hf_dir, "model.safetensors"))
    params = check_tensors(tensors, cfg)
    ids, mask = read_shard(args.shard, cfg["vocab_size"])
    ref, windows = mean_window_loss(params, cfg, ids, args.max_windows, mask=mask)
    rel = abs(args.loss - ref) / max(abs(ref), 1e-30)
    verdict = "PASS" if rel <= args.tol else "FAIL"
    print(f"{verdict} export: reference loss {ref:.8f} vs fivefold {args.loss:.8f} over {windows} "
          f"windows of {cfg['seq_len']} (rel diff {rel:.2e}, tol {args.tol:.0e}; "
          f"{len(params)} tensors, tied={cfg['tied_embeddings']})")
    return EXIT_PASS if rel <= args.tol else EXIT_FAIL


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("hf_dir")
    ap.add_argument("shard")
    ap.add_argument("loss", type=float)
    ap.add_argument("--max-windows", type=int, default=0)
    ap.add_argument("--tol", type=float, default=1e-5)
    args = ap.parse_args(argv)
    # NaN would compare false against every tolerance and read as a pass-by-omission; reject it.
    if not math.isfinite(args.loss):
        print(f"MALFORMED export check: FIVEFOLD_LOSS {args.loss} is not finite")
        return EXIT_MALFORMED
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    try:
        return run(args)
    except Malformed as e:
        print(f"MALFORMED export check: {e}")
        return EXIT_MALFORMED
    except Mismatch as e:
        print(f"FAIL export: {e}")
        return EXIT_FAIL


if __name__ == "__main__":
    sys.exit(main())
