#!/usr/bin/python3
"""Writes a small random checkpoint of one open-model family as its Hugging Face folder ships:

    make_family.py FAMILY OUT CORPUS [--perturb]     FAMILY: llama3 | smollm2 | qwen2 | tinyllama

OUT gets config.json with the field set of the real model's (Llama-3.2-1B, SmolLM2-135M,
Qwen2.5-0.5B, TinyLlama-1.1B-Chat-v1.0) with the shapes shrunk and rope_theta, rms_norm_eps, the
tie flag, rope_scaling and max_position_embeddings kept; the weights as sharded safetensors (two
files and model.safetensors.index.json, written by the small writer below, in the dtypes the
family ships, with some tensors in another to cover each reader); a tokenizer.json trained here on
CORPUS, written too (byte-level BPE for Llama 3, SmolLM2 and Qwen2.5; a SentencePiece BPE with byte
fallback converted to tokenizer.json for TinyLlama, which also ships tokenizer.model);
tokenizer_config.json and special_tokens_map.json. Deterministic for a family.

--perturb adds 0.25 to one weight of the first layer's q_proj (the reference's selftest).
"""

import json
import os
import random
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tokenizer"))
import byte_bpe_trainer  # noqa: E402
import make_fixtures  # noqa: E402
import sp_to_tokenizer_json  # noqa: E402

# The real config.json of each family, shapes shrunk (dim 64, 2-3 layers, grouped-query attention).
CONFIGS = {
    "llama3": {  # Llama-3.2-1B; head_dim set apart from hidden_size / num_attention_heads
        "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "head_dim": 24, "hidden_act": "silu", "hidden_size": 64, "initializer_range": 0.02,
        "intermediate_size": 128, "max_position_embeddings": 131072, "mlp_bias": False,
        "model_type": "llama", "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2,
        "pretraining_tp": 1, "rms_norm_eps": 1e-05,
        "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        "rope_theta": 500000.0, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
        "transformers_version": "4.45.0.dev0", "use_cache": True},
    "smollm2": {  # SmolLM2-135M
        "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "hidden_act": "silu", "hidden_size": 64, "initializer_range": 0.041666666666666664,
        "intermediate_size": 160, "is_llama_config": True, "max_position_embeddings": 8192,
        "model_type": "llama", "num_attention_heads": 4, "num_hidden_layers": 3, "num_key_value_heads": 2,
        "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_interleaved": False, "rope_scaling": None,
        "rope_theta": 100000, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
        "transformers_version": "4.40.1", "use_cache": True},
    "qwen2": {  # Qwen2.5-0.5B: q/k/v biases, eps 1e-6, a vocabulary padded past the tokenizer's
        "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "hidden_act": "silu",
        "hidden_size": 64, "initializer_range": 0.02, "intermediate_size": 128,
        "max_position_embeddings": 32768, "max_window_layers": 2, "model_type": "qwen2",
        "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
        "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": True,
        "torch_dtype": "bfloat16", "transformers_version": "4.40.1", "use_cache": True,
        "use_mrope": False, "use_sliding_window": False},
    "tinyllama": {  # TinyLlama-1.1B-Chat-v1.0: untied head
        "architectures": ["LlamaForCausalLM"], "attention_bias": False, "hidden_act": "silu",
        "hidden_size": 64, "initializer_range": 0.02, "intermediate_size": 176,
        "max_position_embeddings": 2048, "model_type": "llama", "num_attention_heads": 4,
        "num_hidden_layers": 2, "num_key_value_heads": 2, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
        "rope_scaling": None, "rope_theta": 10000.0, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "transformers_version": "4.35.0", "use_cache": True},
}

# Qwen2.5 pads its vocabulary (151665 tokens in a 151936-row embedding); here by 6 rows.
VOCAB_PADDING = {"qwen2": 6}

SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "ze", "an", "el", "or", "ith", "um", "qua",
             "br", "st", "en", "ar", "ol"]


