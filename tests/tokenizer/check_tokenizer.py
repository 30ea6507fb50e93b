"""The tokenizer oracle: fivefold's ids for every line of a text equal an independent reference's,
and fivefold's decode gives the text back.

  check_tokenizer.py --fivefold BIN --tokenizer PATH --text FILE --work DIR
                     (--hf-js MODULES_DIR | --sentencepiece)

--hf-js: the reference is Hugging Face's @huggingface/tokenizers under node (PATH is a
tokenizer.json); --sentencepiece: the Python sentencepiece package (PATH is a .model). fivefold
runs with 1 and 2 threads; both must give the reference's ids. Decoding the reference's ids must
give each line back, except where the format itself cannot (a SentencePiece-style tokenizer.json
puts a "▁" after an added token inside the text; an NFC normalizer composes characters): there
fivefold's decode must equal the reference's, and the line must be one the format changes.
"""
import argparse
import json
import os
import subprocess
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from id_lines import first_difference, read_ids, read_lines  # noqa: E402


def run(cmd, stdout_path=None):
    with open(stdout_path, "wb") if stdout_path else open(os.devnull, "wb") as out:
        done = subprocess.run(cmd, stdout=out, stderr=subprocess.PIPE)
    if done.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {done.returncode}:\n{done.stderr.decode(errors='replace')}")
    return done.stderr.decode(errors="replace")


class HfJs:
    name = "@huggingface/tokenizers (node)"

    def __init__(self, modules_dir, tokenizer):
        self.prefix = ["node", os.path.join(HERE, "hf_tokenizers.mjs"), modules_dir]
        self.tokenizer = tokenizer
        self.config = None

    def encode(self, text, out):
        run(self.prefix + ["encode", self.tokenizer, text], out)

    def decode(self, ids, out):
        run(self.prefix + ["decode", self.tokenizer, ids], out)

    def changes(self, text):
        """Why decoding cannot give this text back, or None: an added token inside it (after one, a
        SentencePiece-style tokenizer.json adds a "▁"), or an NFC normalizer that changes it."""
        if self.config is None:
            with open(self.tokenizer, encoding="utf-8") as f:
                self.config = json.load(f)
        config = self.config
        if any(t["content"] in text for t in config.get("added_tokens", [])):
            return "an added token"
        if '"NFC"' in json.dumps(config.get("normalizer")) and unicodedata.normalize("NFC", text) != text:
            return "NFC"
        return None


class SentencePiece:
    name = "python3-sentencepiece"

    def __init__(self, model):
        self.prefix = [sys.executable, os.path.join(HERE, "sentencepiece_ids.py"), model]

    def encode(self, text, out):
        run(self.prefix + [text], out)

    def decode(self, ids, out):
        run(self.prefix + [ids, "--decode"], out)

    def changes(self, text):
        return None  # sentencepiece matches no control piece inside text: every line comes back


def fivefold_encode(binary, tokenizer, text, out, threads):
    return run([binary, "tokenize", "--tokenizer", tokenizer, "--input", text, "--ids-out", out,
                "--threads", str(threads)])


def fivefold_decode(binary, tokenizer, ids, out):
    run([binary, "tokenize", "--tokenizer", tokenizer, "--decode", "--input", ids], out)


def check_round_trip(texts, ours, ref_ids, reference, work):
    """Messages for lines where decoding does not give the text back as it should. Only lines that
    do not come back are decoded by the reference too (decoding everything would double the time)."""
    if len(ours) != len(texts):
        return [f"{len(texts)} text lines, fivefold decoded {len(ours)}"]
    differ = [i for i in range(len(texts)) if ours[i] != texts[i]]
    if not differ:
        return []
    ids_path, decoded_path = os.path.join(work, "differing.ids"), os.path.join(work, "differing.decoded")
    with open(ids_path, "w") as f:
        f.write("".join(" ".join(map(str, ref_ids[i])) + "\n" for i in differ))
    reference.decode(ids_path, decoded_path)
    theirs = read_lines(decoded_path)
    problems, reasons = [], {}
    for i, their in zip(differ, theirs):
        why = reference.changes(texts[i])
        if ours[i] != their:
            problems.append(f"line {i + 1}: fivefold decodes to {ours[i]!r}, {reference.name} to {their!r} "
                            f"(text {texts[i]!r})")
        elif why is None:
            problems.append(f"line {i + 1}: decode gives {ours[i]!r}, not the text {texts[i]!r}")
        else:
            reasons[why] = reasons.get(why, 0) + 1
    if not problems:
        print(f"lines that decode as {reference.name} decodes them, not to the text, for a reason the format "
              f"gives: {reasons}")
    return problems[:5]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fivefold", required=True)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--text", required=True)
    ap.add_argument("--work", required=True)
    ref = ap.add_mutually_exclusive_group(required=True)
    ref.add_argument("--hf-js", metavar="MODULES_DIR")
    ref.add_argument("--sentencepiece", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    reference = HfJs(args.hf_js, args.tokenizer) if args.hf_js else SentencePiece(args.tokenizer)
    texts = read_lines(args.text)

    ref_ids = os.path.join(args.work, "reference.ids")
    reference.encode(args.text, ref_ids)
    expected = read_ids(ref_ids)
    failed = False
    for threads in (1, 2):
        ours = os.path.join(args.work, f"fivefold_t{threads}.ids")
        fivefold_encode(args.fivefold, args.tokenizer, args.text, ours, threads)
        who = f"fivefold ({threads} thread{'s' * (threads > 1)})"
        problem = first_difference(expected, read_ids(ours), texts, reference.name, who)
        if problem:
            print(f"FAIL ids of {who}: {problem}")
            failed = True
        else:
            print(f"{who}: ids equal {reference.name}'s on all {len(texts)} lines ({sum(map(len, expected))} tokens)")

    ours_text = os.path.join(args.work, "fivefold.decoded")
    fivefold_decode(args.fivefold, args.tokenizer, ref_ids, ours_text)
    problems = check_round_trip(texts, read_lines(ours_text), expected, reference, args.work)
    if problems:
        print("FAIL decode:\n  " + "\n  ".join(problems))
        failed = True
    else:
        print(f"decode gives the text back on all {len(texts)} lines but those noted above")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
