#!/usr/bin/python3
"""The kernels' ISA tiers (src/kernels/tiers/) must not leak their instructions into code other
objects share. A tier object compiles a kernel source under `#pragma GCC target("avx512f,...")`;
any inline function it emits as a weak (COMDAT) symbol under a name another object also emits
may be the copy the linker keeps for every caller, and would then run AVX-512 on a CPU without it.
So every weak or global function of a tier object that runs AVX-512 instructions must carry the
tier's tag in its name (isa_tier.h's inline namespace), and the tier must really use AVX-512
(its tag's functions hold zmm registers), or its pragma did not take.

usage: check_tier_objects.py LIBRARY.a   (the ff_kernels archive; exit 1 listing each finding)
       check_tier_objects.py --selftest   (compiles a leaking and a clean tier object with g++)
In a build whose own target has AVX-512 the tier objects are empty and there is nothing to check.
"""
import os
import re
import subprocess
import sys
import tempfile

TIER_MEMBER = re.compile(r"_avx512(_bf16)?\.cpp\.o$")
# Registers and forms only AVX-512 has: zmm, mask registers, the upper 16 xmm/ymm, {k} masking.
AVX512 = re.compile(r"%zmm|%k[0-7]\b|%[xy]mm(1[6-9]|2[0-9]|3[01])\b|\{%k")


def members(archive):
    out = subprocess.run(["ar", "t", archive], capture_output=True, text=True, check=True).stdout
    return [m for m in out.split() if TIER_MEMBER.search(m)]


def functions(archive, member):
    """{mangled name: (binding letter, disassembly text)} of the member's defined functions."""
    with subprocess.Popen(["ar", "p", archive, member], stdout=subprocess.PIPE) as p:
        data = p.stdout.read()
    with tempfile.NamedTemporaryFile(suffix=".o") as f:
        f.write(data)
        f.flush()
        syms = subprocess.run(["nm", "--defined-only", f.name], capture_output=True, text=True, check=True).stdout
        binding = {}
        for line in syms.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TtWw":
                binding[parts[2]] = parts[1]
        dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f.name], capture_output=True, text=True,
                             check=True).stdout
    bodies, name = {}, None
    for line in dis.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if m:
            name = m.group(1)
            bodies[name] = []
        elif name:
            bodies[name].append(line)
    return {n: (binding.get(n, "?"), "\n".join(b)) for n, b in bodies.items()}


def check(archive):
    findings, checked = [], 0
    for member in members(archive):
        tag = "isa_avx512_bf16" if member.endswith("_avx512_bf16.cpp.o") else "isa_avx512"
        fns = functions(archive, member)
        if not fns:
            continue  # the build's own target has this tier: nothing compiled
        checked += 1
        tagged_wide = False
        for name, (bind, body) in fns.items():
            wide = bool(AVX512.search(body))
            if tag in name:
                tagged_wide = tagged_wide or wide
            elif wide and bind in "TW":
                findings.append(f"{member}: {name} ({bind}) runs AVX-512 but has no {tag} in its name: "
                                "another object's copy may be replaced by it (include its header in "
                                "tiers/tier_prelude.h, or tag its namespace, isa_tier.h)")
        if not tagged_wide:
            findings.append(f"{member}: no function of the {tag} tier uses AVX-512 registers: its target pragma "
                            "did not apply (tiers/compile_tier.h)")
    return findings, checked


# A tier object whose inline helper has no tag (the leak this check is for), then the same tagged.
SELFTEST_SOURCE = """
#pragma GCC push_options
#pragma GCC target("avx512f,prefer-vector-width=512")
namespace ff::%s { inline void scale(float* x, int n) { for (int i = 0; i < n; ++i) x[i] *= 3.0f; } }
namespace ff::isa_avx512 { void kernel(float* x, int n) { ff::%s::scale(x, n); }
void (*volatile keep)(float*, int) = &ff::%s::scale; }
#pragma GCC pop_options
"""


def selftest():
    with tempfile.TemporaryDirectory() as d:
        results = []
        for ns in ("helpers", "isa_avx512"):
            src, obj, lib = (os.path.join(d, x) for x in ("t.cpp", "flash_attention_avx512.cpp.o", f"{ns}.a"))
            with open(src, "w") as f:
                f.write(SELFTEST_SOURCE % (ns, ns, ns))
            subprocess.run(["g++", "-O3", "-march=x86-64-v3", "-c", src, "-o", obj], check=True)
            subprocess.run(["ar", "rc", lib, obj], check=True)
            results.append(check(lib))
    (leaky, n1), (clean, n2) = results
    ok = n1 == n2 == 1 and len(leaky) == 1 and "no isa_avx512 in its name" in leaky[0] and not clean
    print("selftest", "passed" if ok else f"FAILED: {leaky} / {clean}")
    return 0 if ok else 1


def main():
    if sys.argv[1:] == ["--selftest"]:
        return selftest()
    findings, checked = check(sys.argv[1])
    for f in findings:
        print(f)
    print(f"{checked} tier objects checked, {len(findings)} findings")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
