#!/usr/bin/python3
"""Each folder under src/ is a layer that may include only itself and the layers beneath it
(docs/architecture.md). Static libraries do not enforce this: every layer's headers are on the
include path, and an upward call links fine inside the final executable. This check does.

usage: check_layers.py SRC_DIR   (exit 1 listing every upward include)
       check_layers.py --selftest
"""
import os
import re
import sys

# Layer -> the layers it builds on directly (CMakeLists.txt's ff_layer DEPS, plus cli).
DIRECT = {
    "core": [],
    "comm": ["core"],
    "kernels": ["core"],
    "io": ["core"],
    "model": ["kernels"],
    "parallel": ["model", "comm", "io"],
    "ckpt": ["parallel", "model", "comm", "io"],
    "plan": ["parallel"],
    "calibrate": ["plan"],
    "train": ["ckpt", "calibrate", "plan", "parallel", "model", "io"],
    "cli": ["train"],
}


def allowed(layer):
    seen, todo = {layer}, list(DIRECT[layer])
    while todo:
        x = todo.pop()
        if x not in seen:
            seen.add(x)
            todo += DIRECT[x]
    return seen


def selftest():
    """The check must fail on an upward include and pass without it."""
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        for layer in DIRECT:
            os.makedirs(os.path.join(d, layer))
        header = os.path.join(d, "model", "block.h")
        open(header, "w").write('#include "kernels/gemm.h"\n')
        clean = subprocess.run([sys.executable, __file__, d], capture_output=True).returncode
        open(header, "a").write('#include "train/trainer.h"\n')
        dirty = subprocess.run([sys.executable, __file__, d], capture_output=True, text=True)
    ok = clean == 0 and dirty.returncode == 1 and "model includes train/" in dirty.stdout
    print("selftest " + ("passed" if ok else f"FAILED: clean {clean}, dirty {dirty.returncode} {dirty.stdout}"))
    sys.exit(0 if ok else 1)


def main():
    if sys.argv[1] == "--selftest":
        selftest()
    src = sys.argv[1]
    include = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')
    bad = []
    for layer in DIRECT:
        ok = allowed(layer)
        for root, _, files in os.walk(os.path.join(src, layer)):
            for name in files:
                path = os.path.join(root, name)
                for n, line in enumerate(open(path, encoding="utf-8"), 1):
                    m = include.match(line)
                    if m and m.group(1) in DIRECT and m.group(1) not in ok:
                        bad.append(f"{os.path.relpath(path, src)}:{n}: {layer} includes {m.group(1)}/ "
                                   f"(a layer above it): {line.strip()}")
    unknown = sorted(set(os.listdir(src)) - set(DIRECT) - {"README.md"})
    if unknown:
        bad.append(f"folders with no place in the layering: {unknown}; add them to DIRECT in {sys.argv[0]}")
    print("\n".join(bad) if bad else f"layering holds for {len(DIRECT)} layers")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
