"""Replaces one `## ` section of bench/RESULTS.md, leaving the others as they are."""
import os
import re

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
