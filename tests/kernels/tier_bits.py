#!/usr/bin/python3
"""The element-wise kernels give the same bits in every ISA tier but where a vectorised sum feeds
them (kernels/README.md, "ISA tiers"). Runs tier_bits (tier_bits.cpp) under each
FIVEFOLD_MAX_CPU_ISA and compares its digests: every "exact" output must match the first run's,
bit for bit; "sums" outputs are listed, equal or not. Where two runs took the same tier (a
-march=native build compiles no other; a CPU without AVX-512 has none to pick), their comparison
says nothing, and the report names the tiers actually compared.

usage: tier_bits.py PATH/TO/tier_bits      (exit 1 naming each exact output that moved)
       tier_bits.py --selftest             (the comparison on made-up digests)
"""
import os
import subprocess
import sys

TIERS = ("base", "avx512", "")  # "": unset, the CPU's best


def run(binary, tier):
    env = dict(os.environ)
    env.pop("FIVEFOLD_MAX_CPU_ISA", None)
    if tier:
        env["FIVEFOLD_MAX_CPU_ISA"] = tier
    out = subprocess.run([binary], env=env, capture_output=True, text=True, check=True).stdout
    return parse(out)


def parse(text):
    """(tier taken, {name: (kind, digest)}) from one run's output."""
    lines = text.strip().splitlines()
    taken = lines[0].split()[2]
    digests = {}
    for line in lines[1:]:
        name, kind, digest = line.split()
        digests[name] = (kind, digest)
    return taken, digests


def compare(runs):
    """runs: [(tier taken, digests)]. Returns (findings, report lines)."""
    findings, report = [], []
    first_tier, first = runs[0]
    for tier, digests in runs[1:]:
        if digests.keys() != first.keys():
            findings.append(f"{tier}: outputs {sorted(digests.keys() ^ first.keys())} in one run only")
            continue
        if tier == first_tier:
            continue
        moved = [n for n, (kind, d) in digests.items() if d != first[n][1]]
        for n in moved:
            if first[n][0] == "exact":
                findings.append(f"{n}: the {tier} tier's bits differ from the {first_tier} tier's, but no vectorised "
                                "sum feeds it (kernels/README.md says every tier gives its bits)")
        exact = sum(kind == "exact" for kind, _ in first.values())
        apart = ", ".join(n for n in moved if first[n][0] == "sums") or "none"
        report.append(f"{first_tier} against {tier}: {exact} exact outputs compared; sums that rounded apart: {apart}")
    if not report:
        report.append(f"every run took the {first_tier} tier: nothing to compare in this build on this CPU")
    return findings, report


def selftest():
    base = ("base", {"a": ("exact", "1"), "s": ("sums", "2")})
    same = ("avx512", {"a": ("exact", "1"), "s": ("sums", "3")})
    moved = ("avx512", {"a": ("exact", "9"), "s": ("sums", "2")})
    ok_findings, ok_report = compare([base, same])
    bad_findings, _ = compare([base, moved])
    vacuous_findings, vacuous = compare([base, ("base", {"a": ("exact", "9"), "s": ("sums", "2")})])
    ok = (not ok_findings and ok_report[0].endswith("rounded apart: s")
          and len(bad_findings) == 1 and bad_findings[0].startswith("a:")
          and not vacuous_findings and "nothing to compare" in vacuous[0])
    print("selftest", "passed" if ok else f"FAILED: {ok_findings} {bad_findings} {vacuous_findings}")
    return 0 if ok else 1


def main():
    if sys.argv[1:] == ["--selftest"]:
        return selftest()
    runs = [run(sys.argv[1], t) for t in TIERS]
    findings, report = compare(runs)
    for line in report + findings:
        print(line)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
