"""Builds the tokenizer oracle's fixtures in OUT_DIR from the KJV (Debian bible-kjv) and the
edge-case text; nothing is downloaded. Standard library plus python3-sentencepiece.

  text.txt                 every KJV verse (one per line) and then the edge-case lines
  edge.txt                 the edge-case lines alone
  gpt2.tokenizer.json      byte-level BPE, GPT-2 split (bare ByteLevel with use_regex), merges as "a b"
  llama3.tokenizer.json    byte-level BPE, Llama-3 split (Split + ByteLevel without regex),
                           ignore_merges, merges as pairs, whole words in the vocab that no merge makes
  qwen2.tokenizer.json     byte-level BPE as Qwen2.5 ships it: NFC, Split with single digits, no BOS
  sp_bpe.model             SentencePiece BPE with byte fallback trained by python3-sentencepiece
  sp_bpe.tokenizer.json    that model in the Llama 2 / TinyLlama tokenizer.json form
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import byte_bpe_trainer  # noqa: E402
import edge_text  # noqa: E402
import sp_to_tokenizer_json  # noqa: E402

GPT2_SPLIT = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")
TRAIN_LINES = 8000   # Genesis to about Judges: enough for a few thousand merges in a second
MERGES = 4000
BOS, EOS, THINK = "<|begin_of_text|>", "<|end_of_text|>", "<think>"
QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# Long KJV names the byte-level vocabulary gets as whole tokens without a merge that builds them,
# so only a tokenizer that honours ignore_merges emits them as one id (Llama 3 ships such tokens).
WHOLE_WORDS = ["\u0120Mahershalalhashbaz", "\u0120Chushanrishathaim", "\u0120Zaphnathpaaneah"]


def kjv_lines():
    out = subprocess.run(["bible", "-f", "Gen1:1-Rev22:21"], check=True, capture_output=True).stdout
    lines = out.decode("utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) < 31000:
        sys.exit(f"bible -f Gen1:1-Rev22:21 gave {len(lines)} lines, expected the whole KJV (31102)")
    return lines


def added_token(token_id, content, special):
    return {"id": token_id, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": special}


def byte_level_json(vocab, merges, style):
    """style: "gpt2" (bare ByteLevel with its regex, BOS template), "llama3" (Split + ByteLevel,
    ignore_merges, ByteLevel then the BOS template, as Llama 3 ships it) or "qwen2" (NFC, Split with
    single digits + ByteLevel, no BOS: a ByteLevel post-processor alone, as Qwen2.5 ships it)."""
    n = len(vocab)
    if style == "qwen2":
        added = [added_token(n + i, t, True) for i, t in enumerate(QWEN_SPECIALS)] + [
            added_token(n + len(QWEN_SPECIALS), THINK, False)]
    else:
        added = [added_token(n, BOS, True), added_token(n + 1, EOS, True), added_token(n + 2, THINK, False)]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": style == "gpt2"}
    pre = byte_level
    if style != "gpt2":
        pre = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": LLAMA3_SPLIT if style == "llama3" else QWEN2_SPLIT},
             "behavior": "Isolated", "invert": False},
            byte_level]}
    template = [{"SpecialToken": {"id": BOS, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}]
    post = {"type": "TemplateProcessing", "single": template,
            "pair": template + [{"SpecialToken": {"id": BOS, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {BOS: {"id": BOS, "ids": [n], "tokens": [BOS]}}}
    if style == "llama3":
        post = {"type": "Sequence", "processors": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True}, post]}
    elif style == "qwen2":
        post = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "NFC"} if style == "qwen2" else None, "pre_tokenizer": pre, "post_processor": post,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": style == "llama3", "vocab": vocab,
                  "merges": [list(m) for m in merges] if style == "llama3" else [f"{a} {b}" for a, b in merges]},
    }


def train_sentencepiece(lines, prefix):
    import sentencepiece as spm
    # Llama 2's trainer settings: identity normalisation, a dummy prefix, whitespace kept as is,
    # digits split, byte fallback. Rare characters (most of the edge text) fall back to bytes.
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_prefix=prefix, model_type="bpe", vocab_size=3000,
        byte_fallback=True, character_coverage=0.9995, split_digits=True, normalization_rule_name="identity",
        add_dummy_prefix=True, remove_extra_whitespaces=False, allow_whitespace_only_pieces=True,
        max_sentence_length=1 << 16, num_threads=1, minloglevel=2)


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False)


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    kjv = kjv_lines()
    lines = kjv + edge_text.LINES
    with open(os.path.join(out_dir, "text.txt"), "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(line + "\n" for line in lines))
    edge_text.write(os.path.join(out_dir, "edge.txt"))
    train_lines = kjv[:TRAIN_LINES] + edge_text.LINES
    vocab, merges = byte_bpe_trainer.train(byte_bpe_trainer.word_counts(train_lines), MERGES)
    write_json(os.path.join(out_dir, "gpt2.tokenizer.json"), byte_level_json(vocab, merges, "gpt2"))
    write_json(os.path.join(out_dir, "qwen2.tokenizer.json"), byte_level_json(vocab, merges, "qwen2"))
    llama3_vocab = dict(vocab)
    for word in WHOLE_WORDS:
        assert word not in llama3_vocab, word
        llama3_vocab[word] = len(llama3_vocab)
    write_json(os.path.join(out_dir, "llama3.tokenizer.json"), byte_level_json(llama3_vocab, merges, "llama3"))
    prefix = os.path.join(out_dir, "sp_bpe")
    train_sentencepiece([line for line in train_lines if line], prefix)
    write_json(prefix + ".tokenizer.json", sp_to_tokenizer_json.convert(prefix + ".model"))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_fixtures.py OUT_DIR")
    main(sys.argv[1])
