"""Reading text and id files line by line, and comparing id lines with the first difference named.

Lines end at "\\n" only (a "\\r" inside a line is text), as the references and fivefold read them.
"""


def read_lines(path):
    with open(path, encoding="utf-8", newline="") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def read_ids(path):
    return [[int(t) for t in line.split()] for line in read_lines(path)]


def first_difference(expected, actual, texts, expected_name, actual_name):
    """None when the id lists agree line for line, else a message naming the first differing
    line (its number, its text, both id lists, the first differing position) and how many differ."""
    if len(expected) != len(actual):
        return (f"{actual_name} gave {len(actual)} lines, {expected_name} {len(expected)} "
                f"(text: {len(texts)} lines)")
    differing = [i for i in range(len(expected)) if expected[i] != actual[i]]
    if not differing:
        return None
    i = differing[0]
    e, a = expected[i], actual[i]
    k = next((j for j in range(min(len(e), len(a))) if e[j] != a[j]), min(len(e), len(a)))
    text = texts[i] if i < len(texts) else "<no text line>"
    return (f"{len(differing)} of {len(expected)} lines differ; first at line {i + 1}: {text!r}\n"
            f"  {expected_name}: {e}\n  {actual_name}: {a}\n  first differing position: {k}")
