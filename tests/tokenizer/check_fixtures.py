"""Checks that the oracle's fixtures are what they claim, under the references themselves:
every tokenizer.json loads in @huggingface/tokenizers; the added tokens come out whole; the
Llama-3 fixture's ignore_merges is exercised (a whole word that no merge builds is one token there
and several under GPT-2's); the Qwen2 fixture composes to NFC first; the template adds BOS (none
for Qwen2); and the SentencePiece tokenizer.json gives the Python sentencepiece package's ids for
its .model on every line without an added token, which makes it a faithful Llama 2 style conversion.

  check_fixtures.py FIXTURE_DIR MODULES_DIR
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from id_lines import first_difference, read_ids, read_lines  # noqa: E402

failures = []


def node(modules, *args):
    cmd = ["node", os.path.join(HERE, "hf_tokenizers.mjs"), modules, *args]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)}:\n{done.stderr}")
    return done.stdout


def expect(condition, message):
    print(("ok   " if condition else "FAIL ") + message)
    if not condition:
        failures.append(message)


def main(fixtures, modules):
    path = {name: os.path.join(fixtures, f"{name}.tokenizer.json") for name in ("gpt2", "llama3", "qwen2", "sp_bpe")}
    for name in ("gpt2", "llama3"):
        pieces = json.loads(node(modules, "tokens", path[name], "a<|end_of_text|>b<think>c"))
        expect(pieces[1] == "<|end_of_text|>" and pieces[3] == "<think>",
               f"{name}: added tokens come out whole: {pieces}")
        word = " Mahershalalhashbaz"
        pieces = json.loads(node(modules, "tokens", path[name], word))
        whole = name == "llama3"
        expect((len(pieces) == 1) == whole,
               f"{name}: {word!r} is {'one token (ignore_merges)' if whole else 'split by merges'}: {pieces}")
    pieces = json.loads(node(modules, "tokens", path["qwen2"], "a<|im_start|>b<|endoftext|>c<think>"))
    expect(pieces[1] == "<|im_start|>" and pieces[3] == "<|endoftext|>" and pieces[5] == "<think>",
           f"qwen2: added tokens come out whole: {pieces}")
    for name, composes in (("qwen2", True), ("gpt2", False)):
        same = node(modules, "tokens", path[name], "caf\u00e9") == node(modules, "tokens", path[name], "cafe\u0301")
        expect(same == composes, f"{name}: 'cafe' + U+0301 {'is' if composes else 'is not'} NFC-composed first")
    probe = os.path.join(fixtures, "probe.txt")
    with open(probe, "w", encoding="utf-8") as f:
        f.write("In the beginning\n")
    for name in ("gpt2", "llama3", "qwen2", "sp_bpe"):
        with open(path[name], encoding="utf-8") as f:
            bos = [t["id"] for t in json.load(f)["added_tokens"] if t["content"] in ("<|begin_of_text|>", "<s>")]
        plain = node(modules, "encode", path[name], probe).split()
        special = node(modules, "encode", path[name], probe, "--add-special").split()
        expect(special == [str(b) for b in bos] + plain,
               f"{name}: with special tokens the ids start {special[:3]}, BOS {bos or 'none (Qwen2.5 has none)'}")

    text = os.path.join(fixtures, "text.txt")
    js_ids = os.path.join(fixtures, "sp_bpe.js.ids")
    with open(js_ids, "w") as f:
        f.write(node(modules, "encode", path["sp_bpe"], text))
    sp = subprocess.run([sys.executable, os.path.join(HERE, "sentencepiece_ids.py"),
                         os.path.join(fixtures, "sp_bpe.model"), text], capture_output=True, check=True).stdout
    texts = read_lines(text)
    keep = [i for i, t in enumerate(texts) if not any(a in t for a in ("<s>", "</s>", "<unk>"))]
    js = read_ids(js_ids)
    py = [[int(t) for t in line.split()] for line in sp.decode("utf-8").split("\n")[:-1]]
    problem = first_difference([py[i] for i in keep], [js[i] for i in keep], [texts[i] for i in keep],
                               "sentencepiece (.model)", "@huggingface/tokenizers (tokenizer.json)")
    expect(problem is None, f"sp_bpe: tokenizer.json and .model agree on {len(keep)} lines"
           + (f": {problem}" if problem else ""))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: check_fixtures.py FIXTURE_DIR MODULES_DIR")
    main(sys.argv[1], sys.argv[2])
