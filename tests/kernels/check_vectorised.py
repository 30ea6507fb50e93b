#!/usr/bin/python3
"""Every `#pragma omp simd` loop of the kernels must compile to vector code for the build's own
target, and in each ISA tier that compiles it again (tiers/*.cpp: the AVX-512 code a portable
binary runs on a CPU that has it). GCC drops a loop to scalar code without a word when it cannot
vectorise it (a conditional it may not speculate, a call it cannot inline), and the loop then runs
several times slower: SwiGLU and the loss ran scalar on AVX2 until the kernels were built with
-fno-trapping-math.

Each kernel source and tier is compiled as the build compiles it (its flags passed in by CMake),
with GCC's vectoriser report; a loop passes when some instantiation of it was vectorised (a report
of "loop vectorized" inside its body), in the build's own sources and in each tier that compiled
any code. Headers' loops count through the sources that include them directly.

usage: check_vectorised.py --cxx CXX --flags "F1;F2;..." [--file-flags NAME.cpp=F ...] DIR
           (DIR: src/kernels; exit 1 listing each loop left scalar)
       check_vectorised.py --cxx CXX --selftest
           (a loop GCC leaves scalar under -ftrapping-math, then the same under -fno-trapping-math)
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

PRAGMA = re.compile(r"^\s*#\s*pragma\s+omp\s+simd\b")
INCLUDE = re.compile(r'#include "kernels/(\w+\.h)"')
TIER_SOURCE = re.compile(r'#define FF_TIER_SOURCE "kernels/(\w+\.cpp)"')
VECTORISED = re.compile(r"^(.+?):(\d+):\d+: optimized: loop vectorized")


def strip_comment(line):
    return line.split("//", 1)[0]


def loops(path):
    """[(first line, last line)] of the loop after each `#pragma omp simd`, 1-based."""
    with open(path) as f:
        lines = [strip_comment(x) for x in f.read().split("\n")]
    found = []
    for i, line in enumerate(lines):
        if not PRAGMA.match(line):
            continue
        # The loop: its `for (...)` header, then a braced body or one statement up to its `;`.
        text = "\n".join(lines[i + 1:])
        start = text.find("for")
        pos, depth = text.find("(", start), 0
        while True:
            depth += {"(": 1, ")": -1}.get(text[pos], 0)
            pos += 1
            if depth == 0:
                break
        body = text[pos:].lstrip()
        pos += len(text[pos:]) - len(body)
        if body.startswith("{"):
            depth = 0
            while True:
                depth += {"{": 1, "}": -1}.get(text[pos], 0)
                pos += 1
                if depth == 0:
                    break
        else:
            pos = text.find(";", pos) + 1
        first = i + 2 + text[:start].count("\n")
        found.append((first, i + 2 + text[:pos].count("\n")))
    return found


def vectorised_lines(cxx, flags, src):
    """{(real path, line)} GCC reports a vectorised loop at, compiling src with flags."""
    out = subprocess.run([cxx, *flags, "-fopt-info-vec-optimized", "-c", src, "-o", os.devnull],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"compiling {src} failed:\n{out.stderr[-2000:]}")
    seen = set()
    for line in out.stderr.splitlines():
        m = VECTORISED.match(line)
        if m:
            seen.add((os.path.realpath(m.group(1)), int(m.group(2))))
    return seen


def scalar_loops(spans_by_file, seen, where):
    """Findings for the loops of spans_by_file with no vectorised report in seen."""
    findings = []
    for path, spans in sorted(spans_by_file.items()):
        lines = {line for p, line in seen if p == path}
        findings += [f"{os.path.relpath(path)}:{first}: this `#pragma omp simd` loop compiled to scalar code "
                     f"{where}; GCC's -fopt-info-vec-missed says why (a branch it may not speculate, a call it "
                     "could not inline)" for first, last in spans if not any(first <= x <= last for x in lines)]
    return findings


def check(cxx, flags, file_flags, kernel_dir):
    files = sorted(os.path.join(kernel_dir, f) for f in os.listdir(kernel_dir) if f.endswith((".cpp", ".h")))
    with_loops = {os.path.realpath(f): loops(f) for f in files}
    with_loops = {f: l for f, l in with_loops.items() if l}
    by_name = {os.path.basename(f): f for f in with_loops}

    def loop_files(src):  # src's own loops and those of the headers it includes
        names = [os.path.basename(src)] + INCLUDE.findall(open(src).read())
        return {by_name[n]: with_loops[by_name[n]] for n in names if n in by_name}

    # The build's own sources that hold a loop or include a header holding one, and the ISA tiers
    # (tiers/*.cpp: a kernel source again under a target pragma, empty where the build has that ISA).
    sources = {f: loop_files(f) for f in files if f.endswith(".cpp")}
    sources = {f: spans for f, spans in sources.items() if spans}
    tier_dir = os.path.join(kernel_dir, "tiers")
    tiers = {}
    for t in sorted(os.listdir(tier_dir)) if os.path.isdir(tier_dir) else []:
        m = TIER_SOURCE.search(open(os.path.join(tier_dir, t)).read()) if t.endswith(".cpp") else None
        if m and os.path.join(kernel_dir, m.group(1)) in sources:
            tiers[os.path.join(tier_dir, t)] = sources[os.path.join(kernel_dir, m.group(1))]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        reports = list(pool.map(lambda s: vectorised_lines(cxx, flags + file_flags.get(os.path.basename(s), []), s),
                                list(sources) + list(tiers)))
    own = set().union(*reports[:len(sources)])
    findings = scalar_loops({f: l for spans in sources.values() for f, l in spans.items()}, own,
                            "for the build's target in every instantiation")
    for (tier, spans), seen in zip(tiers.items(), reports[len(sources):]):
        if seen:  # an empty tier vectorises nothing: the build's own target has its ISA
            findings += scalar_loops(spans, seen, f"in its ISA tier {os.path.basename(tier)}")
    checked = sum(len(s) for s in with_loops.values())
    return findings, checked, sum(1 for seen in reports[len(sources):] if seen)


# A clamp before a conversion: under -ftrapping-math GCC on AVX2 keeps the clamp as a branch.
SELFTEST_SOURCE = """
void clamp_shift(float* y, const float* x, int n) {
#pragma omp simd
  for (int i = 0; i < n; ++i) {
    const float t = x[i] < -87.0f ? -87.0f : x[i];
    y[i] = t > 0.0f ? float(int(t) << 1) : 0.0f;
  }
}
"""


def selftest(cxx):
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "probe.cpp"), "w") as f:
            f.write(SELFTEST_SOURCE)
        base = ["-O3", "-march=x86-64-v3", "-fopenmp"]
        scalar, n1, _ = check(cxx, base, {}, d)
        vector, n2, _ = check(cxx, base + ["-fno-trapping-math"], {}, d)
    ok = n1 == n2 == 1 and len(scalar) == 1 and "probe.cpp:4:" in scalar[0] and not vector
    print("selftest", "passed" if ok else f"FAILED: {scalar} / {vector}")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cxx", required=True)
    ap.add_argument("--flags", default="", help="the kernels' compile flags, ';'-separated (CMake's list)")
    ap.add_argument("--file-flags", action="append", default=[], help="NAME.cpp=FLAG: one source's own flag")
    ap.add_argument("--selftest", action="store_true")
    ap.add_argument("kernel_dir", nargs="?")
    args = ap.parse_args()
    if args.selftest:
        return selftest(args.cxx)
    file_flags = {}
    for item in args.file_flags:
        name, flag = item.split("=", 1)
        file_flags.setdefault(name, []).append(flag)
    flags = [f for f in args.flags.split(";") if f]
    findings, count, tiers = check(args.cxx, flags, file_flags, args.kernel_dir)
    summary = f"{count} `#pragma omp simd` loops checked, in the build's target and {tiers} ISA tiers"
    print("\n".join(findings + [f"{summary}: {len(findings)} left scalar"]))
    return int(bool(findings))


if __name__ == "__main__":
    sys.exit(main())