def corpus_lines(n_lines=3000):
    """Verse-like lines over a few hundred made-up words, digits and punctuation: enough pairs for
    a few hundred merges and a val shard of more than 2048 tokens."""
    rng = random.Random(5)
    words = ["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 3))) for _ in range(300)]
    lines = []
    for _ in range(n_lines):
        line = " ".join(rng.choice(words) for _ in range(rng.randint(6, 12)))
        lines.append(line.capitalize() + rng.choice([".", ",", "!", "?", f" {rng.randint(1, 999)}."]))
    return lines


# ---------------------------------------------------------------------------------------------
# Tokenizers
# ---------------------------------------------------------------------------------------------

def byte_level_tokenizer(lines, style):
    """tokenizer.json, its specials by role: (json, {"bos": id or None, "eos": id, "names": {...}})."""
    vocab, merges = byte_bpe_trainer.train(byte_bpe_trainer.word_counts(lines), 300)
    tok = make_fixtures.byte_level_json(vocab, merges, "gpt2" if style == "smollm2" else style)
    if style == "smollm2":
        # SmolLM2: GPT-2's byte level, <|endoftext|>, <|im_start|>, <|im_end|> and no BOS template.
        n = len(vocab)
        tok["added_tokens"] = [make_fixtures.added_token(n + i, t, True)
                               for i, t in enumerate(["<|endoftext|>", "<|im_start|>", "<|im_end|>"])]
        tok["post_processor"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                                 "use_regex": True}
    ids = {a["content"]: a["id"] for a in tok["added_tokens"]}
    size = max(ids.values()) + 1
    # An even vocabulary splits over tp 2; Llama 3 reserves special tokens past its last, so does this.
    if size % 2:
        tok["added_tokens"].append(make_fixtures.added_token(size, "<|reserved_special_token_0|>", True))
        size += 1
    if style == "llama3":
        return tok, size, ids[make_fixtures.BOS], ids[make_fixtures.EOS], (make_fixtures.BOS, make_fixtures.EOS)
    # Qwen2.5's config names <|endoftext|> as bos_token_id too, though its tokenizer adds no BOS.
    return tok, size, ids["<|endoftext|>"], ids["<|endoftext|>"], ("<|endoftext|>", "<|endoftext|>")


def sentencepiece_tokenizer(lines, out):
    import sentencepiece as spm
    # Llama 2's trainer settings (as tests/tokenizer/make_fixtures.py trains them), a smaller vocab.
    prefix = os.path.join(out, "tokenizer")
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_prefix=prefix, model_type="bpe", vocab_size=512,
        byte_fallback=True, character_coverage=1.0, split_digits=True, normalization_rule_name="identity",
        add_dummy_prefix=True, remove_extra_whitespaces=False, allow_whitespace_only_pieces=True,
        num_threads=1, minloglevel=2)
    os.remove(prefix + ".vocab")
    return sp_to_tokenizer_json.convert(prefix + ".model"), 512, 1, 2, ("<s>", "</s>")


def tokenizer_side_files(family, bos, eos, model_max_length):
    """tokenizer_config.json and special_tokens_map.json as each family ships them (fewer fields)."""
    fast = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": model_max_length,
            "clean_up_tokenization_spaces": False}
    if family == "tinyllama":
        cfg = {"add_bos_token": True, "add_eos_token": False, "bos_token": bos, "eos_token": eos,
               "legacy": False, "model_max_length": model_max_length, "pad_token": "</s>",
               "padding_side": "right", "sp_model_kwargs": {}, "tokenizer_class": "LlamaTokenizer",
               "unk_token": "<unk>"}
        special = {"bos_token": {"content": bos, "lstrip": False, "normalized": False, "rstrip": False,
                                 "single_word": False}, "eos_token": eos, "pad_token": "</s>", "unk_token": "<unk>"}
    elif family == "qwen2":
        cfg = dict(fast, bos_token=None, eos_token=eos, pad_token=eos, errors="replace", split_special_tokens=False,
                   tokenizer_class="Qwen2Tokenizer",
                   additional_special_tokens=["<|im_start|>", "<|im_end|>"])
        special = {"additional_special_tokens": ["<|im_start|>", "<|im_end|>"], "eos_token": eos, "pad_token": eos}
    else:
        cfg = dict(fast, bos_token=bos, eos_token=eos)
        special = {"bos_token": bos, "eos_token": eos}
        if family == "smollm2":
            cfg["unk_token"] = special["unk_token"] = "<|endoftext|>"
            cfg["additional_special_tokens"] = special["additional_special_tokens"] = ["<|im_start|>", "<|im_end|>"]
    return cfg, special


# ---------------------------------------------------------------------------------------------
# Weights
# ---------------------------------------------------------------------------------------------

