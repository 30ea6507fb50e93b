"""The Python `sentencepiece` reference (Debian python3-sentencepiece): ids of each text line, one
line of space-separated ids per line, no BOS/EOS.

  sentencepiece_ids.py MODEL TEXT_FILE            encode
  sentencepiece_ids.py MODEL IDS_FILE --decode    decode each id line back to text
"""
import os
import sys

import sentencepiece as spm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from id_lines import read_lines  # noqa: E402


def main(argv):
    if len(argv) not in (2, 3) or (len(argv) == 3 and argv[2] != "--decode"):
        sys.exit("usage: sentencepiece_ids.py MODEL FILE [--decode]")
    sp = spm.SentencePieceProcessor(model_file=argv[0])
    out = []
    if len(argv) == 3:
        for line in read_lines(argv[1]):
            out.append(sp.decode([int(t) for t in line.split()]))
    else:
        for line in read_lines(argv[1]):
            out.append(" ".join(map(str, sp.encode(line))))
    sys.stdout.buffer.write("".join(line + "\n" for line in out).encode("utf-8"))


if __name__ == "__main__":
    main(sys.argv[1:])
