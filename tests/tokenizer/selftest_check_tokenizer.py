"""The oracle check must be able to fail: a stand-in for `fivefold tokenize` that answers with the
Python sentencepiece package passes check_tokenizer.py, and the same stand-in with one id changed
on one line, or one decoded character changed, fails it, naming that line.

  selftest_check_tokenizer.py FIXTURE_DIR WORK_DIR
"""
import os
import stat
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# A stand-in binary: `tokenize --tokenizer M --input F [--ids-out O] [--threads N] [--decode]`.
# BAD_ENCODE_LINE / BAD_DECODE_LINE (1-based) corrupt one line of its output.
STAND_IN = r'''#!{python}
import os, sys
sys.path.insert(0, {here!r})
import sentencepiece as spm
from id_lines import read_lines
args = sys.argv[2:]
opt = {{args[i]: args[i + 1] for i in range(len(args) - 1) if args[i].startswith("--") and args[i] != "--decode"}}
sp = spm.SentencePieceProcessor(model_file=opt["--tokenizer"])
bad_encode = int(os.environ.get("BAD_ENCODE_LINE", "0"))
bad_decode = int(os.environ.get("BAD_DECODE_LINE", "0"))
out = []
for n, line in enumerate(read_lines(opt["--input"]), 1):
    if "--decode" in args:
        text = sp.decode([int(t) for t in line.split()])
        out.append(text + "x" if n == bad_decode else text)
    else:
        ids = sp.encode(line)
        if n == bad_encode:
            ids[len(ids) // 2] += 1
        out.append(" ".join(map(str, ids)))
data = "".join(l + "\n" for l in out).encode("utf-8")
if "--ids-out" in opt:
    open(opt["--ids-out"], "wb").write(data)
else:
    sys.stdout.buffer.write(data)
'''


def check(fixtures, work, env_extra):
    env = dict(os.environ, **env_extra)
    cmd = [sys.executable, os.path.join(HERE, "check_tokenizer.py"), "--fivefold", os.path.join(work, "stand_in"),
           "--tokenizer", os.path.join(fixtures, "sp_bpe.model"), "--text", os.path.join(work, "text.txt"),
           "--work", os.path.join(work, "run"), "--sentencepiece"]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return done.returncode, done.stdout + done.stderr


def main(fixtures, work):
    os.makedirs(work, exist_ok=True)
    stand_in = os.path.join(work, "stand_in")
    with open(stand_in, "w") as f:
        f.write(STAND_IN.format(python=sys.executable, here=HERE))
    os.chmod(stand_in, os.stat(stand_in).st_mode | stat.S_IXUSR)
    with open(os.path.join(fixtures, "text.txt"), encoding="utf-8", newline="") as f:
        lines = f.read().split("\n")[:-1]
    with open(os.path.join(work, "text.txt"), "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(line + "\n" for line in lines[:300] + lines[-40:]))

    failures = []
    rc, out = check(fixtures, work, {})
    if rc != 0:
        failures.append(f"a faithful stand-in failed the check:\n{out}")
    for key, line, word in (("BAD_ENCODE_LINE", 317, "first at line 317"), ("BAD_DECODE_LINE", 5, "line 5:")):
        rc, out = check(fixtures, work, {key: str(line)})
        if rc == 0 or word not in out:
            failures.append(f"{key}={line} was not caught as {word!r} (exit {rc}):\n{out}")
    for f in failures:
        print("FAIL " + f)
    print("check_tokenizer.py passes a faithful tokenizer and names a wrong id and a wrong decode" if not failures else "")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: selftest_check_tokenizer.py FIXTURE_DIR WORK_DIR")
    main(sys.argv[1], sys.argv[2])