def to_bf16_bits(x):
    """Round-to-nearest-even float32 -> bfloat16 bit patterns (as torch's .to(torch.bfloat16))."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def encode(x, dtype):
    if dtype == "BF16":
        return to_bf16_bits(x).astype("<u2").tobytes()
    return x.astype({"F32": "<f4", "F16": "<f2"}[dtype]).tobytes()


def write_safetensors(path, tensors):
    """tensors: [(name, dtype, numpy array)]; header padded to 8 bytes, data in the given order."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, dtype, x in tensors:
        raw = encode(x, dtype)
        header[name] = {"dtype": dtype, "shape": list(x.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    return offset


def tensor_list(cfg, vocab, padding, rng):
    """(name, role, values) in the order HF writes them; norms near 1, biases small. A tied
    embedding is small, or each token's own row would dominate its logits and greedy output repeat
    the last token. Padding rows (past the tokenizer's ids) are large, so a sampler that let them
    compete would pick them: the greedy check then sees whether they are masked."""
    dim, ffn, layers = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    hd = cfg.get("head_dim") or dim // cfg["num_attention_heads"]
    q, kv = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd
    out = [("model.embed_tokens.weight", (vocab, dim), 0.1 if cfg["tie_word_embeddings"] else 0.5, "matrix")]
    for l in range(layers):
        p = f"model.layers.{l}."
        out += [(p + "input_layernorm.weight", (dim,), 0.1, "norm"),
                (p + "self_attn.q_proj.weight", (q, dim), 0.15, "matrix"),
                (p + "self_attn.k_proj.weight", (kv, dim), 0.15, "matrix"),
                (p + "self_attn.v_proj.weight", (kv, dim), 0.15, "matrix")]
        if cfg["model_type"] == "qwen2":
            out += [(p + "self_attn.q_proj.bias", (q,), 0.1, "bias"), (p + "self_attn.k_proj.bias", (kv,), 0.1, "bias"),
                    (p + "self_attn.v_proj.bias", (kv,), 0.1, "bias")]
        out += [(p + "self_attn.o_proj.weight", (dim, q), 0.1, "matrix"),
                (p + "post_attention_layernorm.weight", (dim,), 0.1, "norm"),
                (p + "mlp.gate_proj.weight", (ffn, dim), 0.15, "matrix"),
                (p + "mlp.up_proj.weight", (ffn, dim), 0.15, "matrix"),
                (p + "mlp.down_proj.weight", (dim, ffn), 0.1, "matrix")]
    out.append(("model.norm.weight", (dim,), 0.1, "norm"))
    if not cfg["tie_word_embeddings"]:
        out.append(("lm_head.weight", (vocab, dim), 0.15, "matrix"))
    arrays = []
    for name, shape, std, role in out:
        x = rng.standard_normal(shape) * std + (1.0 if role == "norm" else 0.0)
        if name == "model.embed_tokens.weight" and padding:
            x[vocab - padding:] *= 10
        arrays.append((name, role, x))
    return arrays


def dtype_of(family, role):
    """The family's checkpoint dtype, with the tensors a release keeps wider in another: Qwen2.5's
    biases and SmolLM2's norms in F32, TinyLlama in F16 (as Llama 2 era checkpoints are) with F32 norms."""
    if family == "tinyllama":
        return "F32" if role == "norm" else "F16"
    if family == "qwen2" and role == "bias":
        return "F32"
    if family == "smollm2" and role == "norm":
        return "F32"
    return "BF16"


def write_weights(family, cfg, vocab, out, perturb):
    arrays = tensor_list(cfg, vocab, VOCAB_PADDING.get(family, 0), np.random.default_rng(sum(map(ord, family)) + 1))
    if perturb:
        name, role, x = arrays[2]  # the first layer's q_proj
        x.flat[0] += 0.25
    # Two shards split by layer, as HF's max_shard_size cuts them; the embedding alone in the second.
    first = [a for a in arrays if a[0].startswith("model.layers.0.")]
    shards = [first, [a for a in arrays if a not in first]]
    names = [f"model-0000{i + 1}-of-00002.safetensors" for i in range(2)]
    weight_map, total = {}, 0
    for file, shard in zip(names, shards):
        total += write_safetensors(os.path.join(out, file), [(n, dtype_of(family, r), x) for n, r, x in shard])
        weight_map.update({n: file for n, _, _ in shard})
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}, f, indent=2)


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in CONFIGS:
        sys.exit("usage: make_family.py llama3|smollm2|qwen2|tinyllama OUT CORPUS [--perturb]")
    family, out, corpus = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(out, exist_ok=True)
    lines = corpus_lines()
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))
    if family == "tinyllama":
        tok, size, bos, eos, (bos_name, eos_name) = sentencepiece_tokenizer(lines, out)
    else:
        tok, size, bos, eos, (bos_name, eos_name) = byte_level_tokenizer(lines, family)
    with open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False, indent=2)
    cfg = dict(CONFIGS[family])
    cfg.update(vocab_size=size + VOCAB_PADDING.get(family, 0), bos_token_id=bos, eos_token_id=eos)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(dict(sorted(cfg.items())), f, indent=2)
    side, special = tokenizer_side_files(family, bos_name, eos_name, cfg["max_position_embeddings"])
    for name, obj in (("tokenizer_config.json", side), ("special_tokens_map.json", special)):
        with open(os.path.join(out, name), "w") as f:
            json.dump(obj, f, indent=2)
    write_weights(family, cfg, cfg["vocab_size"], out, "--perturb" in sys.argv[4:])
    print(f"{family}: vocab {cfg['vocab_size']} (tokenizer {size}), bos {bos}, eos {eos} in {out}")


if __name__ == "__main__":
    main()
