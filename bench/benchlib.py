"""Small pieces every benchmark driver shares: the environment mpirun needs, the peer's best
environment, the CPU's name for a table, a run folder's metrics, and replacing one `## ` section of
bench/RESULTS.md while leaving the others alone."""
import json
import os
import shlex
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATH = os.path.join(ROOT, "bench/RESULTS.md")


def replace_section(title, body):
    """title: the '## ...' heading line; body: the whole section text, starting with it."""
    text = open(PATH).read() if os.path.exists(PATH) else "# Benchmark results\n"
    pattern = re.compile(re.escape(title) + r".*?(?=\n## |\Z)", re.S)
    if title in text:
        text = pattern.sub(lambda _: body.rstrip("\n"), text)
    else:
        text = text.rstrip("\n") + "\n\n" + body.rstrip("\n")
    with open(PATH, "w") as f:
        f.write(text.rstrip("\n") + "\n")


def mpi_env():
    """os.environ plus what Open MPI asks for before it runs as root (containers, CI)."""
    return dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def peer_env():
    """os.environ for a peer (PyTorch) at its best: OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE pin
    OpenBLAS, and so PyTorch's fp32 GEMMs, to AVX2 kernels on this project's machines; unset in the
    peer's command alone."""
    return {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}


def lscpu():
    """lscpu's fields as a dict ('Model name', 'CPU family', 'Flags', ...)."""
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    return {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in out.splitlines() if ":" in line)}


def cpu_name(detail=""):
    """The CPU as lscpu names it, with its family (and `detail`): the machines this project runs
    on change, and every table names the one it ran on."""
    info = lscpu()
    return f"{info.get('Model name', '?')} (family {info.get('CPU family', '?')}{', ' + detail if detail else ''})"


def train_bench_model(fivefold, out, steps, flags, ranks=2):
    """`mpirun -np ranks fivefold train` of configs/bench.toml (one thread per rank, no evaluation,
    quiet progress) into a fresh `out`; exits with the output on failure. Returns (the run's
    metrics records, its stdout)."""
    import shutil
    import subprocess
    import sys
    shutil.rmtree(out, ignore_errors=True)
    cmd = ["mpirun", "--oversubscribe", "-np", str(ranks), fivefold, "train", "--config",
           os.path.join(ROOT, "configs/bench.toml"), "--out", out, "--threads", "1", "--steps", str(steps),
           "--eval-every", "0", "--log-every", "1000"] + list(flags)
    p = subprocess.run(cmd, capture_output=True, text=True, env=mpi_env())
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return read_metrics(out), p.stdout


def read_metrics(run_dir):
    """The per-step records fivefold train wrote to RUN/metrics.jsonl."""
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f]


def publish(title, description, table, summary="", write=False):
    """Prints the table (and summary); with write, replaces section `title` of RESULTS.md with
    the description, the exact command that produced it, the table and the summary."""
    print(table)
    if summary:
        print(summary)
    if not write:
        return
    import sys
    script = os.path.relpath(os.path.abspath(sys.argv[0]), ROOT)
    cmdline = shlex.join(["/usr/bin/python3", script] + sys.argv[1:])  # quoted: it must rerun as printed
    body = f"{title}\n\n{description}\n\n```\n{cmdline}\n```\n\n{table}\n"
    if summary:
        body += f"\n{summary}\n"
    replace_section(title, body)


def ensure_kjv(fivefold, data):
    """data (the bench model's corpus, data/kjv by default) prepared as scripts/demo.sh prepares it
    (the King James Bible from Debian's bible-kjv, one document per line, vocab 4096) unless it
    holds a training shard already: a benchmark's rerun command then needs nothing else."""
    import subprocess
    if any(os.path.exists(os.path.join(data, n)) for n in ("train-00000.bin", "train.bin")):
        return
    os.makedirs(data, exist_ok=True)
    text = os.path.join(data, "kjv.txt")
    with open(text, "w") as f:
        subprocess.run(["bible", "-f", "Gen1:1-Rev22:21"], stdout=f, check=True)
    subprocess.run([fivefold, "prepare", "--text", text, "--one-doc-per-line", "--vocab", "4096", "--out", data],
                   check=True, stdout=subprocess.DEVNULL)
