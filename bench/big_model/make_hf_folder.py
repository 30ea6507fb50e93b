#!/usr/bin/python3
"""Writes a Hugging Face folder of TinyLlama-1.1B's shape with random weights: config.json as
TinyLlama's, the weights in bf16 over sharded safetensors with model.safetensors.index.json, and
the tokenizer file given (copied as it is).

Weights are N(0, 0.02) rounded to bf16 (nearest, ties to even), norms 1; written one tensor at a
time, so this needs a few hundred MiB whatever the model's size.

--narrow writes the same family, vocabulary and tokenizer with one 64-wide block instead: the
import bench's baseline (what the program holds besides its buffers, measured on a model whose
buffers are small).

usage: /usr/bin/python3 bench/big_model/make_hf_folder.py OUT TOKENIZER_FILE [--shard-gib 1.0] [--seed 0]
                                                          [--narrow]
"""
import argparse
import json
import os
import shutil
import struct

import numpy as np

# TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T's config.json (the fields a LlamaForCausalLM reads).
CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "attention_bias": False,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "hidden_act": "silu",
    "hidden_size": 2048,
    "initializer_range": 0.02,
    "intermediate_size": 5632,
    "max_position_embeddings": 2048,
    "model_type": "llama",
    "num_attention_heads": 32,
    "num_hidden_layers": 22,
    "num_key_value_heads": 4,
    "pretraining_tp": 1,
    "rms_norm_eps": 1e-05,
    "rope_scaling": None,
    "rope_theta": 10000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.35.0",
    "use_cache": True,
    "vocab_size": 32000,
}


def tensor_shapes(c):
    """(name, shape) of every tensor of a LlamaForCausalLM, in the order HF saves them."""
    D, F, V = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    hd = D // c["num_attention_heads"]
    kv = c["num_key_value_heads"] * hd
    out = [("model.embed_tokens.weight", (V, D))]
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out += [(p + "self_attn.q_proj.weight", (D, D)), (p + "self_attn.k_proj.weight", (kv, D)),
                (p + "self_attn.v_proj.weight", (kv, D)), (p + "self_attn.o_proj.weight", (D, D)),
                (p + "mlp.gate_proj.weight", (F, D)), (p + "mlp.up_proj.weight", (F, D)),
                (p + "mlp.down_proj.weight", (D, F)), (p + "input_layernorm.weight", (D,)),
                (p + "post_attention_layernorm.weight", (D,))]
    out += [("model.norm.weight", (D,)), ("lm_head.weight", (V, D))]
    return out


def bf16_bits(x):
    """float32 array -> its bf16 bit patterns (round to nearest, ties to even)."""
    b = x.view(np.uint32)
    return ((b + np.uint32(0x7FFF) + ((b >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)).astype("<u2")


def write_shard(path, names, shapes, rng):
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for n in names:
        size = int(np.prod(shapes[n])) * 2
        header[n] = {"dtype": "BF16", "shape": list(shapes[n]), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for n in names:
            count = int(np.prod(shapes[n]))
            if len(shapes[n]) == 1:
                x = np.ones(count, dtype=np.float32)
            else:
                x = rng.standard_normal(count, dtype=np.float32)
                x *= np.float32(0.02)
            f.write(bf16_bits(x).tobytes())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("tokenizer")
    p.add_argument("--shard-gib", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--narrow", action="store_true")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    config = dict(CONFIG)
    if a.narrow:
        config.update(hidden_size=64, intermediate_size=160, num_hidden_layers=1, num_attention_heads=4,
                      num_key_value_heads=2)
    tensors = tensor_shapes(config)
    shapes = dict(tensors)
    shards, current, size = [], [], 0
    for name, shape in tensors:  # a new shard once this one would pass the limit
        nbytes = int(np.prod(shape)) * 2
        if current and size + nbytes > a.shard_gib * (1 << 30):
            shards.append(current)
            current, size = [], 0
        current.append(name)
        size += nbytes
    shards.append(current)
    rng = np.random.default_rng(a.seed)
    weight_map, total = {}, 0
    for i, names in enumerate(shards):
        file = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        write_shard(os.path.join(a.out, file), names, shapes, rng)
        for n in names:
            weight_map[n] = file
            total += int(np.prod(shapes[n])) * 2
    with open(os.path.join(a.out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    shutil.copyfile(a.tokenizer, os.path.join(a.out, os.path.basename(a.tokenizer)))
    params = sum(int(np.prod(s)) for _, s in tensors)
    print(f"wrote {a.out}: {params} parameters in {len(shards)} bf16 shards ({total / (1 << 30):.2f} GiB)")


if __name__ == "__main__":
    main()
